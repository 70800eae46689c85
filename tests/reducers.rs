//! Every reducer through the derive, the step rules of `apply_all`,
//! `Overwrite`, and atomicity: each fallible path leaves the state exactly as
//! it was.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use agent_state::{
    ai, human, AgentState, ErrorKind, FieldWrite, Messages, RemoveMessage, StateInput, StateUpdate,
    UnionVec,
};
use serde_json::{json, Value};

/// A nested record merged field by field.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct UserContext {
    /// Who the user is.
    pub identity: Option<String>,
    /// What they do.
    pub work: Option<String>,
    /// Notes, appended.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// A checked score.
    #[reducer(with = bounded)]
    pub score: u8,
}

fn bounded(current: &u8, add: u8) -> Result<u8, String> {
    current
        .checked_add(add)
        .filter(|v| *v <= 100)
        .ok_or_else(|| format!("score would exceed 100 ({current} + {add})"))
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Everything {
    #[reducer(messages)]
    pub messages: Messages,
    pub round: u32,
    pub room: Option<String>,
    #[reducer(merge)]
    pub config: HashMap<String, String>,
    #[reducer(merge)]
    pub sorted: BTreeMap<String, i64>,
    #[reducer(merge)]
    pub extra: Value,
    #[reducer(merge)]
    pub user: UserContext,
    #[reducer(union)]
    pub plugins: UnionVec<String>,
    #[reducer(union)]
    pub tags: HashSet<String>,
    #[reducer(union)]
    pub levels: BTreeSet<u32>,
    #[reducer(append)]
    pub log: Vec<String>,
    #[reducer(append)]
    pub recent: VecDeque<u32>,
    #[reducer(immutable)]
    #[state(default = String::from("fixed"))]
    pub thread: String,
}

type Up = EverythingUpdate;

fn seeded() -> Everything {
    let mut s = Everything::default();
    s.apply(
        Up::new()
            .messages([human("hi").with_id("1"), ai("hello").with_id("2")])
            .config([
                ("did".to_owned(), "d1".to_owned()),
                ("wsId".to_owned(), "w1".to_owned()),
            ])
            .extra(json!({"a": 1}))
            .user(UserContextUpdate::new().identity("Ada").note("likes rust"))
            .plugins(["memory"])
            .log(["start"]),
    )
    .unwrap();
    s
}

/// Applies `update` expecting an error, and checks nothing changed.
fn rejected(state: &mut Everything, updates: Vec<Up>) -> agent_state::StateError {
    let before = state.clone();
    let err = state.apply_all(updates).unwrap_err();
    assert_eq!(*state, before, "state changed by a rejected step: {err}");
    err
}

#[test]
fn merge_keeps_unset_keys() {
    let mut s = seeded();
    s.apply(
        Up::new()
            .config([("wsId".to_owned(), "w2".to_owned())])
            .extra(json!({"b": 2})),
    )
    .unwrap();
    assert_eq!(s.config["did"], "d1");
    assert_eq!(s.config["wsId"], "w2");
    assert_eq!(s.extra, json!({"a": 1, "b": 2}));
}

#[test]
fn nested_states_merge_through_their_own_reducers() {
    let mut s = seeded();
    s.apply(
        Up::new().user(
            UserContextUpdate::new()
                .work("engineer")
                .note("uses vim")
                .score(10),
        ),
    )
    .unwrap();
    assert_eq!(s.user.identity.as_deref(), Some("Ada"));
    assert_eq!(s.user.work.as_deref(), Some("engineer"));
    assert_eq!(s.user.notes, ["likes rust", "uses vim"]);
    assert_eq!(s.user.score, 10);

    // Inside a merge, writes fold in order: the last plain write wins.
    s.apply_all([
        Up::new().user(UserContextUpdate::new().work("a")),
        Up::new().user(UserContextUpdate::new().work("b")),
    ])
    .unwrap();
    assert_eq!(s.user.work.as_deref(), Some("b"));
}

#[test]
fn nested_errors_carry_the_path_and_change_nothing() {
    let mut s = seeded();
    let err = rejected(
        &mut s,
        vec![
            Up::new().round(1).user(UserContextUpdate::new().score(60)),
            Up::new().user(UserContextUpdate::new().score(60)),
        ],
    );
    assert_eq!(err.field(), "user.score");
    assert_eq!(
        err.to_string(),
        "at key `user.score`: the reducer rejected the update: score would exceed 100 (60 + 60)"
    );
}

#[test]
fn union_adds_missing_and_never_removes() {
    let mut s = seeded();
    s.apply_all([
        Up::new()
            .plugins(["editor", "memory"])
            .tags(["a"])
            .levels([3, 1]),
        Up::new().plugin("slack").tags(["a", "b"]).level(2),
    ])
    .unwrap();
    assert_eq!(s.plugins, ["memory", "editor", "slack"]);
    assert_eq!(s.tags, HashSet::from(["a".to_owned(), "b".to_owned()]));
    assert_eq!(s.levels, BTreeSet::from([1, 2, 3]));
}

#[test]
fn append_extends_in_order() {
    let mut s = seeded();
    s.apply_all([
        Up::new().log(["a", "b"]).recent([1]),
        Up::new().add_log("a").recent([2, 3]),
    ])
    .unwrap();
    assert_eq!(s.log, ["start", "a", "b", "a"]);
    assert_eq!(s.recent, [1, 2, 3]);
}

#[test]
fn plain_fields_take_one_write_per_step() {
    let mut s = seeded();
    let err = rejected(
        &mut s,
        vec![
            Up::new().round(1).message(ai("from a")),
            Up::new().round(2).message(ai("from b")),
        ],
    );
    assert_eq!(err.field(), "round");
    assert_eq!(err.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
    assert!(
        err.to_string()
            .contains("can receive only one value per step"),
        "{err}"
    );
}

#[test]
fn reducer_fields_fold_a_step_in_order() {
    let mut s = seeded();
    s.apply_all([
        Up::new().message(ai("a").with_id("a")),
        Up::new().message(ai("b").with_id("b")).round(4),
    ])
    .unwrap();
    let ids: Vec<_> = s
        .messages
        .iter()
        .map(|m| m.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "a", "b"]);
    assert_eq!(s.round, 4);
}

#[test]
fn overwrite_bypasses_the_reducer() {
    let mut s = seeded();
    let summary: Messages = vec![ai("summary of the chat").with_id("s")].into();
    s.apply(
        Up::new()
            .overwrite_messages(summary.clone())
            .overwrite_plugins(vec![]),
    )
    .unwrap();
    assert_eq!(s.messages, summary);
    assert!(s.plugins.is_empty());
}

#[test]
fn overwrite_in_a_step_discards_the_other_writes_and_two_are_an_error() {
    let mut s = seeded();
    s.apply_all([
        Up::new().log(["before"]),
        Up::new().overwrite_log(vec!["only".to_owned()]),
        Up::new().log(["after"]),
    ])
    .unwrap();
    assert_eq!(s.log, ["only"]);

    let err = rejected(
        &mut s,
        vec![
            Up::new().overwrite_log(vec![]),
            Up::new().overwrite_log(vec!["x".to_owned()]),
        ],
    );
    assert_eq!(err.field(), "log");
    assert_eq!(
        err.kind(),
        &ErrorKind::ConcurrentOverwrites { overwrites: 2 }
    );
}

#[test]
fn overwrite_in_its_round_trip_json_form() {
    // What LangGraph's `Overwrite` becomes after a JSON round trip.
    let mut s = seeded();
    s.apply_json(json!({
        "messages": {"type": "__overwrite__", "value": [{"type": "ai", "content": "only", "id": "o"}]},
        "plugins": {"value": ["x"], "type": "__overwrite__"},
    }))
    .unwrap();
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].text(), "only");
    assert_eq!(s.plugins, ["x"]);
    // Read as the same write as the first form, in updates, inputs and a
    // nested state's merge.
    let round_trip = json!({"log": {"type": "__overwrite__", "value": ["a"]}});
    assert_eq!(
        Up::from_json(round_trip.clone()).unwrap(),
        Up::from_json(json!({"log": {"__overwrite__": ["a"]}})).unwrap()
    );
    assert!(<EverythingInput as StateInput>::from_json(round_trip).is_ok());
    s.apply_json(json!({"user": {"type": "__overwrite__", "value": {"identity": "Bo"}}}))
        .unwrap();
    assert_eq!(s.user.identity.as_deref(), Some("Bo"));
    assert!(
        s.user.notes.is_empty(),
        "an overwrite replaces the nested state whole"
    );
    // Inside a nested state's merge, a field's overwrite in either form.
    s.apply_json(json!({"user": {"notes": {"type": "__overwrite__", "value": ["n"]}}}))
        .unwrap();
    assert_eq!(s.user.notes, ["n"]);
    // A bad value inside still names the field; a `type` of another value
    // is a plain partial.
    let err = s
        .apply_json(json!({"log": {"type": "__overwrite__", "value": 3}}))
        .unwrap_err();
    assert_eq!(err.field(), "log");
    s.apply_json(json!({"config": {"type": "t", "value": "v"}}))
        .unwrap();
    assert_eq!(s.config["type"], "t");
}

