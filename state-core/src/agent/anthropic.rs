//! A native [`ChatModel`] for Anthropic's Messages API (Claude): the
//! system prompt as the top-level `system`, tool use and tool results as
//! content blocks, SSE streaming into chunks, usage as LangChain's
//! `ChatAnthropic` reports it (cached input tokens included), and retries
//! of 408, 409, 429 and 5xx answers (529 "overloaded" among them) as
//! Anthropic's own clients retry them. There is no official Rust client;
//! this speaks the documented protocol over reqwest (rustls). Needs a
//! Tokio runtime. See [`AnthropicChat`] for an example.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

use super::model::{ChatChunk, ChatModel, ModelError, ModelRequest};
use crate::agent::excerpt;
use crate::base::HasMessages;
use crate::message::Message;
use wire::{ErrorReply, Reply};

mod body;
mod events;
mod wire;

/// The model used when neither the settings nor `ANTHROPIC_MODEL` name one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// Anthropic's endpoint (without `/v1`), when `ANTHROPIC_BASE_URL` is not
/// set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent as `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the settings do not give one: the API requires it
/// (LangChain's fallback when it knows nothing of the model).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Retries of a failed call by default (as Anthropic's clients).
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// How long a response may go without sending a byte by default: ten
/// minutes, Anthropic's clients' timeout (a long answer streams for
/// longer, so the wait is per read, not for the whole answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// A chat model served by Anthropic's Messages API (`POST /v1/messages`).
///
/// Cheap to clone (the HTTP client is shared). Requests send the API key
/// as `x-api-key` (none when empty, for proxies that add their own),
/// `anthropic-version: 2023-06-01`, the model and `max_tokens` of the
/// settings or of this model, the temperature and the tool choice
/// (`Required` is Anthropic's `any`). Errors: a 429 is
/// [`ModelError::RateLimited`] with the server's `retry-after`, other
/// statuses [`ModelError::Api`] (529 is "overloaded"), a body that is not
/// a message [`ModelError::InvalidResponse`], each with the server's
/// message; a network failure, or a response silent for longer than the
/// [timeout](Self::with_timeout), is [`ModelError::Transport`].
///
/// ```no_run
/// use agent_state::agent::anthropic::AnthropicChat;
/// use agent_state::agent::{create_agent, input};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::AgentState;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default: Anthropic's),
/// // ANTHROPIC_MODEL (default: `DEFAULT_MODEL`).
/// let model = AnthropicChat::from_env().with_max_tokens(1024);
/// // Or spelled out: a proxy that speaks the Messages API.
/// let proxied = AnthropicChat::new("claude-haiku-4-5").with_base_url("http://localhost:4000");
/// # let _ = proxied;
/// let agent = create_agent(model).system_prompt("Answer in one line.").compile()?;
/// let out = agent.run(input::<Chat>("Why is the sky blue?")).await?;
/// println!("{}", out.state.messages().last().unwrap().text());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AnthropicChat {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    model: String,
    max_tokens: u32,
    max_retries: u32,
    timeout: Duration,
}

impl std::fmt::Debug for AnthropicChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicChat")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl AnthropicChat {
    /// `model` at Anthropic's endpoint, with no API key (set one with
    /// [`with_api_key`](Self::with_api_key)).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            client: http_client(DEFAULT_TIMEOUT),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: String::new(),
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            max_retries: DEFAULT_MAX_RETRIES,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// From the environment: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`
    /// (default Anthropic's), `ANTHROPIC_MODEL` (default
    /// [`DEFAULT_MODEL`]).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From variables looked up by `var` (`ANTHROPIC_API_KEY`,
    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL`); blank ones count as unset.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let model = set("ANTHROPIC_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let mut chat = Self::new(model);
        if let Some(key) = set("ANTHROPIC_API_KEY") {
            chat = chat.with_api_key(key);
        }
        if let Some(url) = set("ANTHROPIC_BASE_URL") {
            chat = chat.with_base_url(url);
        }
        chat
    }

    /// Another endpoint, without `/v1` (a proxy, a gateway, a test
    /// server); requests go to `{url}/v1/messages`.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The API key, sent as `x-api-key`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = key.into();
        self
    }

    /// Another model name (settings of a request may still override it).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// `max_tokens` for requests whose settings give none.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// How many times a call that failed with 408, 409, 429 or 5xx is
    /// retried (0: never), waiting what the server's `retry-after` asks
    /// (up to a minute), otherwise 0.5 s doubling up to 8 s.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// How long a response may go without sending a byte (connecting:
    /// at most this, and 10 s) before the call fails as a transport error
    /// (and is not retried).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.client = http_client(timeout);
        self.timeout = timeout;
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL requests go to (without `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends `body`, retrying what may succeed later; the response of the
    /// first success, or the last failure as a [`ModelError`].
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let body = body.to_string();
        let mut attempt = 0;
        loop {
            let mut post = self
                .client
                .post(format!("{}/v1/messages", self.base_url))
                .header("anthropic-version", API_VERSION)
                .header("content-type", "application/json")
                .body(body.clone());
            if !self.api_key.is_empty() {
                post = post.header("x-api-key", &self.api_key);
            }
            let response = post
                .send()
                .await
                .map_err(|error| ModelError::Transport(Box::new(error)))?;
            let status = response.status().as_u16();
            if response.status().is_success() {
                return Ok(response);
            }
            let wait = retry_after(response.headers());
            let error = status_error(status, wait, response).await;
            if attempt >= self.max_retries || !retryable(status) {
                return Err(error);
            }
            tokio::time::sleep(backoff(attempt, wait)).await;
            attempt += 1;
        }
    }
}

