//! A message's LangChain JSON form: written as `message.model_dump()`
//! writes it, read from every shape LangChain's `convert_to_messages` reads,
//! LangChain's serialised objects included (`JSON.stringify(message)` in
//! JS, `dumpd(message)` in Python: see [`unwrap_constructor`]).

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{openai, Content, Message, MessageError, MessageType, ToolCall, ToolStatus};
use crate::error::json_type;

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("args", &self.args)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "tool_call")?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        tool_call_from_json(value).map_err(de::Error::custom)
    }
}

impl Serialize for Message {
    /// LangChain's `model_dump()` JSON. A message that would not read back as
    /// itself ([`Message::validate`]) is an error, so it is never stored.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.validate().map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.kind.as_str())?;
        map.serialize_entry("content", &self.content)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        if let Some(name) = &self.name {
            map.serialize_entry("name", name)?;
        }
        if !self.additional_kwargs.is_empty() {
            map.serialize_entry("additional_kwargs", &self.additional_kwargs)?;
        }
        if !self.response_metadata.is_empty() {
            map.serialize_entry("response_metadata", &self.response_metadata)?;
        }
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if !self.invalid_tool_calls.is_empty() {
            map.serialize_entry("invalid_tool_calls", &self.invalid_tool_calls)?;
        }
        if let Some(usage) = &self.usage_metadata {
            map.serialize_entry("usage_metadata", usage)?;
        }
        if let Some(call_id) = &self.tool_call_id {
            map.serialize_entry("tool_call_id", call_id)?;
        }
        if let Some(status) = &self.status {
            map.serialize_entry("status", status)?;
        }
        if let Some(artifact) = &self.artifact {
            map.serialize_entry("artifact", artifact)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(value).map_err(de::Error::custom)
    }
}

impl Message {
    /// Reads a message from any shape LangChain accepts: a LangChain dict, an
    /// OpenAI role dict, a `[role, content]` pair, a bare string (a human
    /// message), or a message object LangChain serialised
    /// (`{"lc": 1, "type": "constructor", "id": [.., "HumanMessage"],
    /// "kwargs": {..}}`, what JS's `JSON.stringify` writes). A chunk's JSON (`{"type": "AIMessageChunk", ..}`, see
    /// [`MessageChunk`](super::MessageChunk)) reads as the message it makes.
    pub fn from_json(value: Value) -> Result<Self, MessageError> {
        match value {
            Value::String(text) => Ok(Self::new(MessageType::Human, text)),
            Value::Array(pair) => openai::from_pair(pair),
            Value::Object(map) => Self::from_object(map),
            other => Err(MessageError::NotAMessage {
                found: json_type(&other),
            }),
        }
    }

    /// A LangChain dict or an OpenAI role dict. Keys that are not
    /// LangChain's fields are provider extras, kept where LangChain keeps
    /// them: in `additional_kwargs`.
    fn from_object(map: Map<String, Value>) -> Result<Self, MessageError> {
        let mut map = unwrap_constructor(map)?;
        let kind_name = type_or_role(&mut map)?;
        if let Some(kind) = super::chunk::parse_chunk_type(&kind_name) {
            // A chunk is the message it makes, as LangGraph's `add_messages`
            // turns chunks into messages.
            return Ok(super::MessageChunk::from_object(kind, map)?.into_message());
        }
        let kind = MessageType::parse(&kind_name).ok_or(MessageError::UnknownType {
            name: kind_name.clone(),
        })?;
        let content = match map.remove("content") {
            None | Some(Value::Null) => Content::default(),
            Some(v) => Content::deserialize(v).map_err(|_| MessageError::InvalidField {
                field: "content",
                reason: "expected a string or a list of content blocks".to_owned(),
            })?,
        };
        let mut msg = Self::new(kind, content);
        openai::keep_developer_role(&mut msg, &kind_name);
        msg.take_fields(&mut map)?;
        msg.validate()?;
        // `example` is a LangChain field with no meaning here; other keys are
        // provider extras, kept where LangChain keeps them.
        map.remove("example");
        msg.additional_kwargs.extend(map);
        Ok(msg)
    }