#[test]
fn overwrite_in_json() {
    let mut s = seeded();
    s.apply_json(
        json!({"messages": {"__overwrite__": [{"type": "ai", "content": "only", "id": "o"}]}}),
    )
    .unwrap();
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].text(), "only");
    let update = Up::from_json(json!({"plugins": {"__overwrite__": ["x"]}})).unwrap();
    assert_eq!(
        update.plugins,
        Some(FieldWrite::Overwrite(UnionVec::from(["x".to_owned()])))
    );
    assert_eq!(
        update.to_json(),
        json!({"plugins": {"__overwrite__": ["x"]}})
    );
}

#[test]
fn messages_removal_of_missing_id_is_atomic() {
    let mut s = seeded();
    let err = rejected(
        &mut s,
        vec![
            Up::new()
                .round(9)
                .config([("k".to_owned(), "v".to_owned())])
                .log(["x"]),
            Up::new()
                .message(ai("new"))
                .message(RemoveMessage::new("missing")),
        ],
    );
    assert_eq!(err.field(), "messages");
    assert_eq!(
        err.kind(),
        &ErrorKind::MessageNotFound {
            id: "missing".into()
        }
    );
}

#[test]
fn json_merge_of_a_non_object_is_atomic() {
    let mut s = seeded();
    let err = rejected(&mut s, vec![Up::new().round(3).extra(json!([1, 2]))]);
    assert_eq!(err.field(), "extra");
    assert_eq!(err.kind(), &ErrorKind::NotAnObject { found: "an array" });
}

