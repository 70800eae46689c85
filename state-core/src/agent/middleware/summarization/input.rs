//! What the summarising model is given: the messages to summarise, trimmed
//! to a token budget as LangChain's `trim_messages` (strategy `last`,
//! starting on a human message, the system message kept, the oldest kept
//! message cut by lines), and written as LangChain's
//! `get_buffer_string(format="xml")`.

use serde_json::Value;

use crate::message::{Content, Message, MessageType};
use crate::pyrepr;

/// Counts the tokens of messages.
pub(crate) type Count<'a> = &'a dyn Fn(&[Message]) -> u64;

/// The newest messages of `messages` within `max_tokens`, as LangChain's
/// `trim_messages(strategy="last", start_on="human", include_system=True,
/// allow_partial=True)` with its default line splitter.
pub(crate) fn trim_last(messages: &[Message], max_tokens: u64, count: Count<'_>) -> Vec<Message> {
    let (system, rest) = match messages.split_first() {
        Some((first, rest)) if first.kind == MessageType::System => (Some(first), rest),
        _ => (None, messages),
    };
    let budget = system.map_or(max_tokens, |s| {
        max_tokens.saturating_sub(count(std::slice::from_ref(s)))
    });
    let reversed: Vec<Message> = rest.iter().rev().cloned().collect();
    let mut kept = first_max_tokens(reversed, budget, count);
    kept.reverse();
    system.cloned().into_iter().chain(kept).collect()
}

/// LangChain's `_first_max_tokens` on reversed messages with the partial
/// strategy `last` and `end_on="human"`: the most messages from the front
/// within `max_tokens`, the next one cut to its last lines when some fit,
/// then back to the last human message.
fn first_max_tokens(mut messages: Vec<Message>, max_tokens: u64, count: Count<'_>) -> Vec<Message> {
    if count(&messages) <= max_tokens {
        end_on_human(&mut messages);
        return messages;
    }
    let (mut left, mut right) = (0, messages.len());
    while left < right {
        let mid = (left + right).div_ceil(2);
        if count(&messages[..mid]) <= max_tokens {
            left = mid;
        } else {
            right = mid - 1;
        }
    }
    let mut kept: Vec<Message> = messages[..left].to_vec();
    if let Some(partial) = messages
        .get(left)
        .and_then(|m| last_lines(m, &kept, max_tokens, count))
    {
        kept.push(partial);
    }
    end_on_human(&mut kept);
    kept
}

/// `message` cut to its last lines so that it fits after `kept`, if any
/// line fits (text content only: LangChain also drops content blocks one
/// by one, which this does not).
fn last_lines(
    message: &Message,
    kept: &[Message],
    max_tokens: u64,
    count: Count<'_>,
) -> Option<Message> {
    let Content::Text(text) = &message.content else {
        return None;
    };
    if text.is_empty() {
        return None;
    }
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if text.ends_with('\n') {
        lines.push("");
    }
    lines.reverse();
    let base = count(kept);
    let mut cut = message.clone();
    let with = |n: usize, cut: &mut Message| {
        let mut chosen: Vec<&str> = lines[..n].to_vec();
        chosen.reverse();
        cut.content = Content::Text(chosen.concat());
    };
    let (mut left, mut right) = (0, lines.len());
    while left < right {
        let mid = (left + right).div_ceil(2);
        with(mid, &mut cut);
        if base + count(std::slice::from_ref(&cut)) <= max_tokens {
            left = mid;
        } else {
            right = mid - 1;
        }
    }
    (left > 0).then(|| {
        with(left, &mut cut);
        cut
    })
}

/// Drops messages from the end until the last is a human message.
fn end_on_human(messages: &mut Vec<Message>) {
    while messages
        .last()
        .is_some_and(|m| m.kind != MessageType::Human)
    {
        messages.pop();
    }
}

/// LangChain's `get_buffer_string(messages, format="xml")`: one
/// `<message type="...">` element per message, text escaped, an AI
/// message's tool calls as `<tool_call>` elements. Of content blocks, text
/// ones are written; LangChain also writes image, audio, video, reasoning
/// and server-tool blocks, which are skipped here.
pub(crate) fn buffer_string_xml(messages: &[Message]) -> String {
    let items: Vec<String> = messages.iter().map(message_xml).collect();
    items.join("\n")
}

fn message_xml(message: &Message) -> String {
    let kind = quoteattr(message.kind.as_str());
    let parts: Vec<String> = match &message.content {
        Content::Text(text) if text.is_empty() => Vec::new(),
        Content::Text(text) => vec![escape(text)],
        Content::Blocks(blocks) => blocks.iter().filter_map(block_xml).collect(),
    };
    if message.kind != MessageType::Ai || message.tool_calls.is_empty() {
        return format!("<message type={kind}>{}</message>", parts.join(" "));
    }
    let mut lines = vec![format!("<message type={kind}>")];
    if !parts.is_empty() {
        lines.push(format!("  <content>{}</content>", parts.join(" ")));
    }
    for call in &message.tool_calls {
        let id = call.id.as_deref().unwrap_or_default();
        let id = match id.char_indices().nth(64) {
            Some((at, _)) => format!("{}...", &id[..at]),
            None => id.to_owned(),
        };
        let args = pyrepr::json_dumps(&Value::Object(call.args.clone()));
        lines.push(format!(
            "  <tool_call id={} name={}>{}</tool_call>",
            quoteattr(&id),
            quoteattr(&call.name),
            escape(&args)
        ));
    }
    lines.push("</message>".to_owned());
    lines.join("\n")
}

fn block_xml(block: &Value) -> Option<String> {
    match block {
        Value::String(text) if !text.is_empty() => Some(escape(text)),
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("text") => {
            let text = map.get("text").and_then(Value::as_str).unwrap_or_default();
            (!text.is_empty()).then(|| escape(text))
        }
        _ => None,
    }
}

/// Python's `xml.sax.saxutils.escape`.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Python's `xml.sax.saxutils.quoteattr`: escaped, whitespace as
/// character references, in double quotes (single quotes when the value
/// has a double quote and no single one).
fn quoteattr(value: &str) -> String {
    let escaped = escape(value)
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;");
    if !escaped.contains('"') {
        format!("\"{escaped}\"")
    } else if !escaped.contains('\'') {
        format!("'{escaped}'")
    } else {
        format!("\"{}\"", escaped.replace('"', "&quot;"))
    }
}
