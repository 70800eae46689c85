//! The PostgreSQL checkpointer against a real server (see `support/pg.rs`):
//! the conformance scenarios, writers racing from several connections, and
//! the stored JSON read back with SQL.
#![cfg(feature = "postgres")]

mod support;

use agent_state::ai;
use agent_state::checkpoint::postgres::PostgresCheckpointer;
use agent_state::checkpoint::{SnapshotPolicy, Source, Thread};
use support::{conformance, pg, props, Debate, DebateUpdate};

async fn connect() -> PostgresCheckpointer {
    PostgresCheckpointer::connect(pg::url()).await.unwrap()
}

/// A schema of its own, made afresh, so a test that alters tables leaves
/// the others' as they are: the URL whose connections use it.
async fn own_schema(admin: &PostgresCheckpointer, schema: &str) -> String {
    admin
        .client()
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .unwrap();
    format!("{} options='-c search_path={schema}'", pg::url())
}

/// Drops a schema of [`own_schema`].
async fn drop_schema(admin: &PostgresCheckpointer, schema: &str) {
    admin
        .client()
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
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
    pending_writes_per_checkpoint,
    truncate_after_rolls_back,
    unstorable_values_are_refused,
    depth_limit_round_trips,
    marker_shaped_writes_round_trip,
    broken_links_fail_loudly,
    keep_last_bounds_a_thread,
    drop_before_keeps_every_kept_record_loading,
    collect_pending_keeps_what_resumes,
    delete_children_takes_the_subgraph_threads,
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
            conformance::add_with_retries(&saver, "pg-shared", w, per_worker).await
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
    conformance::assert_every_addition_once(&state, workers, per_worker, conflicts);
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

/// A load reads the records of its chain, one primary-key lookup each,
/// whatever the planner's statistics say. Fresh tables (a schema of their
/// own, never analyzed) and a statement planned while the thread was small
/// once gave a plan that scanned the whole thread at every step of the walk:
/// 2 million rows read, 1.4 s, to load a 3,000-step thread.
#[tokio::test]
async fn a_load_reads_only_its_chain() {
    let schema = "chain_plan_test";
    let admin = connect().await;
    let url = own_schema(&admin, schema).await;
    let saver = PostgresCheckpointer::connect(&url)
        .await
        .unwrap()
        .with_snapshot_policy(SnapshotPolicy::never());
    let steps = 600;
    let mut thread = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    for i in 0..steps {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(i))])
            .await
            .unwrap();
        if i < 10 {
            // Loads while the thread is small: the statement gets planned
            // (and after five runs a generic plan cached) on tiny statistics.
            Thread::<Debate, _>::open(&saver, "t").await.unwrap();
        }
    }
    // On the checkpointer's own connection, so the load runs inside this
    // transaction and its reads show in the transaction's statistics.
    let client = saver.client();
    client.batch_execute("BEGIN").await.unwrap();
    let loaded = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    let read: i64 = client
        .query_one(
            "SELECT seq_tup_read + idx_tup_fetch FROM pg_stat_xact_user_tables
             WHERE schemaname = $1 AND relname = 'agent_state_checkpoints'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0);
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(loaded.state().log, (0..steps).collect::<Vec<_>>());
    // The chain is every record (no snapshots): `steps` rows, plus the head.
    let records = i64::try_from(steps).unwrap();
    assert!(
        read <= 2 * records + 10,
        "loading a chain of {records} records read {read} rows"
    );
    drop_schema(&admin, schema).await;
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

/// The round-trip property (`support/props.rs`) on PostgreSQL, reloading
/// through a second connection: `jsonb` keeps every float a float and every
/// string as it was, and a string holding U+0000 (which `jsonb` cannot
/// hold) is refused, naming the field, with nothing stored.
#[test]
fn whatever_postgres_accepts_reloads_equal() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (a, b) = runtime.block_on(async { (connect().await, connect().await) });
    let outcomes = props::Outcomes::default();
    let n = std::cell::Cell::new(0);
    props::run(64, |case| {
        n.set(n.get() + 1);
        runtime.block_on(props::play(
            &a,
            &b,
            &format!("pg-props-{}", n.get()),
            case,
            &outcomes,
        ))
    });
    eprintln!("{outcomes:?}");
    assert!(
        outcomes.stored.get() > 15 && outcomes.refused.get() > 15,
        "{outcomes:?}"
    );
}

