//! A store that fails or dies in the middle of a run, under each
//! durability mode, against a real SQLite file (and memory): the run's
//! error names the failure, nothing after it is reported stored, and a new
//! handle on the file loads the last step that was stored, whole, from
//! which a resume ends as a run that never failed.
#![cfg(feature = "sqlite")]

mod support;

use std::path::{Path, PathBuf};

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{
    block_on, CheckpointError, CheckpointId, Checkpointer, MemoryCheckpointer, Source, Thread,
};
use agent_state::graph::{Durability, Graph, GraphError, Input, StateGraph, END, START};
use support::faulty::Faulty;
use support::{history, records, temp_db, Debate, DebateUpdate};

/// Five counting steps: step `n` (1-based) logs `n - 1`.
fn counting() -> Graph<Debate> {
    support::counting(5)
}

fn topic(t: &str) -> Debate {
    Debate {
        topic: t.to_owned(),
        ..Debate::default()
    }
}

/// A new SQLite file `name` behind a [`Faulty`] wrapper, and its path
/// (for a new handle on the file, as another process would open it).
fn on_file(name: &str) -> (PathBuf, Faulty<SqliteCheckpointer>) {
    let path = temp_db(name);
    let saver = Faulty::new(SqliteCheckpointer::open(&path).unwrap());
    (path, saver)
}

/// The state of `thread` as a new handle on the file loads it.
fn reloaded(path: &Path, thread: &str) -> Debate {
    let fresh = SqliteCheckpointer::open(path).unwrap();
    block_on(Thread::<Debate, _>::open(&fresh, thread))
        .unwrap()
        .into_state()
}

/// What each step event said: (step, checkpoint it reported stored).
type Seen = Vec<(i64, Option<CheckpointId>)>;

/// Runs `input` on thread `t` of `saver` under `durability`, recording
/// what each step event reported stored.
fn run_seen<C: Checkpointer>(
    saver: &C,
    input: Input<Debate>,
    durability: Durability,
) -> (Result<Debate, GraphError>, Seen) {
    let graph = counting();
    let mut seen = Vec::new();
    let out = block_on(
        graph
            .run(input)
            .on_thread(saver, "t")
            .durability(durability)
            .on_step(|e| seen.push((e.step, e.checkpoint.map(|c| c.id)))),
    );
    (out.map(|o| o.state), seen)
}

/// The run failed on the injected store failure.
fn assert_store_failed(result: &Result<Debate, GraphError>) {
    match result {
        Err(GraphError::Checkpoint(CheckpointError::Backend { source, .. })) => {
            assert_eq!(source.to_string(), "injected failure");
        }
        Err(other) => panic!("expected the store's failure, got {other}"),
        Ok(_) => panic!("expected the store's failure, the run succeeded"),
    }
}

/// No event reported a checkpoint the store does not hold.
fn assert_reported_stored(seen: &Seen, path: &Path) {
    let fresh = SqliteCheckpointer::open(path).unwrap();
    let stored: Vec<CheckpointId> = records(&fresh, "t").iter().map(|r| r.meta.id).collect();
    for (step, id) in seen {
        if let Some(id) = id {
            assert!(stored.contains(id), "step {step} reported {id}, not stored");
        }
    }
}

/// A new handle on the file loads the state `log` says, then a resume
/// finishes as a run that never failed.
fn assert_reloads_then_resumes(path: &Path, log: &[u64], durability: Durability) {
    let fresh = SqliteCheckpointer::open(path).unwrap();
    let thread = block_on(Thread::<Debate, _>::open(&fresh, "t")).unwrap();
    assert_eq!(thread.state().log, log, "the state of the last stored step");
    assert_eq!(thread.state().round as usize, log.len());
    let (done, _) = run_seen(&fresh, Input::Resume, durability);
    let done = done.unwrap();
    assert_eq!(done.log, [0, 1, 2, 3, 4]);
    assert_eq!(done.topic, "t");
}

#[test]
fn sync_a_failed_append_fails_the_run_and_keeps_the_steps_before() {
    let (path, saver) = on_file("fail-sync");
    // Appends: -1, 0, step 1, step 2 (fails).
    saver.fail_append(4);
    let (out, seen) = run_seen(&saver, Input::State(topic("t")), Durability::Sync);
    assert_store_failed(&out);
    assert_eq!(
        history(&saver.inner, "t"),
        [(-1, Source::Input), (0, Source::Loop), (1, Source::Loop)]
    );
    assert_eq!(seen.len(), 3, "no event for the step not stored: {seen:?}");
    assert_reported_stored(&seen, &path);
    assert_reloads_then_resumes(&path, &[0], Durability::Sync);
}

