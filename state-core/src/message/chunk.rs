//! A piece of a message as a model streams it: LangChain's
//! `AIMessageChunk` and its kin (`HumanMessageChunk`, `SystemMessageChunk`,
//! `ToolMessageChunk`), read and written in their JSON form, added to one
//! another as LangChain adds them, and turned into the [`Message`] the
//! pieces make.
//!
//! ```
//! use agent_state::{MessageChunk, MessageChunks};
//! use agent_state::serde_json::json;
//!
//! let pieces = [
//!     json!({"type": "AIMessageChunk", "content": "Hel", "id": "run-1",
//!            "tool_call_chunks": [{"name": "search", "args": "{\"q\": ", "id": "call-1", "index": 0}]}),
//!     json!({"type": "AIMessageChunk", "content": "lo", "id": "run-1",
//!            "tool_call_chunks": [{"args": "\"rust\"}", "index": 0}],
//!            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}),
//! ];
//! let mut stream = MessageChunks::new();
//! for piece in pieces {
//!     stream.push(MessageChunk::from_json(piece)?)?;
//! }
//! let [message] = stream.into_messages().try_into().unwrap();
//! assert_eq!(message.text(), "Hello");
//! assert_eq!(message.tool_calls[0].args["q"], "rust");
//! assert_eq!(message.id.as_deref(), Some("run-1"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::merge::{add_usage, merge_content, merge_dicts, merge_lists, MergeError};
use super::{Content, Message, MessageError, MessageType, ToolCall, ToolStatus};
use crate::error::json_type;

/// A piece of a tool call as it streams (LangChain's `ToolCallChunk`): the
/// pieces of one call share its `index`; the first usually carries the id
/// and the name, and the arguments arrive as pieces of a JSON string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCallChunk {
    /// The tool's name, when this piece carries it.
    pub name: Option<String>,
    /// The next piece of the arguments' JSON text.
    pub args: String,
    /// The call's id, when this piece carries it.
    pub id: Option<String>,
    /// Which call of the message this piece belongs to; pieces without one
    /// are calls of their own.
    pub index: Option<usize>,
}

/// A piece of a streamed message: LangChain's `AIMessageChunk` (or
/// `HumanMessageChunk`, `SystemMessageChunk`, `ToolMessageChunk`). Pieces
/// add up with [`add`](Self::add) as LangChain's `+` adds them, and
/// [`into_message`](Self::into_message) makes the message they end as.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageChunk {
    /// Who writes it.
    pub kind: MessageType,
    /// The next piece of content.
    pub content: Content,
    /// The message's id, when this piece carries it.
    pub id: Option<String>,
    /// The author's name.
    pub name: Option<String>,
    /// Provider extras (LangChain's `additional_kwargs`).
    pub additional_kwargs: Map<String, Value>,
    /// Provider metadata (finish reason, model name, ...).
    pub response_metadata: Map<String, Value>,
    /// Pieces of tool calls (AI chunks).
    pub tool_call_chunks: Vec<ToolCallChunk>,
    /// Token counts (usually on the last piece); they add up.
    pub usage_metadata: Option<Value>,
    /// The call a tool message answers (tool chunks).
    pub tool_call_id: Option<String>,
    /// Whether the tool succeeded (tool chunks).
    pub status: Option<ToolStatus>,
    /// Tool output not meant for the model (tool chunks).
    pub artifact: Option<Value>,
    /// Whether this is the last piece (LangChain's `chunk_position: "last"`).
    pub last: bool,
}

impl Default for MessageChunk {
    fn default() -> Self {
        Self::new(MessageType::Ai, "")
    }
}

impl MessageChunk {
    /// A piece of a message of `kind` with `content`.
    pub fn new(kind: MessageType, content: impl Into<Content>) -> Self {
        Self {
            kind,
            content: content.into(),
            id: None,
            name: None,
            additional_kwargs: Map::new(),
            response_metadata: Map::new(),
            tool_call_chunks: Vec::new(),
            usage_metadata: None,
            tool_call_id: None,
            status: None,
            artifact: None,
            last: false,
        }
    }