/// Rows damaged with plain SQL (`support/conformance.rs`): loops, gaps,
/// rows moved to another thread, values out of range. Every load fails
/// naming the thread, the checkpoint and the break, and returns (the walk
/// on the server only goes to older ids, so it cannot spin there either).
#[tokio::test]
async fn damaged_postgres_rows_fail_loudly() {
    let (saver, admin) = (connect().await, connect().await);
    let sql = |statement: String| -> agent_state::checkpoint::BoxFuture<'_, ()> {
        let client = admin.client();
        Box::pin(async move { client.batch_execute(&statement).await.unwrap() })
    };
    let run = conformance::damaged_rows_fail_loudly(&saver, "pg", &sql);
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("every load returned")
        .unwrap();

    // A thread whose head record is gone is not a new, empty thread.
    let mut thread = Thread::<Debate, _>::open(&saver, "pg-headless")
        .await
        .unwrap();
    for n in 0..2 {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await
            .unwrap();
    }
    sql("DELETE FROM agent_state_checkpoints WHERE thread_id = 'pg-headless' AND id = 2".into())
        .await;
    let err = Thread::<Debate, _>::open(&saver, "pg-headless")
        .await
        .err()
        .unwrap();
    conformance::assert_malformed(
        &err,
        "pg-headless",
        2,
        "head checkpoint is missing",
        "headless",
    );

    // Its head moved back to the row before, with the newest row deleted
    // or not: the id given out after it says so.
    for (case, delete) in [("moved-back", false), ("cut-back", true)] {
        let id = format!("pg-{case}");
        let mut thread = Thread::<Debate, _>::open(&saver, &id).await.unwrap();
        for n in 0..3 {
            thread
                .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
                .await
                .unwrap();
        }
        if delete {
            sql(format!(
                "DELETE FROM agent_state_checkpoints WHERE thread_id = '{id}' AND id = 3"
            ))
            .await;
        }
        sql(format!(
            "UPDATE agent_state_threads SET head = 2 WHERE thread_id = '{id}'"
        ))
        .await;
        let err = Thread::<Debate, _>::open(&saver, &id).await.err().unwrap();
        conformance::assert_malformed(&err, &id, 2, "checkpoint 3 was stored after it", case);
    }
}

/// Values damaged with plain SQL (`support/conformance.rs`): writes or a
/// snapshot of the wrong shape, a field of the wrong type, a version newer
/// than the program's (`jsonb` holds only JSON). Every load fails naming
/// the thread, the checkpoint and what is wrong.
#[tokio::test]
async fn damaged_postgres_values_fail_loudly() {
    let (saver, admin) = (connect().await, connect().await);
    let sql = |statement: String| -> agent_state::checkpoint::BoxFuture<'_, ()> {
        let client = admin.client();
        Box::pin(async move { client.batch_execute(&statement).await.unwrap() })
    };
    let run = conformance::damaged_values_fail_loudly(&saver, "pg", &sql, false);
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("every load returned")
        .unwrap();
}

/// A column whose type was changed under the checkpointer fails the load
/// naming the thread, the checkpoint and the column (in a schema of its
/// own, so the other tests' tables stay as they are).
#[tokio::test]
async fn postgres_columns_of_the_wrong_type_are_named() {
    let schema = "wrong_types_test";
    let admin = connect().await;
    let url = own_schema(&admin, schema).await;
    let saver = PostgresCheckpointer::connect(&url).await.unwrap();
    let mut thread = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    for n in 0..3 {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await
            .unwrap();
    }
    admin
        .client()
        .batch_execute(&format!(
            "ALTER TABLE {schema}.agent_state_checkpoints ALTER COLUMN step TYPE text;
             UPDATE {schema}.agent_state_checkpoints SET step = 'abc' WHERE id = 2"
        ))
        .await
        .unwrap();
    // A new instance prepares its statements against the altered table.
    let saver = PostgresCheckpointer::connect(&url).await.unwrap();
    let err = Thread::<Debate, _>::open_at(&saver, "t", agent_state::checkpoint::CheckpointId(2))
        .await
        .err()
        .unwrap();
    // The first record of the chain is the first to fail.
    conformance::assert_malformed(&err, "t", 1, "column `step`", "step as text");
    assert!(err.to_string().contains("text"), "{err}");
    drop_schema(&admin, schema).await;
}