#[test]
fn async_a_failed_store_surfaces_when_the_run_settles() {
    let (path, saver) = on_file("fail-async");
    let saver = saver.deferred();
    // Step 2's store fails while step 3 runs.
    saver.fail_append(4);
    let (out, seen) = run_seen(&saver, Input::State(topic("t")), Durability::Async);
    assert_store_failed(&out);
    assert_eq!(
        history(&saver.inner, "t"),
        [(-1, Source::Input), (0, Source::Loop), (1, Source::Loop)]
    );
    // A step is reported once stored (its checkpoint named in the
    // report): step 2's store failed, so the last step shown is step 1,
    // with the last checkpoint stored.
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    let head = block_on(fresh.head("t")).unwrap().unwrap().meta;
    assert_eq!(head.step, 1);
    assert_eq!(seen.last(), Some(&(1, Some(head.id))), "{seen:?}");
    assert_reported_stored(&seen, &path);
    assert_reloads_then_resumes(&path, &[0], Durability::Async);
}

#[test]
fn async_a_store_that_dies_keeps_what_it_stored() {
    let (path, saver) = on_file("crash-async");
    let saver = saver.deferred();
    // Dies once step 1 is stored: step 2's store and all after fail.
    saver.crash_after_append(3);
    let (out, seen) = run_seen(&saver, Input::State(topic("t")), Durability::Async);
    assert_store_failed(&out);
    assert_reported_stored(&seen, &path);
    assert_reloads_then_resumes(&path, &[0], Durability::Async);
}

#[test]
fn async_a_store_that_fails_at_once_fails_the_step() {
    // Memory stores inside the call: the failure is seen as the step is
    // stored, before the next step runs.
    let saver = Faulty::new(MemoryCheckpointer::new());
    saver.fail_append(4);
    let (out, seen) = run_seen(&saver, Input::State(topic("t")), Durability::Async);
    assert_store_failed(&out);
    assert!(seen.iter().all(|(s, _)| *s < 2), "{seen:?}");
    let thread = block_on(Thread::<Debate, _>::open(&saver.inner, "t")).unwrap();
    assert_eq!(thread.state().log, [0]);
    let (done, _) = run_seen(&saver.inner, Input::Resume, Durability::Async);
    assert_eq!(done.unwrap().log, [0, 1, 2, 3, 4]);
}

#[test]
fn exit_a_failed_store_keeps_the_state_before_the_run() {
    let (path, saver) = on_file("fail-exit");
    // The first state is stored as the run starts (-1, 0); the run's
    // one store at its end fails.
    saver.fail_append(3);
    let (out, seen) = run_seen(&saver, Input::State(topic("t")), Durability::Exit);
    assert_store_failed(&out);
    assert_eq!(
        history(&saver.inner, "t"),
        [(-1, Source::Input), (0, Source::Loop)]
    );
    assert_reported_stored(&seen, &path);
    assert_reloads_then_resumes(&path, &[], Durability::Exit);
}

#[test]
fn exit_an_update_to_a_new_thread_stores_all_or_nothing() {
    let (path, saver) = on_file("fail-exit-update");
    saver.fail_append(1);
    let input = || Input::Update(DebateUpdate::new().round(1));
    let (out, seen) = run_seen(&saver, input(), Durability::Exit);
    assert_store_failed(&out);
    assert!(seen.iter().all(|(_, id)| id.is_none()), "{seen:?}");
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    assert!(
        block_on(fresh.head("t")).unwrap().is_none(),
        "nothing stored"
    );

    // Once stored, a second run that fails to store leaves the first.
    saver.reset();
    let first = run_seen(&saver, input(), Durability::Exit).0.unwrap();
    assert_eq!(first.log, [1, 2, 3, 4]);
    saver.fail_append(1);
    let (out, _) = run_seen(&saver, input(), Durability::Exit);
    assert_store_failed(&out);
    let thread = block_on(Thread::<Debate, _>::open(&fresh, "t")).unwrap();
    assert_eq!(thread.state(), &first);
}

#[test]
fn exit_a_store_that_dies_mid_run_leaves_no_half() {
    let (path, saver) = on_file("crash-exit");
    // Dies once the first state is stored: the run's end store fails.
    saver.crash_after_append(2);
    let (out, _) = run_seen(&saver, Input::State(topic("t")), Durability::Exit);
    assert_store_failed(&out);
    assert_reloads_then_resumes(&path, &[], Durability::Exit);
}