#[test]
fn option_fields_tell_no_change_from_none() {
    let mut s = seeded();
    s.apply(Up::new().room("r1")).unwrap();
    s.apply_json(json!({"round": 1})).unwrap();
    assert_eq!(s.room.as_deref(), Some("r1"), "absent key: unchanged");
    s.apply_json(json!({"room": null})).unwrap();
    assert_eq!(s.room, None, "null: set to None");
    assert_eq!(Up::new().clear_room().to_json(), json!({"room": null}));
    assert_eq!(
        Up::from_json(json!({"room": null})).unwrap(),
        Up::new().clear_room()
    );
}

#[test]
fn json_updates_of_every_shape() {
    let mut s = seeded();
    s.apply_json(json!({
        "messages": "a bare string",
        "config": {"did": "d2"},
        "user": {"work": "pilot", "notes": ["flies"]},
        "plugins": ["editor"],
        "levels": [7],
        "recent": [1]
    }))
    .unwrap();
    assert_eq!(s.messages[2].text(), "a bare string");
    assert_eq!(s.config["did"], "d2");
    assert_eq!(s.user.work.as_deref(), Some("pilot"));
    assert_eq!(s.user.notes, ["likes rust", "flies"]);
    assert_eq!(s.plugins, ["memory", "editor"]);
    s.apply_json(json!({"messages": [{"type": "remove", "id": "1"}, ["assistant", "pair"]]}))
        .unwrap();
    assert_eq!(s.messages[0].id.as_deref(), Some("2"));
    assert_eq!(s.messages.last().unwrap().text(), "pair");
    s.apply_json(json!({"messages": {"type": "remove", "id": "__remove_all__"}}))
        .unwrap();
    assert!(s.messages.is_empty());
}

