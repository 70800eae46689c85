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

/// A validation message with the parser's own words replaced by
/// `<error>`: pydantic's in LangChain's recording, serde's in ours. The
/// words around them (LangChain's) are kept: the text between
/// `Failed to parse data to <Type>: ` and the end (`.` or
/// `.\n Please fix your mistakes.`), and after `but parsing failed: `
/// up to the closing `..`.
#[allow(dead_code)]
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