#[test]
fn a_failed_pending_write_fails_the_pause_under_every_durability() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let (path, saver) = on_file("fail-pending");
        let saver = saver.deferred();
        saver.fail_put_pending(1);
        let graph = support::asking(2);
        let out = block_on(
            graph
                .run(Input::State(topic("t")))
                .on_thread(&saver, "t")
                .durability(durability),
        );
        assert_store_failed(&out.map(|o| o.state));
        // The state the asking step started from is stored; a resume asks
        // again and pauses, its interrupt kept this time.
        let fresh = SqliteCheckpointer::open(&path).unwrap();
        let thread = block_on(Thread::<Debate, _>::open(&fresh, "t")).unwrap();
        assert_eq!(thread.state().log, [0, 1], "{durability:?}");
        let paused = block_on(graph.run(Input::Resume).on_thread(&fresh, "t")).unwrap();
        assert_eq!(paused.next, ["ask"], "{durability:?}");
        assert_eq!(paused.interrupts.len(), 1, "{durability:?}");
    }
}

/// The thread's stored steps, oldest first, with their writes.
fn steps_of<C: Checkpointer>(
    saver: &C,
    thread: &str,
) -> Vec<(
    i64,
    Source,
    Vec<agent_state::checkpoint::NodeWrite<DebateUpdate>>,
)> {
    records(saver, thread)
        .into_iter()
        .map(|r| (r.meta.step, r.meta.source, r.writes))
        .collect()
}

/// Runs `input` on thread `t` of a store that dies once its `n`th append
/// from now has stored; then, on a new handle on the file, resumes it. The
/// thread ends with the steps and state of thread `whole`, where the same
/// input ran without a crash.
fn crash_then_resume(
    path: &Path,
    saver: &Faulty<SqliteCheckpointer>,
    input: Input<Debate>,
    n: usize,
    durability: Durability,
) {
    saver.crash_after_append(n);
    let (out, _) = run_seen(saver, input, durability);
    assert_store_failed(&out);
    saver.reset();
    let fresh = SqliteCheckpointer::open(path).unwrap();
    let (done, _) = run_seen(&fresh, Input::Resume, durability);
    let whole = Thread::<Debate, _>::open(&fresh, "whole");
    assert_eq!(&done.unwrap(), block_on(whole).unwrap().state());
    assert_eq!(steps_of(&fresh, "t"), steps_of(&fresh, "whole"));
}

/// Runs `input` on thread `whole` of `saver` without a crash.
fn whole_run(saver: &impl Checkpointer, input: Input<Debate>, durability: Durability) {
    block_on(
        counting()
            .run(input)
            .on_thread(saver, "whole")
            .durability(durability),
    )
    .unwrap();
}

#[test]
fn a_crash_after_the_input_checkpoint_keeps_the_input() {
    for durability in [Durability::Sync, Durability::Async] {
        let (path, saver) = on_file("crash-input");
        let saver = saver.deferred();
        let input = || Input::Update(DebateUpdate::new().round(2));
        whole_run(&saver, input(), durability);
        // Dies once the `input` checkpoint (-1) is stored.
        crash_then_resume(&path, &saver, input(), 1, durability);
        assert_eq!(reloaded(&path, "t").log, [2, 3, 4], "{durability:?}");
    }
}

#[test]
fn a_crash_after_a_first_states_input_checkpoint_keeps_the_state() {
    let (path, saver) = on_file("crash-input-state");
    whole_run(&saver, Input::State(topic("t")), Durability::Sync);
    crash_then_resume(&path, &saver, Input::State(topic("t")), 1, Durability::Sync);
    let state = reloaded(&path, "t");
    assert_eq!(state.topic, "t");
    assert_eq!(state.log, [0, 1, 2, 3, 4]);
}

#[test]
fn a_crash_after_a_later_runs_input_checkpoint_keeps_the_input() {
    let (path, saver) = on_file("crash-input-later");
    let graph = counting();
    // Both threads stopped midway (after step 1), then finished threads:
    // an input carries on where the run stopped, or starts a new run.
    for (stop, rounds) in [(Some(2), 2), (None, 1)] {
        for thread in ["t", "whole"] {
            block_on(saver.inner.delete_thread(thread)).unwrap();
            let run = graph
                .run(Input::State(topic("t")))
                .on_thread(&saver, thread);
            let run = match stop {
                Some(n) => run.stop_after(n),
                None => run,
            };
            block_on(run).unwrap();
        }
        let input = || Input::Update(DebateUpdate::new().round(rounds));
        whole_run(&saver, input(), Durability::Sync);
        crash_then_resume(&path, &saver, input(), 1, Durability::Sync);
    }
}

