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

/// A typed update run as the graph's input (`Input::Update`) is held to
/// the input schema as the JSON input is: one writing a field omitted from
/// input (its own, a part's, or any of a part private as a whole) is
/// refused with `NotInput` naming the field, before anything runs or is
/// stored (no checkpoint, no fork); the same update from a node is fine.
#[test]
fn a_typed_update_as_input_cannot_set_what_the_input_may_not() {
    use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer};
    use agent_state::graph::{GraphError, Input, StateGraph, END, START};

    let graph = StateGraph::<Agent>::new()
        .add_node("tick", |_: &Agent| {
            AgentUpdate::new().internal(InternalUpdate::new().steps(1))
        })
        .add_edge(START, "tick")
        .add_edge("tick", END)
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let cases = [
        (
            "business_idea_complete",
            AgentUpdate::new().tracker(TrackerUpdate::new().business_idea_complete(true)),
        ),
        (
            "notes",
            AgentUpdate::new().tracker(TrackerUpdate::new().notes(vec!["n".to_owned()])),
        ),
        (
            "steps",
            AgentUpdate::new()
                .message("hi")
                .internal(InternalUpdate::new().steps(9)),
        ),
    ];
    for (field, update) in cases {
        // The JSON input refuses the same field.
        let json_err = AgentInput::from_json(update.to_json()).unwrap_err();
        assert_eq!(json_err.field(), field);
        // As a client's JSON read as an update would be, and as built.
        let from_json = AgentUpdate::from_json(update.to_json()).unwrap();
        for input in [update, from_json] {
            let err = block_on(graph.run(Input::Update(input)).on_thread(&saver, "t")).unwrap_err();
            let GraphError::InvalidInput { error } = &err else {
                panic!("{field}: expected the input refused, got {err}");
            };
            assert_eq!((error.field(), error.kind()), (field, &ErrorKind::NotInput));
            assert!(err.to_string().contains(&format!("`{field}`")), "{err}");
        }
    }
    assert!(
        block_on(saver.head("t")).unwrap().is_none(),
        "nothing stored"
    );

    // What the input may set runs; the node's write of a private field too.
    let ok = AgentUpdate::new()
        .message("hi")
        .tracker(TrackerUpdate::new().hint("brief"));
    let out = block_on(graph.run(Input::Update(ok)).on_thread(&saver, "t")).unwrap();
    assert_eq!(out.state.internal.steps, 1);
    let stored = block_on(saver.list("t", None, 100)).unwrap().len();
    let head = block_on(saver.head("t")).unwrap().unwrap().meta.id;

    // On a thread that exists, and from an older checkpoint (time travel,
    // which would store a fork), a refused input stores nothing either.
    let bad = || AgentUpdate::new().internal(InternalUpdate::new().steps(2));
    let err = block_on(graph.run(Input::Update(bad())).on_thread(&saver, "t")).unwrap_err();
    assert!(matches!(err, GraphError::InvalidInput { .. }), "{err}");
    let err = block_on(
        graph
            .run(Input::Update(bad()))
            .on_thread(&saver, "t")
            .from_checkpoint(head),
    )
    .unwrap_err();
    assert!(matches!(err, GraphError::InvalidInput { .. }), "{err}");
    assert_eq!(block_on(saver.list("t", None, 100)).unwrap().len(), stored);
    // Without a thread, the same.
    let err = block_on(graph.run(Input::Update(bad()))).unwrap_err();
    assert!(matches!(err, GraphError::InvalidInput { .. }), "{err}");
}
