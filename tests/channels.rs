//! LangGraph's channel kinds as field attributes, run in graphs:
//! `ephemeral`, `any_value`, `topic`, `topic(accumulate)` and `untracked`
//! (never stored: default after a resume, absent from the stored JSON).
#![cfg(feature = "sqlite")]

mod support;

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer, Thread};
use agent_state::graph::{GraphError, Input, StateGraph, START};
use agent_state::{AgentState, ErrorKind, ReducerKind};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Channels {
    /// What each node saw, in order.
    #[reducer(append)]
    pub seen: Vec<String>,
    /// A one-shot message to the next step.
    #[reducer(ephemeral)]
    #[state(default = "none".to_owned())]
    pub handoff: String,
    /// The last write of a step.
    #[reducer(any_value)]
    pub latest: Option<u32>,
    /// One step's events.
    #[reducer(topic)]
    pub events: Vec<String>,
    /// Every step's events.
    #[reducer(topic(accumulate))]
    pub history: Vec<String>,
    /// A live handle: never stored.
    #[reducer(untracked)]
    pub client: Option<String>,
}

fn seen(what: String) -> ChannelsUpdate {
    ChannelsUpdate::new().seen(vec![what])
}

#[test]
fn ephemeral_is_seen_by_the_next_step_only() {
    let graph = StateGraph::<Channels>::new()
        .add_node("a", |_: &Channels| {
            ChannelsUpdate::new().handoff("from a".to_owned())
        })
        .add_node("b", |s: &Channels| seen(format!("b: {}", s.handoff)))
        .add_node("c", |s: &Channels| seen(format!("c: {}", s.handoff)))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(ChannelsUpdate::new()))).unwrap();
    assert_eq!(
        out.state.seen,
        ["b: from a", "c: none"],
        "back to its default"
    );
}

#[test]
fn ephemeral_takes_one_write_per_step_any_value_several() {
    let two = |update: fn(u32) -> ChannelsUpdate| {
        StateGraph::<Channels>::new()
            .add_node("x", move |_: &Channels| update(1))
            .add_node("y", move |_: &Channels| update(2))
            .add_node("after", |s: &Channels| seen(format!("{:?}", s.latest)))
            .add_edge(START, "x")
            .add_edge(START, "y")
            .add_edge("x", "after")
            .compile()
            .unwrap()
    };
    let graph = two(|n| ChannelsUpdate::new().handoff(n.to_string()));
    let err = block_on(graph.run(Input::Update(ChannelsUpdate::new()))).unwrap_err();
    match &err {
        GraphError::InvalidUpdate { error, .. } => {
            assert_eq!(error.field(), "handoff");
            assert_eq!(error.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
        }
        other => panic!("expected two writes refused, got {other}"),
    }
    let graph = two(|n| ChannelsUpdate::new().latest(n));
    let out = block_on(graph.run(Input::Update(ChannelsUpdate::new()))).unwrap();
    assert_eq!(out.state.seen, ["Some(2)"], "the last in node-name order");
    assert_eq!(
        out.state.latest, None,
        "cleared by the step that did not write it"
    );
}

#[test]
fn topic_collects_one_steps_writes_and_accumulate_keeps_them() {
    let emit = |name: &'static str| {
        move |_: &Channels| {
            ChannelsUpdate::new()
                .events(vec![format!("{name}1"), format!("{name}2")])
                .history(vec![name.to_owned()])
        }
    };
    let graph = StateGraph::<Channels>::new()
        .add_node("p", emit("p"))
        .add_node("q", emit("q"))
        .add_node("read", |s: &Channels| seen(s.events.join(",")))
        .add_node("again", |s: &Channels| {
            seen(format!("[{}]", s.events.join(",")))
        })
        .add_edge(START, "p")
        .add_edge(START, "q")
        .add_edge("p", "read")
        .add_edge("read", "again")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(ChannelsUpdate::new()))).unwrap();
    assert_eq!(out.state.seen, ["p1,p2,q1,q2", "[]"]);
    assert_eq!(out.state.history, ["p", "q"]);
}

