//! A [`ChatModel`] for any OpenAI-compatible chat-completions endpoint
//! (OpenAI, Groq, Ollama, vLLM, most hosted models), on async-openai: tool
//! calls, SSE streaming, and the client's retries of 429s (with
//! `Retry-After`). Answers are read as the official clients read them,
//! minimal ones from third-party servers included (`wire.rs`). Needs a
//! Tokio runtime.
//!
//! ```no_run
//! use agent_state::agent::openai::OpenAiChat;
//!
//! // OPENAI_API_KEY, OPENAI_BASE_URL (default: OpenAI's), OPENAI_MODEL.
//! let model = OpenAiChat::from_env();
//! // Or spelled out: a local Ollama.
//! let local = OpenAiChat::new("llama3.2").with_base_url("http://localhost:11434/v1");
//! # let _ = (model, local);
//! ```

use crate::agent::excerpt;
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls, ChatCompletionNamedToolChoice,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionStreamOptions, ChatCompletionTool,
    ChatCompletionToolChoiceOption, ChatCompletionTools, CreateChatCompletionRequest, FunctionCall,
    FunctionName, FunctionObject, ToolChoiceOptions,
};
use async_openai::types::chat::{ResponseFormat, ResponseFormatJsonSchema};
use async_openai::Client;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value};

use super::model::{
    ChatChunk, ChatModel, ModelError, ModelRequest, ResponseSchema, ToolChoice, ToolDefinition,
    Usage,
};
use wire::{Chunk, Completion, WireToolCall, WireUsage};

mod wire;
use crate::base::HasMessages;
use crate::message::{
    invalid_tool_call, parse_args, Message, MessageChunk, MessageType, ToolCall, ToolCallChunk,
};

/// The model used when neither the settings nor `OPENAI_MODEL` name one.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// OpenAI's endpoint, when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat model served over the OpenAI chat-completions protocol.
#[derive(Clone)]
pub struct OpenAiChat {
    config: OpenAIConfig,
    client: Client<OpenAIConfig>,
    model: String,
    structured: Option<bool>,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("model", &self.model)
            .field("base_url", &self.config_base())
            .finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// `model` at OpenAI's endpoint, with no API key (set one with
    /// [`with_api_key`](Self::with_api_key)).
    pub fn new(model: impl Into<String>) -> Self {
        let config = OpenAIConfig::new()
            .with_api_base(DEFAULT_BASE_URL)
            .with_api_key("");
        Self {
            client: Client::with_config(config.clone()),
            config,
            model: model.into(),
            structured: None,
        }
    }

    /// From the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default
    /// OpenAI's), `OPENAI_MODEL` (default [`DEFAULT_MODEL`]).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From variables looked up by `var` (`OPENAI_API_KEY`,
    /// `OPENAI_BASE_URL`, `OPENAI_MODEL`): configuration from anywhere.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let model = set("OPENAI_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let mut chat = Self::new(model);
        if let Some(key) = set("OPENAI_API_KEY") {
            chat = chat.with_api_key(key);
        }
        if let Some(url) = set("OPENAI_BASE_URL") {
            chat = chat.with_base_url(url);
        }
        chat
    }

    /// Another endpoint (`http://localhost:11434/v1` for Ollama, say).
    #[must_use]
    pub fn with_base_url(self, url: impl Into<String>) -> Self {
        let url: String = url.into();
        let config = self.config.with_api_base(url.trim_end_matches('/'));
        Self {
            client: Client::with_config(config.clone()),
            config,
            model: self.model,
            structured: self.structured,
        }
    }

    /// The API key, sent as a bearer token.
    #[must_use]
    pub fn with_api_key(self, key: impl Into<String>) -> Self {
        let config = self.config.with_api_key(key);
        Self {
            client: Client::with_config(config.clone()),
            config,
            model: self.model,
            structured: self.structured,
        }
    }

    /// Another model name (settings of a request may still override it).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Declares whether the endpoint answers in a JSON Schema by itself
    /// (`response_format: json_schema`), which an
    /// [`AutoStrategy`](crate::agent::AutoStrategy) then uses. Without it,
    /// OpenAI's models that have it (`gpt-4o`, `gpt-4.1`, `gpt-5` and
    /// their variants, as LangChain's list) are taken to, others not.
    #[must_use]
    pub fn with_structured_output(mut self, supported: bool) -> Self {
        self.structured = Some(supported);
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    fn config_base(&self) -> String {
        use async_openai::config::Config;
        self.config.api_base().to_owned()
    }

    /// The chat-completions request for `request`.
    fn body<S: HasMessages>(&self, request: &ModelRequest<S>) -> CreateChatCompletionRequest {
        let mut messages = Vec::with_capacity(request.messages().len() + 1);
        if let Some(prompt) = request.system_prompt() {
            messages.push(system_message(prompt.to_owned()));
        }
        messages.extend(request.messages().iter().map(to_openai));
        let settings = request.settings();
        let tools: Vec<ChatCompletionTools> = request.tools().iter().map(to_tool).collect();
        CreateChatCompletionRequest {
            model: settings.model.clone().unwrap_or_else(|| self.model.clone()),
            messages,
            temperature: settings.temperature,
            max_completion_tokens: settings.max_tokens,
            tool_choice: settings.tool_choice.as_ref().map(to_tool_choice),
            tools: (!tools.is_empty()).then_some(tools),
            response_format: settings.response_format.as_ref().map(to_response_format),
            ..CreateChatCompletionRequest::default()
        }
    }
}

