//! LangChain's approximate token count (`count_tokens_approximately`):
//! about four characters a token, three tokens more a message, counted the
//! way LangChain counts them so that thresholds trip on the same message.

use serde_json::Value;

use crate::message::{Content, Message, MessageType};

/// Characters a token, as LangChain assumes.
const CHARS_PER_TOKEN: f64 = 4.0;
/// Tokens added for every message.
const EXTRA_TOKENS_PER_MESSAGE: f64 = 3.0;
/// Tokens an image block counts for.
const TOKENS_PER_IMAGE: f64 = 85.0;

/// The approximate number of tokens of `messages`, as LangChain's
/// `count_tokens_approximately` with its defaults: per message, the
/// characters of its content (text blocks' text; 85 tokens an image; other
/// blocks by their Python `repr`), of its tool calls' Python `repr` (AI
/// messages with string content), of its tool call id, its OpenAI role and
/// its name, divided by 4 and rounded up, plus 3.
///
/// ```
/// use agent_state::agent::middleware::count_tokens_approximately;
/// use agent_state::human;
///
/// // "hello" (5) + "user" (4) = 9 characters: 3 tokens, plus 3.
/// assert_eq!(count_tokens_approximately(&[human("hello")]), 6);
/// ```
pub fn count_tokens_approximately(messages: &[Message]) -> u64 {
    let total: f64 = messages.iter().map(message_tokens).sum();
    total.ceil() as u64
}

fn message_tokens(message: &Message) -> f64 {
    let (mut chars, images) = content_chars(&message.content);
    if message.kind == MessageType::Ai
        && matches!(message.content, Content::Text(_))
        && !message.tool_calls.is_empty()
    {
        chars += tool_calls_repr_len(message);
    }
    if message.kind == MessageType::Tool {
        chars += message.tool_call_id.as_deref().map_or(0, char_len);
    }
    chars += char_len(openai_role(message.kind));
    chars += message.name.as_deref().map_or(0, char_len);
    images * TOKENS_PER_IMAGE + (chars as f64 / CHARS_PER_TOKEN).ceil() + EXTRA_TOKENS_PER_MESSAGE
}

/// The characters a content counts for, and its number of images.
fn content_chars(content: &Content) -> (usize, f64) {
    let blocks = match content {
        Content::Text(text) => return (char_len(text), 0.0),
        Content::Blocks(blocks) => blocks,
    };
    let mut chars = 0;
    let mut images = 0.0;
    for block in blocks {
        match block {
            Value::String(text) => chars += char_len(text),
            Value::Object(map) => match map.get("type").and_then(Value::as_str).unwrap_or("") {
                "image" | "image_url" => images += 1.0,
                "text" => chars += map.get("text").and_then(Value::as_str).map_or(0, char_len),
                _ => chars += char_len(&python_repr(block)),
            },
            other => chars += char_len(&python_repr(other)),
        }
    }
    (chars, images)
}

/// The length of Python's `repr(message.tool_calls)`: a list of
/// `{'name': .., 'args': .., 'id': .., 'type': 'tool_call'}`.
fn tool_calls_repr_len(message: &Message) -> usize {
    let calls: Vec<String> = message
        .tool_calls
        .iter()
        .map(|call| {
            let id = call.id.as_deref().map_or_else(|| "None".to_owned(), py_str);
            format!(
                "{{'name': {}, 'args': {}, 'id': {id}, 'type': 'tool_call'}}",
                py_str(&call.name),
                python_repr(&Value::Object(call.args.clone()))
            )
        })
        .collect();
    char_len(&format!("[{}]", calls.join(", ")))
}

/// LangChain's OpenAI role of a message type.
fn openai_role(kind: MessageType) -> &'static str {
    match kind {
        MessageType::Human => "user",
        MessageType::Ai => "assistant",
        MessageType::System => "system",
        MessageType::Tool => "tool",
    }
}

fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// Python's `repr` of the JSON value read as Python objects (dicts, lists,
/// `str`, `int`, `float`, `True`, `None`): only its length matters here.
pub(crate) fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => py_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => py_str(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), python_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Python's `repr` of a float: the shortest round-trip digits, with `.0`
/// for whole numbers and an exponent past 1e16.
fn py_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        f.to_string()
    }
}

/// Python's `repr` of a string: single quotes unless it holds a single
/// quote and no double one; backslash escapes for the quote, backslashes
/// and control characters.
fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