/// A message as LangChain JS's `JSON.stringify` writes one: class `class`
/// of `langchain_core.messages`, its fields in `kwargs`.
fn js(class: &str, kwargs: Value) -> Value {
    json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", class], "kwargs": kwargs})
}

/// Messages as LangChain JS writes them with `JSON.stringify` (the lines
/// below are @langchain/core 1.4's output), and as Python's `dumpd` writes
/// them (kwargs with `type`, another namespace), read as those messages in
/// an update: every class, chunks as the message they make, a removal.
#[test]
fn langchain_serialised_messages_read_as_those_messages() {
    use agent_state::{Content, MessageType, ToolStatus};
    let mut s = seeded();
    s.apply_json(json!({"messages": [
        js("HumanMessage", json!({"content": "hi", "id": "h1", "name": "bob", "additional_kwargs": {}, "response_metadata": {}})),
        js("AIMessage", json!({"content": "", "id": "a1", "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1"}],
            "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            "response_metadata": {"model": "m"}, "additional_kwargs": {"foo": 1}, "invalid_tool_calls": []})),
        js("ToolMessage", json!({"content": "r", "tool_call_id": "c1", "status": "error", "artifact": {"k": 1},
            "additional_kwargs": {}, "response_metadata": {}})),
        js("SystemMessage", json!({"content": "sys", "id": "s1", "additional_kwargs": {}, "response_metadata": {}})),
        js("AIMessageChunk", json!({"content": "he", "id": "a2", "tool_call_chunks": [{"name": "f", "args": "{\"x\": 2}", "id": "c2", "index": 0}],
            "additional_kwargs": {}, "response_metadata": {}, "tool_calls": [{"name": "f", "args": {}, "id": "c2", "type": "tool_call"}], "invalid_tool_calls": []})),
        js("HumanMessageChunk", json!({"content": "x", "id": "h2", "additional_kwargs": {}, "response_metadata": {}})),
        js("SystemMessageChunk", json!({"content": "y", "id": "s2", "additional_kwargs": {}, "response_metadata": {}})),
        js("ToolMessageChunk", json!({"content": "z", "id": "t2", "tool_call_id": "c2", "additional_kwargs": {}, "response_metadata": {}})),
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "from python", "type": "human", "id": "p1"}},
    ]}))
    .unwrap();
    use MessageType::{Ai, Human, System, Tool};
    let kinds: Vec<MessageType> = s.messages[2..].iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [Human, Ai, Tool, System, Ai, Human, System, Tool, Human]
    );
    let m = |id: &str| {
        s.messages
            .iter()
            .find(|m| m.id.as_deref() == Some(id))
            .unwrap()
    };
    assert_eq!(
        (m("h1").text(), m("h1").name.as_deref()),
        ("hi".to_owned(), Some("bob"))
    );
    let a1 = m("a1");
    assert_eq!(
        (a1.tool_calls[0].name.as_str(), &a1.tool_calls[0].args["x"]),
        ("f", &json!(1))
    );
    assert_eq!(
        a1.usage_metadata,
        Some(json!({"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}))
    );
    assert_eq!(
        (
            a1.response_metadata["model"].clone(),
            a1.additional_kwargs["foo"].clone()
        ),
        (json!("m"), json!(1))
    );
    let tool = &s.messages[4];
    assert_eq!(
        (
            tool.tool_call_id.as_deref(),
            tool.status,
            tool.artifact.clone()
        ),
        (Some("c1"), Some(ToolStatus::Error), Some(json!({"k": 1})))
    );
    assert_eq!(
        m("a2").tool_calls[0].args["x"],
        json!(2),
        "the chunk's pieces make its calls"
    );
    assert_eq!(m("t2").tool_call_id.as_deref(), Some("c2"));
    assert_eq!(m("p1").content, Content::Text("from python".into()));
}

/// A `RemoveMessage` as JS writes it removes; a chunk reads as a chunk;
/// a class that is no message's, or kwargs of another type, are refused
/// naming the field and the class, with nothing applied.
#[test]
fn langchain_removals_chunks_and_bad_classes() {
    use agent_state::{MessageChunk, MessageType};
    let mut s = seeded();
    s.apply_json(json!({"messages": [js("AIMessage", json!({"content": "", "id": "a1"}))]}))
        .unwrap();
    // A removal, as JS writes a `RemoveMessage`.
    s.apply_json(json!({"messages": js("RemoveMessage", json!({"id": "a1", "content": [], "additional_kwargs": {}, "response_metadata": {}}))}))
        .unwrap();
    assert!(s.messages.iter().all(|m| m.id.as_deref() != Some("a1")));

    // A chunk read as a chunk, and what is not a message's class.
    let chunk = MessageChunk::from_json(js(
        "AIMessageChunk",
        json!({"content": "he", "id": "a3", "additional_kwargs": {}, "response_metadata": {}}),
    ))
    .unwrap();
    assert_eq!(
        (chunk.kind, chunk.id.as_deref()),
        (MessageType::Ai, Some("a3"))
    );
    let before = s.clone();
    let err = s
        .apply_json(
            json!({"messages": [js("ChatMessage", json!({"content": "x", "role": "wizard"}))]}),
        )
        .unwrap_err();
    assert_eq!(err.field(), "messages");
    assert!(
        err.to_string()
            .contains("unknown LangChain message class `ChatMessage`"),
        "{err}"
    );
    let err = s
        .apply_json(
            json!({"messages": [js("HumanMessage", json!({"content": "x", "type": "ai"}))]}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the class `HumanMessage` is a `human` message, but its kwargs say `ai`"),
        "{err}"
    );
    assert_eq!(s, before, "nothing applied");
}

#[test]
fn json_errors_name_the_field_and_change_nothing() {
    let mut s = seeded();
    let before = s.clone();
    let cases = [
        (json!({"round": -1}), "round"),
        (
            json!({"messages": [{"role": "wizard", "content": "x"}]}),
            "messages",
        ),
        (json!({"user": {"nickname": "x"}}), "user"),
        // The item at fault inside the list, not just the list.
        (json!({"levels": ["x"]}), "levels[0]"),
        (json!({"thread": "other"}), "thread"),
        (json!({"nope": 1}), "nope"),
    ];
    for (input, field) in cases {
        let err = s.apply_json(input.clone()).unwrap_err();
        assert_eq!(err.field(), field, "{input} → {err}");
        assert_eq!(s, before);
    }
    let err = s
        .apply_json(json!({"messages": [{"role": "wizard", "content": "x"}]}))
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown message type `wizard`"),
        "{err}"
    );
    let err = s
        .apply_json(json!({"user": {"nickname": "x"}}))
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown field `nickname`"),
        "{err}"
    );
    let err = s.apply_json(json!([1])).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::NotAnObject { found: "an array" });
}