impl<S: HasMessages + Send + Sync> ChatModel<S> for OpenAiChat {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        let body = self.body(request);
        Box::pin(async move {
            let chat = self.client.chat();
            let response = chat.create_byot(body).await.map_err(model_error)?;
            from_response(response)
        })
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        let mut body = self.body(request);
        body.stream = Some(true);
        body.stream_options = Some(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        });
        let start = async move {
            self.client
                .chat()
                .create_stream_byot::<_, Chunk>(body)
                .await
        };
        stream::once(start)
            .flat_map(|started| match started {
                Ok(chunks) => chunks
                    .map(|chunk| chunk.map_err(model_error).map(from_chunk))
                    .boxed(),
                Err(error) => stream::once(async move { Err(model_error(error)) }).boxed(),
            })
            .boxed()
    }

    fn supports_structured_output(&self) -> bool {
        self.structured
            .unwrap_or_else(|| has_native_structured_output(&self.model))
    }
}

/// Whether OpenAI's model `name` has native structured output: the
/// `gpt-4o`, `gpt-4.1` and `gpt-5` families (a provider prefix such as
/// `openai/` allowed), as LangChain's fallback list has them.
fn has_native_structured_output(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let base = name.rsplit(['/', ':']).next().unwrap_or_default();
    ["gpt-4o", "gpt-4.1", "gpt-5"].iter().any(|family| {
        base.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
    })
}

/// OpenAI's `response_format` for a schema (`strict` sent only when true,
/// as LangChain sends it).
fn to_response_format(schema: &ResponseSchema) -> ResponseFormat {
    ResponseFormat::JsonSchema {
        json_schema: ResponseFormatJsonSchema {
            description: schema.description.clone(),
            name: schema.name.clone(),
            schema: schema.schema.clone(),
            strict: schema.strict.filter(|strict| *strict),
        },
    }
}

fn system_message(text: String) -> ChatCompletionRequestMessage {
    ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
        content: ChatCompletionRequestSystemMessageContent::Text(text),
        name: None,
    })
}

