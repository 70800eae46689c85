//! An MCP tool result (`CallToolResult`) as the tool message the model
//! sees, block for block as LangChain's MCP adapters
//! (`langchain-mcp-adapters` 0.3) convert it.

use serde_json::{json, Value};

use crate::message::{Content, Message, MessageType, ToolStatus};

/// The tool message answering a call from the result's JSON (the wire
/// shape of MCP's `CallToolResult`): its content blocks as LangChain
/// content blocks, `structuredContent` as the artifact
/// (`{"structured_content": ..}`, the adapters' `MCPToolArtifact`), and
/// `isError` as an error status. An error with no content at all gets the
/// adapters' one-line placeholder so the message is never empty.
pub(crate) fn answer_of(result: &Value) -> Message {
    let blocks: Vec<Value> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(block_of).collect())
        .unwrap_or_default();
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut message = if is_error && blocks.is_empty() {
        Message::new(
            MessageType::Tool,
            Content::Blocks(vec![text_block(
                "MCP tool returned an error with empty content.",
            )]),
        )
    } else {
        Message::new(MessageType::Tool, Content::Blocks(blocks))
    };
    if is_error {
        message.status = Some(ToolStatus::Error);
    } else if let Some(structured) = result.get("structuredContent") {
        message.artifact = Some(json!({ "structured_content": structured }));
    }
    message
}

/// One MCP content block as a LangChain content block: text as text,
/// images (inline or linked) as image blocks, other links and embedded
/// blobs as file blocks, embedded text as text. Audio becomes an audio
/// block (the adapters refuse it; a model that takes audio can use it).
/// A block of a kind MCP does not define is kept as a text block saying
/// so, naming its type, rather than failing the whole answer.
fn block_of(block: &Value) -> Value {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    match field("type") {
        Some("text") => text_block(field("text").unwrap_or_default()),
        Some("image") => inline_block("image", field("data"), field("mimeType")),
        Some("audio") => inline_block("audio", field("data"), field("mimeType")),
        Some("resource_link") => {
            let mime = field("mimeType").filter(|mime| !mime.is_empty());
            let kind = if is_image(mime) { "image" } else { "file" };
            with_mime(json!({ "type": kind, "url": field("uri") }), mime)
        }
        Some("resource") => embedded_block(block.get("resource").unwrap_or(&Value::Null)),
        other => text_block(&format!(
            "[MCP content block of unsupported type {}]",
            other.unwrap_or("(none)")
        )),
    }
}

/// An embedded resource: its text, or its blob as an image or a file.
fn embedded_block(resource: &Value) -> Value {
    let field = |name: &str| resource.get(name).and_then(Value::as_str);
    if let Some(text) = field("text") {
        return text_block(text);
    }
    let mime = field("mimeType").filter(|mime| !mime.is_empty());
    let kind = if is_image(mime) { "image" } else { "file" };
    inline_block(kind, field("blob"), mime)
}

fn is_image(mime: Option<&str>) -> bool {
    mime.is_some_and(|mime| mime.starts_with("image/"))
}

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn inline_block(kind: &str, base64: Option<&str>, mime: Option<&str>) -> Value {
    with_mime(
        json!({ "type": kind, "base64": base64.unwrap_or_default() }),
        mime,
    )
}

fn with_mime(mut block: Value, mime: Option<&str>) -> Value {
    if let (Value::Object(map), Some(mime)) = (&mut block, mime) {
        map.insert("mime_type".to_owned(), Value::String(mime.to_owned()));
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text blocks joined by new lines, as the adapters' exception
    /// message.
    fn error_text(message: &Message) -> String {
        match &message.content {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn result(value: Value) -> Message {
        answer_of(&value)
    }

    #[test]
    fn text_blocks_stay_blocks_and_structured_content_is_the_artifact() {
        let answer = result(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "structuredContent": {"result": 5},
        }));
        assert_eq!(
            answer.content,
            Content::Blocks(vec![text_block("a"), text_block("b")])
        );
        assert_eq!(answer.text(), "ab");
        assert_eq!(answer.status, None);
        assert_eq!(
            answer.artifact,
            Some(json!({"structured_content": {"result": 5}}))
        );
    }

    #[test]
    fn errors_keep_their_content_and_an_empty_one_gets_a_placeholder() {
        let answer = result(json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
        assert_eq!(answer.status, Some(ToolStatus::Error));
        assert_eq!(error_text(&answer), "no");
        let empty = result(json!({"content": [], "isError": true}));
        assert_eq!(
            error_text(&empty),
            "MCP tool returned an error with empty content."
        );
    }

    #[test]
    fn images_links_and_embedded_resources_become_langchain_blocks() {
        let blocks = [
            json!({"type": "image", "data": "AAA", "mimeType": "image/png"}),
            json!({"type": "resource_link", "uri": "file:///a.png", "name": "a", "mimeType": "image/png"}),
            json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "x:1", "text": "inline"}}),
            json!({"type": "resource", "resource": {"uri": "x:2", "blob": "QQ==", "mimeType": "application/pdf"}}),
            json!({"type": "hologram"}),
        ];
        let converted: Vec<Value> = blocks.iter().map(block_of).collect();
        assert_eq!(
            converted,
            [
                json!({"type": "image", "base64": "AAA", "mime_type": "image/png"}),
                json!({"type": "image", "url": "file:///a.png", "mime_type": "image/png"}),
                json!({"type": "file", "url": "file:///a.txt"}),
                text_block("inline"),
                json!({"type": "file", "base64": "QQ==", "mime_type": "application/pdf"}),
                text_block("[MCP content block of unsupported type hologram]"),
            ]
        );
    }

    #[test]
    fn a_result_without_content_is_an_empty_answer() {
        let answer = result(json!({}));
        assert_eq!(answer.content, Content::Blocks(Vec::new()));
        assert_eq!(answer.status, None);
    }
}
