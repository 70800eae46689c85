//! The chat model an agent calls: the request it gets, what it answers, and
//! the chunks it streams.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Value};

use crate::base::HasMessages;
use crate::graph::{BoxError, NodeContext, StreamWriter};
use crate::message::{Message, MessageChunk, MessageType};

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
    /// The JSON Schema the answer must follow, for models with native
    /// structured output (OpenAI's `response_format`); the agent sets it
    /// for a [`ProviderStrategy`](super::ProviderStrategy).
    pub response_format: Option<ResponseSchema>,
}

/// A JSON Schema the model's answer must follow (OpenAI's
/// `response_format: {type: "json_schema", json_schema: {..}}`): what a
/// model with native structured output is sent, as LangChain's
/// `ProviderStrategy.to_model_kwargs` makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseSchema {
    /// The schema's name (the type's name unless given).
    pub name: String,
    /// What the answer is, for the model; sent when not empty.
    pub description: Option<String>,
    /// The JSON Schema of the answer.
    pub schema: Value,
    /// Whether the provider must follow the schema exactly; sent only
    /// when `Some(true)`, as LangChain sends it.
    pub strict: Option<bool>,
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
    writer: Option<StreamWriter>,
    node: Option<NodeContext>,
    model: Option<Arc<dyn ChatModel<S>>>,
}

