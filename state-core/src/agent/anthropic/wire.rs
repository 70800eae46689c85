//! The Messages API's answers as Anthropic sends them (a message, its
//! content blocks, its usage, an error body) and how they read as our AI
//! message. Only what an answer cannot do without is required: a block's
//! `type`; unknown block types (thinking, server tools, ...) are skipped.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::super::model::ModelError;
use crate::message::{invalid_tool_call, Message, MessageType, ToolCall};

/// A message (`stream: false`), or the error some proxies send with
/// status 200.
#[derive(Debug, Deserialize)]
pub(super) struct Reply {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) id: Option<String>,
    pub(super) model: Option<String>,
    pub(super) content: Option<Vec<Block>>,
    pub(super) stop_reason: Option<String>,
    pub(super) stop_sequence: Option<String>,
    pub(super) usage: Option<WireUsage>,
    pub(super) error: Option<ErrorBody>,
}

/// A content block of a message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    /// Text.
    Text { text: String },
    /// A client tool call: its input is a JSON object.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// Thinking, server tool use, citations' documents, ...: not part of
    /// our message.
    #[serde(other)]
    Other,
}

/// The `error` of an error body: `{"type": "error", "error": {"type":
/// "overloaded_error", "message": "Overloaded"}}`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) message: Option<String>,
}

impl ErrorBody {
    /// `type: message`, as the server wrote them.
    pub(super) fn describe(&self) -> String {
        match (&self.kind, &self.message) {
            (Some(kind), Some(message)) => format!("{kind}: {message}"),
            (Some(text), None) | (None, Some(text)) => text.clone(),
            (None, None) => "an error without a message".to_owned(),
        }
    }

    /// The HTTP status Anthropic documents for this error type (an error
    /// that comes inside a stream has none of its own).
    pub(super) fn status(&self) -> u16 {
        match self.kind.as_deref() {
            Some("invalid_request_error") => 400,
            Some("authentication_error") => 401,
            Some("billing_error") => 402,
            Some("permission_error") => 403,
            Some("not_found_error") => 404,
            Some("request_too_large") => 413,
            Some("rate_limit_error") => 429,
            Some("timeout_error") => 504,
            Some("overloaded_error") => 529,
            _ => 500,
        }
    }

    /// The error as a [`ModelError`] of `status`.
    pub(super) fn into_error(
        self,
        status: u16,
        retry_after: Option<std::time::Duration>,
    ) -> ModelError {
        let message = self.describe();
        if status == 429 {
            ModelError::RateLimited {
                message,
                retry_after,
            }
        } else {
            ModelError::Api { status, message }
        }
    }
}

/// A whole error body.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorReply {
    pub(super) error: ErrorBody,
}

/// Token counts. Anthropic's `input_tokens` leaves out the cached ones.
#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct WireUsage {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) cache_read_input_tokens: Option<u64>,
    pub(super) cache_creation_input_tokens: Option<u64>,
    pub(super) cache_creation: Option<CacheCreation>,
}

/// Cache writes by time to live.
#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct CacheCreation {
    pub(super) ephemeral_5m_input_tokens: Option<u64>,
    pub(super) ephemeral_1h_input_tokens: Option<u64>,
}