#[test]
fn state_json_round_trips_and_rejects_bad_input() {
    let s = seeded();
    let back = Everything::from_json(s.to_json()).unwrap();
    assert_eq!(back, s);
    let text = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<Everything>(&text).unwrap(), s);

    let err = Everything::from_json(json!({"round": 1, "rnd": 2})).unwrap_err();
    assert_eq!(err.field(), "rnd");
    let err = Everything::from_json(json!({"messages": [{"type": "human", "content": "a", "id": "x"},
                                                         {"type": "human", "content": "b", "id": "x"}]}))
    .unwrap_err();
    assert!(
        err.to_string().contains("two messages share the id `x`"),
        "{err}"
    );
    // Missing fields take their defaults; immutable fields can be set when
    // the state is built.
    let built = Everything::from_json(json!({"thread": "t-9"})).unwrap();
    assert_eq!(built.thread, "t-9");
    assert_eq!(Everything::default().thread, "fixed");
}

#[test]
fn staging_separately_allows_persisting_between_stage_and_commit() {
    let mut s = seeded();
    let staged = s
        .stage(vec![Up::new().round(5)], agent_state::StepRule::Superstep)
        .unwrap();
    assert_eq!(s.round, 0, "staging changes nothing");
    s.commit(staged);
    assert_eq!(s.round, 5);
}