impl<S> Clone for ModelRequest<S> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            system_prompt: self.system_prompt.clone(),
            messages: self.messages.clone(),
            tools: Arc::clone(&self.tools),
            settings: self.settings.clone(),
            writer: self.writer.clone(),
            node: self.node.clone(),
            model: self.model.clone(),
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
            writer: None,
            node: None,
            model: None,
        }
    }

    /// The run's context of type `T` (`Run::context`, LangChain's
    /// `runtime.context`), for a `wrap_model_call` that depends on who
    /// the run serves; `None` when absent or of another type.
    pub fn context<T: std::any::Any>(&self) -> Option<&T> {
        self.node.as_ref()?.context()
    }

    /// The run's store (LangChain's `request.runtime.store`): a
    /// `wrap_model_call` may put what it recalls about the user in the
    /// system prompt. `None` outside a run, or when neither the run nor
    /// its graph has one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::agent::ModelRequest;
    /// use agent_state::base::MessagesState;
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Chat {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    /// }
    ///
    /// // Made outside a run: no store. (In a `wrap_model_call`, the run's.)
    /// let request = ModelRequest::new(Arc::new(Chat::default()));
    /// assert!(request.store().is_none());
    /// ```
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.node.as_ref()?.store()
    }

    /// The model node's context, in a run: a `wrap_model_call` may
    /// [`interrupt`](NodeContext::interrupt) the run, keep work
    /// [`once`](NodeContext::once), read the thread and step. `None` for
    /// a request made outside a run.
    pub fn node(&self) -> Option<&NodeContext> {
        self.node.as_ref()
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

    /// The model node's way into the run's stream: a model (or a
    /// `wrap_model_call`) that streams by itself sends its pieces here
    /// ([`StreamWriter::message`]); the agent does it for
    /// [`ChatModel::stream`].
    pub fn stream_writer(&self) -> Option<&StreamWriter> {
        self.writer.as_ref()
    }

    /// The request streaming to `writer`.
    #[must_use]
    pub fn with_stream_writer(mut self, writer: StreamWriter) -> Self {
        self.writer = Some(writer);
        self
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

    /// The model this call goes to: in a run, the agent's model unless a
    /// middleware chose another ([`with_model`](Self::with_model)); `None`
    /// for a request made outside a run with no model set.
    pub fn model(&self) -> Option<&Arc<dyn ChatModel<S>>> {
        self.model.as_ref()
    }

    /// The request sent to `model` instead of the agent's (LangChain's
    /// `request.override(model=..)`): what a fallback or a router does.
    #[must_use]
    pub fn with_model(mut self, model: Arc<dyn ChatModel<S>>) -> Self {
        self.model = Some(model);
        self
    }

    /// The request with other settings.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The model node's request, made in one go (every turn): the agent's
    /// shared prompt, tools and settings, the node's stream writer and
    /// context, the agent's model.
    pub(crate) fn of_node(
        state: Arc<S>,
        (system_prompt, tools): (Option<Arc<str>>, Arc<[ToolDefinition]>),
        settings: ModelSettings,
        node: NodeContext,
        model: Arc<dyn ChatModel<S>>,
    ) -> Self {
        Self {
            state,
            system_prompt,
            messages: None,
            tools,
            settings,
            writer: Some(node.writer()),
            node: Some(node),
            model: Some(model),
        }
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

/// A piece of a streamed AI message: the message model's [`MessageChunk`]
/// (LangChain's `AIMessageChunk`), under the name the agent used first.
pub type ChatChunk = MessageChunk;

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

    /// Whether the same request may succeed if sent again: LangChain's
    /// `is_retryable` (rate limits, server errors (5xx), timeouts (408)
    /// and unreachable providers), plus answers that did not read and other
    /// errors, which LangChain's retry middleware retry by default too
    /// (they are not `ModelError`s there). Interrupts never are.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. } | Self::Transport(_) | Self::InvalidResponse { .. } => true,
            Self::Api { status, .. } => *status >= 500 || *status == 408,
            Self::Other(error) => !error.is::<crate::graph::Interrupted>(),
        }
    }

    /// Whether this is a run's interrupt (a `wrap_model_call` paused the
    /// run): middleware let it through untouched, as LangChain's let
    /// `GraphBubbleUp` through.
    pub fn is_interrupt(&self) -> bool {
        matches!(self, Self::Other(error) if error.is::<crate::graph::Interrupted>())
    }

    /// The name LangChain gives this failure (its exception class:
    /// `ModelRateLimitError`, `ModelAPIError`, ...), for messages that
    /// name it as LangChain's do. Failures LangChain has no class for are
    /// named after our variant (`InvalidResponse`, `Error`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "ModelRateLimitError",
            Self::Api { status, .. } => match status {
                400 | 422 => "ModelInvalidRequestError",
                401 => "ModelAuthenticationError",
                403 => "ModelPermissionDeniedError",
                404 => "ModelNotFoundError",
                408 => "ModelTimeoutError",
                500.. => "ModelAPIError",
                _ => "ModelError",
            },
            Self::InvalidResponse { .. } => "InvalidResponse",
            Self::Transport(_) => "ModelConnectionError",
            Self::Other(_) => "Error",
        }
    }

    /// The provider's (or the error's) own message, without the prefix
    /// `Display` adds: what LangChain's `str(exc)` gives.
    pub fn message(&self) -> String {
        match self {
            Self::RateLimited { message, .. }
            | Self::Api { message, .. }
            | Self::InvalidResponse { message } => message.clone(),
            Self::Transport(error) | Self::Other(error) => error.to_string(),
        }
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
/// [`stream`](Self::stream) streams the answer in chunks (which add up to
/// the message as [`MessageChunk::add`] adds them); its default calls
/// [`invoke`](Self::invoke) and yields the whole answer as one chunk.
pub trait ChatModel<S>: Send + Sync {
    /// Answers the request.
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>>;

    /// Answers the request as a stream of chunks. A model need not mark
    /// the last one: the agent closes every streamed message itself with
    /// an empty chunk marked [`last`](MessageChunk::last) (LangChain's
    /// `chunk_position: "last"`), once, and drops the marks a model sets.
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        stream::once(self.invoke(request))
            .map(|result| result.map(|message| MessageChunk::whole(&message)))
            .boxed()
    }

    /// Whether the model answers in a given JSON Schema by itself (a
    /// provider's native structured output, [`ModelSettings::response_format`]):
    /// an [`AutoStrategy`](super::AutoStrategy) then uses it, else a tool.
    /// Default `false`.
    fn supports_structured_output(&self) -> bool {
        false
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

    fn supports_structured_output(&self) -> bool {
        (**self).supports_structured_output()
    }
}
