//! `#[state(flatten)]`: parts whose JSON stays flat, whose updates go
//! through their own reducers, and which generic code reaches by type.

use std::collections::HashMap;

use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
use agent_state::{
    ai, human, tool, AgentState, ErrorKind, HasPart, ReducerKind, StateUpdate, Visibility,
};
use serde_json::json;

/// The todo-list middleware's schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct TodoState {
    /// The plan, replaced whole by `write_todos`.
    pub todos: Vec<String>,
    /// How many times the plan was written.
    #[reducer(with = count)]
    #[state(omit_from_input)]
    pub revisions: u32,
}

fn count(current: &u32, by: u32) -> Result<u32, String> {
    current.checked_add(by).ok_or_else(|| "overflow".to_owned())
}

/// The filesystem middleware's schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct FilesState {
    /// Path → content; writes merge.
    #[reducer(merge)]
    pub files: HashMap<String, String>,
    /// Where the agent works; fixed per thread.
    #[reducer(immutable)]
    #[state(default = "/".to_owned())]
    pub root: String,
}

/// A part that has a part.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct Workspace {
    /// Name of the workspace.
    pub workspace_name: String,
    /// Files of the workspace.
    #[state(flatten)]
    pub fs: FilesState,
}

/// An agent's state: its own fields and three parts.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Agent {
    /// Turns taken.
    pub turns: u32,
    /// The conversation.
    #[state(flatten)]
    pub base: MessagesState,
    /// Planning.
    #[state(flatten)]
    pub todo: TodoState,
    #[state(flatten)]
    pub workspace: Workspace,
}

#[test]
fn json_of_the_state_and_of_updates_is_flat() {
    let mut agent = Agent::default();
    agent
        .apply(
            AgentUpdate::new()
                .turns(1)
                .base(MessagesStateUpdate::new().message(human("hi").with_id("m1")))
                .todo(TodoStateUpdate::new().todos(vec!["plan".into()]))
                .workspace(
                    WorkspaceUpdate::new()
                        .workspace_name("w")
                        .fs(FilesStateUpdate::new().files([("a.txt".to_owned(), "A".to_owned())])),
                ),
        )
        .unwrap();
    assert_eq!(
        agent.to_json(),
        json!({
            "turns": 1,
            "messages": [{"type": "human", "content": "hi", "id": "m1"}],
            "todos": ["plan"],
            "revisions": 0,
            "workspaceName": "w",
            "files": {"a.txt": "A"},
            "root": "/",
        })
    );
    let update = AgentUpdate::new()
        .turns(2)
        .todo(TodoStateUpdate::new().revisions(1))
        .workspace(
            WorkspaceUpdate::new()
                .fs(FilesStateUpdate::new().files([("b".to_owned(), "B".to_owned())])),
        );
    let update_json = update.to_json();
    assert_eq!(
        update_json,
        json!({"turns": 2, "revisions": 1, "files": {"b": "B"}})
    );
    // The flat JSON reads back into the same typed update.
    assert_eq!(AgentUpdate::from_json(update_json).unwrap(), update);
    // And a whole state round-trips.
    let back = Agent::from_json(agent.to_json()).unwrap();
    assert_eq!(back, agent);
}

#[test]
fn json_updates_go_through_the_parts_reducers() {
    let mut agent = Agent::default();
    agent
        .apply_json(json!({
            "messages": [{"role": "user", "content": "hello", "id": "m1"}],
            "files": {"a": "1"},
            "revisions": 2,
        }))
        .unwrap();
    agent
        .apply_json(json!({
            "messages": [{"role": "assistant", "content": "hi", "id": "m2"}],
            "files": {"b": "2"},
            "revisions": 3,
        }))
        .unwrap();
    assert_eq!(agent.base.messages.len(), 2, "messages append");
    assert_eq!(agent.workspace.fs.files.len(), 2, "files merge");
    assert_eq!(agent.todo.revisions, 5, "the part's `with` reducer adds");
}

