//! The `messages` channel: the runtime's message chunks (`[chunk,
//! metadata]`) as content-block events, a message's `message-start`,
//! `content-block-start`, a `content-block-delta` per piece of text,
//! `content-block-finish` with the whole text and `message-finish`.

use serde_json::{json, Value};

use super::{Open, Session};

impl Session {
    /// One chunk (or a whole message, which is its own last chunk).
    pub(super) fn message(&mut self, ns: &[String], pair: Value) {
        let chunk = pair.get(0).cloned().unwrap_or(pair);
        let id = chunk["id"].as_str().unwrap_or_default().to_owned();
        let same = self.message.as_ref().is_some_and(|m| m.id == id);
        if !same {
            self.close_message();
            let role = role(&chunk);
            self.push(
                "messages",
                ns,
                json!({"event": "message-start", "role": role, "id": id}),
                None,
            );
            let start = json!({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}});
            self.push("messages", ns, start, None);
            self.message = Some(Open {
                id,
                namespace: ns.to_vec(),
                text: String::new(),
            });
        }
        let text = text_of(&chunk["content"]);
        if !text.is_empty() {
            if let Some(open) = &mut self.message {
                open.text.push_str(&text);
            }
            let delta = json!({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": text}});
            self.push("messages", ns, delta, None);
        }
        let whole = !chunk["type"]
            .as_str()
            .unwrap_or_default()
            .ends_with("Chunk");
        if whole || chunk["chunk_position"] == "last" {
            self.close_message();
        }
    }

    /// Ends the message being streamed, if any.
    pub(super) fn close_message(&mut self) {
        let Some(open) = self.message.take() else {
            return;
        };
        let ns = &open.namespace;
        let finish = json!({"event": "content-block-finish", "index": 0, "content": {"type": "text", "text": open.text}});
        self.push("messages", ns, finish, None);
        self.push("messages", ns, json!({"event": "message-finish"}), None);
    }
}

/// `ai`, `human`, `tool` or `system`, from a message's or chunk's type.
fn role(chunk: &Value) -> String {
    let kind = chunk["type"].as_str().unwrap_or("ai");
    let kind = kind.strip_suffix("MessageChunk").unwrap_or(kind);
    kind.to_ascii_lowercase()
}

/// A message's text: a string, or its text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b["text"].as_str()))
            .collect(),
        _ => String::new(),
    }
}
