//! A [`ChatModel`] for any OpenAI-compatible chat-completions endpoint
//! (OpenAI, Groq, Ollama, vLLM, most hosted models), on async-openai: tool
//! calls, SSE streaming, and the client's retries of 429s (with
//! `Retry-After`). Needs a Tokio runtime.
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
    ChatCompletionToolChoiceOption, ChatCompletionTools, CompletionUsage,
    CreateChatCompletionRequest, CreateChatCompletionResponse, CreateChatCompletionStreamResponse,
    FunctionCall, FunctionName, FunctionObject, ToolChoiceOptions,
};
use async_openai::Client;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value};

use super::model::{
    ChatChunk, ChatModel, ModelError, ModelRequest, ToolChoice, ToolDefinition, Usage,
};
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
        }
    }

    /// Another model name (settings of a request may still override it).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
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
            let response = self.client.chat().create(body).await.map_err(model_error)?;
            from_response(response)
        })
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        let mut body = self.body(request);
        body.stream_options = Some(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        });
        let start = async move { self.client.chat().create_stream(body).await };
        stream::once(start)
            .flat_map(|started| match started {
                Ok(chunks) => chunks
                    .map(|chunk| chunk.map_err(model_error).map(from_chunk))
                    .boxed(),
                Err(error) => stream::once(async move { Err(model_error(error)) }).boxed(),
            })
            .boxed()
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

fn usage(usage: &CompletionUsage) -> Usage {
    Usage {
        input_tokens: u64::from(usage.prompt_tokens),
        output_tokens: u64::from(usage.completion_tokens),
        total_tokens: u64::from(usage.total_tokens),
    }
}

/// The AI message of a completion: the first choice's text and tool calls
/// (arguments that do not parse become `invalid_tool_calls`), usage, and
/// the response's id, model and finish reason as metadata. The message
/// gets no id of the provider's: the conversation assigns one, so two
/// completions that share an id cannot replace each other.
fn from_response(response: CreateChatCompletionResponse) -> Result<Message, ModelError> {
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(ModelError::InvalidResponse {
            message: format!("completion `{}` has no choices", response.id),
        });
    };
    let reply = choice.message;
    let mut message = Message::new(MessageType::Ai, reply.content.unwrap_or_default());
    for call in reply.tool_calls.into_iter().flatten() {
        match call {
            ChatCompletionMessageToolCalls::Function(call) => {
                let FunctionCall { name, arguments } = call.function;
                match parse_args(&arguments) {
                    Ok(args) => message.tool_calls.push(ToolCall {
                        name,
                        args,
                        id: Some(call.id),
                    }),
                    Err(error) => message.invalid_tool_calls.push(invalid_tool_call(
                        &name,
                        &arguments,
                        Some(call.id),
                        &error,
                    )),
                }
            }
            ChatCompletionMessageToolCalls::Custom(call) => {
                let error = "custom tool calls are not supported; only function tools";
                let name = call.custom_tool.name;
                let input = call.custom_tool.input;
                let invalid = invalid_tool_call(&name, &input, Some(call.id), error);
                message.invalid_tool_calls.push(invalid);
            }
        }
    }
    if let Some(refusal) = reply.refusal {
        message
            .additional_kwargs
            .insert("refusal".to_owned(), refusal.into());
    }
    message.usage_metadata = response.usage.as_ref().map(|u| usage(u).to_json());
    let mut meta = Map::new();
    meta.insert("id".to_owned(), response.id.into());
    meta.insert("model_name".to_owned(), response.model.into());
    if let Some(reason) = choice.finish_reason {
        meta.insert("finish_reason".to_owned(), finish_reason(&reason));
    }
    message.response_metadata = meta;
    Ok(message)
}

fn finish_reason(reason: &impl serde::Serialize) -> Value {
    serde_json::to_value(reason).unwrap_or(Value::Null)
}

/// One SSE chunk as a [`ChatChunk`] (its first choice). Every chunk
/// carries the completion's id in its metadata (equal ids merge into one);
/// the model name comes once, with the finish reason, since LangChain's
/// merge concatenates repeated strings. No chunk is marked last: the agent
/// closes the message (as langchain-core closes ChatOpenAI's).
fn from_chunk(chunk: CreateChatCompletionStreamResponse) -> ChatChunk {
    let mut out = MessageChunk::ai("");
    out.usage_metadata = chunk.usage.as_ref().map(|u| usage(u).to_json());
    out.response_metadata
        .insert("id".to_owned(), chunk.id.into());
    let Some(choice) = chunk.choices.into_iter().next() else {
        return out;
    };
    out.content = choice.delta.content.unwrap_or_default().into();
    for piece in choice.delta.tool_calls.into_iter().flatten() {
        let function = piece.function.unwrap_or_default();
        out.tool_call_chunks.push(ToolCallChunk {
            index: Some(piece.index as usize),
            id: piece.id,
            name: function.name,
            args: function.arguments.unwrap_or_default(),
        });
    }
    if let Some(reason) = choice.finish_reason {
        out.response_metadata
            .insert("finish_reason".to_owned(), finish_reason(&reason));
        out.response_metadata
            .insert("model_name".to_owned(), chunk.model.into());
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

/// The first 200 characters of a body, for an error message.
fn excerpt(body: &str) -> String {
    let mut text: String = body.chars().take(200).collect();
    if text.len() < body.len() {
        text.push('…');
    }
    text
}