#[test]
fn a_crashed_input_shows_start_next_and_a_new_input_replaces_it() {
    let (path, saver) = on_file("crash-input-new");
    saver.crash_after_append(1);
    let graph = counting();
    let first = Input::Update(DebateUpdate::new().round(3));
    assert_store_failed(&run_seen(&saver, first, Durability::Sync).0);
    saver.reset();
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    let state = block_on(graph.get_state(&fresh, "t")).unwrap();
    assert_eq!(state.next, ["__start__"]);
    assert_eq!(state.values.round, 0, "the state before the input");
    // A new input instead of a resume replaces the one not applied, as
    // LangGraph's new input replaces its `__start__` channel's value.
    let out = run_seen(
        &fresh,
        Input::Update(DebateUpdate::new().round(4)),
        Durability::Sync,
    );
    assert_eq!(out.0.unwrap().log, [4]);
}

/// A run's input held by its `input` checkpoint, or a pending write,
/// damaged in the file: the load still gives the state (neither is applied
/// to it), and reading what runs next (`get_state`, a resume) fails naming
/// the thread, the checkpoint and what is wrong.
#[test]
fn a_damaged_held_input_or_pending_write_is_named() {
    use support::conformance::assert_names;
    let (path, saver) = on_file("damaged-held");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let graph = counting();
    // (case, statement; held cases damage the `input` checkpoint (1) left
    // by a crash, pending ones the head (3) of a run stopped after step 1)
    let cases = [
        (
            "held-type",
            r#"UPDATE agent_state_checkpoints SET writes = '{"input": [{"node": "__start__", "update": {"round": "x"}}]}' WHERE thread_id = '{t}' AND id = 1"#,
            "round",
        ),
        (
            "held-shape",
            r#"UPDATE agent_state_checkpoints SET writes = '{"input": 5}' WHERE thread_id = '{t}' AND id = 1"#,
            "not a JSON list",
        ),
        (
            "pending-text",
            "INSERT INTO agent_state_pending VALUES ('{t}', 3, 'count', 'interrupt', '{')",
            "pending write `interrupt` of task `count`",
        ),
        (
            "pending-key",
            "INSERT INTO agent_state_pending VALUES ('{t}', 3, 'count', 'bogus', '1')",
            "unknown key",
        ),
        (
            "pending-version",
            "INSERT INTO agent_state_pending VALUES ('{t}', 3, 'count', 'done@x', '[]')",
            "pending write `done@x` of task `count`: its state version does not read",
        ),
    ];
    for (case, statement, says) in cases {
        let t = format!("held-{case}");
        let held = case.starts_with("held");
        let run = graph
            .run(Input::Update(DebateUpdate::new().round(3)))
            .on_thread(&saver, t.as_str());
        if held {
            saver.crash_after_append(1);
            assert!(block_on(run).is_err(), "{case}");
            saver.reset();
        } else {
            block_on(run.stop_after(2)).unwrap();
        }
        conn.execute(&statement.replace("{t}", &t), []).unwrap();
        let fresh = SqliteCheckpointer::open(&path).unwrap();
        let thread = block_on(Thread::<Debate, _>::open(&fresh, t.as_str())).unwrap();
        let (round, head) = (thread.state().round, thread.head().unwrap().id);
        assert_eq!(round, if held { 0 } else { 4 }, "{case}");
        let errors = [
            block_on(graph.get_state(&fresh, &t)).err().unwrap(),
            block_on(graph.run(Input::Resume).on_thread(&fresh, t.as_str()))
                .err()
                .unwrap(),
        ];
        for err in errors {
            let GraphError::Checkpoint(err) = err else {
                panic!("{case}: expected a checkpoint error, got {err}");
            };
            assert_names(&err, &t, if held { 1 } else { 3 }, case);
            assert!(err.to_string().contains(says), "{case}: {err}");
        }
        // The thread is as it was: nothing half-applied.
        let again = block_on(Thread::<Debate, _>::open(&fresh, t.as_str())).unwrap();
        assert_eq!(
            (again.state().round, again.head().unwrap().id),
            (round, head)
        );
    }
}

