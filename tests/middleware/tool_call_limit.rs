//! `ToolCallLimit` against LangChain's `ToolCallLimitMiddleware`
//! (`tests/reference/middleware/tool_call_limit.py`): `continue` for one
//! tool over two runs of one thread on a checkpointer (thread counts go on,
//! run counts start over), `end` for all tools, `error`, and the refused
//! configurations.

use std::collections::BTreeMap;

use agent_state::agent::middleware::{
    LimitConfigError, ToolCallExit, ToolCallLimit, ToolCallLimitState,
};
use agent_state::agent::{
    create_agent, input, AgentMiddleware, FnTool, ScriptedModel, ToolRuntime,
};
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
    limits: ToolCallLimitState,
}

#[derive(serde::Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
struct Text {
    text: String,
}

fn calls(pairs: &[(&str, &str)]) -> Message {
    pairs.iter().fold(ai(""), |m, (name, id)| {
        m.with_tool_call(call(name, json!({"text": id}), id))
    })
}

fn agent(model: ScriptedModel, limit: ToolCallLimit) -> Graph<Chat> {
    let echo = FnTool::sync(
        "echo",
        "Says the text back.",
        |a: Text, _: &ToolRuntime<Chat>| a.text,
    );
    let other = FnTool::sync(
        "other",
        "Says the text louder.",
        |a: Text, _: &ToolRuntime<Chat>| a.text.to_uppercase(),
    );
    create_agent(model)
        .tool(echo)
        .tool(other)
        .middleware(limit)
        .compile()
        .unwrap()
}

/// One run on `thread`, as the reference prints it. The run counts are
/// never stored (LangChain: absent; ours: the default, empty), checked
/// here and printed as LangChain's `null`.
fn run(graph: &Graph<Chat>, saver: &MemoryCheckpointer, text: &str, thread: &str) -> Value {
    let out = block_on(graph.run(input::<Chat>(text)).on_thread(saver, thread)).unwrap();
    let stored = block_on(graph.get_state(saver, thread)).unwrap().values;
    assert_eq!(
        stored.limits.run_tool_call_count,
        BTreeMap::new(),
        "not stored"
    );
    json!({
        "messages": dump(out.state.messages()),
        "stored_thread_counts": stored.limits.thread_tool_call_count,
        "stored_run_counts": null,
    })
}

#[test]
fn continue_blocks_calls_past_the_limit_and_counts_go_on_across_runs() {
    let model = ScriptedModel::new([
        calls(&[("echo", "c1"), ("echo", "c2"), ("other", "c3")]),
        calls(&[("echo", "c4")]),
        ai("done"),
        calls(&[("echo", "c5"), ("echo", "c6")]),
        ai("done again"),
    ]);
    let limit = ToolCallLimit::new(Some(3), Some(2))
        .unwrap()
        .tool_name("echo");
    let name = AgentMiddleware::<Chat>::name(&limit).to_owned();
    let graph = agent(model, limit);
    let saver = MemoryCheckpointer::new();
    let first = run(&graph, &saver, "one", "t");
    let second = run(&graph, &saver, "two", "t");
    assert_eq!(
        json!([first, second, name]),
        recorded("tool_call_limit")["continue"]
    );
}

#[test]
fn end_answers_every_pending_call_and_says_which_limit_was_reached() {
    let model = ScriptedModel::new([calls(&[("echo", "a"), ("other", "b")])]);
    let limit = ToolCallLimit::new(None, Some(1))
        .unwrap()
        .exit_behavior("end".parse().unwrap());
    let name = AgentMiddleware::<Chat>::name(&limit).to_owned();
    let graph = agent(model, limit);
    let mut out = run(&graph, &MemoryCheckpointer::new(), "one", "e");
    out["name"] = json!(name);
    assert_eq!(out, recorded("tool_call_limit")["end"]);
}

#[test]
fn error_fails_the_run_with_the_counts_had_the_calls_run() {
    let model = ScriptedModel::new([calls(&[("echo", "x"), ("echo", "y")])]);
    let limit = ToolCallLimit::new(Some(1), None)
        .unwrap()
        .tool_name("echo")
        .exit_behavior(ToolCallExit::Error);
    let err = block_on(agent(model, limit).run(input::<Chat>("one"))).unwrap_err();
    let expected = recorded("tool_call_limit")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    let message = expected.trim_start_matches("ToolCallLimitExceededError: ");
    assert!(err.to_string().contains(message), "{err}");
}

#[test]
fn configurations_langchain_refuses_are_refused_in_its_words() {
    let errors = [
        ToolCallLimit::new(None, None).unwrap_err(),
        "stop".parse::<ToolCallExit>().unwrap_err(),
        ToolCallLimit::new(Some(1), Some(2)).unwrap_err(),
    ];
    assert_eq!(
        errors[2],
        LimitConfigError::RunAboveThread { run: 2, thread: 1 }
    );
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(json!(texts), recorded("tool_call_limit")["bad_config"]);
}