fn untracked_graph() -> agent_state::graph::Graph<Channels> {
    StateGraph::<Channels>::new()
        .add_node("connect", |_: &Channels| {
            ChannelsUpdate::new().client("live handle".to_owned())
        })
        .add_node("use", |s: &Channels| seen(format!("{:?}", s.client)))
        .add_edge(START, "connect")
        .add_edge("connect", "use")
        .compile()
        .unwrap()
}

fn untracked_is_never_stored(a: &dyn Checkpointer, b: &dyn Checkpointer) {
    let graph = untracked_graph();
    let out = block_on(
        graph
            .run(Input::Update(ChannelsUpdate::new()))
            .on_thread(a, "u"),
    )
    .unwrap();
    assert_eq!(
        out.state.seen,
        ["Some(\"live handle\")"],
        "seen within the run"
    );
    assert_eq!(out.state.client.as_deref(), Some("live handle"));
    let reloaded = block_on(graph.get_state(b, "u")).unwrap();
    assert_eq!(reloaded.values.client, None, "default after a reload");
    assert_eq!(reloaded.values.seen, out.state.seen);
    let thread = block_on(Thread::<Channels, _>::open(b, "u")).unwrap();
    for record in block_on(thread.history(None, 10)).unwrap() {
        for write in record.writes {
            assert_eq!(write.update.client, None, "not in a stored write");
        }
    }
}

#[test]
fn untracked_is_never_stored_in_memory() {
    let saver = MemoryCheckpointer::new();
    untracked_is_never_stored(&saver, &saver);
}

#[test]
fn untracked_is_never_stored_on_sqlite() {
    let path = support::temp_db("untracked");
    let (a, b) = (
        SqliteCheckpointer::open(&path).unwrap(),
        SqliteCheckpointer::open(&path).unwrap(),
    );
    untracked_is_never_stored(&a, &b);
    // The file holds no trace of it, in writes or snapshots: a thread
    // created from a state holding it stores that state's snapshot.
    let start = Channels {
        client: Some("live handle".into()),
        ..Channels::default()
    };
    let created = block_on(Thread::create(&a, "u2", start)).unwrap();
    assert_eq!(created.state().client.as_deref(), Some("live handle"));
    let reopened = block_on(Thread::<Channels, _>::open(&b, "u2")).unwrap();
    assert_eq!(reopened.state().client, None);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let hits: i64 = conn
        .query_row(
            "SELECT count(*) FROM agent_state_checkpoints WHERE writes LIKE '%\"client\"%' OR snapshot LIKE '%\"client\"%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hits, 0);
}

#[test]
fn the_schema_names_the_channel_kinds() {
    let kinds: Vec<(&str, ReducerKind)> = Channels::schema()
        .fields
        .iter()
        .map(|f| (f.name, f.reducer))
        .collect();
    assert!(kinds.contains(&("handoff", ReducerKind::Ephemeral)));
    assert!(kinds.contains(&("latest", ReducerKind::AnyValue)));
    assert!(kinds.contains(&("events", ReducerKind::Topic { accumulate: false })));
    assert!(kinds.contains(&("history", ReducerKind::Topic { accumulate: true })));
    assert!(kinds.contains(&("client", ReducerKind::Untracked)));
    assert!(Channels::reference_table().contains("| topic(accumulate) |"));
}

#[test]
fn untracked_fields_stay_in_to_json_but_not_in_an_updates_json() {
    let state = Channels {
        client: Some("h".into()),
        ..Channels::default()
    };
    assert_eq!(state.to_json()["client"], "h");
    let update = ChannelsUpdate::new().client("h".to_owned()).latest(3);
    assert_eq!(
        agent_state::StateUpdate::to_json(&update),
        serde_json::json!({"latest": 3})
    );
}