fn add_tokens(current: &u64, spent: i64) -> Result<u64, String> {
    current
        .checked_add_signed(spent)
        .ok_or_else(|| format!("cannot spend {spent} from {current}"))
}

/// A `with` reducer whose input type is not the field's.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Budget {
    #[reducer(with = add_tokens, update = i64)]
    pub tokens: u64,
}

#[test]
fn with_reducers_take_the_update_type_they_name() {
    let mut b = Budget::default();
    b.apply_all([
        BudgetUpdate::new().tokens(10),
        BudgetUpdate::new().tokens(-4),
    ])
    .unwrap();
    assert_eq!(b.tokens, 6);
    let err = b.apply_json(json!({"tokens": -7})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "at key `tokens`: the reducer rejected the update: cannot spend -7 from 6"
    );
    assert_eq!(b.tokens, 6);
    b.apply(BudgetUpdate::new().overwrite_tokens(1u64)).unwrap();
    assert_eq!(b.tokens, 1);
}

#[test]
fn nested_overwrites_fold_in_order() {
    let mut s = seeded();
    s.apply_all([
        Up::new().user(UserContextUpdate::new().overwrite_notes(vec!["a".to_owned()])),
        Up::new().user(UserContextUpdate::new().note("b")),
    ])
    .unwrap();
    assert_eq!(s.user.notes, ["a", "b"]);
}

/// A plugin: an item type of one's own, `Hash + Eq + Ord`.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    agent_state::serde::Serialize,
    agent_state::serde::Deserialize,
)]
#[serde(crate = "agent_state::serde")]
pub struct Plugin {
    name: String,
}

fn plugin(name: &str) -> Plugin {
    Plugin { name: name.into() }
}

/// Every set the union reducer serves, of an item type of one's own.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Loaded {
    #[reducer(union)]
    pub ordered: UnionVec<Plugin>,
    #[reducer(union)]
    pub hashed: HashSet<Plugin>,
    #[reducer(union)]
    pub sorted: BTreeSet<Plugin>,
    #[cfg(feature = "indexmap")]
    #[reducer(union)]
    pub indexed: agent_state::indexmap::IndexSet<Plugin>,
}

#[test]
fn union_of_own_items_adds_each_once_in_every_set() {
    let mut s = Loaded::default();
    let first = LoadedUpdate::new()
        .ordered([plugin("b"), plugin("a")])
        .hashed([plugin("b")])
        .sorted([plugin("b"), plugin("a")]);
    let second = LoadedUpdate::new()
        .ordered([plugin("a"), plugin("c")])
        .hashed([plugin("b"), plugin("c")])
        .sorted([plugin("c")]);
    #[cfg(feature = "indexmap")]
    let (first, second) = (
        first.indexed([plugin("b"), plugin("a")]),
        second.indexed([plugin("a"), plugin("c")]),
    );
    s.apply_all([first, second]).unwrap();
    assert_eq!(s.ordered, [plugin("b"), plugin("a"), plugin("c")]);
    assert_eq!(s.hashed.len(), 2);
    assert_eq!(s.sorted.first(), Some(&plugin("a")));
    #[cfg(feature = "indexmap")]
    assert_eq!(
        s.indexed.iter().cloned().collect::<Vec<_>>(),
        [plugin("b"), plugin("a"), plugin("c")]
    );
    // JSON reads back as the same state; a repeat in a write adds nothing.
    let back = Loaded::from_json(s.to_json()).unwrap();
    assert_eq!(back, s);
    s.apply_json(json!({"ordered": [{"name": "c"}, {"name": "c"}, {"name": "d"}]}))
        .unwrap();
    assert_eq!(s.ordered.len(), 4);
}
