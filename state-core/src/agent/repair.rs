//! Invalid tool calls (arguments that are not a JSON object), handled as
//! LangChain 1.4.7's `create_agent` handles them.
//!
//! An AI message whose only calls are invalid ends the loop: no tool runs
//! and the model is not called again in that run. The model hears of them
//! at its next call (the next turn of the thread): before that call the
//! history is repaired, each unanswered invalid call answered by an error
//! tool message right after the AI message that made it, and the repaired
//! history is what the model is sent and what the state keeps. A call
//! without an id cannot be answered and is left as it is.

use std::collections::HashSet;

use serde_json::Value;

use super::tool::answer_message;
use crate::message::{Message, MessageType, ToolStatus};

/// The history with an error tool message after each AI message for each
/// of its invalid calls that no tool message answers yet, or `None` when
/// there is nothing to answer (the common case costs one pass, no copy).
pub(crate) fn repair_invalid_calls(history: &[Message]) -> Option<Vec<Message>> {
    let has_invalid = |m: &Message| m.kind == MessageType::Ai && !m.invalid_tool_calls.is_empty();
    history.iter().find(|m| has_invalid(m))?;
    let mut answered: HashSet<&str> = history
        .iter()
        .filter(|m| m.kind == MessageType::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut answers: Vec<(usize, Message)> = Vec::new();
    for (at, message) in history.iter().enumerate().filter(|(_, m)| has_invalid(m)) {
        for call in &message.invalid_tool_calls {
            let Some(id) = call.get("id").and_then(Value::as_str) else {
                continue;
            };
            if answered.insert(id) {
                answers.push((at, invalid_call_answer(call, id)));
            }
        }
    }
    if answers.is_empty() {
        return None;
    }
    let mut repaired = Vec::with_capacity(history.len() + answers.len());
    let mut answers = answers.into_iter().peekable();
    for (at, message) in history.iter().enumerate() {
        repaired.push(message.clone());
        while let Some((_, answer)) = answers.next_if(|(after, _)| *after == at) {
            repaired.push(answer);
        }
    }
    Some(repaired)
}

/// LangChain's answer to an invalid call, word for word (a model tuned on
/// LangChain's agents reads it as it expects); a call without a name is
/// `unknown`, as there.
fn invalid_call_answer(call: &Value, id: &str) -> Message {
    let name = call
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("unknown");
    let text = format!(
        "Tool call {name} with id {id} could not be executed - arguments were malformed or truncated."
    );
    answer_message(text.into(), id, name, ToolStatus::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::invalid_tool_call;
    use crate::{ai, human};

    fn broken(calls: &[(&str, Option<&str>)]) -> Message {
        let mut message = ai("");
        for (name, id) in calls {
            let call = invalid_tool_call(name, "{", id.map(str::to_owned), "EOF");
            message.invalid_tool_calls.push(call);
        }
        message
    }

    #[test]
    fn a_history_without_invalid_calls_is_not_copied() {
        assert!(repair_invalid_calls(&[human("hi"), ai("hello")]).is_none());
    }

    #[test]
    fn each_unanswered_call_with_an_id_is_answered_after_its_message() {
        let history = [
            human("go"),
            broken(&[("repeat", Some("c1")), ("", Some("c2")), ("x", None)]),
            human("again"),
        ];
        let repaired = repair_invalid_calls(&history).unwrap();
        let kinds: Vec<MessageType> = repaired.iter().map(|m| m.kind).collect();
        use MessageType::{Ai, Human, Tool};
        assert_eq!(kinds, [Human, Ai, Tool, Tool, Human]);
        assert_eq!(
            repaired[2].text(),
            "Tool call repeat with id c1 could not be executed - arguments were malformed or truncated."
        );
        assert_eq!(repaired[3].name.as_deref(), Some("unknown"));
        assert_eq!(repaired[3].tool_call_id.as_deref(), Some("c2"));
        assert_eq!(repaired[3].status, Some(ToolStatus::Error));
        // Once answered, there is nothing more to repair.
        assert!(repair_invalid_calls(&repaired).is_none());
    }
}
