//! Under `Durability::Async` a step's store runs while the next step does.
//! PostgreSQL stores later than SQLite (which is done inside the call), so
//! a checkpoint reported before its store ended named the step before it,
//! after that step's tasks, and the last one never: the `checkpoints` and
//! `debug` streams must show each step's checkpoint, in order, whatever
//! the backend.
#![cfg(all(feature = "postgres", feature = "sqlite"))]

mod support;

use agent_state::checkpoint::postgres::PostgresCheckpointer;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::Checkpointer;
use agent_state::futures::StreamExt;
use agent_state::graph::{Durability, Input, StateGraph, StreamEvent, StreamMode, START};
use agent_state::AgentState;
use support::pg;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Pair {
    topic: String,
    #[reducer(append)]
    log: Vec<String>,
}

/// The run's debug events as (kind, step), a checkpoint's step its own.
async fn debug_steps(saver: &dyn Checkpointer, thread: &str) -> Vec<(&'static str, i64)> {
    let graph = StateGraph::<Pair>::new()
        .add_node("first", |s: &Pair| {
            PairUpdate::new().log(vec![s.topic.clone()])
        })
        .add_node("second", |_: &Pair| {
            PairUpdate::new().log(vec!["2".to_owned()])
        })
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
        .unwrap();
    let run = graph
        .run(Input::Update(PairUpdate::new().topic("x")))
        .on_thread(saver, thread)
        .durability(Durability::Async)
        .stream(StreamMode::Debug);
    let events: Vec<_> = run.map(|e| e.unwrap()).collect().await;
    events
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::Debug { step, event, .. } => match *event {
                StreamEvent::Checkpoint { checkpoint, .. } => Some(("checkpoint", checkpoint.step)),
                StreamEvent::TaskStart { .. } => Some(("task", step)),
                StreamEvent::TaskEnd { .. } => Some(("result", step)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_checkpoints_are_reported_in_order_on_postgres_as_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("async-cp-{}", std::process::id()));
    let sqlite = SqliteCheckpointer::open(dir.join("t.db")).unwrap();
    let postgres = PostgresCheckpointer::connect(pg::url()).await.unwrap();
    let expected = vec![
        ("checkpoint", -1),
        ("checkpoint", 0),
        ("task", 1),
        ("result", 1),
        ("checkpoint", 1),
        ("task", 2),
        ("result", 2),
        ("checkpoint", 2),
    ];
    assert_eq!(debug_steps(&sqlite, "async-cp").await, expected);
    let thread = format!("async-cp-{}", std::process::id());
    assert_eq!(debug_steps(&postgres, &thread).await, expected);
    let _ = std::fs::remove_dir_all(dir);
}
