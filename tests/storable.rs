//! What comes in is what a checkpoint can store and read back: JSON and
//! Rust values that could not are refused when they come in, naming the
//! field, and leave the state as it was. (Saving, loading and the store's
//! own refusals: `tests/support/conformance.rs`.)

use std::collections::HashMap;

use agent_state::serde_json::{json, Value};
use agent_state::{
    tool, AgentState, ErrorKind, FieldWrite, Message, MessageType, Messages, StateUpdate,
    MAX_FIELD_DEPTH,
};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[reducer(messages)]
    messages: Messages,
    #[reducer(messages)]
    log: Vec<Message>,
    #[reducer(merge)]
    facts: HashMap<String, u32>,
    #[reducer(merge)]
    doc: Value,
    raw: Value,
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!([inner]))
}

/// A tool message must carry its `tool_call_id`, whatever shape it comes
/// in: LangChain's `ToolMessage` requires one, and a stored one without it
/// would never read back.
#[test]
fn a_tool_message_without_its_call_id_is_refused_in_every_shape() {
    let mut chat = Chat::default();
    chat.apply_json(json!({"messages": "hi"})).unwrap();
    let before = chat.clone();
    for (field, update) in [
        ("messages", json!({"messages": [["tool", "42"]]})),
        (
            "messages",
            json!({"messages": {"role": "tool", "content": "42"}}),
        ),
        (
            "messages",
            json!({"messages": [{"type": "tool", "content": "42", "tool_call_id": null}]}),
        ),
        (
            "messages",
            json!({"messages": {"type": "tool", "content": "42", "tool_call_id": ""}}),
        ),
        ("log", json!({"log": [["tool", "42"]]})),
        // An overwrite is read as a list of messages: the one at fault.
        (
            "messages[0]",
            json!({"messages": {"__overwrite__": [["tool", "42"]]}}),
        ),
    ] {
        let err = chat.apply_json(update.clone()).unwrap_err();
        assert_eq!(err.field(), field, "{update}");
        assert!(err.to_string().contains("tool_call_id"), "{update}: {err}");
        assert_eq!(chat, before);
    }
    // Built in Rust: refused where it enters the state.
    for msg in [Message::new(MessageType::Tool, "42"), tool("42", "")] {
        let err = chat
            .apply(ChatUpdate::new().message(msg.clone()))
            .unwrap_err();
        assert_eq!(err.field(), "messages");
        assert!(err.to_string().contains("tool_call_id"), "{err}");
        let err = chat.apply(ChatUpdate::new().add_log(msg)).unwrap_err();
        assert_eq!(err.field(), "log");
        assert_eq!(chat, before);
    }
    // With its id, every shape is accepted.
    chat.apply_json(json!({"messages": [{"role": "tool", "content": "42", "tool_call_id": "c1"}]}))
        .unwrap();
    chat.apply(ChatUpdate::new().message(tool("43", "c2")))
        .unwrap();
    assert_eq!(chat.messages.len(), 3);
}

/// JSON nested deeper than a checkpoint stores is refused on the way in,
/// naming the field: for an update, an input and a whole state. At the
/// limit it is accepted.
#[test]
fn json_deeper_than_the_limit_is_refused_on_the_way_in() {
    let mut chat = Chat::default();
    chat.apply_json(json!({"raw": nested(MAX_FIELD_DEPTH)}))
        .unwrap();
    chat.apply_json(json!({"doc": {"k": nested(MAX_FIELD_DEPTH - 1)}}))
        .unwrap();
    let before = chat.clone();
    for (field, update) in [
        ("raw", json!({"raw": nested(MAX_FIELD_DEPTH + 1)})),
        ("doc", json!({"doc": {"k": nested(MAX_FIELD_DEPTH)}})),
        (
            "doc",
            json!({"doc": {"__overwrite__": nested(MAX_FIELD_DEPTH)}}),
        ),
        (
            "messages",
            json!({"messages": {"role": "user", "content": [nested(MAX_FIELD_DEPTH)]}}),
        ),
    ] {
        let err = chat.apply_json(update.clone()).unwrap_err();
        assert_eq!(err.field(), field, "{update}");
        assert_eq!(
            err.kind(),
            &ErrorKind::TooDeep {
                max: MAX_FIELD_DEPTH
            }
        );
        assert!(err.to_string().contains("deeper than 100"), "{err}");
        assert_eq!(chat, before);
    }
    let err = chat
        .apply_input_json(json!({"raw": nested(MAX_FIELD_DEPTH + 1)}))
        .unwrap_err();
    assert_eq!(err.field(), "raw");
    let err = Chat::from_json(json!({"raw": nested(MAX_FIELD_DEPTH + 1)})).unwrap_err();
    assert_eq!(err.field(), "raw");
    // Far deeper, refused as well: the check stops one level past the limit.
    let err = chat.apply_json(json!({"raw": nested(500)})).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::TooDeep {
            max: MAX_FIELD_DEPTH
        }
    );
}

/// An update's JSON reads back as the update, whatever keys its data has:
/// a reduce write shaped like a marker is written `{"__reduce__": ..}`.
#[test]
fn an_update_with_marker_like_keys_reads_back_as_itself() {
    let mut update = ChatUpdate::new();
    update.facts = Some(FieldWrite::Reduce([("__overwrite__".to_owned(), 1)].into()));
    update.doc = Some(FieldWrite::Reduce(
        json!({"type": "__overwrite__", "value": 2}),
    ));
    let json = update.to_json();
    assert_eq!(
        json,
        json!({
            "facts": {"__reduce__": {"__overwrite__": 1}},
            "doc": {"__reduce__": {"type": "__overwrite__", "value": 2}},
        })
    );
    assert_eq!(ChatUpdate::from_json(json).unwrap(), update);

    // Applied, it merges; the state's own JSON has no wrapper.
    let mut chat = Chat::default();
    chat.apply(update).unwrap();
    assert_eq!(chat.facts["__overwrite__"], 1);
    assert_eq!(chat.to_json()["facts"], json!({"__overwrite__": 1}));
    assert_eq!(Chat::from_json(chat.to_json()).unwrap(), chat);

    // A client's marker keeps LangGraph's meaning.
    chat.apply_json(json!({"facts": {"__overwrite__": {"only": 3}}}))
        .unwrap();
    assert_eq!(chat.facts, [("only".to_owned(), 3)].into());
    // Only writes that would be misread are wrapped.
    let plain = ChatUpdate {
        facts: Some(FieldWrite::Reduce(
            [("__overwrite__".to_owned(), 1), ("b".to_owned(), 2)].into(),
        )),
        ..ChatUpdate::new()
    };
    assert!(plain.to_json()["facts"].get("__reduce__").is_none());
}