    /// Takes LangChain's optional fields out of `map`, each checked.
    fn take_fields(&mut self, map: &mut Map<String, Value>) -> Result<(), MessageError> {
        self.id = opt_string(map, "id")?;
        self.name = opt_string(map, "name")?;
        if let Some(kwargs) = take_object(map, "additional_kwargs")? {
            self.additional_kwargs.extend(kwargs);
        }
        self.response_metadata = take_object(map, "response_metadata")?.unwrap_or_default();
        self.tool_calls = take_array(map, "tool_calls")?
            .into_iter()
            .map(tool_call_from_json)
            .collect::<Result<_, _>>()?;
        self.invalid_tool_calls = take_array(map, "invalid_tool_calls")?;
        self.usage_metadata = map.remove("usage_metadata").filter(|v| !v.is_null());
        self.tool_call_id = opt_string(map, "tool_call_id")?;
        self.status = match map.remove("status") {
            None | Some(Value::Null) => None,
            Some(v) => {
                Some(
                    ToolStatus::deserialize(v).map_err(|_| MessageError::InvalidField {
                        field: "status",
                        reason: "expected \"success\" or \"error\"".to_owned(),
                    })?,
                )
            }
        };
        self.artifact = map.remove("artifact").filter(|v| !v.is_null());
        Ok(())
    }
}

/// The classes LangChain serialises a message as, with the `type` of the
/// flat dict each reads as here (a chunk class keeps its name, as a
/// chunk's `model_dump()` does). JS and Python agree on the class names.
const CLASSES: [(&str, &str); 9] = [
    ("HumanMessage", "human"),
    ("AIMessage", "ai"),
    ("SystemMessage", "system"),
    ("ToolMessage", "tool"),
    ("RemoveMessage", "remove"),
    ("HumanMessageChunk", "HumanMessageChunk"),
    ("AIMessageChunk", "AIMessageChunk"),
    ("SystemMessageChunk", "SystemMessageChunk"),
    ("ToolMessageChunk", "ToolMessageChunk"),
];

/// A message object as LangChain serialises it (JS `JSON.stringify`,
/// Python `dumpd`): `{"lc": 1, "type": "constructor", "id": [<namespace>..,
/// <class>], "kwargs": {<fields, snake_case>}}`, turned into the flat dict
/// of its class (`{"type": "human", ..kwargs}`); any other object is
/// returned as it is. Only the class (the last of `id`) is read, as both
/// LangChains read it. Python's kwargs carry `type` too: it must name the
/// class's type. A class that is not a message's is an error naming it.
pub(crate) fn unwrap_constructor(
    mut map: Map<String, Value>,
) -> Result<Map<String, Value>, MessageError> {
    if !map.contains_key("lc") || map.get("type").and_then(Value::as_str) != Some("constructor") {
        return Ok(map);
    }
    let invalid = |field, reason: &str| MessageError::InvalidField {
        field,
        reason: reason.to_owned(),
    };
    if map.get("lc").and_then(Value::as_u64) != Some(1) {
        return Err(invalid("lc", "a serialised message has `\"lc\": 1`"));
    }
    let class = match map
        .get("id")
        .and_then(Value::as_array)
        .and_then(|id| id.last())
    {
        Some(Value::String(class)) => class.clone(),
        _ => {
            return Err(invalid(
                "id",
                "expected a list of names ending with the message's class",
            ))
        }
    };
    let Some(Value::Object(mut kwargs)) = map.remove("kwargs") else {
        return Err(invalid(
            "kwargs",
            "expected the message's fields as an object",
        ));
    };
    let &(_, kind) =
        CLASSES
            .iter()
            .find(|(name, _)| *name == class)
            .ok_or(MessageError::UnknownClass {
                name: class.clone(),
            })?;
    match kwargs.insert("type".to_owned(), Value::from(kind)) {
        Some(Value::String(said)) if said != kind => Err(MessageError::InvalidField {
            field: "type",
            reason: format!(
                "the class `{class}` is a `{kind}` message, but its kwargs say `{said}`"
            ),
        }),
        _ => Ok(kwargs),
    }
}

