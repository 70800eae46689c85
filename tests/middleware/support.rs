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