/// A PostgreSQL error says what the server said (its message, SQLSTATE
/// code and detail), not the driver's bare `db error`: a step refused by a
/// check constraint (in a schema of its own), a connection to a database
/// that does not exist. The source downcasts to `PostgresError`.
#[tokio::test]
async fn postgres_errors_carry_the_servers_message() {
    use agent_state::checkpoint::postgres::PostgresError;
    use agent_state::checkpoint::CheckpointError;

    let schema = "server_errors_test";
    let admin = connect().await;
    let url = own_schema(&admin, schema).await;
    let saver = PostgresCheckpointer::connect(&url).await.unwrap();
    admin
        .client()
        .batch_execute(&format!(
            "ALTER TABLE {schema}.agent_state_checkpoints ADD CONSTRAINT steps_below_zero CHECK (step < 0)"
        ))
        .await
        .unwrap();
    let mut thread = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    let step = || [("n", DebateUpdate::new().add_log(1))];
    thread.save_step(Source::Loop, step()).await.unwrap();
    let err = thread.save_step(Source::Loop, step()).await.unwrap_err();
    let text = err.to_string();
    for says in [
        "checkpoint storage failed during append",
        "ERROR: new row for relation \"agent_state_checkpoints\" violates check constraint \"steps_below_zero\"",
        "(SQLSTATE 23514)",
        "detail: Failing row contains",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
    let CheckpointError::Backend { source, .. } = &err else {
        panic!("expected a storage error, got {err}");
    };
    let pg = source.downcast_ref::<PostgresError>().unwrap();
    assert_eq!(pg.code(), Some("23514"));
    assert!(pg.message().unwrap().contains("steps_below_zero"));
    assert!(pg.detail().unwrap().starts_with("Failing row contains"));
    drop_schema(&admin, schema).await;

    let missing = format!("{} dbname=agent_state_no_such_db", pg::url());
    let err = PostgresCheckpointer::connect(&missing).await.err().unwrap();
    let text = err.to_string();
    assert!(
        text.contains("database \"agent_state_no_such_db\" does not exist")
            && text.contains("(SQLSTATE 3D000)"),
        "{text}"
    );
}

/// `jsonb` cannot hold U+0000: a step or a new thread holding it is
/// refused, naming the field, and nothing is stored (SQLite and memory
/// store it: `tests/checkpoint.rs`).
#[tokio::test]
async fn nul_characters_are_refused_naming_the_field() {
    use agent_state::checkpoint::CheckpointError;
    use support::everything::{Everything, EverythingUpdate};

    let saver = connect().await;
    let mut thread = Thread::<Everything, _>::open(&saver, "pg-nul")
        .await
        .unwrap();
    thread
        .save_step(Source::Loop, [("n", EverythingUpdate::new().letter('a'))])
        .await
        .unwrap();
    let before = thread.state().clone();
    for (field, update) in [
        ("text", EverythingUpdate::new().text("a\0b".to_owned())),
        ("notes", {
            let mut part = support::everything::NotesUpdate::new();
            part.notes = Some(agent_state::FieldWrite::Reduce(vec!["\0".to_owned()]));
            EverythingUpdate::new().part(part)
        }),
    ] {
        let err = thread
            .save_step(Source::Loop, [("n", update)])
            .await
            .unwrap_err();
        match &err {
            CheckpointError::Rejected(e) => {
                assert_eq!(e.field(), field, "{err}");
                assert!(e.to_string().contains("U+0000"), "{err}");
            }
            other => panic!("expected a refusal, got {other}"),
        }
        assert_eq!(thread.state(), &before);
    }
    // A backslash before "u0000" is text, not U+0000: stored as it is.
    thread
        .save_step(
            Source::Loop,
            [("n", EverythingUpdate::new().text("\\u0000".to_owned()))],
        )
        .await
        .unwrap();
    let loaded = Thread::<Everything, _>::open(&saver, "pg-nul")
        .await
        .unwrap();
    assert_eq!(loaded.state(), thread.state());
    assert_eq!(loaded.history(None, 10).await.unwrap().len(), 2);

    let initial = Everything {
        letter: 'a',
        origin: "\0".into(),
        ..Everything::default()
    };
    let err = Thread::create(&saver, "pg-nul-new", initial)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, CheckpointError::Rejected(e) if e.field() == "origin"),
        "{err}"
    );
    let head = agent_state::checkpoint::Checkpointer::head(&saver, "pg-nul-new").await;
    assert!(head.unwrap().is_none(), "nothing was stored");
}

