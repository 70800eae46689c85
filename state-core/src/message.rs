//! A chat message whose JSON is LangChain's own.
//!
//! States travel between a Rust service and LangGraph/LangChain clients, so a
//! [`Message`] serializes as `message.model_dump()` does (`{"type": "ai",
//! "content": ..., "id": ..., "tool_calls": [...]}`) and reads every shape
//! LangChain's `convert_to_messages` reads: LangChain dicts, OpenAI role
//! dicts (`{"role": "user", ...}`), `[role, content]` pairs and bare strings.
//!
//! ```
//! use agent_state::{ai, human, Message, MessageType};
//!
//! let msg: Message = serde_json::from_value(serde_json::json!(
//!     {"role": "assistant", "content": "Hi!", "id": "m1"}
//! )).unwrap();
//! assert_eq!(msg.kind, MessageType::Ai);
//! assert_eq!(msg, ai("Hi!").with_id("m1"));
//! assert_eq!(
//!     serde_json::to_value(human("Hello").with_id("m0")).unwrap(),
//!     serde_json::json!({"type": "human", "content": "Hello", "id": "m0"})
//! );
//! ```

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::json_type;

/// Who wrote a message: LangChain's `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// `"human"` (OpenAI role `user`).
    Human,
    /// `"ai"` (OpenAI role `assistant`).
    Ai,
    /// `"system"` (OpenAI roles `system` and `developer`).
    System,
    /// `"tool"`: the result of a tool call.
    Tool,
}

impl MessageType {
    /// LangChain's name for the type.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Ai => "ai",
            Self::System => "system",
            Self::Tool => "tool",
        }
    }

    /// Reads a LangChain type or an OpenAI role, as LangChain does.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "human" | "user" => Self::Human,
            "ai" | "assistant" => Self::Ai,
            "system" | "developer" => Self::System,
            "tool" => Self::Tool,
            _ => return None,
        })
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message's content: a string, or a list of content blocks
/// (`{"type": "text", "text": ...}`, images, ...), kept as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks, as the provider sent them.
    Blocks(Vec<Value>),
}

impl Content {
    /// The text of the content: the string, or the `text` of every text
    /// block joined, as LangChain's `message.text` gives it.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(map)
                        if map.get("type").and_then(Value::as_str) == Some("text") =>
                    {
                        map.get("text").and_then(Value::as_str)
                    }
                    _ => None,
                })
                .collect(),
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

/// A tool call requested by an AI message (LangChain's `ToolCall`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub args: Map<String, Value>,
    /// The call's id, echoed by the tool message that answers it.
    pub id: Option<String>,
}

impl ToolCall {
    /// A tool call with an id.
    pub fn new(name: impl Into<String>, args: Map<String, Value>, id: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            args,
            id: Some(id.into()),
        }
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("args", &self.args)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "tool_call")?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        tool_call_from_json(value).map_err(de::Error::custom)
    }
}

/// Whether a tool ran: LangChain's `ToolMessage.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool returned normally.
    Success,
    /// The tool failed; the content says why.
    Error,
}

/// One chat message. The fields are LangChain's; those that belong to one
/// type only (`tool_calls` to AI messages, `tool_call_id` to tool messages)
/// are empty on the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub kind: MessageType,
    /// What it says.
    pub content: Content,
    /// Its id; the messages reducer assigns one when it is missing.
    pub id: Option<String>,
    /// An optional name of the author.
    pub name: Option<String>,
    /// Provider-specific extras (LangChain's `additional_kwargs`).
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata (LangChain's `response_metadata`).
    pub response_metadata: Map<String, Value>,
    /// Tool calls an AI message requests.
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls the provider sent that could not be parsed, kept as JSON.
    pub invalid_tool_calls: Vec<Value>,
    /// Token usage of an AI message, as the provider reported it.
    pub usage_metadata: Option<Value>,
    /// The tool call a tool message answers.
    pub tool_call_id: Option<String>,
    /// Whether the tool succeeded.
    pub status: Option<ToolStatus>,
    /// Tool output not meant for the model.
    pub artifact: Option<Value>,
}

