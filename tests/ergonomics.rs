//! What a newcomer reaches for first: the prelude, `block_on` at the
//! paths one looks for it, one `ToolCallChunk`, a step event printed with
//! `{:?}`, and JSON errors that name the value at fault inside a field.

use agent_state::graph::{Input, StateGraph, END, START};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::ErrorKind;
use serde_json::json;

/// A state's own settings, a plain serde struct inside a field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
struct Config {
    did: String,
    retries: u32,
}

/// One item of a list field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
struct Item {
    name: String,
}

/// The prelude alone brings every trait the calls below need: this
/// module imports nothing else of agent-state.
mod with_the_prelude_only {
    use agent_state::prelude::*;

    /// A state with a nested settings struct and a list of items.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Session {
        pub config: super::Config,
        #[reducer(append)]
        pub items: Vec<super::Item>,
        pub count: u32,
    }

    #[test]
    fn an_update_reads_json_and_applies_with_no_trait_import() {
        let update = SessionUpdate::from_json(serde_json::json!({"count": 2})).unwrap();
        assert!(!update.is_empty());
        let mut session = Session::default();
        session.apply(update).unwrap();
        assert_eq!(session.count, 2);
        let input = SessionInput::from_json(serde_json::json!({"count": 3})).unwrap();
        session.apply_input(input).unwrap();
        assert_eq!(session.count, 3);
    }
}

use with_the_prelude_only::{Session, SessionUpdate};

#[test]
fn a_nested_field_error_names_the_path_inside_the_field() {
    use agent_state::StateUpdate;

    let err = SessionUpdate::from_json(json!({"config": {"did": 5, "retries": 1}})).unwrap_err();
    assert_eq!(err.field(), "config.did", "{err}");
    assert!(
        matches!(err.kind(), ErrorKind::InvalidValue { reason } if reason.contains("expected a string")),
        "{err}"
    );
    let err = SessionUpdate::from_json(json!({"items": [{"name": "a"}, {"name": 1}]})).unwrap_err();
    assert_eq!(err.field(), "items[1].name", "{err}");
    // A field that is wrong as a whole is named alone, as before.
    let err = SessionUpdate::from_json(json!({"count": "two"})).unwrap_err();
    assert_eq!(err.field(), "count", "{err}");
}

#[test]
fn a_state_read_from_json_names_the_nested_path_too() {
    use agent_state::AgentState;

    let state = json!({"config": {"did": "did:plc:a", "retries": -1}, "items": [], "count": 0});
    let err = Session::from_json(state).unwrap_err();
    assert_eq!(err.field(), "config.retries", "{err}");
    let good = json!({"config": {"did": "did:plc:a", "retries": 1}, "items": [], "count": 0});
    assert_eq!(Session::from_json(good).unwrap().config.retries, 1);
}

#[test]
fn block_on_is_at_the_root_in_graph_and_in_checkpoint() {
    assert_eq!(agent_state::block_on(async { 1 }), 1);
    assert_eq!(agent_state::graph::block_on(async { 2 }), 2);
    assert_eq!(agent_state::checkpoint::block_on(async { 3 }), 3);
}

#[cfg(feature = "agent")]
#[test]
fn the_agent_modules_tool_call_chunk_is_the_message_models() {
    // One type at both paths: a value of one is a value of the other.
    let chunk: agent_state::agent::ToolCallChunk = agent_state::ToolCallChunk {
        name: Some("search".to_owned()),
        args: "{\"q\":".to_owned(),
        id: Some("call_1".to_owned()),
        index: Some(0),
    };
    let message = agent_state::MessageChunk::from_json(json!({
        "type": "AIMessageChunk",
        "content": "",
        "tool_call_chunks": [{"name": "search", "args": "{\"q\":", "id": "call_1", "index": 0}],
    }))
    .unwrap();
    assert_eq!(message.tool_call_chunks, [chunk]);
}

#[test]
fn a_step_event_prints_with_debug() {
    let graph = StateGraph::<Session>::new()
        .add_node("count", |s: &Session| {
            SessionUpdate::new().count(s.count + 1)
        })
        .add_edge(START, "count")
        .add_edge("count", END)
        .compile()
        .unwrap();
    let mut printed = Vec::new();
    let run = graph
        .run(Input::Update(SessionUpdate::new().count(1)))
        .on_step(|e| printed.push(format!("{e:?}")));
    let out = agent_state::block_on(run).unwrap();
    assert_eq!(out.state.count, 2);
    let last = printed.last().unwrap();
    assert!(last.starts_with("StepEvent { step: 1,"), "{last}");
    assert!(last.contains("node: \"count\""), "{last}");
    assert!(last.contains("next: []"), "{last}");
}