#[test]
fn superstep_rules_hold_inside_parts() {
    let mut agent = Agent::default();
    let before = agent.clone();
    // Two nodes write the part's plain field `todos` in one step.
    let err = agent
        .apply_all([
            Agent::lift(TodoStateUpdate::new().todos(vec!["a".into()])),
            AgentUpdate::new()
                .turns(1)
                .todo(TodoStateUpdate::new().todos(vec!["b".into()])),
        ])
        .unwrap_err();
    assert_eq!(err.field(), "todos");
    assert_eq!(err.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
    assert_eq!(agent, before, "nothing applied, own fields included");
    // Reducer fields of parts fold across the step.
    agent
        .apply_all([
            Agent::lift(MessagesStateUpdate::new().message(ai("one"))),
            Agent::lift(MessagesStateUpdate::new().message(ai("two"))),
            Agent::lift(TodoStateUpdate::new().revisions(1)),
            Agent::lift(TodoStateUpdate::new().revisions(1)),
        ])
        .unwrap();
    assert_eq!(agent.base.messages.len(), 2);
    assert_eq!(agent.todo.revisions, 2);
}

#[test]
fn a_failing_part_leaves_every_part_unchanged() {
    let mut agent = Agent::default();
    agent.apply(AgentUpdate::new().turns(1)).unwrap();
    let before = agent.clone();
    let err = agent
        .apply_json(json!({
            "turns": 9,
            "todos": ["x"],
            "files": {"f": "F"},
            "messages": [{"type": "remove", "id": "nope"}],
        }))
        .unwrap_err();
    assert_eq!(err.field(), "messages");
    assert_eq!(
        err.kind(),
        &ErrorKind::MessageNotFound { id: "nope".into() }
    );
    assert_eq!(agent, before);
}

#[test]
fn unknown_keys_list_every_flat_name() {
    let mut agent = Agent::default();
    let err = agent.apply_json(json!({"todo": ["x"]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown field `todo`, expected one of `turns`, `messages`, `todos`, `revisions`, `workspaceName`, `files`"
    );
    let err = Agent::from_json(json!({"fs": {}})).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnknownField {
            expected: vec![
                "turns",
                "messages",
                "todos",
                "revisions",
                "workspaceName",
                "files",
                "root"
            ]
        }
    );
    // A part's immutable field is still immutable through the whole.
    let err = agent.apply_json(json!({"root": "/tmp"})).unwrap_err();
    assert_eq!((err.field(), err.kind()), ("root", &ErrorKind::Immutable));
    // Wrong types name the flat field.
    let err = agent.apply_json(json!({"workspaceName": 3})).unwrap_err();
    assert_eq!(err.field(), "workspaceName");
}

/// Written once, for any state with a todo list and a conversation.
fn write_todos<S>(state: &S, todos: &[&str], call_id: &str) -> S::Update
where
    S: HasPart<TodoState> + HasMessages,
{
    let current: &TodoState = state.part();
    let note = format!(
        "plan {} → {} items after {} messages",
        current.revisions,
        todos.len(),
        state.messages().len()
    );
    S::lift(
        TodoStateUpdate::new()
            .todos(todos.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>())
            .revisions(1),
    )
    .with(MessagesStateUpdate::new().message(tool(note, call_id)))
}

/// Another state with the same two parts and nothing else in common.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Minimal {
    #[state(flatten)]
    pub todo: TodoState,
    #[state(flatten)]
    pub chat: MessagesState,
}

#[test]
fn generic_middleware_runs_on_any_state_with_its_parts() {
    let mut agent = Agent::default();
    agent.apply(write_todos(&agent, &["a", "b"], "c1")).unwrap();
    agent.apply(write_todos(&agent, &["a"], "c2")).unwrap();
    assert_eq!(agent.todo.todos, ["a"]);
    assert_eq!(agent.todo.revisions, 2);
    assert_eq!(
        agent.messages()[1].text(),
        "plan 1 → 1 items after 1 messages"
    );

    let mut minimal = Minimal::default();
    minimal.apply(write_todos(&minimal, &["x"], "c1")).unwrap();
    assert_eq!(minimal.part::<TodoState>().todos, ["x"]);
    assert_eq!(minimal.to_json()["messages"][0]["tool_call_id"], "c1");
    // Reading a part's update back from the whole's.
    let update = write_todos(&minimal, &["y"], "c2");
    assert_eq!(
        <Minimal as HasPart<TodoState>>::update_part_of(&update).revisions,
        Some(agent_state::FieldWrite::Reduce(1))
    );
}

#[test]
fn nested_parts_are_reached_through_their_parent() {
    let agent = Agent::default();
    let workspace: &Workspace = agent.part();
    let fs: &FilesState = workspace.part();
    assert_eq!(fs.root, "/");
}

#[test]
fn the_schema_lists_parts_fields_with_their_owner() {
    let schema = Agent::schema();
    let rows: Vec<(&str, &str, Option<&str>)> = schema
        .fields
        .iter()
        .map(|f| (f.name, f.owner, f.part))
        .collect();
    assert_eq!(
        rows,
        [
            ("turns", "Agent", None),
            ("messages", "MessagesState", Some("base")),
            ("todos", "TodoState", Some("todo")),
            ("revisions", "TodoState", Some("todo")),
            ("workspaceName", "Workspace", Some("workspace")),
            ("files", "FilesState", Some("workspace")),
            ("root", "FilesState", Some("workspace")),
        ]
    );
    let parts: Vec<(&str, &str, &str)> = schema
        .parts
        .iter()
        .map(|p| (p.field, p.state, p.doc))
        .collect();
    assert_eq!(
        parts,
        [
            ("base", "MessagesState", "The conversation."),
            ("todo", "TodoState", "Planning."),
            ("workspace", "Workspace", "A part that has a part."),
        ]
    );
    assert_eq!(
        schema.field("revisions").unwrap().reducer,
        ReducerKind::With("count")
    );
    assert_eq!(
        schema.field("revisions").unwrap().visibility,
        Visibility::OmitFromInput
    );
    assert_eq!(schema.part_fields("workspace").count(), 3);
}

#[test]
fn cfg_fields_next_to_parts() {
    /// A state whose own fields are partly compiled out.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Configured {
        #[cfg(any())]
        pub todos: u32,
        #[cfg(not(any()))]
        pub kept: u32,
        #[state(flatten)]
        pub todo: TodoState,
    }
    let mut s = Configured::default();
    s.apply_json(json!({"kept": 1, "todos": ["t"]})).unwrap();
    assert_eq!((s.kept, s.todo.todos.len()), (1, 1));
}