impl Message {
    /// A message of `kind` with `content` and nothing else set.
    pub fn new(kind: MessageType, content: impl Into<Content>) -> Self {
        Self {
            kind,
            content: content.into(),
            id: None,
            name: None,
            additional_kwargs: Map::new(),
            response_metadata: Map::new(),
            tool_calls: Vec::new(),
            invalid_tool_calls: Vec::new(),
            usage_metadata: None,
            tool_call_id: None,
            status: None,
            artifact: None,
        }
    }

    /// Sets the id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the author's name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a tool call (AI messages).
    #[must_use]
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// The text of the content (see [`Content::text`]).
    pub fn text(&self) -> String {
        self.content.text()
    }

    /// Checks that the message reads back from its JSON as itself: the one
    /// rule for messages coming in (JSON or Rust) and going out (a
    /// checkpoint). A tool message must answer a call (a non-empty
    /// `tool_call_id`, which LangChain's `ToolMessage` requires), and
    /// `usage_metadata` and `artifact` must not be `Some(null)` (JSON's
    /// `null` reads back as `None`).
    pub fn validate(&self) -> Result<(), MessageError> {
        if self.kind == MessageType::Tool {
            match self.tool_call_id.as_deref() {
                None => {
                    return Err(MessageError::MissingField {
                        field: "tool_call_id",
                    })
                }
                Some("") => {
                    return Err(MessageError::InvalidField {
                        field: "tool_call_id",
                        reason: "must not be empty".to_owned(),
                    })
                }
                Some(_) => {}
            }
        }
        for (field, value) in [
            ("usage_metadata", &self.usage_metadata),
            ("artifact", &self.artifact),
        ] {
            if matches!(value, Some(Value::Null)) {
                return Err(MessageError::InvalidField {
                    field,
                    reason: "`Some(null)` reads back as `None`: leave it `None`".to_owned(),
                });
            }
        }
        Ok(())
    }

    /// Reads a message from any shape LangChain accepts: a LangChain dict, an
    /// OpenAI role dict, a `[role, content]` pair or a bare string (a human
    /// message).
    pub fn from_json(value: Value) -> Result<Self, MessageError> {
        match value {
            Value::String(text) => Ok(Self::new(MessageType::Human, text)),
            Value::Array(pair) => {
                let [role, content]: [Value; 2] = pair
                    .try_into()
                    .map_err(|_| MessageError::NotAMessage { found: "an array" })?;
                let role = match role {
                    Value::String(role) => role,
                    other => {
                        return Err(MessageError::InvalidField {
                            field: "role",
                            reason: format!("expected a string, found {}", json_type(&other)),
                        })
                    }
                };
                let kind =
                    MessageType::parse(&role).ok_or(MessageError::UnknownType { name: role })?;
                let content =
                    Content::deserialize(content).map_err(|e| MessageError::InvalidField {
                        field: "content",
                        reason: e.to_string(),
                    })?;
                let msg = Self::new(kind, content);
                // A `["tool", content]` pair has no call id to answer.
                msg.validate()?;
                Ok(msg)
            }
            Value::Object(map) => Self::from_object(map),
            other => Err(MessageError::NotAMessage {
                found: json_type(&other),
            }),
        }
    }