/// One of our messages in the protocol's shape.
fn to_openai(message: &Message) -> ChatCompletionRequestMessage {
    let text = message.text();
    match message.kind {
        MessageType::System => system_message(text),
        MessageType::Human => {
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Text(text),
                name: message.name.clone(),
            })
        }
        MessageType::Tool => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(text),
            tool_call_id: message.tool_call_id.clone().unwrap_or_default(),
        }),
        MessageType::Ai => {
            // Invalid calls are sent back as the model made them: the error
            // tool messages that answer them need their calls before them.
            let valid = message.tool_calls.iter().map(|call| {
                let arguments = Value::Object(call.args.clone()).to_string();
                function_call(
                    call.id.clone().unwrap_or_default(),
                    call.name.clone(),
                    arguments,
                )
            });
            let invalid = message.invalid_tool_calls.iter().map(|call| {
                let field = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default();
                function_call(
                    field("id").to_owned(),
                    field("name").to_owned(),
                    field("args").to_owned(),
                )
            });
            let calls: Vec<ChatCompletionMessageToolCalls> = valid.chain(invalid).collect();
            let content = (!text.is_empty() || calls.is_empty())
                .then_some(ChatCompletionRequestAssistantMessageContent::Text(text));
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content,
                tool_calls: (!calls.is_empty()).then_some(calls),
                ..ChatCompletionRequestAssistantMessage::default()
            })
        }
    }
}

fn function_call(id: String, name: String, arguments: String) -> ChatCompletionMessageToolCalls {
    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
        id,
        function: FunctionCall { name, arguments },
    })
}

fn to_tool(tool: &ToolDefinition) -> ChatCompletionTools {
    ChatCompletionTools::Function(ChatCompletionTool {
        function: FunctionObject {
            name: tool.name.clone(),
            description: Some(tool.description.clone()),
            parameters: Some(tool.parameters.clone()),
            strict: None,
        },
    })
}

fn to_tool_choice(choice: &ToolChoice) -> ChatCompletionToolChoiceOption {
    match choice {
        ToolChoice::Auto => ChatCompletionToolChoiceOption::Mode(ToolChoiceOptions::Auto),
        ToolChoice::None => ChatCompletionToolChoiceOption::Mode(ToolChoiceOptions::None),
        ToolChoice::Required => ChatCompletionToolChoiceOption::Mode(ToolChoiceOptions::Required),
        ToolChoice::Tool(name) => {
            ChatCompletionToolChoiceOption::Function(ChatCompletionNamedToolChoice {
                function: FunctionName { name: name.clone() },
            })
        }
    }
}

fn usage(usage: &WireUsage) -> Usage {
    let input_tokens = usage.prompt_tokens.unwrap_or(0);
    let output_tokens = usage.completion_tokens.unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens,
        total_tokens: usage.total_tokens.unwrap_or(input_tokens + output_tokens),
    }
}

/// How an error names a completion: by its id when it has one.
fn completion_named(id: Option<&str>) -> String {
    id.map_or_else(
        || "the completion".to_owned(),
        |id| format!("completion `{id}`"),
    )
}

/// The AI message of a completion: the first choice's text and tool calls
/// (arguments that do not parse become `invalid_tool_calls`), usage, and
/// the response's id, model and finish reason as metadata (those it has).
/// The message gets no id of the provider's: the conversation assigns
/// one, so two completions that share an id cannot replace each other.
fn from_response(response: Completion) -> Result<Message, ModelError> {
    let named = completion_named(response.id.as_deref());
    if let Some(error) = response.error.filter(|e| !e.is_null()) {
        return Err(ModelError::InvalidResponse {
            message: format!("{named} is an error: {error}"),
        });
    }
    let Some(choice) = response.choices.into_iter().flatten().next() else {
        return Err(ModelError::InvalidResponse {
            message: format!("{named} has no choices"),
        });
    };
    let reply = choice.message;
    let mut message = Message::new(MessageType::Ai, reply.content.unwrap_or_default());
    for call in reply.tool_calls.into_iter().flatten() {
        add_tool_call(&mut message, call);
    }
    if let Some(refusal) = reply.refusal {
        message
            .additional_kwargs
            .insert("refusal".to_owned(), refusal.into());
    }
    message.usage_metadata = response.usage.as_ref().map(|u| usage(u).to_json());
    let mut meta = Map::new();
    meta.extend(response.id.map(|id| ("id".to_owned(), id.into())));
    meta.extend(response.model.map(|m| ("model_name".to_owned(), m.into())));
    meta.extend(
        choice
            .finish_reason
            .map(|r| ("finish_reason".to_owned(), r.into())),
    );
    message.response_metadata = meta;
    Ok(message)
}

