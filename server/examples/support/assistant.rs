//! `assistant`: an agent (`agent_state::agent::create_agent`) around a
//! model that needs no network, so the AG-UI endpoint can be tried, and
//! validated in CI, with nothing else running. Shared by the `serve`
//! example and the server's AG-UI tests.
//!
//! The model answers by rules on the conversation:
//!
//! * after a tool's answer: `The tool said: <answer>`;
//! * a message `count words: <text>`: a call of the agent's own tool
//!   `word_count` on the text;
//! * a message naming a tool the model is offered that the agent does not
//!   have (a browser's, AG-UI's `tools`): a call of it, `{"request": <the
//!   message>}` its arguments;
//! * anything else: `You said: <message>`.
//!
//! Text streams a word at a time, as a provider's tokens.

use std::time::Duration;

use agent_state::agent::{
    create_agent, ChatChunk, ChatModel, FnTool, ModelError, ModelRequest, ToolRuntime,
};
use agent_state::base::MessagesState;
use agent_state::futures::future::{ready, BoxFuture};
use agent_state::futures::stream::{self, BoxStream, StreamExt};
use agent_state::graph::Graph;
use agent_state::message::MessageType;
use agent_state::{ai, AgentState, Message, MessageChunk, ToolCall};
use serde_json::{json, Map};

/// A conversation with an agent.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct Assistant {
    /// The conversation.
    #[state(flatten)]
    pub base: MessagesState,
}

/// The model: rules, no network (see the module's doc).
pub struct LocalModel;

/// `word_count`'s arguments.
#[derive(serde::Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
pub struct Words {
    /// The text whose words are counted.
    pub text: String,
}

/// The answer to `request`.
fn answer(request: &ModelRequest<Assistant>) -> Message {
    let messages = request.messages();
    let Some(last) = messages.last() else {
        return ai("Hello!");
    };
    if last.kind == MessageType::Tool {
        return ai(format!("The tool said: {}", last.text()));
    }
    let said = last.text();
    if let Some(text) = said.strip_prefix("count words: ") {
        let args = json!({"text": text});
        return ai("").with_tool_call(call("word_count", args));
    }
    let own = ["word_count"];
    let browser = request
        .tools()
        .iter()
        .find(|t| !own.contains(&t.name.as_str()) && said.contains(&t.name));
    match browser {
        Some(tool) => ai("").with_tool_call(call(&tool.name, json!({"request": said}))),
        None => ai(format!("You said: {said}")),
    }
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    let args: Map<String, serde_json::Value> = args.as_object().cloned().unwrap_or_default();
    let id = format!("call_{}", agent_state::new_message_id());
    ToolCall::new(name, args, id)
}

impl ChatModel<Assistant> for LocalModel {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<Assistant>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(ready(Ok(answer(request))))
    }

    /// Text a word every 20 ms; tool calls whole.
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<Assistant>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        let message = answer(request);
        if !message.tool_calls.is_empty() {
            return stream::once(ready(Ok(MessageChunk::whole(&message)))).boxed();
        }
        let words: Vec<String> = message
            .text()
            .split_inclusive(' ')
            .map(str::to_owned)
            .collect();
        stream::iter(words)
            .then(|word| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(MessageChunk::ai(word))
            })
            .boxed()
    }
}

/// The agent: the local model and one tool of its own, `word_count`.
pub fn graph() -> Result<Graph<Assistant>, agent_state::agent::AgentError> {
    let count = FnTool::sync(
        "word_count",
        "Counts the words of a text",
        |args: Words, _: &ToolRuntime<Assistant>| args.text.split_whitespace().count().to_string(),
    );
    create_agent(LocalModel)
        .system_prompt("You are a helpful assistant.")
        .tool(count)
        .compile()
}
