//! JSON Schema of states, updates, inputs and outputs (the `schemars`
//! feature), flat across parts and honouring visibility, checked with a
//! validator against the JSON the runtime itself writes and reads.
#![cfg(feature = "schemars")]

use std::collections::BTreeMap;

use agent_state::base::{MessagesState, MessagesStateUpdate};
use agent_state::json_schema::{schema_of, schemars::JsonSchema};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::{ai, AgentState, Output, StateInput, StateUpdate, UnionVec};
use serde_json::{json, Value};

/// A todo item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Whether it is done.
    pub done: bool,
}

/// The todo-list middleware's schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct PlanningState {
    /// The plan.
    #[state(omit_from_input)]
    pub todos: Vec<Todo>,
}

/// Per-user facts, merged field by field.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct Profile {
    /// Who the user is.
    pub identity: Option<String>,
}

fn add(current: &u32, by: u32) -> Result<u32, String> {
    current.checked_add(by).ok_or_else(|| "overflow".into())
}

/// An agent with parts, reducers and every visibility.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema, rename_all = "camelCase")]
pub struct Agent {
    /// The conversation.
    #[state(flatten)]
    pub base: MessagesState,
    /// Planning.
    #[state(flatten)]
    pub planning: PlanningState,
    /// Per-user facts.
    #[reducer(merge)]
    pub profile: Profile,
    /// Files by path.
    #[reducer(merge)]
    pub files: BTreeMap<String, String>,
    /// Plugins loaded.
    #[reducer(union)]
    pub loaded_plugins: UnionVec<String>,
    /// Tokens spent.
    #[reducer(with = add)]
    pub tokens: u32,
    /// Set once.
    #[reducer(immutable)]
    pub thread_id: String,
    /// Scratch space.
    #[state(private)]
    pub scratch: Option<String>,
}

fn validator<T: JsonSchema>() -> jsonschema::Validator {
    let schema = schema_of::<T>();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{e}\n{schema:#}"))
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance).map(|e| e.to_string()).collect()
}

