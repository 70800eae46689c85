//! ModelRetry against LangChain's `ModelRetryMiddleware`
//! (`tests/reference/middleware/model_retry.py`): which errors are
//! retried, how often, and the answer once the attempts are spent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_state::agent::middleware::{Backoff, ModelRetry, OnFailure};
use agent_state::agent::{
    create_agent, AgentMiddleware, Hooks, ModelError, ModelFuture, ModelHandler, ModelRequest,
};
use agent_state::serde_json::{json, Value};

use crate::script::{outcome, Chat, Script, Step};
use crate::support::recorded;

fn no_wait() -> Backoff {
    Backoff::default()
        .initial_delay(Duration::ZERO)
        .jitter(false)
}

/// Runs the scenario's agent on "hi": the messages or the error, and the
/// model's call count.
fn run(steps: Vec<Step>, retry: ModelRetry) -> Value {
    let model = Script::new(steps);
    let agent = create_agent::<Chat, _>(Arc::clone(&model))
        .middleware(retry.backoff(no_wait()))
        .compile()
        .unwrap();
    outcome(&agent, "hi", || model.calls())
}

/// LangChain's outcome for a run that raised: the calls, and whether our
/// error carries its message.
fn assert_raised(ours: &Value, theirs: &Value) {
    assert_eq!(ours["calls"], theirs["calls"]);
    let said = ours["raised"].as_str().expect("our run should fail too");
    let message = theirs["message"].as_str().unwrap();
    assert!(said.contains(message), "{said} should say {message}");
}

#[test]
fn retries_as_langchain_does() {
    let expected = recorded("model_retry");
    let slow = || Step::RateLimited("slow down");
    let hello = Step::Reply(agent_state::ai("hello"));
    let cases = [
        (
            "recovers",
            run(vec![slow(), slow(), hello], ModelRetry::new()),
        ),
        (
            "exhausted",
            run(vec![Step::Api(503, "server down")], ModelRetry::new()),
        ),
        (
            "one_attempt",
            run(vec![slow()], ModelRetry::new().max_retries(0)),
        ),
        (
            "on_failure_text",
            run(
                vec![slow()],
                ModelRetry::new()
                    .max_retries(1)
                    .on_failure(OnFailure::message(|e: &ModelError| {
                        format!("sorry: {}", e.message())
                    })),
            ),
        ),
        (
            "retry_on_predicate",
            run(
                vec![
                    Step::Api(401, "bad key"),
                    Step::Reply(agent_state::ai("in")),
                ],
                ModelRetry::new().retry_on(|e| e.kind_name() == "ModelAuthenticationError"),
            ),
        ),
    ];
    for (name, ours) in cases {
        assert_eq!(ours, expected[name], "scenario {name}");
    }
}

#[test]
fn fails_as_langchain_does() {
    let expected = recorded("model_retry");
    let not_retryable = run(vec![Step::Api(401, "bad key")], ModelRetry::new());
    assert_raised(&not_retryable, &expected["not_retryable"]);
    let error = run(
        vec![Step::RateLimited("slow down")],
        ModelRetry::new().on_failure(OnFailure::Error),
    );
    assert_raised(&error, &expected["on_failure_error"]);
}

#[test]
fn waits_an_exponential_backoff_capped_at_max_delay() {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&waits);
    let backoff = Backoff::default()
        .jitter(false)
        .max_delay(Duration::from_secs(3))
        .sleep_with(move |d| {
            log.lock().unwrap().push(d);
            Box::pin(async {})
        });
    let model = Script::new([Step::RateLimited("slow down")]);
    let retry = ModelRetry::new().max_retries(4).backoff(backoff);
    let agent = create_agent::<Chat, _>(Arc::clone(&model))
        .middleware(retry)
        .compile()
        .unwrap();
    let out = outcome(&agent, "hi", || model.calls());
    assert_eq!(out["calls"], json!(5));
    let secs: Vec<u64> = waits
        .lock()
        .unwrap()
        .iter()
        .map(Duration::as_secs)
        .collect();
    assert_eq!(secs, [1, 2, 3, 3]);
}

#[test]
fn jitter_stays_within_a_quarter_of_the_delay() {
    let backoff = Backoff::default().initial_delay(Duration::from_secs(4));
    let delays: Vec<Duration> = (0..200).map(|_| backoff.delay(0)).collect();
    assert!(delays
        .iter()
        .all(|d| (3.0..=5.0).contains(&d.as_secs_f64())));
    assert!(
        delays.windows(2).any(|w| w[0] != w[1]),
        "jitter should vary"
    );
    let constant = Backoff::default()
        .backoff_factor(0.0)
        .unwrap()
        .jitter(false);
    assert_eq!(constant.delay(5), Duration::from_secs(1));
}

#[test]
fn a_negative_backoff_factor_is_an_error_naming_it() {
    let error = ModelRetry::new().backoff_factor(-1.0).unwrap_err();
    assert_eq!(error.field, "backoff_factor");
    assert!(error
        .to_string()
        .contains("backoff_factor must be a number >= 0"));
    assert!(Backoff::default().backoff_factor(f64::NAN).is_err());
}

/// Interrupts the run from inside the retried call, counting its tries.
struct AskFirst(Arc<std::sync::atomic::AtomicUsize>);

impl AgentMiddleware<Chat> for AskFirst {
    fn name(&self) -> &str {
        "ask_first"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<Chat>,
        handler: ModelHandler<'a, Chat>,
    ) -> ModelFuture<'a> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match request.node().unwrap().interrupt::<String>("go on?") {
            Ok(_) => handler.call(request),
            Err(paused) => Box::pin(async move { Err(ModelError::other(paused)) }),
        }
    }
}

/// An interrupt is no failure: neither retried nor sent to a fallback; the
/// run pauses (LangChain's middleware let `GraphBubbleUp` through).
#[test]
fn interrupts_pass_through_retries_and_fallbacks() {
    use agent_state::agent::middleware::ModelFallback;
    use agent_state::checkpoint::{block_on, MemoryCheckpointer};

    let tries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let backup = Script::new([Step::Reply(agent_state::ai("backup"))]);
    let agent = create_agent::<Chat, _>(Script::new([Step::Reply(agent_state::ai("hi"))]))
        .middleware(ModelFallback::new(Arc::clone(&backup)))
        .middleware(ModelRetry::new().backoff(no_wait()))
        .middleware(AskFirst(Arc::clone(&tries)))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let paused = block_on(
        agent
            .run(agent_state::agent::input::<Chat>("hi"))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(backup.calls(), 0);
}

/// Without a sleeper of one's own, the crate's timer waits (no runtime
/// needed): two retries of 5 ms each take 10 ms at least.
#[test]
fn the_default_timer_really_waits() {
    let model = Script::new([
        Step::RateLimited("slow down"),
        Step::RateLimited("slow down"),
        Step::Reply(agent_state::ai("ok")),
    ]);
    let backoff = Backoff::default()
        .initial_delay(Duration::from_millis(5))
        .backoff_factor(1.0)
        .unwrap()
        .jitter(false);
    let agent = create_agent::<Chat, _>(Arc::clone(&model))
        .middleware(ModelRetry::new().backoff(backoff))
        .compile()
        .unwrap();
    let started = std::time::Instant::now();
    let out = outcome(&agent, "hi", || model.calls());
    assert!(started.elapsed() >= Duration::from_millis(10));
    assert_eq!(out["calls"], 3);
}