    fn from_object(mut map: Map<String, Value>) -> Result<Self, MessageError> {
        let kind_name = match (map.remove("type"), map.remove("role")) {
            (Some(Value::String(t)), _) => t,
            (None, Some(Value::String(r))) => r,
            (Some(other), _) | (None, Some(other)) => {
                return Err(MessageError::InvalidField {
                    field: "type",
                    reason: format!("expected a string, found {}", json_type(&other)),
                })
            }
            (None, None) => return Err(MessageError::MissingField { field: "type" }),
        };
        let kind = MessageType::parse(&kind_name).ok_or(MessageError::UnknownType {
            name: kind_name.clone(),
        })?;
        let content = match map.remove("content") {
            None | Some(Value::Null) => Content::default(),
            Some(v) => Content::deserialize(v).map_err(|_| MessageError::InvalidField {
                field: "content",
                reason: "expected a string or a list of content blocks".to_owned(),
            })?,
        };
        let mut msg = Self::new(kind, content);
        if kind_name == "developer" {
            // LangChain keeps the OpenAI role so it can be sent back as-is.
            msg.additional_kwargs.insert(
                "__openai_role__".to_owned(),
                Value::String("developer".to_owned()),
            );
        }
        msg.id = opt_string(&mut map, "id")?;
        msg.name = opt_string(&mut map, "name")?;
        if let Some(kwargs) = take_object(&mut map, "additional_kwargs")? {
            msg.additional_kwargs.extend(kwargs);
        }
        msg.response_metadata = take_object(&mut map, "response_metadata")?.unwrap_or_default();
        if let Some(calls) = map.remove("tool_calls") {
            let calls = match calls {
                Value::Array(calls) => calls,
                Value::Null => Vec::new(),
                other => {
                    return Err(MessageError::InvalidField {
                        field: "tool_calls",
                        reason: format!("expected an array, found {}", json_type(&other)),
                    })
                }
            };
            msg.tool_calls = calls
                .into_iter()
                .map(tool_call_from_json)
                .collect::<Result<_, _>>()?;
        }
        if let Some(invalid) = map.remove("invalid_tool_calls") {
            match invalid {
                Value::Array(items) => msg.invalid_tool_calls = items,
                Value::Null => {}
                other => {
                    return Err(MessageError::InvalidField {
                        field: "invalid_tool_calls",
                        reason: format!("expected an array, found {}", json_type(&other)),
                    })
                }
            }
        }
        msg.usage_metadata = map.remove("usage_metadata").filter(|v| !v.is_null());
        msg.tool_call_id = opt_string(&mut map, "tool_call_id")?;
        msg.status = match map.remove("status") {
            None | Some(Value::Null) => None,
            Some(v) => {
                Some(
                    ToolStatus::deserialize(v).map_err(|_| MessageError::InvalidField {
                        field: "status",
                        reason: "expected \"success\" or \"error\"".to_owned(),
                    })?,
                )
            }
        };
        msg.artifact = map.remove("artifact").filter(|v| !v.is_null());
        msg.validate()?;
        // `example` is a LangChain field with no meaning here; other keys are
        // provider extras, kept where LangChain keeps them.
        map.remove("example");
        msg.additional_kwargs.extend(map);
        Ok(msg)
    }
}

/// A human message (OpenAI role `user`).
pub fn human(content: impl Into<Content>) -> Message {
    Message::new(MessageType::Human, content)
}

/// An AI message (OpenAI role `assistant`).
pub fn ai(content: impl Into<Content>) -> Message {
    Message::new(MessageType::Ai, content)
}

/// A system message.
pub fn system(content: impl Into<Content>) -> Message {
    Message::new(MessageType::System, content)
}

/// A tool message answering the tool call `tool_call_id`.
pub fn tool(content: impl Into<Content>, tool_call_id: impl Into<String>) -> Message {
    let mut msg = Message::new(MessageType::Tool, content);
    msg.tool_call_id = Some(tool_call_id.into());
    msg
}

impl From<&str> for Message {
    /// A bare string is a human message, as in LangChain.
    fn from(text: &str) -> Self {
        human(text)
    }
}

impl From<String> for Message {
    /// A bare string is a human message, as in LangChain.
    fn from(text: String) -> Self {
        human(text)
    }
}

impl Serialize for Message {
    /// LangChain's `model_dump()` JSON. A message that would not read back as
    /// itself ([`Message::validate`]) is an error, so it is never stored.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.validate().map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.kind.as_str())?;
        map.serialize_entry("content", &self.content)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        if !self.additional_kwargs.is_empty() {
            map.serialize_entry("additional_kwargs", &self.additional_kwargs)?;
        }
        if !self.response_metadata.is_empty() {
            map.serialize_entry("response_metadata", &self.response_metadata)?;
        }
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if !self.invalid_tool_calls.is_empty() {
            map.serialize_entry("invalid_tool_calls", &self.invalid_tool_calls)?;
        }
        if let Some(usage) = &self.usage_metadata {
            map.serialize_entry("usage_metadata", usage)?;
        }
        if let Some(call_id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", call_id)?;
        }
        if let Some(status) = &self.status {
            map.serialize_entry("status", status)?;
        }
        if let Some(artifact) = &self.artifact {
            map.serialize_entry("artifact", artifact)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(value).map_err(de::Error::custom)
    }
}

