//! Our request as a Messages API body: the system prompt as the top-level
//! `system`, the conversation as alternating `user`/`assistant` turns of
//! content blocks, the tools and the tool choice.
//!
//! As LangChain's `ChatAnthropic` sends them: tool messages are
//! `tool_result` blocks of a user turn, and consecutive user turns (a
//! round of tool results, a human message after them) merge into one;
//! an AI message's tool calls (and invalid calls, so that their error
//! answers have a call to answer) are `tool_use` blocks; an assistant
//! turn with nothing to say is left out (Anthropic refuses empty content)
//! and the final one loses its trailing white space (Anthropic refuses
//! it); tool call ids other providers minted that Anthropic refuses are
//! replaced by one derived from them, on the call and its result alike.
//! System messages in the conversation join the system prompt, in order
//! (LangChain keeps one and refuses a second); content is sent as text.

use serde_json::{json, Map, Value};

use super::super::model::{ModelRequest, ModelSettings, ToolChoice, ToolDefinition};
use crate::base::HasMessages;
use crate::message::{Message, MessageType, ToolStatus};

/// The body for `request`: `model` and `max_tokens` when the settings do
/// not choose them.
pub(super) fn build<S: HasMessages>(
    request: &ModelRequest<S>,
    model: &str,
    max_tokens: u32,
    stream: bool,
) -> Value {
    let settings: &ModelSettings = request.settings();
    let (system, messages) = conversation(request.system_prompt(), request.messages());
    let mut body = Map::new();
    let model = settings.model.as_deref().unwrap_or(model);
    body.insert("model".to_owned(), model.into());
    let max_tokens = settings.max_tokens.unwrap_or(max_tokens);
    body.insert("max_tokens".to_owned(), max_tokens.into());
    if let Some(system) = system {
        body.insert("system".to_owned(), system.into());
    }
    body.insert("messages".to_owned(), messages.into());
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".to_owned(), decimal(temperature));
    }
    let tools = request.tools();
    if !tools.is_empty() {
        body.insert("tools".to_owned(), tools.iter().map(tool).collect());
        if let Some(choice) = &settings.tool_choice {
            body.insert("tool_choice".to_owned(), tool_choice(choice));
        }
    }
    if stream {
        body.insert("stream".to_owned(), true.into());
    }
    Value::Object(body)
}

/// An `f32` as the decimal it was written as (0.7, not the
/// 0.699999988079071 its `f64` widening prints).
fn decimal(value: f32) -> Value {
    let widened = value.to_string().parse::<f64>().unwrap_or(f64::from(value));
    serde_json::Number::from_f64(widened).map_or(Value::Null, Value::Number)
}

/// A tool as Anthropic declares one.
fn tool(tool: &ToolDefinition) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    })
}

/// Our tool choice in Anthropic's words (`Required` is `any`).
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