/// The message's `type` (LangChain), else its `role` (OpenAI).
fn type_or_role(map: &mut Map<String, Value>) -> Result<String, MessageError> {
    match (map.remove("type"), map.remove("role")) {
        (Some(Value::String(t)), _) => Ok(t),
        (None, Some(Value::String(r))) => Ok(r),
        (Some(other), _) | (None, Some(other)) => Err(MessageError::InvalidField {
            field: "type",
            reason: format!("expected a string, found {}", json_type(&other)),
        }),
        (None, None) => Err(MessageError::MissingField { field: "type" }),
    }
}

fn opt_string(
    map: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, MessageError> {
    match map.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(MessageError::InvalidField {
            field,
            reason: format!("expected a string, found {}", json_type(&other)),
        }),
    }
}

fn take_object(
    map: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<Map<String, Value>>, MessageError> {
    match map.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(obj)) => Ok(Some(obj)),
        Some(other) => Err(MessageError::InvalidField {
            field,
            reason: format!("expected an object, found {}", json_type(&other)),
        }),
    }
}

/// The items of an array field; none when it is missing or `null`.
fn take_array(
    map: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Vec<Value>, MessageError> {
    match map.remove(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(MessageError::InvalidField {
            field,
            reason: format!("expected an array, found {}", json_type(&other)),
        }),
    }
}

/// Reads LangChain's `{name, args, id}` or OpenAI's
/// `{id, type: "function", function: {name, arguments: "<json>"}}`.
fn tool_call_from_json(value: Value) -> Result<ToolCall, MessageError> {
    let invalid = MessageError::tool_call;
    let Value::Object(mut map) = value else {
        return Err(invalid(format!(
            "expected an object, found {}",
            json_type(&value)
        )));
    };
    let id = opt_string(&mut map, "id").map_err(|_| invalid("`id` must be a string".to_owned()))?;
    if let Some(Value::Object(function)) = map.remove("function") {
        return openai::function_call(function, id);
    }
    let name = opt_string(&mut map, "name")
        .ok()
        .flatten()
        .ok_or_else(|| invalid("tool call without a `name`".to_owned()))?;
    let args = match map.remove("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args,
        Some(other) => {
            return Err(invalid(format!(
                "`args` of `{name}` must be an object, found {}",
                json_type(&other)
            )))
        }
    };
    Ok(ToolCall { name, args, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::human;
    use serde_json::json;

    #[test]
    fn reads_every_input_shape() {
        let cases = [
            (json!("hi"), MessageType::Human),
            (json!(["assistant", "hi"]), MessageType::Ai),
            (json!({"role": "user", "content": "hi"}), MessageType::Human),
            (
                json!({"role": "developer", "content": "hi"}),
                MessageType::System,
            ),
            (
                json!({"type": "system", "content": "hi"}),
                MessageType::System,
            ),
            (
                json!({"type": "tool", "content": "hi", "tool_call_id": "c1"}),
                MessageType::Tool,
            ),
        ];
        for (value, kind) in cases {
            let msg = Message::from_json(value.clone()).unwrap();
            assert_eq!(msg.kind, kind, "{value}");
            assert_eq!(msg.text(), "hi");
        }
    }

    #[test]
    fn unknown_role_is_named() {
        let err = Message::from_json(json!({"role": "wizard", "content": "x"})).unwrap_err();
        assert_eq!(
            err,
            MessageError::UnknownType {
                name: "wizard".into()
            }
        );
        assert!(err.to_string().contains("`wizard`"));
    }

    #[test]
    fn malformed_messages_name_the_field() {
        let invalid = |value: Value| match Message::from_json(value.clone()) {
            Err(MessageError::InvalidField { field, .. }) => field,
            other => panic!("{value}: {other:?}"),
        };
        assert_eq!(invalid(json!({"type": "ai", "content": 5})), "content");
        assert_eq!(invalid(json!({"type": 1, "content": "x"})), "type");
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "id": 7})),
            "id"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "tool_calls": {}})),
            "tool_calls"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "tool_calls": [{"args": {}}]})),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"type": "ai", "content": "x", "tool_calls": [{"name": "f", "args": [1]}]})
            ),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]})
            ),
            "tool_calls"
        );
        assert_eq!(
            invalid(
                json!({"type": "tool", "content": "x", "tool_call_id": "c", "status": "maybe"})
            ),
            "status"
        );
        assert_eq!(
            invalid(json!({"type": "ai", "content": "x", "response_metadata": []})),
            "response_metadata"
        );
        assert_eq!(invalid(json!([1, "x"])), "role");
        assert_eq!(
            Message::from_json(json!(42)).unwrap_err(),
            MessageError::NotAMessage { found: "a number" }
        );
        assert_eq!(
            Message::from_json(json!(["human"])).unwrap_err(),
            MessageError::NotAMessage { found: "an array" }
        );
        assert_eq!(
            Message::from_json(json!({"content": "x"})).unwrap_err(),
            MessageError::MissingField { field: "type" }
        );
    }

    #[test]
    fn langchain_ai_message_round_trips() {
        let dumped = json!({
            "type": "ai",
            "content": [{"type": "text", "text": "Let me check."}],
            "id": "run-1",
            "name": "optimist",
            "response_metadata": {"model": "x"},
            "tool_calls": [{"name": "search", "args": {"q": "rust"}, "id": "call_1", "type": "tool_call"}],
            "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
        });
        let msg = Message::from_json(dumped.clone()).unwrap();
        assert_eq!(msg.text(), "Let me check.");
        assert_eq!(msg.tool_calls[0].name, "search");
        assert_eq!(serde_json::to_value(&msg).unwrap(), dumped);
    }

    #[test]
    fn serialised_objects_name_what_is_wrong() {
        let invalid = |value: Value| match Message::from_json(value.clone()) {
            Err(MessageError::InvalidField { field, .. }) => field,
            other => panic!("{value}: {other:?}"),
        };
        let id = json!(["langchain_core", "messages", "HumanMessage"]);
        let kwargs = json!({"content": "x"});
        let envelope = |lc: Value, id: Value, kwargs: Value| json!({"lc": lc, "type": "constructor", "id": id, "kwargs": kwargs});
        assert_eq!(
            invalid(envelope(json!(2), id.clone(), kwargs.clone())),
            "lc"
        );
        assert_eq!(invalid(envelope(json!(1), json!([]), kwargs.clone())), "id");
        assert_eq!(invalid(envelope(json!(1), json!("x"), kwargs)), "id");
        assert_eq!(
            invalid(envelope(json!(1), id.clone(), json!("x"))),
            "kwargs"
        );
        let msg = Message::from_json(envelope(json!(1), id, json!({"content": "x"}))).unwrap();
        assert_eq!(msg, human("x"));
        // Without `lc`, `constructor` is just an unknown type.
        assert_eq!(
            Message::from_json(json!({"type": "constructor", "content": "x"})).unwrap_err(),
            MessageError::UnknownType {
                name: "constructor".into()
            }
        );
    }

    #[test]
    fn model_dump_extras_are_accepted() {
        let msg = Message::from_json(json!({
            "type": "human", "content": "x", "id": null, "name": null,
            "additional_kwargs": {}, "response_metadata": {}, "example": false
        }))
        .unwrap();
        assert_eq!(msg, human("x"));
    }
}
