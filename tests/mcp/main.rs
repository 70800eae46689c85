//! MCP tools (`agent::mcp`) against a real MCP server: tests/mcp/server.py
//! on the official Python SDK (`mcp`, pinned in tests/mcp/requirements.txt,
//! installed by tests/mcp/setup.sh), spawned over stdio and served over
//! streamable HTTP on an ephemeral port. A scripted model calls its tools
//! through the agent; the tests check the answers, the schemas the model
//! is offered, the credentials reaching the server and the error answers.
#![cfg(feature = "mcp")]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use agent_state::agent::mcp::{McpError, McpServer, McpTools};
use agent_state::agent::{create_agent, input, ChatModel, Tool};
use agent_state::base::{HasMessages, MessagesStateUpdate};
use agent_state::graph::{Graph, Input};
use agent_state::serde_json::{json, Value};
use agent_state::{human, AgentState, Message, MessageType, ToolStatus};

use support::{call, model, python, stdio_server, Chat, HttpProcess};

/// A run may take this long at most: a hang fails the test instead of
/// stalling the suite.
const RUN_LIMIT: Duration = Duration::from_secs(60);

fn agent(model: impl ChatModel<Chat> + 'static, mcp: &McpTools<Chat>) -> Graph<Chat> {
    mcp.tools()
        .into_iter()
        .fold(create_agent(model), |agent, tool| agent.shared_tool(tool))
        .compile()
        .expect("the agent builds")
}

/// Runs `agent` on "go" with `tokens` as the state's per-tool tokens; the
/// tool messages of the run.
async fn tool_answers(agent: &Graph<Chat>, tokens: &[(&str, &str)]) -> Vec<Message> {
    let tokens: HashMap<String, String> = tokens
        .iter()
        .map(|(tool, token)| ((*tool).to_owned(), (*token).to_owned()))
        .collect();
    let update = Chat::lift(MessagesStateUpdate::new().message(human("go")))
        .mcp_ucan_context(tokens);
    let run = agent.run(Input::Update(update));
    let out = tokio::time::timeout(RUN_LIMIT, run)
        .await
        .expect("the run ends")
        .expect("the run succeeds");
    out.state
        .messages()
        .iter()
        .filter(|m| m.kind == MessageType::Tool)
        .cloned()
        .collect()
}

fn whoami(answer: &Message) -> Value {
    agent_state::serde_json::from_str(&answer.text()).expect("whoami answers JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_tools_are_offered_as_listed_and_answer() {
    let Some(python) = python() else { return };
    let mcp = McpTools::<Chat>::connect(stdio_server(&python)).await.unwrap();
    assert_eq!(mcp.names(), ["add", "whoami", "fail", "slow", "crash"]);
    let (model, offered) = model(vec![call("add", json!({"a": 2, "b": 3}), "c1")]);
    let answers = tool_answers(&agent(model, &mcp), &[]).await;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].text(), "5");
    assert_eq!(answers[0].status, Some(ToolStatus::Success));
    let offered = offered.lock().unwrap();
    let add = offered[0].iter().find(|t| t.name == "add").unwrap();
    println!("{:#?}", offered[0]);
    assert_eq!(add.description, "Adds two integers.");
}