/// A process that dies once a run's `input` checkpoint is stored (here: a
/// store that fails every call after it): another instance resumes the
/// thread, applies the input the checkpoint holds and ends as a run that
/// never crashed, checkpoint for checkpoint.
#[tokio::test]
async fn a_crash_after_the_input_checkpoint_keeps_the_input() {
    use agent_state::checkpoint::Checkpointer;
    use agent_state::graph::Input;
    use support::faulty::Faulty;

    let graph = support::counting(4);
    let input = || Input::Update(DebateUpdate::new().round(1));
    let saver = Faulty::new(connect().await);
    for id in ["pg-held", "pg-held-whole"] {
        saver.inner.delete_thread(id).await.unwrap();
    }
    graph
        .run(input())
        .on_thread(&saver, "pg-held-whole")
        .await
        .unwrap();
    saver.crash_after_append(1);
    assert!(graph
        .run(input())
        .on_thread(&saver, "pg-held")
        .await
        .is_err());

    let other = connect().await;
    let done = graph
        .run(Input::Resume)
        .on_thread(&other, "pg-held")
        .await
        .unwrap();
    assert_eq!(done.state.log, [1, 2, 3]);
    let steps = |thread: &'static str| {
        let other = &other;
        async move {
            let t = Thread::<Debate, _>::open(other, thread).await.unwrap();
            let history = t.history(None, 100).await.unwrap();
            history
                .into_iter()
                .map(|r| (r.meta.step, r.meta.source, r.writes))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(steps("pg-held").await, steps("pg-held-whole").await);
}

/// A run's input holding U+0000 is refused when its `input` checkpoint,
/// which holds the input, is stored: naming the field, storing nothing.
#[tokio::test]
async fn a_held_input_with_a_nul_is_refused_naming_the_field() {
    use agent_state::checkpoint::Checkpointer;
    use agent_state::graph::{GraphError, Input};

    let saver = connect().await;
    saver.delete_thread("pg-held-nul").await.unwrap();
    let input = Input::Update(DebateUpdate::new().status("a\0b".to_owned()));
    let err = support::counting(2)
        .run(input)
        .on_thread(&saver, "pg-held-nul")
        .await
        .unwrap_err();
    match &err {
        GraphError::InvalidUpdate { nodes, error, .. } => {
            assert_eq!(nodes, &["__start__"], "{err}");
            assert_eq!(error.field(), "status", "{err}");
            assert!(error.to_string().contains("U+0000"), "{err}");
        }
        other => panic!("expected a refusal, got {other}"),
    }
    assert!(saver.head("pg-held-nul").await.unwrap().is_none());
}

/// A database whose threads table predates truncation (no `retired`
/// column) gains the column when a checkpointer connects, keeps its
/// threads, and a truncation on it keeps its ids: in a schema of its own,
/// so the other tests' tables stay as they are.
#[tokio::test]
async fn an_older_threads_table_gains_the_retired_column() {
    use agent_state::checkpoint::Checkpointer;

    let admin = connect().await;
    admin
        .client()
        .batch_execute(
            "DROP SCHEMA IF EXISTS before_truncation CASCADE;
             CREATE SCHEMA before_truncation;
             CREATE TABLE before_truncation.agent_state_threads (
                 thread_id TEXT PRIMARY KEY, head BIGINT NOT NULL, last_id BIGINT NOT NULL
             );
             INSERT INTO before_truncation.agent_state_threads VALUES ('kept', 7, 7);",
        )
        .await
        .unwrap();
    let url = pg::url();
    let config = if url.contains("://") {
        let joint = if url.contains('?') { '&' } else { '?' };
        format!("{url}{joint}options=-csearch_path%3Dbefore_truncation")
    } else {
        format!("{url} options='-c search_path=before_truncation'")
    };
    let saver = PostgresCheckpointer::connect(&config).await.unwrap();
    // Connecting again finds the column there.
    drop(PostgresCheckpointer::connect(&config).await.unwrap());
    let (last, retired): (i64, i64) = {
        let row = admin
            .client()
            .query_one(
                "SELECT last_id, retired FROM before_truncation.agent_state_threads
                 WHERE thread_id = 'kept'",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((last, retired), (7, 0));
    let mut thread = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    for n in 0..3 {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await
            .unwrap();
    }
    let first = thread
        .history(None, 10)
        .await
        .unwrap()
        .last()
        .unwrap()
        .meta
        .id;
    assert_eq!(saver.truncate_after("t", Some(first)).await.unwrap(), 2);
    let mut thread = Thread::<Debate, _>::open(&saver, "t").await.unwrap();
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(9))])
        .await
        .unwrap();
    assert_eq!(thread.head().unwrap().id.0, 4, "ids 2 and 3 stay given out");
    assert_eq!(thread.state().log, [0, 9]);
    admin
        .client()
        .batch_execute("DROP SCHEMA before_truncation CASCADE")
        .await
        .unwrap();
}

