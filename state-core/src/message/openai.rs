//! The shapes that name an OpenAI role instead of LangChain's `type`, which
//! LangChain reads too: `[role, content]` pairs, the `developer` role (kept
//! for the way back), and tool calls in OpenAI's function form. A role dict
//! (`{"role": "user", ...}`) is otherwise read as a LangChain dict.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Content, Message, MessageError, MessageType, ToolCall};
use crate::error::json_type;

/// A `[role, content]` pair (`["user", "hi"]`).
pub(super) fn from_pair(pair: Vec<Value>) -> Result<Message, MessageError> {
    let [role, content]: [Value; 2] = pair
        .try_into()
        .map_err(|_| MessageError::NotAMessage { found: "an array" })?;
    let role = match role {
        Value::String(role) => role,
        other => {
            return Err(MessageError::InvalidField {
                field: "role",
                reason: format!("expected a string, found {}", json_type(&other)),
            })
        }
    };
    let kind = MessageType::parse(&role).ok_or(MessageError::UnknownType { name: role })?;
    let content = Content::deserialize(content).map_err(|e| MessageError::InvalidField {
        field: "content",
        reason: e.to_string(),
    })?;
    let msg = Message::new(kind, content);
    // A `["tool", content]` pair has no call id to answer.
    msg.validate()?;
    Ok(msg)
}

/// A system message read from OpenAI's `developer` role keeps the role, as
/// LangChain keeps it, so it can be sent back as-is.
pub(super) fn keep_developer_role(msg: &mut Message, kind_name: &str) {
    if kind_name == "developer" {
        msg.additional_kwargs.insert(
            "__openai_role__".to_owned(),
            Value::String("developer".to_owned()),
        );
    }
}

/// A tool call's `function` in OpenAI's form: `{name, arguments: "<json>"}`.
pub(super) fn function_call(
    mut function: Map<String, Value>,
    id: Option<String>,
) -> Result<ToolCall, MessageError> {
    let invalid = MessageError::tool_call;
    let name = match function.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err(invalid("function call without a `name`".to_owned())),
    };
    let args = match function.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::String(raw)) if raw.trim().is_empty() => Map::new(),
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(&raw) {
            Ok(Value::Object(args)) => args,
            _ => {
                return Err(invalid(format!(
                    "arguments of `{name}` are not a JSON object"
                )))
            }
        },
        Some(Value::Object(args)) => args,
        Some(_) => {
            return Err(invalid(format!(
                "arguments of `{name}` are not a JSON object"
            )))
        }
    };
    Ok(ToolCall { name, args, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_tool_calls_are_converted() {
        let msg = Message::from_json(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "add", "arguments": "{\"a\": 1}"}}]
        }))
        .unwrap();
        assert_eq!(
            msg.tool_calls,
            vec![ToolCall::new(
                "add",
                json!({"a": 1}).as_object().unwrap().clone(),
                "c1"
            )]
        );
    }
}