    /// A piece of an AI message: the usual token.
    pub fn ai(content: impl Into<Content>) -> Self {
        Self::new(MessageType::Ai, content)
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

    /// Marks the last piece of a message.
    #[must_use]
    pub fn as_last(mut self) -> Self {
        self.last = true;
        self
    }

    /// The whole of `message` as one piece: what a model that does not
    /// stream yields. Its tool calls become pieces indexed in order.
    pub fn whole(message: &Message) -> Self {
        let mut chunk = Self::new(message.kind, message.content.clone());
        chunk.id.clone_from(&message.id);
        chunk.name.clone_from(&message.name);
        chunk
            .additional_kwargs
            .clone_from(&message.additional_kwargs);
        chunk
            .response_metadata
            .clone_from(&message.response_metadata);
        chunk.tool_call_chunks = message
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| ToolCallChunk {
                name: Some(call.name.clone()),
                args: Value::Object(call.args.clone()).to_string(),
                id: call.id.clone(),
                index: Some(index),
            })
            .collect();
        chunk.usage_metadata.clone_from(&message.usage_metadata);
        chunk.tool_call_id.clone_from(&message.tool_call_id);
        chunk.status = message.status;
        chunk.artifact.clone_from(&message.artifact);
        chunk.last = true;
        chunk
    }

    /// The text of this piece.
    pub fn text(&self) -> String {
        self.content.text()
    }

    /// Adds `other` after this piece, as LangChain's `chunk + other`:
    /// contents concatenate, tool call pieces with one index merge (their
    /// argument strings concatenated), usage adds up, metadata merges, the
    /// id is the first provider id (else a `lc_run-` id, else any). Unlike
    /// LangChain, the name is kept (LangChain's sum drops it) and chunks of
    /// two message types are an error (LangChain gives the left one's type).
    pub fn add(&mut self, other: MessageChunk) -> Result<(), MergeError> {
        if self.kind != other.kind {
            return Err(MergeError::Kind {
                left: chunk_type(self.kind),
                right: chunk_type(other.kind),
            });
        }
        if let (Some(l), Some(r)) = (&self.tool_call_id, &other.tool_call_id) {
            if l != r {
                return Err(MergeError::ToolCallId {
                    left: l.clone(),
                    right: r.clone(),
                });
            }
        }
        merge_content(&mut self.content, other.content)?;
        merge_dicts(
            &mut self.additional_kwargs,
            other.additional_kwargs,
            "additional_kwargs",
        )?;
        merge_dicts(
            &mut self.response_metadata,
            other.response_metadata,
            "response_metadata",
        )?;
        self.add_tool_call_chunks(other.tool_call_chunks)?;
        add_usage(&mut self.usage_metadata, other.usage_metadata);
        self.id = best_id(self.id.take(), other.id);
        self.name = self.name.take().or(other.name);
        self.tool_call_id = self.tool_call_id.take().or(other.tool_call_id);
        self.status = merge_status(self.status, other.status);
        self.artifact = self.artifact.take().or(other.artifact);
        self.last |= other.last;
        Ok(())
    }

    fn add_tool_call_chunks(&mut self, more: Vec<ToolCallChunk>) -> Result<(), MergeError> {
        if more.is_empty() {
            return Ok(());
        }
        let mut left: Vec<Value> = self.tool_call_chunks.iter().map(call_chunk_json).collect();
        let right = more.iter().map(call_chunk_json).collect();
        merge_lists(&mut left, right, "tool_call_chunks")?;
        self.tool_call_chunks = left.into_iter().map(call_chunk_from_merged).collect();
        Ok(())
    }