/// A store that answers a load with a chain it never stored for the
/// thread (here: another thread's records) fails the load with
/// `CheckpointError::Malformed`, the kind named for a chain that is not
/// the stored one (`Corrupt` is a stored value that does not read as the
/// state), naming the thread, the checkpoint and what is wrong; a run on
/// the thread fails the same way, and the thread is left as it was.
#[test]
fn a_chain_the_store_never_stored_is_malformed() {
    let saver = Faulty::new(MemoryCheckpointer::new());
    let graph = counting();
    for t in ["a", "b"] {
        block_on(graph.run(Input::State(topic(t))).on_thread(&saver, t)).unwrap();
    }
    let before = records(&saver.inner, "a");
    saver.serve_chains_of("b");
    let check = |err: &CheckpointError| match err {
        CheckpointError::Malformed {
            thread_id, reason, ..
        } => {
            assert_eq!(thread_id, "a");
            assert!(reason.contains("from thread `b`"), "{err}");
            assert!(err.to_string().contains("thread `a`, checkpoint"), "{err}");
        }
        other => panic!("expected a malformed chain, got {other}"),
    };
    check(
        &block_on(Thread::<Debate, _>::open(&saver, "a"))
            .err()
            .unwrap(),
    );
    let err = block_on(
        graph
            .run(Input::Update(DebateUpdate::new()))
            .on_thread(&saver, "a"),
    )
    .unwrap_err();
    let GraphError::Checkpoint(err) = err else {
        panic!("expected a checkpoint error, got {err}");
    };
    check(&err);
    saver.reset();
    assert_eq!(records(&saver.inner, "a"), before, "nothing stored");
}

/// A first state held by a crashed run's `input` checkpoint, damaged in
/// the file (a field of the wrong type): reading what runs next
/// (`get_state`, a resume) fails naming the thread, the checkpoint and the
/// field, and the thread is left as it was.
#[test]
fn a_damaged_held_first_state_is_named() {
    use support::conformance::assert_names;
    let (path, saver) = on_file("damaged-held-state");
    saver.crash_after_append(1);
    assert_store_failed(&run_seen(&saver, Input::State(topic("t")), Durability::Sync).0);
    saver.reset();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let held: String = conn
        .query_row(
            "SELECT writes FROM agent_state_checkpoints WHERE thread_id = 't' AND id = 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(held.contains(r#""input_state""#), "{held}");
    conn.execute(
        r#"UPDATE agent_state_checkpoints SET writes = '{"input_state": {"round": "x", "topic": "t"}}' WHERE thread_id = 't' AND id = 1"#,
        [],
    )
    .unwrap();
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    let graph = counting();
    let errors = [
        block_on(graph.get_state(&fresh, "t")).err().unwrap(),
        block_on(graph.run(Input::Resume).on_thread(&fresh, "t"))
            .err()
            .unwrap(),
    ];
    for err in errors {
        let GraphError::Checkpoint(err) = err else {
            panic!("expected a checkpoint error, got {err}");
        };
        assert_eq!(assert_names(&err, "t", 1, "held-state"), "corrupt");
        assert!(err.to_string().contains("round"), "{err}");
    }
    let head = block_on(fresh.head("t")).unwrap().unwrap().meta;
    assert_eq!((head.id, head.source), (CheckpointId(1), Source::Input));
}

/// Time travel to a run's `input` checkpoint re-applies the input it holds
/// (LangGraph replays its `__start__` task): the fork ends as the run did.
/// An `input` checkpoint stored before inputs were held (`[]` writes)
/// resumes from `START` on the state before the input, as it did then.
#[test]
fn a_fork_of_an_input_checkpoint_applies_its_input_and_old_ones_still_resume() {
    let (path, saver) = on_file("fork-input");
    let graph = counting();
    let input = || Input::Update(DebateUpdate::new().round(2));
    let whole = block_on(graph.run(input()).on_thread(&saver, "t")).unwrap();
    let first = steps_of(&saver.inner, "t");
    assert_eq!(first[0].1, Source::Input);
    // A fork of it shows `__start__` next, as the input checkpoint does.
    block_on(graph.run(input()).on_thread(&saver, "f")).unwrap();
    block_on(Thread::<Debate, _>::fork(&saver, "f", CheckpointId(1))).unwrap();
    let state = block_on(graph.get_state(&saver, "f")).unwrap();
    assert_eq!(
        (state.next.as_slice(), state.values.round),
        (&["__start__".to_owned()][..], 0)
    );
    let forked = block_on(
        graph
            .run(Input::Resume)
            .on_thread(&saver, "t")
            .from_checkpoint(CheckpointId(1)),
    )
    .unwrap();
    assert_eq!(forked.state, whole.state);

    saver.crash_after_append(1);
    assert_store_failed(&run_seen(&saver, input(), Durability::Sync).0);
    saver.reset();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE agent_state_checkpoints SET writes = '[]' WHERE thread_id = 't' AND source = 'input' \
         AND id = (SELECT max(id) FROM agent_state_checkpoints WHERE thread_id = 't')",
        [],
    )
    .unwrap();
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    let (done, _) = run_seen(&fresh, Input::Resume, Durability::Sync);
    // The finished run's state (log 2, 3, 4), then a run from START on it
    // without the lost input: round 5 routes straight to the end after
    // one more count.
    assert_eq!(done.unwrap().log, [2, 3, 4, 5]);
}

