//! The PostgreSQL checkpointer against a real server (see `support/pg.rs`):
//! the conformance scenarios, writers racing from several connections, and
//! the stored JSON read back with SQL.
#![cfg(feature = "postgres")]

mod support;

use agent_state::ai;
use agent_state::checkpoint::postgres::PostgresCheckpointer;
use agent_state::checkpoint::{Source, Thread};
use support::{conformance, pg, Debate, DebateUpdate};

async fn connect() -> PostgresCheckpointer {
    PostgresCheckpointer::connect(pg::url()).await.unwrap()
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            // Two connections: two instances of a service.
            let (a, b) = (connect().await, connect().await);
            conformance::$name(&a, &b, stringify!($name)).await.unwrap();
        }
    )*};
}

scenarios!(
    round_trip_and_history,
    threads_are_isolated,
    concurrent_writers_conflict,
    rejected_step_stores_nothing,
    reloads_never_reapply,
    snapshots_bound_the_replay,
    fork_from_an_older_checkpoint,
    message_ids_survive_reload,
    delete_thread,
    unreadable_checkpoints_fail_loudly,
    versions_migrate,
);

/// Four instances (connections) add to one thread at once, retrying on
/// conflict: every addition lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_instances_lose_nothing() {
    let workers = 4u64;
    let per_worker = 20u64;
    let mut tasks = Vec::new();
    for w in 0..workers {
        tasks.push(tokio::spawn(async move {
            let saver = connect().await;
            let mut thread = Thread::<Debate, _>::open(&saver, "pg-shared")
                .await
                .unwrap();
            let mut conflicts = 0u64;
            for i in 0..per_worker {
                loop {
                    let update = DebateUpdate::new().add_log(w * 1000 + i);
                    match thread
                        .save_step(Source::Loop, [(format!("w{w}"), update)])
                        .await
                    {
                        Ok(_) => break,
                        Err(e) if e.is_conflict() => {
                            conflicts += 1;
                            thread.reload().await.unwrap();
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let saver = connect().await;
    let state = Thread::<Debate, _>::open(&saver, "pg-shared")
        .await
        .unwrap()
        .into_state();
    let mut log = state.log.clone();
    log.sort_unstable();
    let mut expected: Vec<u64> = (0..workers)
        .flat_map(|w| (0..per_worker).map(move |i| w * 1000 + i))
        .collect();
    expected.sort_unstable();
    assert_eq!(log, expected, "{conflicts} conflicts were retried");
}

/// What `psql` shows: JSONB that SQL can reach into.
#[tokio::test]
async fn stored_writes_are_queryable_jsonb() {
    let saver = connect().await;
    let mut thread = Thread::<Debate, _>::open(&saver, "pg-json").await.unwrap();
    thread
        .save_step(
            Source::Loop,
            [("optimist", DebateUpdate::new().message(ai("yes")).round(1))],
        )
        .await
        .unwrap();
    let row = saver
        .client()
        .query_one(
            "SELECT source, writes->0->>'node', writes->0->'update'->>'round',
                    writes->0->'update'->'messages'->0->>'type', version
             FROM agent_state_checkpoints WHERE thread_id = 'pg-json'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "loop");
    assert_eq!(row.get::<_, String>(1), "optimist");
    assert_eq!(row.get::<_, String>(2), "1");
    assert_eq!(row.get::<_, String>(3), "ai");
    assert_eq!(row.get::<_, i64>(4), 1);
}

/// Outside a Tokio runtime, connecting says what is missing instead of
/// panicking.
#[test]
fn connect_outside_tokio_is_a_clear_error() {
    let err = agent_state::checkpoint::block_on(PostgresCheckpointer::connect(pg::url()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("Tokio runtime"), "{err}");
}