    /// The message the pieces make (LangChain's `message_chunk_to_message`):
    /// each tool call piece whose arguments read as a JSON object (an empty
    /// string is no argument) is a tool call, the others invalid tool calls
    /// carrying the parse error.
    pub fn into_message(self) -> Message {
        let mut message = Message::new(self.kind, self.content);
        message.id = self.id;
        message.name = self.name;
        message.additional_kwargs = self.additional_kwargs;
        message.response_metadata = self.response_metadata;
        for call in self.tool_call_chunks {
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
        message.usage_metadata = self.usage_metadata;
        message.tool_call_id = self.tool_call_id;
        message.status = self.status;
        message.artifact = self.artifact;
        message
    }

    /// Reads LangChain's JSON of a chunk (`chunk.model_dump()`): its `type`
    /// is `AIMessageChunk`, `HumanMessageChunk`, `SystemMessageChunk` or
    /// `ToolMessageChunk`. Without `tool_call_chunks`, its `tool_calls` and
    /// `invalid_tool_calls` become pieces without an index, as LangChain
    /// reads them. Other keys are provider extras, kept in
    /// `additional_kwargs`. A chunk LangChain serialised (`{"lc": 1, "type":
    /// "constructor", "id": [.., "AIMessageChunk"], "kwargs": {..}}`) reads
    /// the same.
    pub fn from_json(value: Value) -> Result<Self, MessageError> {
        let Value::Object(map) = value else {
            return Err(MessageError::NotAMessage {
                found: json_type(&value),
            });
        };
        let mut map = super::unwrap_constructor(map)?;
        let name = match map.remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => {
                return Err(MessageError::InvalidField {
                    field: "type",
                    reason: format!("expected a string, found {}", json_type(&other)),
                })
            }
            None => return Err(MessageError::MissingField { field: "type" }),
        };
        let kind = parse_chunk_type(&name).ok_or(MessageError::UnknownType { name })?;
        Self::from_object(kind, map)
    }

    /// A chunk of `kind` from the rest of its JSON object.
    pub(crate) fn from_object(
        kind: MessageType,
        mut map: Map<String, Value>,
    ) -> Result<Self, MessageError> {
        let pieces = map.remove("tool_call_chunks");
        let last = match map.remove("chunk_position") {
            None | Some(Value::Null) => false,
            Some(Value::String(p)) if p == "last" => true,
            Some(other) => {
                return Err(MessageError::InvalidField {
                    field: "chunk_position",
                    reason: format!("expected \"last\" or null, found {other}"),
                })
            }
        };
        map.insert("type".to_owned(), Value::from(kind.as_str()));
        let message = Message::from_json(Value::Object(map))?;
        let mut chunk = Self::whole(&message);
        chunk.last = last;
        chunk.tool_call_chunks = match pieces {
            None | Some(Value::Null) => unindexed(&message),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(call_chunk_from_json)
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(MessageError::InvalidField {
                    field: "tool_call_chunks",
                    reason: format!("expected an array, found {}", json_type(&other)),
                })
            }
        };
        Ok(chunk)
    }
}

/// The pieces of a message's tool calls and invalid tool calls, without
/// an index: a chunk read without `tool_call_chunks`.
fn unindexed(message: &Message) -> Vec<ToolCallChunk> {
    let calls = message.tool_calls.iter().map(|call| ToolCallChunk {
        name: Some(call.name.clone()),
        args: Value::Object(call.args.clone()).to_string(),
        id: call.id.clone(),
        index: None,
    });
    let invalid = message.invalid_tool_calls.iter().map(|call| ToolCallChunk {
        name: call.get("name").and_then(Value::as_str).map(str::to_owned),
        args: call
            .get("args")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        id: call.get("id").and_then(Value::as_str).map(str::to_owned),
        index: None,
    });
    calls.chain(invalid).collect()
}

/// LangChain's class name of a chunk of `kind`.
pub(crate) fn chunk_type(kind: MessageType) -> &'static str {
    match kind {
        MessageType::Ai => "AIMessageChunk",
        MessageType::Human => "HumanMessageChunk",
        MessageType::System => "SystemMessageChunk",
        MessageType::Tool => "ToolMessageChunk",
    }
}

/// The message type of a LangChain chunk class name.
pub(crate) fn parse_chunk_type(name: &str) -> Option<MessageType> {
    Some(match name {
        "AIMessageChunk" => MessageType::Ai,
        "HumanMessageChunk" => MessageType::Human,
        "SystemMessageChunk" => MessageType::System,
        "ToolMessageChunk" => MessageType::Tool,
        _ => return None,
    })
}

