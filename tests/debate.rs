//! The debate workflow's `DebateState`, end to end through the derive.

use agent_state::serde::{Deserialize, Serialize};
use agent_state::{ai, human, AgentState, ErrorKind, Messages, ReducerKind, StateUpdate};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
enum DebateStatus {
    Running,
    Completed,
    Error,
}

#[derive(Debug)]
struct InvalidStatus(DebateStatus);

impl std::fmt::Display for InvalidStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot leave {:?} once it is final", self.0)
    }
}

/// The debate's status reducer, made stricter: a finished debate stays finished.
fn status_reducer(
    current: &DebateStatus,
    update: DebateStatus,
) -> Result<DebateStatus, InvalidStatus> {
    match current {
        DebateStatus::Running => Ok(update),
        done if *done == update => Ok(update),
        done => Err(InvalidStatus(*done)),
    }
}

/// State of the debate workflow.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct DebateState {
    /// Complete conversation history.
    #[reducer(messages)]
    pub messages: Messages,
    /// Current round, 0-indexed.
    pub round: u32,
    /// The debate subject.
    #[reducer(immutable)]
    pub topic: String,
    /// Rounds before the moderator ends the debate.
    #[reducer(immutable)]
    #[state(default = 3)]
    pub max_rounds: u32,
    /// Workflow status.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    status: DebateStatus,
}

#[test]
fn defaults_come_from_the_attributes() {
    let state = DebateState::default();
    assert_eq!(state.max_rounds, 3);
    assert_eq!(state.status, DebateStatus::Running);
    assert!(state.messages.is_empty());
}

#[test]
fn a_round_of_updates() {
    let mut state = DebateState::from_json(json!({"topic": "Should AI be regulated?"})).unwrap();
    state
        .apply(DebateStateUpdate::new().message(human("Debate topic: AI")))
        .unwrap();
    state
        .apply(DebateStateUpdate::new().message(ai("Yes, carefully.").with_name("optimist")))
        .unwrap();
    state
        .apply(
            DebateStateUpdate::new()
                .message(ai("No, it stifles."))
                .round(1),
        )
        .unwrap();
    state
        .apply(DebateStateUpdate::new().status(DebateStatus::Completed))
        .unwrap();
    assert_eq!(state.messages.len(), 3);
    assert_eq!(state.round, 1);
    assert_eq!(state.topic, "Should AI be regulated?");
    assert_eq!(state.status, DebateStatus::Completed);

    let err = state
        .apply(
            DebateStateUpdate::new()
                .round(2)
                .status(DebateStatus::Running),
        )
        .unwrap_err();
    assert_eq!(err.field(), "status");
    assert_eq!(
        err.kind(),
        &ErrorKind::Rejected {
            reason: "cannot leave Completed once it is final".into()
        }
    );
    assert_eq!(state.round, 1, "nothing half-applied");
}

#[test]
fn json_round_trip_uses_camel_case_and_langchain_messages() {
    let mut state = DebateState::default();
    state
        .apply_json(json!({"messages": [{"role": "user", "content": "hi", "id": "1"}], "round": 1}))
        .unwrap();
    let value = state.to_json();
    assert_eq!(
        value,
        json!({
            "messages": [{"type": "human", "content": "hi", "id": "1"}],
            "round": 1, "topic": "", "maxRounds": 3, "status": "running"
        })
    );
    assert_eq!(DebateState::from_json(value).unwrap(), state);
}

#[test]
fn json_update_errors_name_the_field() {
    let mut state = DebateState::default();
    let before = state.clone();
    let err = state.apply_json(json!({"rounds": 2})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown field `rounds`, expected one of `messages`, `round`, `status`"
    );
    let err = state.apply_json(json!({"topic": "other"})).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::Immutable);
    assert_eq!(err.field(), "topic");
    let err = state.apply_json(json!({"round": "two"})).unwrap_err();
    assert_eq!(err.field(), "round");
    let err = state.apply_json(json!({"status": "paused"})).unwrap_err();
    assert!(
        err.to_string().contains("unknown variant `paused`"),
        "{err}"
    );
    assert_eq!(state, before);
}

#[test]
fn update_json_omits_unset_fields() {
    let update = DebateStateUpdate::new().round(2);
    assert_eq!(update.to_json(), json!({"round": 2}));
    assert!(DebateStateUpdate::new().is_empty());
    assert_eq!(
        DebateStateUpdate::from_json(json!({"round": 2})).unwrap(),
        update
    );
}

#[test]
fn schema_lists_fields_with_docs() {
    let schema = DebateState::schema();
    let names: Vec<_> = schema.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, ["messages", "round", "topic", "maxRounds", "status"]);
    let max = schema.field("maxRounds").unwrap();
    assert_eq!(max.reducer, ReducerKind::Immutable);
    assert_eq!(max.default, Some("3"));
    assert_eq!(max.ty, "u32");
    assert_eq!(max.doc, "Rounds before the moderator ends the debate.");
    assert_eq!(
        schema.field("status").unwrap().reducer,
        ReducerKind::With("status_reducer")
    );
    assert_eq!(schema.doc, "State of the debate workflow.");
}
