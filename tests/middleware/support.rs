//! What the middleware tests share: LangChain's recorded output.

use serde_json::Value;

/// LangChain's output for `name`, as `tests/reference/middleware/<name>.py`
/// printed it.
#[allow(dead_code)]
pub fn recorded(name: &str) -> Value {
    let path = format!(
        "{}/tests/expected/middleware/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What the comparison looks at in a message, as the reference scripts
/// print it: type and content; an AI message's calls (name, args, id); a
/// tool message's name, call id and status. Message ids are left out.
#[allow(dead_code)]
pub fn plain(message: &agent_state::Message) -> Value {
    use agent_state::MessageType;
    let full = serde_json::to_value(message).expect("a message serializes");
    let mut out = serde_json::json!({"type": full["type"], "content": full["content"]});
    match message.kind {
        MessageType::Ai => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| serde_json::json!({"name": c.name, "args": c.args, "id": c.id}))
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
#[allow(dead_code)]
pub fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-state-middleware-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp directory is writable");
    let path = dir.join(format!("{name}.db"));
    let _ = std::fs::remove_file(&path);
    path
}