/// LangChain's id rule for a sum of chunks: the first id from the
/// provider (not starting with `lc_`), else the first `lc_run-` id, else
/// the first id.
fn best_id(left: Option<String>, right: Option<String>) -> Option<String> {
    let rank = |id: &Option<String>| match id.as_deref() {
        None | Some("") => 0,
        Some(id) if id.starts_with("lc_run-") => 2,
        Some(id) if id.starts_with("lc_") => 1,
        Some(_) => 3,
    };
    if rank(&right) > rank(&left) {
        right
    } else {
        left
    }
}

/// A tool chunk's status: an error anywhere is an error.
fn merge_status(left: Option<ToolStatus>, right: Option<ToolStatus>) -> Option<ToolStatus> {
    match (left, right) {
        (Some(ToolStatus::Error), _) | (_, Some(ToolStatus::Error)) => Some(ToolStatus::Error),
        (l, r) => l.or(r),
    }
}

fn call_chunk_json(chunk: &ToolCallChunk) -> Value {
    json!({"name": chunk.name, "args": chunk.args, "id": chunk.id, "index": chunk.index})
}

/// A merged list item back as a piece (the list only ever holds pieces).
fn call_chunk_from_merged(value: Value) -> ToolCallChunk {
    call_chunk_from_json(value).unwrap_or_default()
}

fn call_chunk_from_json(value: Value) -> Result<ToolCallChunk, MessageError> {
    let invalid = |reason: String| MessageError::InvalidField {
        field: "tool_call_chunks",
        reason,
    };
    let Value::Object(map) = value else {
        return Err(invalid(format!(
            "expected an object, found {}",
            json_type(&value)
        )));
    };
    let text = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(format!(
            "`{key}` must be a string, found {}",
            json_type(other)
        ))),
    };
    let index = match map.get("index") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| invalid(format!("`index` must be a whole number, found {v}")))?,
        ),
    };
    Ok(ToolCallChunk {
        name: text("name")?,
        args: text("args")?.unwrap_or_default(),
        id: text("id")?,
        index,
    })
}