mod generic {
    //! A generic state with a generic part.
    use agent_state::{AgentState, HasPart};

    /// A part holding items of any type.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Bag<T: Clone + PartialEq + std::fmt::Debug> {
        /// Items.
        #[reducer(append)]
        pub items: Vec<T>,
    }

    /// A union of items of any hashable type.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Seen<T: Clone + Eq + std::hash::Hash + std::fmt::Debug> {
        /// Each item once.
        #[reducer(union)]
        pub seen: agent_state::UnionVec<T>,
    }

    #[test]
    fn generic_unions_index_their_items() {
        let mut s: Seen<(u8, String)> = Seen::default();
        s.apply(SeenUpdate::new().seen([(1, "a".to_owned()), (1, "a".to_owned())]))
            .unwrap();
        s.apply_json(serde_json::json!({"seen": [[2, "b"], [1, "a"]]}))
            .unwrap();
        assert_eq!(s.seen, [(1, "a".to_owned()), (2, "b".to_owned())]);
    }

    /// A state around it.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Holder<T: Clone + PartialEq + std::fmt::Debug> {
        /// A label.
        pub label: String,
        /// The bag.
        #[state(flatten)]
        pub bag: Bag<T>,
    }

    fn add<S: HasPart<Bag<u8>>>(item: u8) -> S::Update {
        S::lift(BagUpdate::new().item(item))
    }

    #[test]
    fn generic_states_flatten_generic_parts() {
        let mut h: Holder<u8> = Holder::default();
        h.apply(add::<Holder<u8>>(3)).unwrap();
        h.apply_json(serde_json::json!({"items": [4], "label": "x"}))
            .unwrap();
        assert_eq!(h.bag.items, [3, 4]);
        assert_eq!(
            h.to_json(),
            serde_json::json!({"label": "x", "items": [3, 4]})
        );
    }
}

/// A part with one field per way two writes can combine.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tracker {
    /// Plain: one write per step.
    pub status: String,
    /// Appended.
    #[reducer(append)]
    pub log: Vec<String>,
    /// Merged, a nested state whose plain fields fold.
    #[reducer(merge)]
    pub profile: Profile,
    /// Through a function only it can fold.
    #[reducer(with = count)]
    pub hits: u32,
}

/// A nested state merged into `Tracker`.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Profile {
    /// Plain.
    pub name: String,
    /// Plain.
    pub city: String,
}

/// A state with the tracker and the conversation as parts.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Tracked {
    #[state(flatten)]
    pub base: MessagesState,
    #[state(flatten)]
    pub tracker: Tracker,
}

