//! `ModelCallLimit` against LangChain's `ModelCallLimitMiddleware`
//! (`tests/reference/middleware/model_call_limit.py`): two runs of one
//! thread on a checkpointer (the thread count goes on, the run count starts
//! over), the run limit, the error, and the refused configurations.

use agent_state::agent::middleware::{
    LimitConfigError, ModelCallExit, ModelCallLimit, ModelCallLimitState,
};
use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::Graph;
use agent_state::serde_json::{json, Value};
use agent_state::{ai, AgentState, Message};

use crate::support::{call, dump, recorded};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    limits: ModelCallLimitState,
}

#[derive(serde::Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
struct Text {
    text: String,
}

fn lookup() -> Message {
    ai("").with_tool_call(call("echo", json!({"text": "hi"}), "c1"))
}

fn agent(model: ScriptedModel, limit: ModelCallLimit) -> Graph<Chat> {
    let echo = FnTool::sync(
        "echo",
        "Says the text back.",
        |a: Text, _: &ToolRuntime<Chat>| a.text,
    );
    create_agent(model)
        .tool(echo)
        .middleware(limit)
        .compile()
        .unwrap()
}

/// One run on `thread`, as the reference prints it; LangChain has no stored
/// run count (`UntrackedValue` is never checkpointed) where ours reads as
/// its default, 0: that is checked here and left out of the comparison.
fn run(graph: &Graph<Chat>, saver: &MemoryCheckpointer, text: &str, thread: &str) -> Value {
    let out = block_on(graph.run(input::<Chat>(text)).on_thread(saver, thread)).unwrap();
    let stored = block_on(graph.get_state(saver, thread)).unwrap().values;
    assert_eq!(
        stored.limits.run_model_call_count, 0,
        "the run count is not stored"
    );
    json!({
        "messages": dump(out.state.messages()),
        "stored_thread_count": stored.limits.thread_model_call_count,
        "stored_run_count": null,
    })
}

#[test]
fn the_thread_count_persists_across_runs_and_the_run_count_starts_over() {
    let model = ScriptedModel::new([lookup(), ai("done"), lookup()]);
    let limit = ModelCallLimit::new(Some(3), Some(2)).unwrap();
    let graph = agent(model, limit);
    let saver = MemoryCheckpointer::new();
    let first = run(&graph, &saver, "one", "t");
    let second = run(&graph, &saver, "two", "t");
    let expected = recorded("model_call_limit");
    assert_eq!(first, expected["thread_limit"][0]);
    assert_eq!(second, expected["thread_limit"][1]);
}

#[test]
fn the_run_limit_ends_the_loop_with_an_ai_message() {
    let limit = ModelCallLimit::new(None, Some(1))
        .unwrap()
        .exit_behavior(ModelCallExit::End);
    let graph = agent(ScriptedModel::new([lookup()]), limit);
    let saver = MemoryCheckpointer::new();
    let out = run(&graph, &saver, "one", "r");
    assert_eq!(out, recorded("model_call_limit")["run_limit"]);
}

#[test]
fn the_error_exit_fails_the_run_naming_both_limits() {
    let limit = ModelCallLimit::new(Some(1), Some(1))
        .unwrap()
        .exit_behavior("error".parse().unwrap());
    let graph = agent(ScriptedModel::new([lookup()]), limit);
    let err = block_on(graph.run(input::<Chat>("one"))).unwrap_err();
    let expected = recorded("model_call_limit")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    let message = expected.trim_start_matches("ModelCallLimitExceededError: ");
    assert!(err.to_string().contains(message), "{err}");
}

#[test]
fn a_configuration_without_a_limit_or_with_an_unknown_exit_is_refused() {
    let expected = recorded("model_call_limit")["bad_config"].clone();
    let no_limit = ModelCallLimit::new(None, None).unwrap_err();
    assert_eq!(no_limit, LimitConfigError::NoLimit);
    let unknown = "stop".parse::<ModelCallExit>().unwrap_err();
    assert_eq!(json!([no_limit.to_string(), unknown.to_string()]), expected);
}