/// Why a JSON value is not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// The `type` or `role` is not one LangChain knows.
    UnknownType {
        /// The name that came.
        name: String,
    },
    /// A field the message type needs is missing.
    MissingField {
        /// The missing field.
        field: &'static str,
    },
    /// A field has the wrong shape.
    InvalidField {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The value is not a message at all.
    NotAMessage {
        /// The JSON type that came.
        found: &'static str,
    },
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownType { name } => write!(
                f,
                "unknown message type `{name}`, expected one of `human`, `user`, `ai`, `assistant`, `system`, `developer`, `tool`, `remove`"
            ),
            Self::MissingField { field } => write!(f, "message is missing `{field}`"),
            Self::InvalidField { field, reason } => write!(f, "message field `{field}`: {reason}"),
            Self::NotAMessage { found } => write!(
                f,
                "expected a message (an object with `type` or `role`, a [role, content] pair or a string), found {found}"
            ),
        }
    }
}

impl std::error::Error for MessageError {}

fn opt_string(
    map: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, MessageError> {
    match map.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(MessageError::InvalidField {
            field,
            reason: format!("expected a string, found {}", json_type(&other)),
        }),
    }
}

fn take_object(
    map: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<Map<String, Value>>, MessageError> {
    match map.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(obj)) => Ok(Some(obj)),
        Some(other) => Err(MessageError::InvalidField {
            field,
            reason: format!("expected an object, found {}", json_type(&other)),
        }),
    }
}