/// A truncation is one statement: when its last delete fails (a trigger
/// refuses it, as a full disk would), the head, the records and the
/// pending writes are all as they were.
#[tokio::test]
async fn a_truncation_that_fails_midway_changes_nothing() {
    use agent_state::checkpoint::{CheckpointError, CheckpointId, Checkpointer, PendingWrite};

    let (saver, admin) = (connect().await, connect().await);
    let id = "pg-cut-fails";
    let mut thread = Thread::<Debate, _>::open(&saver, id).await.unwrap();
    for n in 0..3 {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await
            .unwrap();
    }
    let head = thread.head().unwrap().id;
    let write = PendingWrite {
        task: "n".into(),
        key: "done".into(),
        value: "[]".into(),
    };
    saver
        .put_pending(id, head, vec![write.clone()])
        .await
        .unwrap();
    admin
        .client()
        .batch_execute(&format!(
            "CREATE OR REPLACE FUNCTION refuse_cut() RETURNS trigger AS $$
             BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END;
             $$ LANGUAGE plpgsql;
             CREATE TRIGGER refuse_cut BEFORE DELETE ON agent_state_pending
             FOR EACH ROW WHEN (OLD.thread_id = '{id}') EXECUTE FUNCTION refuse_cut();"
        ))
        .await
        .unwrap();
    let err = saver.truncate_after(id, Some(CheckpointId(1))).await;
    admin
        .client()
        .batch_execute("DROP TRIGGER refuse_cut ON agent_state_pending")
        .await
        .unwrap();
    let err = err.unwrap_err();
    assert!(
        matches!(
            &err,
            CheckpointError::Backend {
                operation: "truncate",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("No space left"), "{err}");
    assert_eq!(saver.head(id).await.unwrap().unwrap().meta.id, head);
    assert_eq!(saver.list(id, None, 10).await.unwrap().len(), 3);
    assert_eq!(saver.pending(id, head).await.unwrap(), [write]);
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(9))])
        .await
        .unwrap();
    assert_eq!(thread.head().unwrap().id.0, head.0 + 1);
}