impl<S: HasMessages + Send + Sync> ChatModel<S> for AnthropicChat {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        if let Some(error) = unsupported(request) {
            return Box::pin(std::future::ready(Err(error)));
        }
        let body = body::build(request, &self.model, self.max_tokens, false);
        Box::pin(async move {
            let response = self.send(&body).await?;
            let text = response
                .text()
                .await
                .map_err(|error| ModelError::Transport(Box::new(error)))?;
            let reply: Reply =
                serde_json::from_str(&text).map_err(|error| ModelError::InvalidResponse {
                    message: format!("{error}; the body began: {}", excerpt(&text)),
                })?;
            wire::from_reply(reply)
        })
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        if let Some(error) = unsupported(request) {
            return stream::once(std::future::ready(Err(error))).boxed();
        }
        let body = body::build(request, &self.model, self.max_tokens, true);
        let start = async move { self.send(&body).await };
        stream::once(start)
            .flat_map(|started| match started {
                Ok(response) => events::chunks(response.bytes_stream().eventsource()),
                Err(error) => stream::once(async move { Err(error) }).boxed(),
            })
            .boxed()
    }
}

/// The HTTP client: rustls, a per-read `timeout`.
fn http_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .read_timeout(timeout)
        .build()
        // Only a TLS backend that cannot start fails here, and then so
        // does the default client, with reqwest's own message.
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// What this model cannot send, said before anything is sent: a native
/// response format (`ProviderStrategy`) is not in the request body, and
/// dropping it would fail later as an answer that is not the type's JSON.
/// (`AutoStrategy` picks the tool strategy for this model.)
fn unsupported<S>(request: &ModelRequest<S>) -> Option<ModelError> {
    let format = request.settings().response_format.as_ref()?;
    Some(ModelError::other(format!(
        "AnthropicChat does not send a native response format (`{}`): use ToolStrategy or AutoStrategy",
        format.name
    )))
}

/// Whether a failure of `status` may pass if tried again (Anthropic's
/// clients retry these).
fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The wait before retry `attempt` (from 0): the server's, when it asked
/// for at most a minute; otherwise 0.5 s doubling, at most 8 s.
fn backoff(attempt: u32, asked: Option<Duration>) -> Duration {
    match asked {
        Some(wait) if wait <= Duration::from_secs(60) => wait,
        _ => Duration::from_millis(500 << attempt.min(4)).min(Duration::from_secs(8)),
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), or
/// `retry-after` in seconds (a date is not read).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        let text = headers.get(name)?.to_str().ok()?;
        text.trim().parse::<f64>().ok().filter(|n| *n >= 0.0)
    };
    // A wait too long for a `Duration` (`inf`, `1e30`) reads as none: the
    // usual backoff applies.
    number("retry-after-ms")
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .or_else(|| number("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok()))
}

/// The error an error status makes, with the server's `type: message`
/// when the body is Anthropic's error JSON, otherwise the body's start.
async fn status_error(
    status: u16,
    wait: Option<Duration>,
    response: reqwest::Response,
) -> ModelError {
    let text = match response.text().await {
        Ok(text) => text,
        Err(error) => return ModelError::Transport(Box::new(error)),
    };
    match serde_json::from_str::<ErrorReply>(&text) {
        Ok(reply) => reply.error.into_error(status, wait),
        Err(_) => wire::ErrorBody {
            kind: None,
            message: Some(if text.trim().is_empty() {
                "(empty body)".to_owned()
            } else {
                excerpt(&text)
            }),
        }
        .into_error(status, wait),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &'static str, value: &'static str) -> reqwest::header::HeaderMap {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(name, reqwest::header::HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn a_retry_after_too_long_or_not_a_number_reads_as_none() {
        assert_eq!(
            retry_after(&headers("retry-after", "7")),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers("retry-after-ms", "250")),
            Some(Duration::from_millis(250))
        );
        for value in ["inf", "1e30", "-3", "soon"] {
            assert_eq!(retry_after(&headers("retry-after", value)), None, "{value}");
        }
        // And the usual backoff applies.
        assert_eq!(backoff(1, None), Duration::from_secs(1));
    }
}