impl WireUsage {
    /// These counts, each missing one taken from `earlier` (a stream's
    /// `message_start`, when its `message_delta` leaves input counts out).
    pub(super) fn or(self, earlier: &Self) -> Self {
        Self {
            input_tokens: self.input_tokens.or(earlier.input_tokens),
            output_tokens: self.output_tokens.or(earlier.output_tokens),
            cache_read_input_tokens: self
                .cache_read_input_tokens
                .or(earlier.cache_read_input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .or(earlier.cache_creation_input_tokens),
            cache_creation: self
                .cache_creation
                .or_else(|| earlier.cache_creation.clone()),
        }
    }

    /// LangChain's `usage_metadata` as `ChatAnthropic` reports it: input
    /// tokens with the cached ones added back, `input_token_details` with
    /// `cache_read` and `cache_creation` (by time to live when the server
    /// splits them, the total then 0 so nothing counts twice).
    pub(super) fn to_json(&self) -> Value {
        let mut details = Map::new();
        let mut put = |key: &str, value: Option<u64>| {
            if let Some(value) = value {
                details.insert(key.to_owned(), value.into());
            }
        };
        put("cache_read", self.cache_read_input_tokens);
        put("cache_creation", self.cache_creation_input_tokens);
        let mut by_ttl = 0;
        if let Some(ttl) = &self.cache_creation {
            put("ephemeral_5m_input_tokens", ttl.ephemeral_5m_input_tokens);
            put("ephemeral_1h_input_tokens", ttl.ephemeral_1h_input_tokens);
            by_ttl = ttl.ephemeral_5m_input_tokens.unwrap_or(0)
                + ttl.ephemeral_1h_input_tokens.unwrap_or(0);
        }
        if by_ttl > 0 {
            details.insert("cache_creation".to_owned(), 0.into());
        }
        let creation = if by_ttl > 0 {
            by_ttl
        } else {
            self.cache_creation_input_tokens.unwrap_or(0)
        };
        let input =
            self.input_tokens.unwrap_or(0) + self.cache_read_input_tokens.unwrap_or(0) + creation;
        let output = self.output_tokens.unwrap_or(0);
        json!({
            "input_tokens": input,
            "output_tokens": output,
            "total_tokens": input + output,
            "input_token_details": details,
        })
    }
}

/// The AI message of a reply: its text blocks joined, its `tool_use`
/// blocks as tool calls (an input that is not an object: an invalid
/// call), usage, and id, model, stop reason and sequence as metadata, as
/// LangChain's `ChatAnthropic` puts them.
pub(super) fn from_reply(reply: Reply) -> Result<Message, ModelError> {
    if let Some(error) = reply.error {
        let status = error.status();
        return Err(error.into_error(status, None));
    }
    let named = reply
        .id
        .as_deref()
        .map_or_else(|| "the message".to_owned(), |id| format!("message `{id}`"));
    if reply.kind.as_deref().is_some_and(|kind| kind != "message") {
        return Err(ModelError::InvalidResponse {
            message: format!("{named} is of type `{}`", reply.kind.unwrap_or_default()),
        });
    }
    let Some(blocks) = reply.content else {
        return Err(ModelError::InvalidResponse {
            message: format!("{named} has no content"),
        });
    };
    let mut message = Message::new(MessageType::Ai, "");
    let mut text = String::new();
    for block in blocks {
        match block {
            Block::Text { text: piece } => text.push_str(&piece),
            Block::ToolUse { id, name, input } => add_tool_use(&mut message, id, name, input),
            Block::Other => {}
        }
    }
    message.content = text.into();
    message.usage_metadata = reply.usage.as_ref().map(WireUsage::to_json);
    let mut meta = Map::new();
    meta.extend(reply.id.map(|id| ("id".to_owned(), id.into())));
    meta.extend(reply.model.map(|m| ("model_name".to_owned(), m.into())));
    meta.insert("stop_reason".to_owned(), reply.stop_reason.into());
    meta.insert("stop_sequence".to_owned(), reply.stop_sequence.into());
    meta.insert("model_provider".to_owned(), "anthropic".into());
    message.response_metadata = meta;
    Ok(message)
}

/// A `tool_use` block into `message`: a call when its input is an object.
fn add_tool_use(message: &mut Message, id: String, name: String, input: Value) {
    match input {
        Value::Object(args) => message.tool_calls.push(ToolCall {
            name,
            args,
            id: Some(id),
        }),
        other => message.invalid_tool_calls.push(invalid_tool_call(
            &name,
            &other.to_string(),
            Some(id),
            "the tool input is not a JSON object",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(value: Value) -> WireUsage {
        serde_json::from_value(value).unwrap()
    }

    /// Cache writes split by time to live count once, by their parts,
    /// as LangChain's `_create_usage_metadata` counts them.
    #[test]
    fn cache_writes_by_time_to_live_count_once() {
        let split = usage(json!({"input_tokens": 10, "output_tokens": 3,
            "cache_read_input_tokens": 1, "cache_creation_input_tokens": 6,
            "cache_creation": {"ephemeral_5m_input_tokens": 2, "ephemeral_1h_input_tokens": 4}}));
        assert_eq!(
            split.to_json(),
            json!({"input_tokens": 17, "output_tokens": 3, "total_tokens": 20,
                   "input_token_details": {"cache_read": 1, "cache_creation": 0,
                       "ephemeral_5m_input_tokens": 2, "ephemeral_1h_input_tokens": 4}})
        );
        let bare = usage(json!({"input_tokens": 10, "output_tokens": 3}));
        assert_eq!(
            bare.to_json(),
            json!({"input_tokens": 10, "output_tokens": 3, "total_tokens": 13,
                   "input_token_details": {}})
        );
    }

    /// A `message_delta` without input counts takes `message_start`'s.
    #[test]
    fn missing_counts_come_from_earlier_ones() {
        let start = usage(json!({"input_tokens": 7, "cache_read_input_tokens": 2}));
        let delta = usage(json!({"output_tokens": 5}));
        let merged = delta.or(&start).to_json();
        assert_eq!(
            (
                merged["input_tokens"].clone(),
                merged["total_tokens"].clone()
            ),
            (json!(9), json!(14))
        );
    }

    #[test]
    fn unknown_blocks_are_skipped_and_odd_inputs_are_invalid_calls() {
        let reply: Reply = serde_json::from_value(json!({"id": "msg_1", "type": "message",
            "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
                        {"type": "tool_use", "id": "t1", "name": "f", "input": [1]}],
            "stop_reason": "tool_use"}))
        .unwrap();
        let message = from_reply(reply).unwrap();
        assert_eq!(message.text(), "ab");
        assert!(message.tool_calls.is_empty());
        assert_eq!(message.invalid_tool_calls[0]["args"], "[1]");
        assert_eq!(message.usage_metadata, None);
    }

    #[test]
    fn an_error_body_with_status_200_is_the_error_it_names() {
        let reply: Reply = serde_json::from_value(json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        .unwrap();
        let error = from_reply(reply).unwrap_err();
        assert!(
            matches!(&error, ModelError::Api { status: 529, message } if message == "overloaded_error: Overloaded"),
            "{error:?}"
        );
    }
}
