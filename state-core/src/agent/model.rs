//! The chat model an agent calls: the request it gets, what it answers, and
//! the chunks it streams.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Map, Value};

use crate::base::HasMessages;
use crate::graph::BoxError;
use crate::message::{Content, Message, MessageType, ToolCall};

/// A tool as the model sees it: its name, what it is for, and the JSON
/// Schema of its arguments (an object schema).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The name the model calls it by; unique within an agent.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// How the model may use the tools (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the default when tools are given).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call to this tool.
    Tool(String),
}

/// Settings sent with every model call (LangChain's `model_settings`); a
/// `wrap_model_call` may change them per call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// The model name, when the provider serves several.
    pub model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens to generate.
    pub max_tokens: Option<u32>,
    /// How the model may use the tools.
    pub tool_choice: Option<ToolChoice>,
}

/// What one model call is given: LangChain's `ModelRequest`. Cheap to clone
/// (the state and the tool list are shared), so a `wrap_model_call` can
/// retry with it or change a copy.
pub struct ModelRequest<S> {
    state: Arc<S>,
    system_prompt: Option<Arc<str>>,
    messages: Option<Arc<[Message]>>,
    tools: Arc<[ToolDefinition]>,
    settings: ModelSettings,
}

impl<S> Clone for ModelRequest<S> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            system_prompt: self.system_prompt.clone(),
            messages: self.messages.clone(),
            tools: Arc::clone(&self.tools),
            settings: self.settings.clone(),
        }
    }
}

impl<S: HasMessages> ModelRequest<S> {
    /// A request on `state` with its conversation as the messages.
    pub fn new(state: Arc<S>) -> Self {
        Self {
            state,
            system_prompt: None,
            messages: None,
            tools: Arc::from(Vec::new()),
            settings: ModelSettings::default(),
        }
    }

    /// The messages sent to the model (without the system prompt): the
    /// state's conversation unless a middleware replaced them.
    pub fn messages(&self) -> &[Message] {
        match &self.messages {
            Some(messages) => messages,
            None => self.state.messages(),
        }
    }
}

impl<S> ModelRequest<S> {
    /// The agent's state, read-only: what a middleware reads to decide
    /// what to tell the model.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The shared state.
    pub fn shared_state(&self) -> &Arc<S> {
        &self.state
    }

    /// The system prompt, sent before the messages.
    pub fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }

    /// The tools the model may call.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// The model settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The request with another system prompt (LangChain's
    /// `request.override(system_prompt=..)`).
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(Arc::from(prompt.into()));
        self
    }

    /// The request without a system prompt.
    #[must_use]
    pub fn without_system_prompt(mut self) -> Self {
        self.system_prompt = None;
        self
    }

    /// The request with other messages (the state is not changed: only
    /// what this call sends).
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = Some(Arc::from(messages));
        self
    }

    /// The request with other tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = Arc::from(tools);
        self
    }

    /// The request with other settings.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    pub(crate) fn set_shared(
        mut self,
        system_prompt: Option<Arc<str>>,
        tools: Arc<[ToolDefinition]>,
        settings: ModelSettings,
    ) -> Self {
        self.system_prompt = system_prompt;
        self.tools = tools;
        self.settings = settings;
        self
    }
}

/// What a model call gave: LangChain's `ModelResponse`. Usually one AI
/// message; a `wrap_model_call` may add others (they are all appended to the
/// conversation, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The messages, the model's AI message among them.
    pub messages: Vec<Message>,
}

impl ModelResponse {
    /// A response of one message.
    pub fn new(message: Message) -> Self {
        Self {
            messages: vec![message],
        }
    }

    /// The last AI message of the response.
    pub fn ai_message(&self) -> Option<&Message> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Ai)
    }
}

/// Token counts of one model call, stored in the AI message's
/// `usage_metadata` as LangChain stores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

impl Usage {
    /// LangChain's `usage_metadata` JSON.
    pub fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        })
    }

    /// The usage recorded on a message, if any.
    pub fn of(message: &Message) -> Option<Self> {
        let map = message.usage_metadata.as_ref()?.as_object()?;
        let get = |key: &str| map.get(key).and_then(Value::as_u64).unwrap_or(0);
        Some(Self {
            input_tokens: get("input_tokens"),
            output_tokens: get("output_tokens"),
            total_tokens: get("total_tokens"),
        })
    }
}

/// A piece of a tool call as it streams: the chunks of one call share its
/// `index`; the first usually carries the id and the name, and the
/// arguments arrive as pieces of a JSON string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallChunk {
    /// Which call of the message this piece belongs to.
    pub index: usize,
    /// The call's id, when this piece carries it.
    pub id: Option<String>,
    /// The tool's name, when this piece carries it.
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text.
    pub args: String,
}

/// A piece of a streamed AI message (LangChain's `AIMessageChunk`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatChunk {
    /// The message id, when this chunk carries it.
    pub id: Option<String>,
    /// The next piece of text.
    pub text: String,
    /// Pieces of tool calls.
    pub tool_calls: Vec<ToolCallChunk>,
    /// Token counts (usually on the last chunk).
    pub usage: Option<Usage>,
    /// Provider metadata (finish reason, model name, ...), merged into the
    /// message's `response_metadata`.
    pub metadata: Map<String, Value>,
}