/// A tool call of a completion into `message`: a function call whose
/// arguments parse (missing or empty: none) as a tool call, any other
/// (arguments that do not parse, a custom tool's call) as an invalid one.
fn add_tool_call(message: &mut Message, call: WireToolCall) {
    let id = call.id;
    let bad =
        |name: &str, args: &str, error: &str| invalid_tool_call(name, args, id.clone(), error);
    let invalid = match (call.kind.as_deref(), call.function, call.custom) {
        (Some("custom"), _, custom) => {
            let custom = custom.unwrap_or_default();
            let name = custom.name.unwrap_or_default();
            let error = "custom tool calls are not supported; only function tools";
            bad(&name, &custom.input.unwrap_or_default(), error)
        }
        (_, Some(function), _) => {
            let name = function.name.unwrap_or_default();
            let arguments = function.arguments.unwrap_or_default();
            match parse_args(&arguments) {
                Ok(args) => {
                    message.tool_calls.push(ToolCall { name, args, id });
                    return;
                }
                Err(error) => bad(&name, &arguments, &error),
            }
        }
        (_, None, _) => bad("", "", "the tool call names no function"),
    };
    message.invalid_tool_calls.push(invalid);
}

/// One SSE chunk as a [`ChatChunk`] (its first choice). Every chunk
/// carries the completion's id in its metadata, when the server sends one
/// (equal ids merge into one); the model name comes once, with the finish
/// reason, since LangChain's merge concatenates repeated strings. No chunk
/// is marked last: the agent closes the message (as langchain-core closes
/// ChatOpenAI's).
fn from_chunk(chunk: Chunk) -> ChatChunk {
    let mut out = MessageChunk::ai("");
    out.usage_metadata = chunk.usage.as_ref().map(|u| usage(u).to_json());
    if let Some(id) = chunk.id {
        out.response_metadata.insert("id".to_owned(), id.into());
    }
    let Some(choice) = chunk.choices.into_iter().flatten().next() else {
        return out;
    };
    let delta = choice.delta.unwrap_or_default();
    out.content = delta.content.unwrap_or_default().into();
    for piece in delta.tool_calls.into_iter().flatten() {
        let function = piece.function.unwrap_or_default();
        out.tool_call_chunks.push(ToolCallChunk {
            index: piece.index,
            id: piece.id,
            name: function.name,
            args: function.arguments.unwrap_or_default(),
        });
    }
    if let Some(reason) = choice.finish_reason {
        out.response_metadata
            .insert("finish_reason".to_owned(), reason.into());
        if let Some(model) = chunk.model {
            out.response_metadata
                .insert("model_name".to_owned(), model.into());
        }
    }
    out
}

/// The client's error as a [`ModelError`]: a 429 (after the client's
/// retries) is `RateLimited`, other statuses `Api`, a body that is not a
/// completion `InvalidResponse` (with the start of the body), a failed
/// connection `Transport`.
fn model_error(error: OpenAIError) -> ModelError {
    match error {
        OpenAIError::ApiError(response) if response.status_code.as_u16() == 429 => {
            ModelError::RateLimited {
                message: response.api_error.to_string(),
                retry_after: None::<Duration>,
            }
        }
        OpenAIError::ApiError(response) => ModelError::Api {
            status: response.status_code.as_u16(),
            message: response.api_error.to_string(),
        },
        OpenAIError::JSONDeserialize(error, body) => ModelError::InvalidResponse {
            message: format!("{error}; the body began: {}", excerpt(&body)),
        },
        OpenAIError::StreamError(error) => match *error {
            async_openai::error::StreamError::UnknownEvent(event) => ModelError::InvalidResponse {
                message: format!(
                    "unexpected stream event `{}`: {}",
                    event.event,
                    excerpt(&event.data)
                ),
            },
            other => ModelError::Transport(Box::new(other)),
        },
        OpenAIError::Reqwest(error) => ModelError::Transport(Box::new(error)),
        other => ModelError::Other(Box::new(other)),
    }
}
