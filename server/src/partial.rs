//! The `messages` stream mode (not `messages-tuple`): each message as it
//! builds up, as the official server streams it: `messages/metadata` once
//! per message id, then `messages/partial` with the message so far for
//! each piece, or `messages/complete` for a message a node returned whole.

use std::collections::HashMap;

use agent_state::{Message, MessageChunk};
use serde_json::{json, Value};

/// The messages seen so far in a run, by id.
#[derive(Default)]
pub(crate) struct Partial {
    messages: HashMap<String, MessageChunk>,
}

impl Partial {
    /// The events for one `[message or chunk, metadata]` pair of the
    /// runtime's `messages` mode. A piece that does not read as a chunk,
    /// or does not add to the pieces before it, is logged and skipped:
    /// the stream goes on with the message as it was.
    pub(crate) fn push(&mut self, pair: &Value) -> Vec<(&'static str, Value)> {
        let (Some(message), meta) = (pair.get(0), pair.get(1).cloned()) else {
            return vec![];
        };
        let is_chunk = message
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunk"));
        let read = match is_chunk {
            true => MessageChunk::from_json(message.clone()),
            false => Message::from_json(message.clone()).map(|m| MessageChunk::whole(&m)),
        };
        let chunk = match read {
            Ok(chunk) => chunk,
            Err(error) => {
                tracing::warn!(%error, "a streamed message does not read as a chunk");
                return vec![];
            }
        };
        let id = chunk.id.clone().unwrap_or_default();
        let mut out = Vec::with_capacity(2);
        if let Some(so_far) = self.messages.get_mut(&id) {
            if let Err(error) = so_far.add(chunk) {
                tracing::warn!(%error, %id, "a streamed piece does not add to its message");
                return vec![];
            }
        } else {
            let meta = meta.unwrap_or_else(|| json!({}));
            out.push(("messages/metadata", json!({ &id: {"metadata": meta} })));
            self.messages.insert(id.clone(), chunk);
        }
        let so_far = full_message(json!(self.messages[&id].clone().into_message()));
        let name = match is_chunk {
            true => "messages/partial",
            false => "messages/complete",
        };
        out.push((name, json!([so_far])));
        out
    }
}

/// A message's JSON with every field LangChain writes (`model_dump()`),
/// the empty ones included: the runtime's JSON leaves those out, and a
/// client may read them as they come from the official server.
pub(crate) fn full_message(mut message: Value) -> Value {
    let Value::Object(m) = &mut message else {
        return message;
    };
    let mut fill = |key: &str, value: Value| {
        m.entry(key).or_insert(value);
    };
    fill("additional_kwargs", json!({}));
    fill("response_metadata", json!({}));
    fill("name", Value::Null);
    fill("id", Value::Null);
    match m.get("type").and_then(Value::as_str) {
        Some("ai") => {
            for key in ["tool_calls", "invalid_tool_calls"] {
                m.entry(key).or_insert(json!([]));
            }
            m.entry("usage_metadata").or_insert(Value::Null);
        }
        Some("tool") => {
            m.entry("artifact").or_insert(Value::Null);
            m.entry("status").or_insert(json!("success"));
        }
        _ => {}
    }
    message
}