#[test]
fn schemas_are_flat_objects_of_the_right_fields() {
    let keys = |schema: &Value| -> Vec<String> {
        let mut keys: Vec<String> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    let state = schema_of::<Agent>();
    assert_eq!(state["additionalProperties"], false);
    assert_eq!(
        keys(&state),
        [
            "files",
            "loadedPlugins",
            "messages",
            "profile",
            "scratch",
            "threadId",
            "todos",
            "tokens"
        ]
    );
    assert_eq!(
        state["properties"]["tokens"]["description"],
        json!("Tokens spent.")
    );
    assert_eq!(
        keys(&schema_of::<AgentUpdate>()),
        [
            "files",
            "loadedPlugins",
            "messages",
            "profile",
            "scratch",
            "todos",
            "tokens"
        ]
    );
    assert_eq!(
        keys(&schema_of::<AgentInput>()),
        ["files", "loadedPlugins", "messages", "profile", "tokens"]
    );
    assert_eq!(
        keys(&schema_of::<Output<'static, Agent>>()),
        [
            "files",
            "loadedPlugins",
            "messages",
            "profile",
            "threadId",
            "todos",
            "tokens"
        ]
    );
}

fn sample() -> Agent {
    let mut agent = Agent {
        thread_id: "t-1".into(),
        ..Agent::default()
    };
    agent
        .apply(
            Agent::lift(MessagesStateUpdate::new().message(ai("hi").with_id("m1")))
                .with(PlanningStateUpdate::new().todos(vec![Todo {
                    content: "plan".into(),
                    done: false,
                }]))
                .files([("a.md".to_owned(), "# A".to_owned())])
                .profile(ProfileUpdate::new().identity("Ada"))
                .loaded_plugins(["memory"])
                .tokens(3)
                .scratch("notes"),
        )
        .unwrap();
    agent
}

#[test]
fn what_the_runtime_writes_validates() {
    let agent = sample();
    assert_eq!(
        errors(&validator::<Agent>(), &agent.to_json()),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(
            &validator::<Output<'static, Agent>>(),
            &agent.to_output_json()
        ),
        Vec::<String>::new()
    );
    let update = AgentUpdate::new()
        .overwrite_files(BTreeMap::new())
        .profile(ProfileUpdate::new().clear_identity())
        .tokens(1)
        .base(MessagesStateUpdate::new().message(ai("x")));
    assert_eq!(
        errors(&validator::<AgentUpdate>(), &update.to_json()),
        Vec::<String>::new()
    );
    let input = AgentInput::new()
        .loaded_plugin("editor")
        .base(agent_state::base::MessagesStateInput::new().message("hello"));
    assert_eq!(
        errors(&validator::<AgentInput>(), &input.to_json()),
        Vec::<String>::new()
    );
}

#[test]
fn what_the_runtime_accepts_validates_and_what_it_rejects_does_not() {
    let update = validator::<AgentUpdate>();
    let input = validator::<AgentInput>();
    // Every shape a LangGraph client sends for messages.
    for messages in [
        json!("a bare string"),
        json!({"role": "user", "content": "hi"}),
        json!([{"type": "ai", "content": "hi", "id": "1"}, ["user", "yo"]]),
        json!([{"type": "remove", "id": "1"}]),
        // A message as LangChain JS's `JSON.stringify` writes it.
        json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "HumanMessage"],
            "kwargs": {"content": "hi", "additional_kwargs": {}, "response_metadata": {}}}),
    ] {
        let sample = json!({"messages": messages});
        assert!(update.is_valid(&sample), "{sample}");
        assert!(input.is_valid(&sample), "{sample}");
        Agent::default().apply_input_json(sample).ok();
    }
    let good = json!({"files": {"__overwrite__": {}}, "profile": {"identity": null}, "tokens": 2});
    assert!(update.is_valid(&good));
    sample().apply_json(good).unwrap();
    // A write shaped like a marker, as `to_json` escapes it.
    let escaped = json!({"files": {"__reduce__": {"__overwrite__": "x"}}});
    assert!(update.is_valid(&escaped), "{escaped}");
    sample().apply_json(escaped).unwrap();
    // The form an `Overwrite` takes after a JSON round trip.
    let good = json!({"files": {"type": "__overwrite__", "value": {"a": "A"}}});
    assert!(update.is_valid(&good));
    sample().apply_json(good).unwrap();

    // Rejected by both the schema and the runtime.
    for (bad, by_update) in [
        (json!({"thread_id": "x"}), false),
        (json!({"threadId": "x"}), false),
        (json!({"tokens": "three"}), false),
        (json!({"todos": [{"content": 1}]}), false),
        (json!({"files": {"__overwrite__": 3}}), false),
        (
            json!({"files": {"type": "__overwrite__", "value": 3}}),
            false,
        ),
        (json!({"todos": [{"content": "c", "done": true}]}), true),
        (json!({"scratch": "s"}), true),
    ] {
        assert_eq!(update.is_valid(&bad), by_update, "update {bad}");
        assert_eq!(
            sample().apply_json(bad.clone()).is_ok(),
            by_update,
            "runtime update {bad}"
        );
        assert!(!input.is_valid(&bad), "input {bad}");
        assert!(
            AgentInput::from_json(bad.clone()).is_err(),
            "runtime input {bad}"
        );
    }
}

#[test]
fn a_state_without_the_attribute_needs_none_of_this() {
    /// No `json_schema`: its field types need no `JsonSchema`.
    #[derive(AgentState, Debug)]
    struct Plain {
        value: std::time::Duration,
    }
    assert!(Plain::default().value.is_zero());
    assert!(PlainUpdate::new()
        .value(std::time::Duration::ZERO)
        .to_json()
        .is_object());
}
