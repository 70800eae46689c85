//! A chat message whose JSON is LangChain's own.
//!
//! States travel between a Rust service and LangGraph/LangChain clients, so a
//! [`Message`] serializes as `message.model_dump()` does (`{"type": "ai",
//! "content": ..., "id": ..., "tool_calls": [...]}`) and reads every shape
//! LangChain's `convert_to_messages` reads: LangChain dicts, OpenAI role
//! dicts (`{"role": "user", ...}`), `[role, content]` pairs, bare strings,
//! and message objects as LangChain serialises them (JS's
//! `JSON.stringify(message)`: `{"lc": 1, "type": "constructor", "id":
//! ["langchain_core", "messages", "HumanMessage"], "kwargs": {..}}`).
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

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

// The type and its builders are here; its LangChain JSON form (written and
// read) in `langchain`, the OpenAI role shapes it reads too in `openai`, and
// the rule a message keeps to be stored in `validate`; the pieces of a
// streamed message in `chunk`, added up by LangChain's rules in `merge`.
mod chunk;
mod langchain;
mod merge;
mod openai;
mod validate;

pub use chunk::{invalid_tool_call, parse_args, MessageChunk, MessageChunks, ToolCallChunk};
pub(crate) use langchain::unwrap_constructor;
pub use merge::MergeError;
pub use validate::MessageError;

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
    #[inline]
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
    #[inline]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the author's name.
    #[must_use]
    #[inline]
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
}

/// A human message (OpenAI role `user`).
#[inline]
pub fn human(content: impl Into<Content>) -> Message {
    Message::new(MessageType::Human, content)
}

/// An AI message (OpenAI role `assistant`).
#[inline]
pub fn ai(content: impl Into<Content>) -> Message {
    Message::new(MessageType::Ai, content)
}

/// A system message.
#[inline]
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
