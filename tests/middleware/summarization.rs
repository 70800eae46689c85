//! `Summarization` against LangChain's `SummarizationMiddleware`
//! (`tests/reference/middleware/summarization.py`), scripted models on both
//! sides: when it triggers, where it cuts, what the summarising model is
//! asked, the messages that replace the history; LangChain's approximate
//! token counter on its own; the refused configurations.

use agent_state::agent::middleware::{
    ApproximateTokenCounter, ContextSize, Summarization, SummarizationConfigError, TriggerClause,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_state::agent::{
    create_agent, input, FnModel, FnTool, ModelError, ModelRequest, ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::GraphError;
use agent_state::serde_json::{json, Value};
use agent_state::{ai, human, tool, AgentState, Content, Message};

use crate::support::{call, dump, recorded, Recorder};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

#[derive(serde::Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
struct City {
    city: String,
}

const QUESTION: &str =
    "Find the weather in Paris & Rome <today>.\nThen compare them.\nKeep it short.";

fn replies() -> Vec<Message> {
    let lookups = ["Paris", "Rome"]
        .iter()
        .enumerate()
        .fold(ai("Looking both up."), |m, (i, city)| {
            m.with_tool_call(call("weather", json!({"city": city}), &format!("c{i}")))
        });
    vec![
        lookups,
        ai("Paris and Rome are both sunny."),
        ai("Berlin too."),
    ]
}

/// The reference's scenario: two runs of one thread with `summarize`
/// configured on a scripted summariser.
fn scenario(
    configure: impl FnOnce(Summarization<Arc<Recorder>>) -> Summarization<Arc<Recorder>>,
) -> Value {
    let model = Recorder::new(replies());
    let summarizer = Recorder::new([ai("  Both cities are sunny.  ")]);
    let weather = FnTool::sync(
        "weather",
        "The weather in a city.",
        |a: City, _: &ToolRuntime<Chat>| format!("{}: sunny", a.city),
    );
    let agent = create_agent(model.clone())
        .tool(weather)
        .middleware(configure(Summarization::new(summarizer.clone())))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    block_on(agent.run(input::<Chat>(QUESTION)).on_thread(&saver, "t")).unwrap();
    let out = block_on(
        agent
            .run(input::<Chat>("And Berlin?"))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    json!({
        "messages": dump(out.state.messages()),
        "summarizer_requests": summarizer.seen(),
        "last_model_request": model.seen().as_array().unwrap().last(),
    })
}

#[test]
fn a_kept_tool_answer_pulls_the_cut_back_to_its_ai_message() {
    let got = scenario(|s| {
        s.trigger(ContextSize::Tokens(100))
            .unwrap()
            .keep(ContextSize::Messages(3))
            .unwrap()
    });
    assert_eq!(
        got,
        recorded("summarization")["messages_keep_cut_back_to_the_ai_message"]
    );
}

#[test]
fn keeping_tokens_cuts_where_the_newest_messages_fit() {
    let got = scenario(|s| {
        s.trigger(ContextSize::Messages(6))
            .unwrap()
            .keep(ContextSize::Tokens(40))
            .unwrap()
    });
    assert_eq!(got, recorded("summarization")["tokens_keep"]);
}

/// Not a reference scenario of its own: 0.2 of 200 input tokens is the
/// 40 tokens the reference keeps, so the cut is the same.
#[test]
fn keeping_a_fraction_keeps_that_fraction_of_the_models_input_tokens() {
    let got = scenario(|s| {
        let s = s
            .max_input_tokens(200)
            .trigger(ContextSize::Messages(6))
            .unwrap();
        s.keep(ContextSize::Fraction(0.2)).unwrap()
    });
    assert_eq!(got, recorded("summarization")["tokens_keep"]);
}

#[test]
fn a_clause_of_a_fraction_and_a_message_count_triggers_when_both_are_met() {
    let clause = TriggerClause {
        fraction: Some(0.5),
        messages: Some(6),
        ..TriggerClause::default()
    };
    let got = scenario(|s| {
        let s = s.max_input_tokens(200).trigger_when(clause).unwrap();
        s.keep(ContextSize::Messages(2)).unwrap()
    });
    assert_eq!(got, recorded("summarization")["fraction_and_clause"]);
}

#[test]
fn the_messages_to_summarise_are_trimmed_to_their_newest_lines() {
    let got = scenario(|s| {
        let s = s
            .trigger(ContextSize::Messages(6))
            .unwrap()
            .keep(ContextSize::Messages(1))
            .unwrap();
        s.trim_tokens_to_summarize(Some(92))
            .summary_prompt("Summarise:\n{messages}\n\n")
    });
    assert_eq!(got, recorded("summarization")["trimmed_for_the_summary"]);
}

#[test]
fn the_approximate_counter_counts_as_langchain() {
    let mut answer = ai("It is sunny.");
    answer.usage_metadata =
        Some(json!({"input_tokens": 30, "output_tokens": 30, "total_tokens": 60}));
    answer
        .response_metadata
        .insert("model_provider".into(), json!("openai"));
    let blocks = vec![
        json!({"type": "text", "text": "and this?"}),
        json!({"type": "image_url", "image_url": {"url": "x"}}),
    ];
    let history = vec![
        human("hello there"),
        ai("").with_tool_call(call("weather", json!({"city": "Zürich"}), "c1")),
        tool("Zürich: sunny", "c1").with_name("weather"),
        answer,
        Message::new(agent_state::MessageType::Human, Content::Blocks(blocks)),
    ];
    let plain = ApproximateTokenCounter::default();
    let scaled = ApproximateTokenCounter {
        use_usage_metadata_scaling: true,
        ..plain.clone()
    };
    let counts = [
        plain.count(&history),
        scaled.count(&history),
        scaled.count(&history[..4]),
        plain.count(&history[..1]),
    ];
    assert_eq!(json!(counts), recorded("summarization")["counts"]);
}

#[test]
fn bad_sizes_are_refused_naming_the_parameter() {
    let new = || Summarization::new(Recorder::new([]));
    let err = |r: Result<Summarization<_>, SummarizationConfigError>| r.err().unwrap().to_string();
    assert_eq!(
        err(new().keep(ContextSize::Fraction(1.5))),
        "Fractional keep values must be between 0 and 1, got 1.5."
    );
    assert_eq!(
        err(new().trigger(ContextSize::Messages(0))),
        "trigger thresholds must be greater than 0, got 0."
    );
    assert_eq!(
        err(new().trigger_when(TriggerClause::default())),
        "trigger clause must specify at least one of 'tokens', 'messages', 'fraction'"
    );
    let no_profile = new().trigger(ContextSize::Fraction(0.5)).err();
    assert_eq!(no_profile, Some(SummarizationConfigError::NoProfile));
}

/// A scripted summariser's reply function.
type Reply = Box<dyn Fn(&ModelRequest<Chat>) -> Result<Message, ModelError> + Send + Sync>;

/// A summariser failing with `errors` (by attempt) before it answers, and
/// how often it was called.
fn flaky(errors: Vec<ModelError>) -> (FnModel<Reply>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let errors = Mutex::new(errors.into_iter());
    let counted = Arc::clone(&calls);
    let reply: Reply = Box::new(move |_: &ModelRequest<Chat>| {
        counted.fetch_add(1, Ordering::SeqCst);
        match errors.lock().unwrap().next() {
            Some(error) => Err(error),
            None => Ok(ai("Short.")),
        }
    });
    (FnModel(reply), calls)
}

/// Two runs of a thread whose second summarises with `summarizer`: the
/// second run's message count (or its error) and the thread's after it.
fn second_run(summarizer: FnModel<Reply>) -> (Result<usize, GraphError>, usize) {
    let summarize = Summarization::new(summarizer)
        .trigger(ContextSize::Messages(3))
        .unwrap()
        .keep(ContextSize::Messages(1))
        .unwrap();
    let model = Recorder::new([ai("one"), ai("two")]);
    let agent = create_agent(model).middleware(summarize).compile().unwrap();
    let saver = MemoryCheckpointer::new();
    block_on(agent.run(input::<Chat>("hi")).on_thread(&saver, "t")).unwrap();
    let out = block_on(agent.run(input::<Chat>("again")).on_thread(&saver, "t"));
    let stored = block_on(agent.get_state(&saver, "t")).unwrap().values;
    (
        out.map(|o| o.state.messages().len()),
        stored.messages().len(),
    )
}

fn api(status: u16) -> ModelError {
    ModelError::Api {
        status,
        message: format!("status {status}"),
    }
}

#[test]
fn a_failing_summary_is_tried_three_times_then_fails_the_run_with_history_kept() {
    let (summarizer, calls) = flaky(vec![api(500), api(502), api(503)]);
    let (out, stored) = second_run(summarizer);
    let err = out.unwrap_err();
    assert!(err.to_string().contains("status 503"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The summary's step applied nothing: the three messages are all there.
    assert_eq!(stored, 3);
}

#[test]
fn a_refused_summary_request_is_not_retried() {
    let (summarizer, calls) = flaky(vec![api(400)]);
    let (out, _) = second_run(summarizer);
    assert!(out.unwrap_err().to_string().contains("status 400"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_summary_that_fails_once_is_retried() {
    let (summarizer, calls) = flaky(vec![ModelError::other("connection reset")]);
    let (out, stored) = second_run(summarizer);
    // The summary, "again" and "two".
    assert_eq!(out.unwrap(), 3);
    assert_eq!(stored, 3);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

/// The approximate counter's settings decide the trigger: before the
/// second run's model call ("hi", "one", "again") LangChain's 4 characters
/// a token count 5 + 6 + 6 = 17 tokens, under 20; at one character a token
/// 9 + 15 + 12 = 36, and the history is summarised.
#[test]
fn the_approximate_counter_settings_decide_the_trigger() {
    let summarized = |chars_per_token: f64| {
        let (summarizer, calls) = flaky(Vec::new());
        let counter = ApproximateTokenCounter {
            chars_per_token,
            ..ApproximateTokenCounter::default()
        };
        let summarize = Summarization::new(summarizer)
            .trigger(ContextSize::Tokens(20))
            .unwrap()
            .keep(ContextSize::Messages(1))
            .unwrap()
            .approximate_counter(counter);
        let model = Recorder::new([ai("one"), ai("two")]);
        let agent = create_agent(model).middleware(summarize).compile().unwrap();
        let saver = MemoryCheckpointer::new();
        block_on(agent.run(input::<Chat>("hi")).on_thread(&saver, "t")).unwrap();
        block_on(agent.run(input::<Chat>("again")).on_thread(&saver, "t")).unwrap();
        calls.load(Ordering::SeqCst)
    };
    assert_eq!(summarized(4.0), 0);
    assert_eq!(summarized(1.0), 1);
}
