//! What the call middleware tests share (model and tool retries, fallback,
//! tool selection, context editing, PII): a scripted model that may fail
//! and records what it was sent, and the messages as the reference
//! scripts print them (`tests/reference/calls_common.py`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_state::agent::{ChatModel, ModelError, ModelRequest, ToolChoice};
use agent_state::base::HasMessages;
use agent_state::base::MessagesState;
use agent_state::futures::future::{ready, BoxFuture};
use agent_state::graph::Graph;
use agent_state::serde_json::{json, Map, Value};
use agent_state::{AgentState, Content, Message, MessageType, ToolCall};

/// The agent's state in these tests: the messages.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
}

/// One reply of a [`Script`]: a message, or an error to fail with.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // a test script of a few steps
pub enum Step {
    /// Answer with this message.
    Reply(Message),
    /// Fail as a provider's rate limit (HTTP 429).
    RateLimited(&'static str),
    /// Fail with this HTTP status.
    Api(u16, &'static str),
}

impl Step {
    fn result(&self) -> Result<Message, ModelError> {
        match self {
            Self::Reply(message) => Ok(message.clone()),
            Self::RateLimited(message) => Err(ModelError::RateLimited {
                message: (*message).to_owned(),
                retry_after: None,
            }),
            Self::Api(status, message) => Err(ModelError::Api {
                status: *status,
                message: (*message).to_owned(),
            }),
        }
    }
}

/// A model that answers with its steps in order (then from the start
/// again), counting calls and recording each request as the Python
/// `ScriptedChat` does.
pub struct Script {
    steps: Vec<Step>,
    calls: AtomicUsize,
    seen: Mutex<Vec<Value>>,
    schemas: bool,
}

impl Script {
    /// A shared script (the agent gets a clone, the test keeps one).
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Self::recording(steps, false)
    }

    /// A script that also records the tools' definitions
    /// (`tool_schemas`), as `scripted(.., record_schemas=True)`.
    pub fn with_schemas(steps: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Self::recording(steps, true)
    }

    fn recording(steps: impl IntoIterator<Item = Step>, schemas: bool) -> Arc<Self> {
        Arc::new(Self {
            steps: steps.into_iter().collect(),
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            schemas,
        })
    }

    /// How many times it was called.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The requests, as `{"messages", "tools", "tool_choice"}`.
    pub fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

impl<S: HasMessages + Send + Sync> ChatModel<S> for Script {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        let mut messages: Vec<Value> = Vec::new();
        if let Some(prompt) = request.system_prompt() {
            messages.push(json!({"type": "system", "content": prompt}));
        }
        messages.extend(request.messages().iter().map(|m| plain_with(m, true)));
        let choice = request.settings().tool_choice.as_ref().map(|c| match c {
            ToolChoice::Required => "any".to_owned(),
            ToolChoice::Auto => "auto".to_owned(),
            ToolChoice::None => "none".to_owned(),
            ToolChoice::Tool(name) => name.clone(),
        });
        let mut seen = json!({
            "messages": messages,
            "tools": request.tools().iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "tool_choice": choice,
        });
        if self.schemas {
            seen["tool_schemas"] = request
                .tools()
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
                .collect();
        }
        self.seen.lock().unwrap().push(seen);
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(ready(self.steps[call % self.steps.len()].result()))
    }
}

/// An AI message calling `calls` (`(name, id, args)`).
pub fn calling(calls: &[(&str, &str, Value)]) -> Message {
    let mut message = agent_state::ai("");
    for (name, id, args) in calls {
        let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
        message = message.with_tool_call(ToolCall::new(*name, args, *id));
    }
    message
}

/// A message as the reference scripts print it: no id, the fields that
/// say what was said.
pub fn plain(message: &Message) -> Value {
    plain_with(message, false)
}

/// [`plain`], with the `context_editing` response metadata when `metadata`.
pub fn plain_with(message: &Message, metadata: bool) -> Value {
    let content = match &message.content {
        Content::Text(text) => Value::String(text.clone()),
        Content::Blocks(blocks) => Value::Array(blocks.clone()),
    };
    let mut out = json!({"type": message.kind.as_str(), "content": content});
    if let Some(name) = &message.name {
        out["name"] = json!(name);
    }
    if message.kind == MessageType::Ai && !message.tool_calls.is_empty() {
        out["tool_calls"] = message
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "args": c.args, "id": c.id}))
            .collect();
    }
    if message.kind == MessageType::Tool {
        out["tool_call_id"] = json!(message.tool_call_id);
        out["status"] = json!(message.status);
    }
    if metadata {
        if let Some(meta) = message.response_metadata.get("context_editing") {
            out["response_metadata"] = json!({"context_editing": meta});
        }
    }
    out
}

/// Every message, [`plain`].
pub fn plain_all(messages: &[Message]) -> Value {
    messages.iter().map(plain).collect()
}

/// Runs `agent` on "hi"-like `text` and gives what the reference scripts
/// print: the messages, or that it raised; with the model's call count.
pub fn outcome<S>(agent: &Graph<S>, text: &str, calls: impl Fn() -> usize) -> Value
where
    S: HasMessages + agent_state::graph::GraphState,
{
    let run = agent_state::checkpoint::block_on(agent.run(agent_state::agent::input::<S>(text)));
    match run {
        Ok(out) => json!({"messages": plain_all(out.state.messages()), "calls": calls()}),
        Err(error) => json!({"raised": error.to_string(), "calls": calls()}),
    }
}
