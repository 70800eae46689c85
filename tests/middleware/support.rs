//! What the middleware tests share: LangChain's recorded output.

use std::sync::{Arc, Mutex};

use agent_state::agent::{BoxFuture, ChatModel, ModelError, ModelRequest, ScriptedModel};
use agent_state::base::HasMessages;
use agent_state::serde_json::{json, Map, Value};
use agent_state::{Message, MessageType, ToolCall};

/// LangChain's output for `name`, as `tests/reference/middleware/<name>.py`
/// printed it.
pub fn recorded(name: &str) -> Value {
    let path = format!(
        "{}/tests/expected/middleware/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Messages as `tests/reference/scripted.py`'s `dump` prints them: ids
/// left out (each side makes its own), the fields that matter kept.
pub fn dump(messages: &[Message]) -> Value {
    messages.iter().map(dump_one).collect()
}

fn dump_one(m: &Message) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!(m.kind.as_str()));
    item.insert("content".into(), json!(m.content));
    if let Some(name) = m.name.as_deref().filter(|n| !n.is_empty()) {
        item.insert("name".into(), json!(name));
    }
    if !m.additional_kwargs.is_empty() {
        item.insert("additional_kwargs".into(), json!(m.additional_kwargs));
    }
    if m.kind == MessageType::Ai && !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "args": c.args, "id": c.id}));
        item.insert("tool_calls".into(), calls.collect());
    }
    if m.kind == MessageType::Tool {
        item.insert("tool_call_id".into(), json!(m.tool_call_id));
        item.insert("status".into(), json!(m.status));
    }
    Value::Object(item)
}

/// A reply of the scripted model calling `name` with `args` as call `id`.
pub fn call(name: &str, args: Value, id: &str) -> ToolCall {
    let args = args.as_object().cloned().unwrap_or_default();
    ToolCall::new(name, args, id)
}

/// A scripted model that records its requests as
/// `tests/reference/scripted.py`'s `ScriptedChat` does: per call the
/// system prompt, the messages and the tool names; the last tool
/// definitions offered (name, description, parameters).
pub struct Recorder {
    script: ScriptedModel,
    seen: Mutex<Vec<Value>>,
    tools: Mutex<Value>,
}

impl Recorder {
    /// Answers with `replies` in order.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Arc<Self> {
        Arc::new(Self {
            script: ScriptedModel::new(replies),
            seen: Mutex::new(Vec::new()),
            tools: Mutex::new(json!([])),
        })
    }

    /// The requests, as the reference prints them.
    pub fn seen(&self) -> Value {
        Value::Array(self.seen.lock().unwrap().clone())
    }

    /// The tools of the last request, as the reference prints them.
    pub fn tools(&self) -> Value {
        self.tools.lock().unwrap().clone()
    }
}

impl<S: HasMessages + Send + Sync> ChatModel<S> for Recorder {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        let tools = request.tools();
        *self.tools.lock().unwrap() = tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        self.seen.lock().unwrap().push(json!({
            "system_prompt": request.system_prompt(),
            "messages": dump(request.messages()),
            "tools": tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        }));
        self.script.invoke(request)
    }
}

/// A validation message with the parser's own words replaced by
/// `<error>`: pydantic's in LangChain's recording, serde's in ours. The
/// words around them (LangChain's) are kept: the text between
/// `Failed to parse data to <Type>: ` and the end (`.` or
/// `.\n Please fix your mistakes.`), and after `but parsing failed: `
/// up to the closing `..`.
pub fn parser_words_hidden(text: &str) -> String {
    let cut = |text: &str, start: &str, ends: &[&str]| -> Option<String> {
        let at = text.find(start)?;
        let from = at + start.len();
        let from = if start.ends_with("to ") {
            from + text[from..].find(": ")? + 2
        } else {
            from
        };
        let end = ends.iter().find(|end| text.ends_with(*end))?;
        let to = text.len() - end.len();
        (to >= from).then(|| format!("{}<error>{end}", &text[..from]))
    };
    let retry = ".\n Please fix your mistakes.";
    cut(text, "Failed to parse data to ", &[retry, "."])
        .or_else(|| cut(text, "but parsing failed: ", &[".."]))
        .unwrap_or_else(|| text.to_owned())
}

/// What the comparison looks at in a message, as the reference scripts
/// print it: type and content; an AI message's calls (name, args, id); a
/// tool message's name, call id and status. Message ids are left out.
pub fn plain(message: &Message) -> Value {
    let full = agent_state::serde_json::to_value(message).expect("a message serializes");
    let mut out = json!({"type": full["type"], "content": full["content"]});
    match message.kind {
        MessageType::Ai => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| json!({"name": c.name, "args": c.args, "id": c.id}))
                .collect();
            out["tool_calls"] = Value::Array(calls);
        }
        MessageType::Tool => {
            for key in ["name", "tool_call_id", "status"] {
                out[key] = full[key].clone();
            }
        }
        _ => {}
    }
    out
}

/// A fresh SQLite file path under the system's temp directory.
#[cfg(feature = "sqlite")]
pub fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-state-middleware-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp directory is writable");
    let path = dir.join(format!("{name}.db"));
    let _ = std::fs::remove_file(&path);
    path
}