/// A subgraph's child thread whose first state was stored only as its
/// `input` checkpoint (the process died right after): the parent's resume
/// resumes the child, which applies the state it holds, instead of running
/// from the default state.
#[test]
fn a_subgraph_crashed_after_its_input_checkpoint_starts_from_its_state() {
    let (path, saver) = on_file("crash-subgraph");
    let parent = StateGraph::<Debate>::new()
        .add_node(
            "sub",
            counting().mapped(
                |s: &Debate| Debate {
                    topic: s.topic.clone(),
                    round: s.round,
                    ..Debate::default()
                },
                |c: &Debate| DebateUpdate::new().round(c.round).log(c.log.clone()),
            ),
        )
        .add_edge(START, "sub")
        .add_edge("sub", END)
        .compile()
        .unwrap();
    let input = || {
        Input::State(Debate {
            round: 2,
            ..topic("t")
        })
    };
    let whole = block_on(parent.run(input()).on_thread(&saver, "whole")).unwrap();
    assert_eq!(whole.state.log, [2, 3, 4]);
    // Appends: the parent's -1 and 0, then the child's -1.
    saver.crash_after_append(3);
    assert!(block_on(parent.run(input()).on_thread(&saver, "t")).is_err());
    saver.reset();
    let fresh = SqliteCheckpointer::open(&path).unwrap();
    let child = block_on(fresh.head("t|sub/1")).unwrap().unwrap().meta;
    assert_eq!((child.step, child.source), (-1, Source::Input));
    let done = block_on(parent.run(Input::Resume).on_thread(&fresh, "t")).unwrap();
    assert_eq!(done.state, whole.state);
    assert_eq!(steps_of(&fresh, "t"), steps_of(&fresh, "whole"));
}

/// A run paused with a finished task's writes kept (a fan-out of `count`
/// and `ask`), resumed by a program whose state is a version later (`round`
/// renamed `turn`, with a migration): the kept writes read through the
/// migration, as the checkpoint's own do, instead of failing to decode.
#[test]
fn kept_writes_of_a_paused_step_migrate_with_the_state() {
    use agent_state::graph::{BoxError, NodeContext, Resume};
    use support::conformance::{DebateV2, DebateV2Update};
    let path = temp_db("pending-migrate");
    let saver = SqliteCheckpointer::open(&path).unwrap();
    let v1 = StateGraph::<Debate>::new()
        .add_node("count", |s: &Debate| DebateUpdate::new().round(s.round + 7))
        .add_node(
            "ask",
            |_: &Debate, ctx: &NodeContext| -> Result<DebateUpdate, BoxError> {
                let answer: String = ctx.interrupt("go on?")?;
                Ok(DebateUpdate::new().status(answer))
            },
        )
        .add_edge(START, "count")
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let paused = block_on(v1.run(Input::State(topic("t"))).on_thread(&saver, "t")).unwrap();
    assert_eq!(paused.interrupts.len(), 1);

    let v2 = StateGraph::<DebateV2>::new()
        .add_node("count", |_: &DebateV2| -> DebateV2Update {
            panic!("count finished before the pause: its kept writes apply")
        })
        .add_node(
            "ask",
            |_: &DebateV2, ctx: &NodeContext| -> Result<DebateV2Update, BoxError> {
                let answer: String = ctx.interrupt("go on?")?;
                Ok(DebateV2Update::new().status(answer))
            },
        )
        .add_edge(START, "count")
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let resume = Input::ResumeWith(Resume::value("yes".to_owned()));
    let done = block_on(v2.run(resume).on_thread(&saver, "t")).unwrap();
    assert_eq!((done.state.turn, done.state.status.as_str()), (7, "yes"));
}