impl ChatChunk {
    /// The whole of `message` as one chunk: what a model that does not
    /// stream yields.
    pub fn whole(message: &Message) -> Self {
        let tool_calls = message
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| ToolCallChunk {
                index,
                id: call.id.clone(),
                name: Some(call.name.clone()),
                args: Value::Object(call.args.clone()).to_string(),
            })
            .collect();
        Self {
            id: message.id.clone(),
            text: message.text(),
            tool_calls,
            usage: Usage::of(message),
            metadata: message.response_metadata.clone(),
        }
    }
}

/// Folds the chunks of a stream into the AI message they make.
#[derive(Debug, Default)]
pub struct ChunkAccumulator {
    id: Option<String>,
    text: String,
    calls: Vec<ToolCallChunk>,
    usage: Option<Usage>,
    metadata: Map<String, Value>,
}

impl ChunkAccumulator {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a chunk.
    pub fn push(&mut self, chunk: &ChatChunk) {
        if chunk.id.is_some() {
            self.id.clone_from(&chunk.id);
        }
        self.text.push_str(&chunk.text);
        for piece in &chunk.tool_calls {
            let at = match self.calls.iter().position(|c| c.index == piece.index) {
                Some(at) => at,
                None => {
                    self.calls.push(ToolCallChunk {
                        index: piece.index,
                        ..ToolCallChunk::default()
                    });
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[at];
            if piece.id.is_some() {
                call.id.clone_from(&piece.id);
            }
            if let Some(name) = &piece.name {
                call.name.get_or_insert_with(String::new).push_str(name);
            }
            call.args.push_str(&piece.args);
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        self.metadata
            .extend(chunk.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The AI message: text, tool calls whose arguments parse as a JSON
    /// object, the others as `invalid_tool_calls` (with the parse error),
    /// usage and metadata.
    pub fn finish(mut self) -> Message {
        self.calls.sort_by_key(|c| c.index);
        let mut message = Message::new(MessageType::Ai, Content::Text(self.text));
        message.id = self.id;
        for call in self.calls {
            let name = call.name.unwrap_or_default();
            match parse_args(&call.args) {
                Ok(args) => message.tool_calls.push(ToolCall {
                    name,
                    args,
                    id: call.id,
                }),
                Err(error) => message
                    .invalid_tool_calls
                    .push(invalid_tool_call(&name, &call.args, call.id, &error)),
            }
        }
        message.usage_metadata = self.usage.map(Usage::to_json);
        message.response_metadata = self.metadata;
        message
    }
}

/// A tool call's arguments: a JSON object (an empty string is no argument).
pub fn parse_args(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the arguments are {}, not a JSON object",
            crate::error::json_type(&other)
        )),
        Err(error) => Err(format!("the arguments are not valid JSON: {error}")),
    }
}

/// LangChain's `InvalidToolCall`: a call whose arguments did not parse.
pub fn invalid_tool_call(name: &str, args: &str, id: Option<String>, error: &str) -> Value {
    json!({
        "name": name,
        "args": args,
        "id": id,
        "error": error,
        "type": "invalid_tool_call",
    })
}

/// Why a model call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider refused for too many requests (HTTP 429), after the
    /// client's own retries.
    RateLimited {
        /// The provider's message.
        message: String,
        /// How long the provider asked to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The provider answered with an error status.
    Api {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider's answer does not read as a chat completion (malformed
    /// JSON, a missing field, an empty choice list).
    InvalidResponse {
        /// What is wrong, with the text that came when it is short.
        message: String,
    },
    /// The request did not reach the provider, or its answer did not come
    /// back whole.
    Transport(BoxError),
    /// The model (a scripted or custom one) failed otherwise.
    Other(BoxError),
}

impl ModelError {
    /// Any other error, boxed.
    pub fn other(error: impl Into<BoxError>) -> Self {
        Self::Other(error.into())
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RateLimited {
                message,
                retry_after,
            } => {
                write!(
                    f,
                    "the model provider is rate limiting (HTTP 429): {message}"
                )?;
                if let Some(wait) = retry_after {
                    write!(f, "; retry after {} s", wait.as_secs())?;
                }
                Ok(())
            }
            Self::Api { status, message } => {
                write!(f, "the model provider answered HTTP {status}: {message}")
            }
            Self::InvalidResponse { message } => {
                write!(
                    f,
                    "the model provider's answer is not a chat completion: {message}"
                )
            }
            Self::Transport(error) => write!(f, "the model provider could not be reached: {error}"),
            Self::Other(error) => write!(f, "the model failed: {error}"),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport(error) | Self::Other(error) => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// A chat model: takes a [`ModelRequest`] (system prompt, messages, tool
/// definitions, the state read-only, settings) and answers with an AI
/// message, its tool calls and usage included.
///
/// Generic over the state only so that a model may read it
/// ([`ModelRequest::state`]); providers implement it for every state.
/// [`stream`](Self::stream) streams the answer in chunks; its default calls
/// [`invoke`](Self::invoke) and yields the whole answer as one chunk.
pub trait ChatModel<S>: Send + Sync {
    /// Answers the request.
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>>;

    /// Answers the request as a stream of chunks (see [`ChunkAccumulator`]).
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        stream::once(self.invoke(request))
            .map(|result| result.map(|message| ChatChunk::whole(&message)))
            .boxed()
    }
}

impl<S, M: ChatModel<S> + ?Sized> ChatModel<S> for Arc<M> {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        (**self).invoke(request)
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        (**self).stream(request)
    }
}
