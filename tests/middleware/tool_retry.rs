//! ToolRetry against LangChain's `ToolRetryMiddleware`
//! (`tests/reference/middleware/tool_retry.py`): retries, per-tool
//! filtering, the failure messages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_state::agent::middleware::{Backoff, OnFailure, ToolRetry};
use agent_state::agent::{create_agent, FnTool, ToolError, ToolRuntime};
use agent_state::json_schema::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Value};

use crate::script::{calling, outcome, Chat, Script, Step};
use crate::support::recorded;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::json_schema::schemars")]
struct Query {
    q: String,
}

/// Runs "go" with the model calling `calls` (each with `q: "x"`), then
/// answering "done": the messages and how often each tool ran.
fn run(calls: &[&str], retry: ToolRetry) -> Value {
    let (flaky_tries, broken_tries) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tries = Arc::clone(&flaky_tries);
    let flaky = FnTool::sync(
        "flaky",
        "Fails twice, then fetches.",
        move |a: Query, _: &ToolRuntime<Chat>| {
            if tries.fetch_add(1, Ordering::SeqCst) < 2 {
                Err("timeout".to_owned())
            } else {
                Ok(format!("page for {}", a.q))
            }
        },
    );
    let tries = Arc::clone(&broken_tries);
    let broken = FnTool::sync(
        "broken",
        "Always fails.",
        move |_: Query, _: &ToolRuntime<Chat>| {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<String, _>("boom".to_owned())
        },
    );
    let asks: Vec<(&str, String, Value)> = calls
        .iter()
        .map(|n| (*n, format!("call_{n}"), json!({"q": "x"})))
        .collect();
    let asks: Vec<(&str, &str, Value)> = asks
        .iter()
        .map(|(n, id, a)| (*n, id.as_str(), a.clone()))
        .collect();
    let model = Script::new([
        Step::Reply(calling(&asks)),
        Step::Reply(agent_state::ai("done")),
    ]);
    let no_wait = Backoff::default()
        .initial_delay(Duration::ZERO)
        .jitter(false);
    let agent = create_agent::<Chat, _>(model)
        .tool(flaky)
        .tool(broken)
        .middleware(retry.backoff(no_wait))
        .compile()
        .unwrap();
    let mut out = outcome(&agent, "go", || 0);
    out.as_object_mut().unwrap().remove("calls");
    out["tries"] = json!({
        "flaky": flaky_tries.load(Ordering::SeqCst),
        "broken": broken_tries.load(Ordering::SeqCst),
    });
    out
}

#[test]
fn retries_tools_as_langchain_does() {
    let expected = recorded("tool_retry");
    let custom = OnFailure::message(|e: &ToolError| match e {
        ToolError::Failed { error, .. } => format!("custom: {error}"),
        other => other.to_string(),
    });
    let cases = [
        ("defaults", run(&["flaky", "broken"], ToolRetry::new())),
        (
            "one_retry_custom_text",
            run(
                &["broken"],
                ToolRetry::new().max_retries(1).on_failure(custom),
            ),
        ),
        (
            "no_retries",
            run(&["broken"], ToolRetry::new().max_retries(0)),
        ),
        (
            "only_named_tools",
            run(&["flaky"], ToolRetry::new().tools(["flaky"])),
        ),
    ];
    for (name, ours) in cases {
        assert_eq!(ours, expected[name], "scenario {name}");
    }
}

/// Deliberate difference: a tool the middleware does not cover, or
/// `OnFailure::Error`, leaves the error to the agent, which answers the
/// call with it (LangChain's run fails with the exception).
#[test]
fn uncovered_tools_and_on_failure_error_leave_the_error_to_the_agent() {
    let cases = [
        (ToolRetry::new().tools(["flaky"]), 1),
        (ToolRetry::new().on_failure(OnFailure::Error), 3),
    ];
    for (retry, tries) in cases {
        let ours = run(&["broken"], retry);
        let answer = &ours["messages"][2];
        assert_eq!(answer["status"], "error");
        assert_eq!(answer["content"], "Error: tool `broken` failed: boom");
        assert_eq!(ours["tries"]["broken"], tries);
    }
}

#[test]
fn bad_arguments_are_not_retried() {
    let model = Script::new([
        Step::Reply(calling(&[("broken", "c1", json!({"wrong": 1}))])),
        Step::Reply(agent_state::ai("done")),
    ]);
    let tries = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&tries);
    let broken = FnTool::sync(
        "broken",
        "Always fails.",
        move |_: Query, _: &ToolRuntime<Chat>| {
            count.fetch_add(1, Ordering::SeqCst);
            Err::<String, _>("boom".to_owned())
        },
    );
    let agent = create_agent::<Chat, _>(model)
        .tool(broken)
        .middleware(ToolRetry::new())
        .compile()
        .unwrap();
    let out = outcome(&agent, "go", || 0);
    let answer = out["messages"][2]["content"].as_str().unwrap();
    assert!(
        answer.starts_with("Error invoking tool `broken`"),
        "{answer}"
    );
    assert_eq!(tries.load(Ordering::SeqCst), 0);
}

/// An interrupt is no failure: the call is not retried and the run pauses
/// (LangChain's middleware let `GraphBubbleUp` through).
#[test]
fn interrupts_pass_through_unretried() {
    use agent_state::checkpoint::{block_on, MemoryCheckpointer};

    let tries = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&tries);
    let ask = FnTool::sync(
        "ask",
        "Asks a human.",
        move |_: Value, rt: &ToolRuntime<Chat>| {
            count.fetch_add(1, Ordering::SeqCst);
            rt.interrupt::<String>("approve?")
                .map(|answer| format!("human said {answer}"))
        },
    );
    let model = Script::new([
        Step::Reply(calling(&[("ask", "c1", json!({}))])),
        Step::Reply(agent_state::ai("done")),
    ]);
    let agent = create_agent::<Chat, _>(model)
        .tool(ask)
        .middleware(ToolRetry::new())
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let input = agent_state::agent::input::<Chat>("go");
    let paused = block_on(agent.run(input).on_thread(&saver, "t")).unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(tries.load(Ordering::SeqCst), 1);
}