/// Reads LangChain's `{name, args, id}` or OpenAI's
/// `{id, type: "function", function: {name, arguments: "<json>"}}`.
fn tool_call_from_json(value: Value) -> Result<ToolCall, MessageError> {
    let invalid = |reason: String| MessageError::InvalidField {
        field: "tool_calls",
        reason,
    };
    let Value::Object(mut map) = value else {
        return Err(invalid(format!(
            "expected an object, found {}",
            json_type(&value)
        )));
    };
    let id = opt_string(&mut map, "id").map_err(|_| invalid("`id` must be a string".to_owned()))?;
    if let Some(Value::Object(mut function)) = map.remove("function") {
        let name = opt_string(&mut function, "name")
            .ok()
            .flatten()
            .ok_or_else(|| invalid("function call without a `name`".to_owned()))?;
        let args = match function.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::String(raw)) if raw.trim().is_empty() => Map::new(),
            Some(Value::String(raw)) => match serde_json::from_str::<Value>(&raw) {
                Ok(Value::Object(args)) => args,
                _ => {
                    return Err(invalid(format!(
                        "arguments of `{name}` are not a JSON object"
                    )))
                }
            },
            Some(Value::Object(args)) => args,
            Some(_) => {
                return Err(invalid(format!(
                    "arguments of `{name}` are not a JSON object"
                )))
            }
        };
        return Ok(ToolCall { name, args, id });
    }
    let name = opt_string(&mut map, "name")
        .ok()
        .flatten()
        .ok_or_else(|| invalid("tool call without a `name`".to_owned()))?;
    let args = match map.remove("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args,
        Some(other) => {
            return Err(invalid(format!(
                "`args` of `{name}` must be an object, found {}",
                json_type(&other)
            )))
        }
    };
    Ok(ToolCall { name, args, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_input_shape() {
        let cases = [
            (json!("hi"), MessageType::Human),
            (json!(["assistant", "hi"]), MessageType::Ai),
            (json!({"role": "user", "content": "hi"}), MessageType::Human),
            (
                json!({"role": "developer", "content": "hi"}),
                MessageType::System,
            ),
            (
                json!({"type": "system", "content": "hi"}),
                MessageType::System,
            ),
            (
                json!({"type": "tool", "content": "hi", "tool_call_id": "c1"}),
                MessageType::Tool,
            ),
        ];
        for (value, kind) in cases {
            let msg = Message::from_json(value.clone()).unwrap();
            assert_eq!(msg.kind, kind, "{value}");
            assert_eq!(msg.text(), "hi");
        }
    }

    #[test]
    fn unknown_role_is_named() {
        let err = Message::from_json(json!({"role": "wizard", "content": "x"})).unwrap_err();
        assert_eq!(
            err,
            MessageError::UnknownType {
                name: "wizard".into()
            }
        );
        assert!(err.to_string().contains("`wizard`"));
    }

    #[test]
    fn malformed_messages_name_the_field() {
        let invalid = |value: Value| match Message::from_json(value.clone()) {
            Err(MessageError::InvalidField { field, .. }) => field,
            other => panic!("{value}: {other:?}"),
        };
        assert_eq!(invalid(json!({"type": "ai", "content": 5})), "content");
        assert_eq!(invalid(json!({"type": 1, "content": "x"})), "type");
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "id": 7})),
            "id"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "tool_calls": {}})),
            "tool_calls"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "tool_calls": [{"args": {}}]})),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"type": "ai", "content": "x", "tool_calls": [{"name": "f", "args": [1]}]})
            ),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]})
            ),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"type": "tool", "content": "x", "tool_call_id": "c", "status": "maybe"})
            ),
            "status"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "response_metadata": []})),
            "response_metadata"
        );
        assert_eq!(invalid(json!([1, "x"])), "role");
        assert_eq!(
            Message::from_json(json!(42)).unwrap_err(),
            MessageError::NotAMessage { found: "a number" }
        );
        assert_eq!(
            Message::from_json(json!(["human"])).unwrap_err(),
            MessageError::NotAMessage { found: "an array" }
        );
        assert_eq!(
            Message::from_json(json!({"content": "x"})).unwrap_err(),
            MessageError::MissingField { field: "type" }
        );
    }

    #[test]
    fn tool_message_needs_its_call_id() {
        let missing = MessageError::MissingField {
            field: "tool_call_id",
        };
        for value in [
            json!({"type": "tool", "content": "x"}),
            json!({"role": "tool", "content": "x", "tool_call_id": null}),
            json!(["tool", "42"]),
        ] {
            assert_eq!(
                Message::from_json(value.clone()).unwrap_err(),
                missing,
                "{value}"
            );
        }
        let empty = Message::from_json(json!({"type": "tool", "content": "x", "tool_call_id": ""}));
        assert!(
            matches!(
                empty,
                Err(MessageError::InvalidField {
                    field: "tool_call_id",
                    ..
                })
            ),
            "{empty:?}"
        );
        // Built in Rust: the same rule, and such a message does not serialize.
        let built = Message::new(MessageType::Tool, "x");
        assert_eq!(built.validate().unwrap_err(), missing);
        let err = serde_json::to_string(&built).unwrap_err();
        assert!(err.to_string().contains("tool_call_id"), "{err}");
        assert!(tool("x", "").validate().is_err());
        assert!(tool("x", "c1").validate().is_ok());
    }

    #[test]
    fn some_null_extras_are_refused() {
        let mut msg = ai("x");
        msg.usage_metadata = Some(Value::Null);
        assert!(matches!(
            msg.validate(),
            Err(MessageError::InvalidField {
                field: "usage_metadata",
                ..
            })
        ));
        msg.usage_metadata = None;
        msg.artifact = Some(Value::Null);
        assert!(serde_json::to_value(&msg).is_err());
    }

    #[test]
    fn langchain_ai_message_round_trips() {
        let dumped = json!({
            "type": "ai",
            "content": [{"type": "text", "text": "Let me check."}],
            "id": "run-1",
            "name": "optimist",
            "response_metadata": {"model": "x"},
            "tool_calls": [{"name": "search", "args": {"q": "rust"}, "id": "call_1", "type": "tool_call"}],
            "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
        });
        let msg = Message::from_json(dumped.clone()).unwrap();
        assert_eq!(msg.text(), "Let me check.");
        assert_eq!(msg.tool_calls[0].name, "search");
        assert_eq!(serde_json::to_value(&msg).unwrap(), dumped);
    }

    #[test]
    fn openai_tool_calls_are_converted() {
        let msg = Message::from_json(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "add", "arguments": "{\"a\": 1}"}}]
        }))
        .unwrap();
        assert_eq!(
            msg.tool_calls,
            vec![ToolCall::new(
                "add",
                json!({"a": 1}).as_object().unwrap().clone(),
                "c1"
            )]
        );
    }

    #[test]
    fn model_dump_extras_are_accepted() {
        let msg = Message::from_json(json!({
            "type": "human", "content": "x", "id": null, "name": null,
            "additional_kwargs": {}, "response_metadata": {}, "example": false
        }))
        .unwrap();
        assert_eq!(msg, human("x"));
    }
}