#[test]
fn with_adds_a_parts_writes_after_those_already_there() {
    // Two helpers each answering with a message: both are kept, in order.
    let update = Tracked::lift(MessagesStateUpdate::new().message(ai("one").with_id("1")))
        .with(MessagesStateUpdate::new().message(ai("two").with_id("2")))
        .with(
            TrackerUpdate::new()
                .add_log("a")
                .profile(ProfileUpdate::new().name("Ada")),
        )
        .with(
            TrackerUpdate::new()
                .add_log("b")
                .profile(ProfileUpdate::new().name("Bo").city("Oslo")),
        );
    let mut s = Tracked::default();
    s.apply(update.clone()).unwrap();
    assert_eq!(
        s.messages().iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["one", "two"]
    );
    assert_eq!(s.tracker.log, ["a", "b"]);
    // A merged nested state folds its writes: the later name wins.
    assert_eq!(
        (
            s.tracker.profile.name.as_str(),
            s.tracker.profile.city.as_str()
        ),
        ("Bo", "Oslo")
    );
    // The same as the two updates applied as one step, and its JSON too.
    let mut step = Tracked::default();
    step.apply_all([
        Tracked::lift(MessagesStateUpdate::new().message(ai("one").with_id("1"))),
        Tracked::lift(MessagesStateUpdate::new().message(ai("two").with_id("2"))),
        Tracked::lift(
            TrackerUpdate::new()
                .add_log("a")
                .profile(ProfileUpdate::new().name("Ada")),
        ),
        Tracked::lift(
            TrackerUpdate::new()
                .add_log("b")
                .profile(ProfileUpdate::new().name("Bo").city("Oslo")),
        ),
    ])
    .unwrap();
    assert_eq!(step, s);
    let mut from_json = Tracked::default();
    from_json
        .apply(TrackedUpdate::from_json(update.to_json()).unwrap())
        .unwrap();
    assert_eq!(from_json, s);
}

#[test]
fn a_parts_setter_adds_too() {
    let update = TrackedUpdate::new()
        .tracker(TrackerUpdate::new().add_log("a"))
        .tracker(TrackerUpdate::new().add_log("b"));
    let mut s = Tracked::default();
    s.apply(update).unwrap();
    assert_eq!(s.tracker.log, ["a", "b"]);
}

#[test]
fn writes_one_update_cannot_hold_fail_when_applied_and_change_nothing() {
    let mut s = Tracked::default();
    s.apply(Tracked::lift(TrackerUpdate::new().status("idle").hits(1)))
        .unwrap();
    let before = s.clone();
    // Two writes of a plain field: the error a step of the two would give.
    let twice = Tracked::lift(TrackerUpdate::new().status("a"))
        .with(TrackerUpdate::new().status("b").add_log("x"));
    let err = s.apply(twice.clone()).unwrap_err();
    assert_eq!(
        (err.field(), err.kind()),
        ("status", &ErrorKind::ConcurrentWrites { writes: 2 })
    );
    assert_eq!(s, before);
    // It cannot be written as one JSON object either.
    assert!(serde_json::to_string(&twice).is_err());
    // Two writes through a `with` function: only the function could fold them.
    let err = s
        .apply(Tracked::lift(TrackerUpdate::new().hits(1)).with(TrackerUpdate::new().hits(2)))
        .unwrap_err();
    assert_eq!((err.field(), err.kind()), ("hits", &ErrorKind::Uncombined));
    // Two overwrites.
    let err = s
        .apply(
            Tracked::lift(TrackerUpdate::new().overwrite_log(vec!["x".into()]))
                .with(TrackerUpdate::new().overwrite_log(vec!["y".into()])),
        )
        .unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::ConcurrentOverwrites { overwrites: 2 }
    );
    assert_eq!(s, before);
}

#[test]
fn an_overwrite_combines_as_in_a_step() {
    let mut s = Tracked::default();
    s.apply(Tracked::lift(TrackerUpdate::new().log(["old".to_owned()])))
        .unwrap();
    // Writes before an overwrite are discarded, those after it ignored,
    // as LangGraph does in a step.
    s.apply(
        Tracked::lift(TrackerUpdate::new().add_log("before"))
            .with(TrackerUpdate::new().overwrite_log(vec!["new".into()]))
            .with(TrackerUpdate::new().add_log("after")),
    )
    .unwrap();
    assert_eq!(s.tracker.log, ["new"]);
}
