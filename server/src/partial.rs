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
        // Pieces without an id are one message per task.
        let task = pair[1]["langgraph_task"].as_str().unwrap_or_default();
        let id = chunk.id.clone().unwrap_or_else(|| format!("task:{task}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(text: &str, kind: &str) -> Value {
        json!([{"type": kind, "content": text, "id": "m1"}, {"langgraph_node": "n"}])
    }

    #[test]
    fn pieces_add_up_and_the_metadata_comes_once() {
        let mut partial = Partial::default();
        let first = partial.push(&piece("hel", "AIMessageChunk"));
        let names: Vec<_> = first.iter().map(|e| e.0).collect();
        assert_eq!(names, ["messages/metadata", "messages/partial"]);
        assert_eq!(
            first[0].1,
            json!({"m1": {"metadata": {"langgraph_node": "n"}}})
        );
        let second = partial.push(&piece("lo", "AIMessageChunk"));
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].1[0]["content"], "hello");
        assert_eq!(second[0].1[0]["type"], "ai");
        assert_eq!(second[0].1[0]["tool_calls"], json!([]));
    }

    #[test]
    fn a_piece_that_does_not_add_up_is_skipped() {
        let mut partial = Partial::default();
        partial.push(&piece("hi", "AIMessageChunk"));
        assert!(partial.push(&piece("x", "ToolMessageChunk")).is_empty());
        assert!(partial.push(&json!([{"type": "nonsense"}, {}])).is_empty());
        assert!(partial.push(&json!("not a pair")).is_empty());
        let next = partial.push(&piece("!", "AIMessageChunk"));
        assert_eq!(
            next[0].1[0]["content"], "hi!",
            "the message as it was, then on"
        );
    }

    #[test]
    fn a_whole_message_is_complete() {
        let mut partial = Partial::default();
        let sent = partial.push(&json!([{"type": "ai", "content": "done", "id": "m2"}, {}]));
        assert_eq!(sent[1].0, "messages/complete");
        assert_eq!(sent[1].1[0]["content"], "done");
        assert_eq!(sent[1].1[0]["usage_metadata"], Value::Null);
    }
}