/// A tool call's arguments: a JSON object (an empty string is no
/// argument); otherwise why they are not.
pub fn parse_args(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the arguments are {}, not a JSON object",
            json_type(&other)
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

impl Serialize for MessageChunk {
    /// LangChain's `chunk.model_dump()` JSON; an AI chunk also carries the
    /// `tool_calls` (and `invalid_tool_calls`) its pieces make so far.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", chunk_type(self.kind))?;
        map.serialize_entry("content", &self.content)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("additional_kwargs", &self.additional_kwargs)?;
        map.serialize_entry("response_metadata", &self.response_metadata)?;
        if self.kind == MessageType::Ai {
            let message = self.clone().into_message();
            map.serialize_entry("tool_calls", &message.tool_calls)?;
            map.serialize_entry("invalid_tool_calls", &message.invalid_tool_calls)?;
            map.serialize_entry("usage_metadata", &self.usage_metadata)?;
            let pieces: Vec<Value> = self
                .tool_call_chunks
                .iter()
                .map(|c| {
                    let mut v = call_chunk_json(c);
                    v["type"] = Value::from("tool_call_chunk");
                    v
                })
                .collect();
            map.serialize_entry("tool_call_chunks", &pieces)?;
        }
        if self.kind == MessageType::Tool {
            map.serialize_entry("tool_call_id", &self.tool_call_id)?;
            map.serialize_entry("artifact", &self.artifact)?;
            map.serialize_entry("status", &self.status.unwrap_or(ToolStatus::Success))?;
        }
        if self.kind == MessageType::Ai || self.last {
            map.serialize_entry("chunk_position", &self.last.then_some("last"))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for MessageChunk {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(value).map_err(de::Error::custom)
    }
}

/// The messages a stream of chunks makes: a chunk joins the message whose
/// pieces carried its id, a chunk without an id the last message (of its
/// type); any other starts a new message. What a client of the `messages`
/// stream keeps to show each message whole.
#[derive(Debug, Default, Clone)]
pub struct MessageChunks {
    messages: Vec<(Vec<String>, MessageChunk)>,
}

impl MessageChunks {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a piece; an error (as [`MessageChunk::add`]'s) leaves the
    /// messages as they were.
    pub fn push(&mut self, chunk: MessageChunk) -> Result<(), MergeError> {
        let at = match chunk.id.as_deref() {
            Some(id) => self
                .messages
                .iter()
                .rposition(|(ids, _)| ids.iter().any(|seen| seen == id)),
            None => self
                .messages
                .len()
                .checked_sub(1)
                .filter(|&i| self.messages[i].1.kind == chunk.kind),
        };
        let Some(at) = at else {
            let ids = chunk.id.iter().cloned().collect();
            self.messages.push((ids, chunk));
            return Ok(());
        };
        let (ids, merged) = &mut self.messages[at];
        let mut next = merged.clone();
        let id = chunk.id.clone();
        next.add(chunk)?;
        *merged = next;
        ids.extend(id.filter(|id| !ids.contains(id)));
        Ok(())
    }

    /// How many messages the pieces so far make.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether no piece came yet.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages so far, as chunks (still growing).
    pub fn chunks(&self) -> impl Iterator<Item = &MessageChunk> {
        self.messages.iter().map(|(_, c)| c)
    }

    /// The messages, in the order their first pieces came.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
            .into_iter()
            .map(|(_, c)| c.into_message())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(v: Value) -> MessageChunk {
        MessageChunk::from_json(v).unwrap()
    }

    #[test]
    fn a_stream_of_pieces_adds_up_as_langchain_adds_it() {
        // The case checked against langchain-core 1.7.2's `AIMessageChunk.__add__`.
        let mut sum = chunk(
            json!({"type": "AIMessageChunk", "content": "Hel", "id": "run-1",
            "tool_call_chunks": [{"name": "get", "args": "{\"ci", "id": "c1", "index": 0}]}),
        );
        sum.add(chunk(json!({"type": "AIMessageChunk", "content": "lo",
            "tool_call_chunks": [{"name": null, "args": "ty\": \"P", "id": null, "index": 0},
                                 {"name": "x", "args": "", "id": "c2", "index": 1}],
            "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}})))
            .unwrap();
        sum.add(chunk(json!({"type": "AIMessageChunk", "content": "",
            "tool_call_chunks": [{"name": null, "args": "aris\"}", "id": null, "index": 0}],
            "usage_metadata": {"input_tokens": 0, "output_tokens": 5, "total_tokens": 5,
                               "output_token_details": {"reasoning": 2}},
            "chunk_position": "last",
            "response_metadata": {"finish_reason": "tool_calls", "model_name": "m"}})))
            .unwrap();
        let expected_chunk = json!({
            "type": "AIMessageChunk", "content": "Hello", "id": "run-1", "name": null,
            "additional_kwargs": {},
            "response_metadata": {"finish_reason": "tool_calls", "model_name": "m"},
            "tool_calls": [
                {"name": "get", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"},
                {"name": "x", "args": {}, "id": "c2", "type": "tool_call"}],
            "invalid_tool_calls": [],
            "usage_metadata": {"input_tokens": 1, "output_tokens": 7, "total_tokens": 8,
                               "output_token_details": {"reasoning": 2}},
            "tool_call_chunks": [
                {"name": "get", "args": "{\"city\": \"Paris\"}", "id": "c1", "index": 0, "type": "tool_call_chunk"},
                {"name": "x", "args": "", "id": "c2", "index": 1, "type": "tool_call_chunk"}],
            "chunk_position": "last"
        });
        assert_eq!(serde_json::to_value(&sum).unwrap(), expected_chunk);
        assert_eq!(chunk(expected_chunk), sum, "its JSON reads back as itself");
        let message = serde_json::to_value(sum.into_message()).unwrap();
        assert_eq!(
            message,
            json!({"type": "ai", "content": "Hello", "id": "run-1",
                "response_metadata": {"finish_reason": "tool_calls", "model_name": "m"},
                "tool_calls": [
                    {"name": "get", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"},
                    {"name": "x", "args": {}, "id": "c2", "type": "tool_call"}],
                "usage_metadata": {"input_tokens": 1, "output_tokens": 7, "total_tokens": 8,
                                   "output_token_details": {"reasoning": 2}}})
        );
    }

    #[test]
    fn the_provider_id_wins() {
        let mut a = MessageChunk::ai("a").with_id("lc_run-5");
        a.add(MessageChunk::ai("b").with_id("chatcmpl-9")).unwrap();
        assert_eq!(a.id.as_deref(), Some("chatcmpl-9"));
        let mut b = MessageChunk::ai("a").with_id("lc_abc");
        b.add(MessageChunk::ai("b").with_id("lc_run-9")).unwrap();
        assert_eq!(b.id.as_deref(), Some("lc_run-9"));
    }

    #[test]
    fn args_that_do_not_parse_make_an_invalid_call() {
        let c = chunk(json!({"type": "AIMessageChunk", "content": "",
            "tool_call_chunks": [{"name": "f", "args": "nope", "id": "c", "index": 0}]}));
        let message = c.into_message();
        assert!(message.tool_calls.is_empty());
        assert_eq!(message.invalid_tool_calls[0]["args"], "nope");
        assert_eq!(message.invalid_tool_calls[0]["id"], "c");
    }

    #[test]
    fn tool_calls_without_pieces_become_unindexed_pieces() {
        let c = chunk(json!({"type": "AIMessageChunk", "content": "a",
            "tool_calls": [{"name": "f", "args": {"a": 1}, "id": "c"}]}));
        assert_eq!(
            c.tool_call_chunks,
            [ToolCallChunk {
                name: Some("f".into()),
                args: "{\"a\":1}".into(),
                id: Some("c".into()),
                index: None
            }]
        );
    }

    #[test]
    fn kin_chunks_and_errors() {
        let mut t = chunk(
            json!({"type": "ToolMessageChunk", "content": "a", "tool_call_id": "c", "status": "success"}),
        );
        t.add(chunk(json!({"type": "ToolMessageChunk", "content": "b", "tool_call_id": "c", "status": "error"})))
            .unwrap();
        assert_eq!(t.status, Some(ToolStatus::Error));
        let other = chunk(json!({"type": "ToolMessageChunk", "content": "x", "tool_call_id": "d"}));
        assert!(matches!(t.add(other), Err(MergeError::ToolCallId { .. })));
        let mut h = chunk(json!({"type": "HumanMessageChunk", "content": "a", "id": "h1"}));
        assert!(matches!(
            h.add(MessageChunk::ai("b")),
            Err(MergeError::Kind { .. })
        ));
        let unknown = MessageChunk::from_json(json!({"type": "ChatMessageChunk", "content": "x"}));
        assert_eq!(
            unknown.unwrap_err(),
            MessageError::UnknownType {
                name: "ChatMessageChunk".into()
            }
        );
        let bad = MessageChunk::from_json(
            json!({"type": "AIMessageChunk", "tool_call_chunks": [{"index": -1}]}),
        );
        assert!(bad.unwrap_err().to_string().contains("tool_call_chunks"));
    }

    #[test]
    fn chunks_group_by_id() {
        let mut stream = MessageChunks::new();
        stream
            .push(MessageChunk::ai("Hi").with_id("m1").with_name("optimist"))
            .unwrap();
        stream.push(MessageChunk::ai(" there")).unwrap();
        stream.push(MessageChunk::ai("No").with_id("m2")).unwrap();
        stream.push(MessageChunk::ai("!").with_id("m1")).unwrap();
        assert!(stream
            .push(MessageChunk::new(MessageType::Human, "x").with_id("m2"))
            .is_err());
        let messages = stream.into_messages();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].text(), "Hi there!");
        assert_eq!(messages[0].name.as_deref(), Some("optimist"));
        assert_eq!(messages[1].text(), "No");
    }
}
