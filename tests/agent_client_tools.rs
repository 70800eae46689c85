//! Tools the caller executes (`ClientTools`, a run's context): offered to
//! the model, their calls handed back by ending the run, their answers
//! taken from the next run's tool messages.
#![cfg(feature = "agent")]

use agent_state::agent::{
    create_agent, input, ClientTools, FnTool, ScriptedModel, ToolDefinition, ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::message::MessageType;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Map};
use agent_state::{ai, tool, AgentState, ToolCall};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
#[serde(crate = "agent_state::serde")]
struct NoArgs {}

fn browser_tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: format!("{name}, run in the browser"),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

fn call(name: &str, id: &str) -> ToolCall {
    ToolCall::new(name, Map::new(), id)
}

fn clock() -> FnTool<Chat> {
    FnTool::sync("clock", "The time", |_: NoArgs, _: &ToolRuntime<Chat>| {
        "noon".to_owned()
    })
}

#[test]
fn a_client_call_ends_the_run_and_its_answer_continues_it() {
    let model = std::sync::Arc::new(
        ScriptedModel::new([ai("").with_tool_call(call("confirm", "c1")), ai("done")]).recording(),
    );
    let agent = create_agent::<Chat, _>(std::sync::Arc::clone(&model))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let tools = ClientTools::new([browser_tool("confirm")]);
    let run = agent.run(input::<Chat>("go")).context(tools.clone());
    let out = block_on(run.on_thread(&saver, "t")).unwrap();
    let last = out.state.messages().last().unwrap();
    assert_eq!(last.tool_calls[0].name, "confirm");
    assert_eq!(model.seen()[0].tools, vec!["confirm".to_owned()]);

    let run = agent.run(input::<Chat>(tool("yes", "c1"))).context(tools);
    let out = block_on(run.on_thread(&saver, "t")).unwrap();
    let kinds: Vec<MessageType> = out.state.messages().iter().map(|m| m.kind).collect();
    use MessageType::{Ai, Human, Tool};
    assert_eq!(kinds, vec![Human, Ai, Tool, Ai]);
    assert_eq!(out.state.messages()[3].text(), "done");
    // The second call saw the caller's answer.
    assert_eq!(model.seen()[1].messages[2].text(), "yes");
}

#[test]
fn the_agents_own_calls_are_answered_and_the_callers_left() {
    let both = ai("")
        .with_tool_call(call("clock", "c1"))
        .with_tool_call(call("confirm", "c2"));
    let model = ScriptedModel::new([both, ai("done")]);
    let agent = create_agent::<Chat, _>(model)
        .tool(clock())
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let tools = ClientTools::new([browser_tool("confirm")]);
    let run = agent.run(input::<Chat>("go")).context(tools.clone());
    let out = block_on(run.on_thread(&saver, "t")).unwrap();
    let answers: Vec<_> = out.state.messages()[2..]
        .iter()
        .map(|m| (m.kind, m.tool_call_id.clone()))
        .collect();
    assert_eq!(answers, vec![(MessageType::Tool, Some("c1".to_owned()))]);

    let run = agent.run(input::<Chat>(tool("ok", "c2"))).context(tools);
    let out = block_on(run.on_thread(&saver, "t")).unwrap();
    assert_eq!(out.state.messages().last().unwrap().text(), "done");
}

#[test]
fn an_agent_tool_shadows_a_client_tool_of_its_name() {
    let model = std::sync::Arc::new(
        ScriptedModel::new([ai("").with_tool_call(call("clock", "c1")), ai("it is noon")])
            .recording(),
    );
    let agent = create_agent::<Chat, _>(std::sync::Arc::clone(&model))
        .tool(clock())
        .compile()
        .unwrap();
    let tools = ClientTools::new([browser_tool("clock"), browser_tool("confirm")]);
    let out = block_on(agent.run(input::<Chat>("time?")).context(tools)).unwrap();
    assert_eq!(out.state.messages()[2].text(), "noon");
    assert_eq!(out.state.messages()[3].text(), "it is noon");
    assert_eq!(model.seen()[0].tools, vec!["clock", "confirm"]);
}

#[test]
fn without_client_tools_an_unknown_call_is_answered_with_an_error() {
    let model = ScriptedModel::new([ai("").with_tool_call(call("confirm", "c1")), ai("sorry")]);
    let agent = create_agent::<Chat, _>(model)
        .tool(clock())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(out.state.messages()[2].kind, MessageType::Tool);
    assert_eq!(out.state.messages().last().unwrap().text(), "sorry");
}