/// The system text (the prompt, then the conversation's system messages,
/// separated by a blank line) and the turns.
fn conversation(prompt: Option<&str>, messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<String> = prompt.map(str::to_owned).into_iter().collect();
    let last = messages.iter().rposition(|m| m.kind != MessageType::System);
    let mut turns: Vec<Value> = Vec::with_capacity(messages.len());
    for (at, message) in messages.iter().enumerate() {
        match message.kind {
            MessageType::System => system.push(message.text()),
            MessageType::Human => push_user(&mut turns, Value::String(message.text())),
            MessageType::Tool => push_user(&mut turns, json!([tool_result(message)])),
            MessageType::Ai => {
                if let Some(turn) = assistant(message, Some(at) == last) {
                    turns.push(turn);
                }
            }
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

/// Adds user content (a string or blocks) as a user turn, merged into the
/// previous turn when that is a user turn too.
fn push_user(turns: &mut Vec<Value>, content: Value) {
    if let Some(previous) = turns.last_mut().filter(|t| t["role"] == "user") {
        let mut blocks = blocks(previous["content"].take());
        blocks.extend(self::blocks(content));
        previous["content"] = Value::Array(blocks);
    } else {
        turns.push(json!({"role": "user", "content": content}));
    }
}

/// Content as a list of blocks (a string is one text block).
fn blocks(content: Value) -> Vec<Value> {
    match content {
        Value::Array(blocks) => blocks,
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        other => vec![other],
    }
}

fn tool_result(message: &Message) -> Value {
    let id = message.tool_call_id.as_deref().unwrap_or_default();
    json!({
        "type": "tool_result",
        "tool_use_id": anthropic_id(id),
        "content": message.text(),
        "is_error": message.status == Some(ToolStatus::Error),
    })
}

/// An AI message as an assistant turn: its text alone, or a text block
/// (when there is text) and a `tool_use` block per call; `None` when it
/// has neither.
fn assistant(message: &Message, last: bool) -> Option<Value> {
    let mut text = message.text();
    if last {
        text.truncate(text.trim_end().len());
    }
    let mut calls = Vec::new();
    for call in &message.tool_calls {
        let id = call.id.as_deref().unwrap_or_default();
        calls.push(tool_use(id, &call.name, Value::Object(call.args.clone())));
    }
    for call in &message.invalid_tool_calls {
        let field = |key: &str| call.get(key).and_then(Value::as_str).unwrap_or_default();
        if field("id").is_empty() || field("name").is_empty() {
            continue;
        }
        let input = serde_json::from_str::<Value>(field("args"))
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        calls.push(tool_use(field("id"), field("name"), input));
    }
    let content = if calls.is_empty() {
        if text.is_empty() {
            return None;
        }
        Value::String(text)
    } else {
        let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
        Value::Array(text.into_iter().chain(calls).collect())
    };
    Some(json!({"role": "assistant", "content": content}))
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": anthropic_id(id), "name": name, "input": input})
}

/// A tool call id Anthropic accepts (`^[a-zA-Z0-9_-]+$`): the id itself
/// when it is one (or empty: the server then names the fault), otherwise
/// `toolu_` and a 64-bit FNV-1a hash of it in hex, the same on every turn.
pub(super) fn anthropic_id(id: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if id.chars().all(valid) {
        return id.to_owned();
    }
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("toolu_{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ai, human, tool, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            name: "get".to_owned(),
            args: Map::new(),
            id: Some(id.to_owned()),
        }
    }

    #[test]
    fn tool_results_and_a_human_message_after_them_make_one_user_turn() {
        let mut asked = ai("Let me look. ");
        asked.tool_calls = vec![call("a"), call("b")];
        let messages = vec![
            human("hi"),
            asked,
            tool("one", "a"),
            tool("two", "b"),
            human("and?"),
            ai("done  \n"),
        ];
        let (system, turns) = conversation(Some("Be brief."), &messages);
        assert_eq!(system.as_deref(), Some("Be brief."));
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[0], json!({"role": "user", "content": "hi"}));
        assert_eq!(turns[1]["content"][0]["text"], "Let me look. ");
        assert_eq!(turns[1]["content"][2]["id"], "b");
        let results = turns[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[1]["tool_use_id"], "b");
        assert_eq!(results[1]["is_error"], false);
        assert_eq!(results[2], json!({"type": "text", "text": "and?"}));
        assert_eq!(turns[3], json!({"role": "assistant", "content": "done"}));
    }

    #[test]
    fn ids_anthropic_refuses_are_replaced_alike_on_call_and_result() {
        assert_eq!(anthropic_id("call_1-x"), "call_1-x");
        let odd = anthropic_id("functions.write_todos:0");
        assert!(odd.starts_with("toolu_") && odd.len() == 22, "{odd}");
        assert_eq!(odd, anthropic_id("functions.write_todos:0"));
        assert_ne!(odd, anthropic_id("functions.write_todos:1"));
    }

    #[test]
    fn empty_assistant_turns_are_left_out_and_system_messages_join_the_prompt() {
        let mut system = Message::new(MessageType::System, "Summary: x");
        system.id = None;
        let messages = vec![system, human("a"), ai(""), human("b")];
        let (system, turns) = conversation(Some("P"), &messages);
        assert_eq!(system.as_deref(), Some("P\n\nSummary: x"));
        assert_eq!(
            turns,
            [json!({"role": "user", "content": [
                {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})]
        );
    }
}
