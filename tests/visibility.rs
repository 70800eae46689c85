//! `omit_from_input`, `omit_from_output` and `private`: LangChain's
//! `OmitFromInput`, `OmitFromOutput` and `PrivateStateAttr`.

use agent_state::{AgentState, ErrorKind, Messages, StateInput, StateUpdate, Visibility};
use serde_json::json;

/// A middleware's schema with every kind of visibility.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tracker {
    /// Whether a business idea is complete: set by the tool, never by the
    /// caller.
    #[state(omit_from_input)]
    pub business_idea_complete: bool,
    /// A hint the caller may give, not echoed back.
    #[state(omit_from_output)]
    pub hint: Option<String>,
    /// The tracker's scratch notes: neither input nor output.
    #[state(private)]
    #[reducer(append)]
    pub notes: Vec<String>,
}

/// An agent with its own fields and the tracker as a part, plus a part
/// flattened as private as a whole.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Agent {
    /// Conversation.
    #[reducer(messages)]
    pub messages: Messages,
    /// Set once per thread.
    #[reducer(immutable)]
    pub thread: String,
    /// The tracker.
    #[state(flatten)]
    pub tracker: Tracker,
    /// Bookkeeping nobody outside sees.
    #[state(flatten, private)]
    pub internal: Internal,
}

/// Bookkeeping.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Internal {
    /// Steps run.
    pub steps: u32,
}

#[test]
fn input_type_has_only_input_fields() {
    // `AgentInput` has setters for `messages` and the tracker's input part;
    // `TrackerInput` only for `hint` (the others are omitted from input).
    let input = AgentInput::new()
        .message("hello")
        .tracker(TrackerInput::new().hint("be brief"));
    assert!(!input.is_empty());
    assert_eq!(
        input.to_json(),
        json!({"messages": [{"type": "human", "content": "hello"}], "hint": "be brief"})
    );
    let update: AgentUpdate = input.clone().into();
    assert_eq!(update.tracker.hint, Some(Some("be brief".to_owned())));
    assert!(update.internal.is_empty());

    let mut agent = Agent::default();
    agent.apply_input(input).unwrap();
    assert_eq!(agent.messages.len(), 1);
    assert_eq!(agent.tracker.hint.as_deref(), Some("be brief"));
}

#[test]
fn json_input_naming_an_omitted_field_is_rejected() {
    let mut agent = Agent::default();
    let before = agent.clone();
    for (key, kind) in [
        ("business_idea_complete", ErrorKind::NotInput),
        ("notes", ErrorKind::NotInput),
        ("steps", ErrorKind::NotInput),
        ("thread", ErrorKind::Immutable),
    ] {
        let err = agent
            .apply_input_json(json!({"messages": "hi", key: json!(null)}))
            .unwrap_err();
        assert_eq!((err.field(), err.kind()), (key, &kind), "{key}");
        assert_eq!(agent, before, "nothing applied for {key}");
    }
    let err = agent
        .apply_input_json(json!({"business_idea_complete": true}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "at key `business_idea_complete`: the field is not accepted as input; it is omitted from the graph's input schema"
    );
    // Unknown keys list what the input accepts.
    let err = AgentInput::from_json(json!({"hints": "x"})).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnknownField {
            expected: vec!["messages", "hint"]
        }
    );
    // Nodes may still write every field: an update is not an input.
    agent
        .apply_json(json!({"business_idea_complete": true, "notes": ["n"], "steps": 1}))
        .unwrap();
    assert!(agent.tracker.business_idea_complete);
    assert_eq!(agent.internal.steps, 1);
}

#[test]
fn output_omits_fields_and_checkpoints_keep_them() {
    let mut agent = Agent {
        thread: "t1".into(),
        ..Agent::default()
    };
    agent
        .apply_json(json!({
            "messages": [{"type": "human", "content": "hi", "id": "1"}],
            "hint": "h",
            "notes": ["n"],
            "business_idea_complete": true,
            "steps": 4,
        }))
        .unwrap();
    assert_eq!(
        agent.to_output_json(),
        json!({
            "messages": [{"type": "human", "content": "hi", "id": "1"}],
            "thread": "t1",
            "business_idea_complete": true,
        })
    );
    assert_eq!(
        serde_json::to_value(agent.output()).unwrap(),
        agent.to_output_json()
    );
    // The stored state keeps private and output-omitted fields.
    let stored = agent.to_json();
    assert_eq!(stored["notes"], json!(["n"]));
    assert_eq!(stored["hint"], json!("h"));
    assert_eq!(stored["steps"], json!(4));
    assert_eq!(Agent::from_json(stored).unwrap(), agent);
}

#[test]
fn the_schema_carries_visibility_through_parts() {
    let schema = Agent::schema();
    let vis = |name: &str| schema.field(name).unwrap().visibility;
    assert_eq!(vis("messages"), Visibility::Public);
    assert_eq!(vis("business_idea_complete"), Visibility::OmitFromInput);
    assert_eq!(vis("hint"), Visibility::OmitFromOutput);
    assert_eq!(vis("notes"), Visibility::Private);
    assert_eq!(
        vis("steps"),
        Visibility::Private,
        "from the flattened field"
    );
    let names = |it: &mut dyn Iterator<Item = &agent_state::FieldSchema>| {
        it.map(|f| f.name).collect::<Vec<_>>()
    };
    assert_eq!(names(&mut schema.input_fields()), ["messages", "hint"]);
    assert_eq!(
        names(&mut schema.output_fields()),
        ["messages", "thread", "business_idea_complete"]
    );
}
