//! What every checkpointer must do, written once and run against the
//! in-memory, SQLite and PostgreSQL backends.
//!
//! Each scenario gets two handles on the same storage (`a` and `b`: one
//! store twice in memory, two connections to the file or the server), and a
//! prefix for its thread ids so scenarios sharing a server stay apart.

use agent_state::checkpoint::{
    CheckpointError, CheckpointId, Checkpointer, PendingWrite, SnapshotPolicy, Source, Thread,
};
use agent_state::{
    ai, human, tool, AgentState, ErrorKind, FieldWrite, Message, MessageType, MigrationError,
    StateError, StateUpdate, Stored, MAX_FIELD_DEPTH,
};
use serde_json::{json, Value};

use super::everything::{Everything, EverythingUpdate, Mode, ProfileUpdate};
use super::{Debate, DebateUpdate};

type R = Result<(), CheckpointError>;

fn start(topic: &str) -> Debate {
    let mut state = Debate {
        topic: topic.into(),
        ..Debate::default()
    };
    state
        .apply(DebateUpdate::new().message(human(format!("Debate topic: {topic}"))))
        .unwrap();
    state
}

/// A new thread `id` (topic `case`) with `steps` plain steps after its
/// first state, snapshotted only there: ids `1..=steps + 1`, steps
/// `-1..=steps - 1`, the `n`th plain step (from 0) logging `n`.
async fn logged_thread<'c, C: Checkpointer>(
    a: &'c C,
    id: &str,
    case: &str,
    steps: u64,
) -> Result<Thread<'c, Debate, C>, CheckpointError> {
    let mut thread = Thread::create(a, id, start(case)).await?;
    thread.set_snapshot_policy(SnapshotPolicy::never());
    for n in 0..steps {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await?;
    }
    Ok(thread)
}

/// One debate round as three node steps: optimist, skeptic, moderator.
fn round_steps(round: u32, n: u64) -> [(&'static str, DebateUpdate); 3] {
    [
        (
            "optimist",
            DebateUpdate::new()
                .message(ai(format!("optimist {round}")))
                .add_log(n),
        ),
        (
            "skeptic",
            DebateUpdate::new()
                .message(ai(format!("skeptic {round}")))
                .round(round + 1)
                .add_log(n + 1),
        ),
        (
            "moderator",
            DebateUpdate::new()
                .message(ai(format!("moderator {round}")))
                .add_log(n + 2),
        ),
    ]
}

/// Saves `rounds` rounds, one node per step, and applies the same updates to
/// `reference`, which the stored thread must always equal.
async fn play<C: Checkpointer + ?Sized>(
    thread: &mut Thread<'_, Debate, C>,
    reference: &mut Debate,
    rounds: u32,
) -> R {
    for _ in 0..rounds {
        let round = thread.state().round;
        let n = thread.state().log.len() as u64;
        for (node, mut update) in round_steps(round, n) {
            // The reference sees the ids the store will keep.
            update.assign_message_ids();
            reference.apply(update.clone()).unwrap();
            thread.save_step(Source::Loop, [(node, update)]).await?;
        }
    }
    Ok(())
}

/// A new thread, saved steps, a reload from another handle, the history.
pub async fn round_trip_and_history<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-rt");
    let mut reference = start("Should AI be regulated?");
    let mut thread = Thread::create(a, &id, reference.clone()).await?;
    assert_eq!(thread.head().unwrap().step, -1);
    assert_eq!(thread.head().unwrap().source, Source::Input);
    play(&mut thread, &mut reference, 4).await?;
    assert_eq!(thread.state(), &reference);

    let loaded = Thread::<Debate, _>::open(b, &id).await?;
    assert_eq!(
        loaded.state(),
        &reference,
        "a reload equals the state that was saved"
    );
    assert_eq!(loaded.state().messages.len(), 13);
    assert_eq!(loaded.head(), thread.head());

    let history = loaded.history(None, 100).await?;
    assert_eq!(history.len(), 13, "the input and twelve node steps");
    let steps: Vec<i64> = history.iter().map(|r| r.meta.step).collect();
    assert_eq!(steps, (-1..=11).rev().collect::<Vec<_>>(), "newest first");
    for pair in history.windows(2) {
        assert_eq!(pair[0].meta.parent, Some(pair[1].meta.id));
        assert!(pair[0].meta.id > pair[1].meta.id);
    }
    assert_eq!(history[0].writes[0].node, "moderator");
    assert_eq!(
        history[0].writes[0].update.log,
        Some(FieldWrite::Reduce(vec![11]))
    );
    assert!(history.last().unwrap().writes.is_empty());

    // Pages: ids below the 5th newest, three at a time.
    let page = loaded.history(Some(history[4].meta.id), 3).await?;
    let ids: Vec<CheckpointId> = page.iter().map(|r| r.meta.id).collect();
    assert_eq!(
        ids,
        [history[5].meta.id, history[6].meta.id, history[7].meta.id]
    );
    Ok(())
}

/// Threads never see each other; a thread id is required.
pub async fn threads_are_isolated<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let (one, two) = (format!("{t}-one"), format!("{t}-two"));
    let mut x = Thread::create(a, &one, start("one")).await?;
    let mut y = Thread::create(b, &two, start("two")).await?;
    x.save_step(Source::Loop, [("n", DebateUpdate::new().round(5))])
        .await?;
    y.save_step(Source::Loop, [("n", DebateUpdate::new().round(9))])
        .await?;
    assert_eq!(Thread::<Debate, _>::open(b, &one).await?.state().round, 5);
    assert_eq!(Thread::<Debate, _>::open(a, &two).await?.state().round, 9);
    assert_eq!(
        Thread::<Debate, _>::open(a, &one).await?.state().topic,
        "one"
    );

    let fresh = Thread::<Debate, _>::open(a, format!("{t}-never")).await?;
    assert_eq!(fresh.state(), &Debate::default());
    assert!(fresh.head().is_none());

    let err = Thread::<Debate, _>::open(a, "").await.err().unwrap();
    assert!(matches!(err, CheckpointError::MissingThreadId), "{err}");
    assert!(a.head("").await.is_err());
    Ok(())
}

/// Two writers of one thread: one wins, the other gets a conflict, stores
/// nothing, and succeeds after a reload. No step is lost or doubled.
pub async fn concurrent_writers_conflict<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-race");
    Thread::create(a, &id, start("race")).await?;
    let mut first = Thread::<Debate, _>::open(a, &id).await?;
    let mut second = Thread::<Debate, _>::open(b, &id).await?;
    let head = first.head().unwrap().id;

    first
        .save_step(
            Source::Loop,
            [("first", DebateUpdate::new().add_log(1).message(ai("first")))],
        )
        .await?;
    let err = second
        .save_step(
            Source::Loop,
            [(
                "second",
                DebateUpdate::new().add_log(2).message(ai("second")),
            )],
        )
        .await
        .unwrap_err();
    match &err {
        CheckpointError::Conflict {
            thread_id,
            expected,
            found,
        } => {
            assert_eq!(thread_id, &id);
            assert_eq!(*expected, Some(head));
            assert_eq!(*found, first.head().map(|h| h.id));
        }
        other => panic!("expected a conflict, got {other}"),
    }
    assert!(err.to_string().contains("reload and retry"), "{err}");
    assert_eq!(
        second.state().log,
        Vec::<u64>::new(),
        "the loser's state is unchanged"
    );

    second.reload().await?;
    second
        .save_step(
            Source::Loop,
            [(
                "second",
                DebateUpdate::new().add_log(2).message(ai("second")),
            )],
        )
        .await?;
    let last = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(last.state().log, [1, 2]);
    assert_eq!(last.state().messages.len(), 3);

    // Two new threads of one id: the second creator loses.
    let id2 = format!("{t}-race-new");
    Thread::create(a, &id2, start("x")).await?;
    let err = Thread::create(b, &id2, start("y")).await.err().unwrap();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(Thread::<Debate, _>::open(b, &id2).await?.state().topic, "x");
    Ok(())
}

/// A step the state rejects stores nothing and changes nothing.
pub async fn rejected_step_stores_nothing<C: Checkpointer>(a: &C, _b: &C, t: &str) -> R {
    let id = format!("{t}-reject");
    let mut thread = Thread::create(a, &id, start("reject")).await?;
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().round(1))])
        .await?;
    let before = thread.state().clone();
    let head = thread.head().cloned();
    let err = thread
        .save_step(
            Source::Loop,
            [
                ("x", DebateUpdate::new().round(2).add_log(7)),
                ("y", DebateUpdate::new().round(3)),
            ],
        )
        .await
        .unwrap_err();
    match &err {
        CheckpointError::Rejected(e) => {
            assert_eq!(e.field(), "round");
            assert!(matches!(
                e.kind(),
                ErrorKind::ConcurrentWrites { writes: 2 }
            ));
        }
        other => panic!("expected a rejection, got {other}"),
    }
    assert_eq!(thread.state(), &before);
    assert_eq!(thread.head(), head.as_ref());
    let reloaded = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(reloaded.state(), &before);
    assert_eq!(reloaded.history(None, 10).await?.len(), 2);
    Ok(())
}

/// Reloading again and again (with snapshots taken on the way) never applies
/// a stored update twice: the append-only log and the message count stay
/// exact.
pub async fn reloads_never_reapply<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-again");
    let mut reference = start("again");
    Thread::create(a, &id, reference.clone()).await?;
    for i in 0..12 {
        let store = if i % 2 == 0 { a } else { b };
        let mut thread = Thread::<Debate, _>::open(store, &id).await?;
        // Snapshot often, so loads mix snapshots and replays.
        thread.set_snapshot_policy(SnapshotPolicy {
            ratio: 0.5,
            min_bytes: 300,
        });
        assert_eq!(thread.state(), &reference, "reload {i}");
        play(&mut thread, &mut reference, 1).await?;
    }
    let last = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(last.state(), &reference);
    assert_eq!(last.state().log, (0..36).collect::<Vec<u64>>());
    assert_eq!(last.state().round, 12);
    Ok(())
}

/// Snapshots keep loads short: the chain a load reads stays bounded while
/// the thread grows, and the state is the same as without them.
pub async fn snapshots_bound_the_replay<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-snap");
    let mut reference = start("snap");
    let mut thread = Thread::create(a, &id, reference.clone()).await?;
    thread.set_snapshot_policy(SnapshotPolicy {
        ratio: 1.0,
        min_bytes: 2_000,
    });
    play(&mut thread, &mut reference, 60).await?;
    let head = thread.head().unwrap().id;
    let chain = b.chain(&id, head).await?;
    assert!(chain[0].snapshot.is_some(), "a load starts from a snapshot");
    assert!(
        chain.len() < 90,
        "a load replays {} records of 181",
        chain.len()
    );
    let log_bytes: usize = chain[1..].iter().map(|r| r.writes.len()).sum();
    let base = chain[0].snapshot.as_ref().unwrap().len();
    assert!(
        log_bytes <= base.max(2_000) + 400,
        "replayed {log_bytes} bytes after a {base}-byte snapshot"
    );
    assert_eq!(Thread::<Debate, _>::open(b, &id).await?.state(), &reference);

    // Without snapshots, the same state by replaying everything.
    let id2 = format!("{t}-nosnap");
    let mut reference2 = start("snap");
    let mut plain = Thread::create(a, &id2, reference2.clone()).await?;
    plain.set_snapshot_policy(SnapshotPolicy::never());
    play(&mut plain, &mut reference2, 60).await?;
    let chain = b.chain(&id2, plain.head().unwrap().id).await?;
    assert_eq!(chain.len(), 181, "only the first record has a snapshot");
    assert_eq!(
        Thread::<Debate, _>::open(b, &id2).await?.state(),
        &reference2
    );
    assert_eq!(reference.messages.len(), reference2.messages.len());
    Ok(())
}

/// A fork continues from an older checkpoint; the steps after it stay in
/// the history and every checkpoint still loads as it was.
pub async fn fork_from_an_older_checkpoint<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-fork");
    let mut reference = start("fork");
    let mut thread = Thread::create(a, &id, reference.clone()).await?;
    play(&mut thread, &mut reference, 1).await?;
    let at_round_1 = reference.clone();
    let fork_point = thread.head().unwrap().id;
    play(&mut thread, &mut reference, 2).await?;
    let tip = thread.head().unwrap().id;

    let mut forked = Thread::<Debate, _>::fork(b, &id, fork_point).await?;
    assert_eq!(forked.state(), &at_round_1);
    let fork_meta = forked.head().unwrap().clone();
    assert_eq!(fork_meta.source, Source::Fork);
    assert_eq!(fork_meta.parent, Some(fork_point));
    forked
        .save_step(
            Source::Update,
            [("human", DebateUpdate::new().message(human("another way")))],
        )
        .await?;

    let latest = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(latest.state().messages.len(), 5);
    assert_eq!(
        latest.state().messages.last().unwrap().text(),
        "another way"
    );
    assert_eq!(
        Thread::<Debate, _>::open_at(a, &id, tip).await?.state(),
        &reference
    );
    assert_eq!(
        Thread::<Debate, _>::open_at(a, &id, fork_point)
            .await?
            .state(),
        &at_round_1
    );

    // The old branch is still in the history, and cannot be written to.
    assert_eq!(latest.history(None, 100).await?.len(), 1 + 9 + 1 + 1);
    let mut old = Thread::<Debate, _>::open_at(b, &id, tip).await?;
    let err = old
        .save_step(Source::Loop, [("n", DebateUpdate::new().round(9))])
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");

    let missing = Thread::<Debate, _>::fork(a, &id, CheckpointId(9_999))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            missing,
            CheckpointError::NotFound {
                checkpoint: Some(CheckpointId(9_999)),
                ..
            }
        ),
        "{missing}"
    );
    Ok(())
}

/// Messages without ids get them before they are stored, so a reload has
/// the ids the live state had.
pub async fn message_ids_survive_reload<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-ids");
    let mut thread = Thread::create(a, &id, start("ids")).await?;
    let no_id = Message::from_json(json!({"type": "ai", "content": "no id yet"})).unwrap();
    assert!(no_id.id.is_none());
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().message(no_id))])
        .await?;
    let live: Vec<Option<String>> = thread
        .state()
        .messages
        .iter()
        .map(|m| m.id.clone())
        .collect();
    let loaded = Thread::<Debate, _>::open(b, &id).await?;
    let stored: Vec<Option<String>> = loaded
        .state()
        .messages
        .iter()
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(live, stored);
    assert!(stored.iter().all(Option::is_some));
    Ok(())
}

/// Deleting a thread removes it whole; other threads stay.
pub async fn delete_thread<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let (gone, kept) = (format!("{t}-gone"), format!("{t}-kept"));
    Thread::create(a, &gone, start("gone")).await?;
    Thread::create(a, &kept, start("kept")).await?;
    assert!(b.delete_thread(&gone).await?);
    assert!(!b.delete_thread(&gone).await?);
    assert!(a.head(&gone).await?.is_none());
    assert!(a.list(&gone, None, 10).await?.is_empty());
    assert_eq!(
        Thread::<Debate, _>::open(a, &gone).await?.state(),
        &Debate::default()
    );
    assert_eq!(
        Thread::<Debate, _>::open(a, &kept).await?.state().topic,
        "kept"
    );
    // The id can start over.
    Thread::create(a, &gone, start("again")).await?;
    Ok(())
}

/// Pending writes: kept per checkpoint, a later write of one task and key
/// replaces the earlier, read back in task then key order from another
/// handle, refused for a checkpoint that does not exist, and deleted with
/// the thread.
pub async fn pending_writes_per_checkpoint<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let write = |task: &str, key: &str, value: &str| PendingWrite {
        task: task.into(),
        key: key.into(),
        value: value.into(),
    };
    let mut thread = Thread::create(a, t, start("pending")).await?;
    let first = thread.head().unwrap().id;
    a.put_pending(
        t,
        first,
        vec![write("b", "done", "[1]"), write("a", "once:x", "2")],
    )
    .await?;
    b.put_pending(t, first, vec![write("b", "done", "[3]")])
        .await?;
    assert_eq!(
        b.pending(t, first).await?,
        [write("a", "once:x", "2"), write("b", "done", "[3]")]
    );
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().round(1))])
        .await?;
    let second = thread.head().unwrap().id;
    assert!(a.pending(t, second).await?.is_empty(), "per checkpoint");
    let missing = CheckpointId(second.0 + 100);
    let err = a
        .put_pending(t, missing, vec![write("a", "done", "[]")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, CheckpointError::NotFound { checkpoint: Some(id), .. } if id == missing),
        "{err}"
    );
    let err = a
        .put_pending(&format!("{t}-none"), first, vec![write("a", "done", "[]")])
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::NotFound { .. }), "{err}");
    assert!(a.pending(&format!("{t}-none"), first).await?.is_empty());
    assert!(a.delete_thread(t).await?);
    Thread::create(a, t, start("again")).await?;
    assert!(
        b.pending(t, first).await?.is_empty(),
        "deleted with the thread"
    );
    Ok(())
}

/// `truncate_after` makes an earlier checkpoint the head again: to the
/// head it is a no-op; an id not in the thread (unknown, or another
/// thread's) is `NotFound` and changes nothing; the records after it go
/// with their pending writes, the kept one keeps its snapshot and its own;
/// a handle from before conflicts, a thread opened after resumes from the
/// kept head, and no id is given out twice. To `None` the thread has no
/// checkpoint left and starts again past every id it gave out.
pub async fn truncate_after_rolls_back<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let (id, other) = (format!("{t}-cut"), format!("{t}-cut-other"));
    let mut thread = logged_thread(a, &id, "cut", 2).await?;
    thread.snapshot().await?;
    let (kept, kept_state) = (thread.head().unwrap().id, thread.state().clone());
    let write = |key: &str| PendingWrite {
        task: "n".into(),
        key: key.into(),
        value: "1".into(),
    };
    a.put_pending(&id, kept, vec![write("kept")]).await?;
    for n in 2..5 {
        thread
            .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(n))])
            .await?;
    }
    let newest = thread.head().unwrap().id;
    let dropped = CheckpointId(kept.0 + 1);
    a.put_pending(&id, dropped, vec![write("dropped")]).await?;
    logged_thread(a, &other, "other", newest.0 + 2).await?;

    assert_eq!(b.truncate_after(&id, Some(newest)).await?, 0, "to the head");
    assert_eq!(a.head(&id).await?.unwrap().meta.id, newest);
    for missing in [CheckpointId(newest.0 + 100), CheckpointId(newest.0 + 1)] {
        let err = b.truncate_after(&id, Some(missing)).await.unwrap_err();
        assert!(
            matches!(&err, CheckpointError::NotFound { thread_id, checkpoint: Some(c) }
                if *thread_id == id && *c == missing),
            "{missing}: {err}"
        );
    }
    assert_eq!(a.list(&id, None, 100).await?.len() as u64, newest.0);

    assert_eq!(b.truncate_after(&id, Some(kept)).await?, newest.0 - kept.0);
    assert_eq!(a.head(&id).await?.unwrap().meta.id, kept);
    let left: Vec<u64> = a
        .list(&id, None, 100)
        .await?
        .iter()
        .map(|r| r.meta.id.0)
        .collect();
    assert_eq!(left, (1..=kept.0).rev().collect::<Vec<_>>());
    assert!(
        a.pending(&id, dropped).await?.is_empty(),
        "dropped's writes"
    );
    assert_eq!(a.pending(&id, kept).await?, [write("kept")]);
    let stale = thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(9))])
        .await
        .unwrap_err();
    assert!(stale.is_conflict(), "a handle from before: {stale}");

    let mut reopened = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(reopened.state(), &kept_state, "resumes from the kept head");
    assert_eq!(a.chain(&id, kept).await?.len(), 1, "from its snapshot");
    reopened
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(7))])
        .await?;
    let next = reopened.head().unwrap().clone();
    assert!(next.id > newest, "{} given out again", next.id);
    assert_eq!(next.parent, Some(kept));
    assert_eq!(
        Thread::<Debate, _>::open(b, &id).await?.state().log,
        [0, 1, 7]
    );
    assert_eq!(a.list(&other, None, 100).await?.len() as u64, newest.0 + 3);

    assert_eq!(b.truncate_after(&id, None).await?, kept.0 + 1, "all of it");
    assert!(a.head(&id).await?.is_none());
    assert!(a.list(&id, None, 100).await?.is_empty());
    assert_eq!(
        Thread::<Debate, _>::open(a, &id).await?.state(),
        &Debate::default()
    );
    let again = Thread::create(a, &id, start("again")).await?;
    assert!(
        again.head().unwrap().id > next.id,
        "past every id given out"
    );
    assert_eq!(b.truncate_after(&format!("{t}-cut-none"), None).await?, 0);
    let none = b.truncate_after(&format!("{t}-cut-none"), Some(kept)).await;
    assert!(
        matches!(none, Err(CheckpointError::NotFound { .. })),
        "{none:?}"
    );
    // Deleting forgets the thread whole: its ids start over.
    assert!(a.delete_thread(&id).await?);
    let anew = Thread::create(a, &id, start("anew")).await?;
    assert_eq!(anew.head().unwrap().id, CheckpointId(1));
    Ok(())
}

// ---- stored data that no longer fits the state --------------------------

/// The same thread read by a program whose `status` became a number.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct DebateRetyped {
    #[reducer(messages)]
    pub messages: agent_state::Messages,
    pub round: u32,
    #[reducer(immutable)]
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<u64>,
    pub status: u8,
}

/// The same thread read by a program that renamed `round` to `turn`
/// without a version bump.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct DebateRenamed {
    #[reducer(messages)]
    pub messages: agent_state::Messages,
    pub turn: u32,
    #[reducer(immutable)]
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<u64>,
    pub status: String,
}

/// Version 2 of the state: `round` renamed to `turn`, with a migration.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(version = 2, migrate = migrate_round_to_turn)]
pub struct DebateV2 {
    #[reducer(messages)]
    pub messages: agent_state::Messages,
    pub turn: u32,
    #[reducer(immutable)]
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<u64>,
    pub status: String,
}

/// Version 1 → 2: `round` is now `turn`, in snapshots and in updates alike.
pub fn migrate_round_to_turn(
    from: u32,
    _kind: Stored,
    mut value: Value,
) -> Result<Value, MigrationError> {
    assert_eq!(from, 1);
    let map = value
        .as_object_mut()
        .ok_or_else(|| MigrationError::new("not an object"))?;
    if let Some(round) = map.remove("round") {
        map.insert("turn".into(), round);
    }
    Ok(value)
}

/// Version 2 without a migration.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(version = 2)]
pub struct DebateV2NoMigration {
    #[reducer(messages)]
    pub messages: agent_state::Messages,
    pub turn: u32,
    #[reducer(immutable)]
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<u64>,
    pub status: String,
}

/// Stored data that no longer reads fails loudly, naming the thread, the
/// checkpoint and the field; never silent defaults.
pub async fn unreadable_checkpoints_fail_loudly<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-corrupt");
    let mut thread = Thread::create(a, &id, start("corrupt")).await?;
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().round(1))])
        .await?;
    thread
        .save_step(
            Source::Loop,
            [(
                "moderator",
                DebateUpdate::new().status("completed".to_owned()),
            )],
        )
        .await?;
    let first = thread.history(None, 10).await?.last().unwrap().meta.id;
    let last = thread.head().unwrap().id;

    let err = Thread::<DebateRetyped, _>::open(b, &id)
        .await
        .err()
        .unwrap();
    match &err {
        CheckpointError::Corrupt {
            thread_id,
            checkpoint,
            error,
        } => {
            assert_eq!(thread_id, &id);
            // The snapshot of the first checkpoint already has a string.
            assert_eq!(*checkpoint, first);
            assert_eq!(error.field(), "status");
        }
        other => panic!("expected a corrupt checkpoint, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains(&id) && text.contains("status"), "{text}");

    let err = Thread::<DebateRenamed, _>::open(b, &id)
        .await
        .err()
        .unwrap();
    match &err {
        CheckpointError::Corrupt { error, .. } => {
            assert_eq!(error.field(), "round");
            assert!(matches!(error.kind(), ErrorKind::UnknownField { .. }));
        }
        other => panic!("expected a corrupt checkpoint, got {other}"),
    }

    // A bad value in a stored update (not a snapshot) is reported at its
    // checkpoint: a thread whose first record has no snapshot replays it.
    let id2 = format!("{t}-corrupt-update");
    let mut plain = Thread::<Debate, _>::open(a, &id2).await?;
    plain
        .save_step(
            Source::Loop,
            [("moderator", DebateUpdate::new().status("done".to_owned()))],
        )
        .await?;
    let err = Thread::<DebateRetyped, _>::open(b, &id2)
        .await
        .err()
        .unwrap();
    match &err {
        CheckpointError::Corrupt {
            checkpoint, error, ..
        } => {
            assert_eq!(*checkpoint, plain.head().unwrap().id);
            assert_eq!(error.field(), "status");
        }
        other => panic!("expected a corrupt checkpoint, got {other}"),
    }
    let _ = last;
    Ok(())
}

/// A version bump with a migration loads old checkpoints; an older program
/// refuses newer ones; a bump without a migration says so.
pub async fn versions_migrate<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-v1");
    let mut reference = start("versions");
    let mut v1 = Thread::create(a, &id, reference.clone()).await?;
    play(&mut v1, &mut reference, 2).await?;

    let mut v2 = Thread::<DebateV2, _>::open(b, &id).await?;
    assert_eq!(v2.state().turn, 2, "snapshot and updates migrated");
    assert_eq!(v2.state().log, reference.log);
    assert_eq!(v2.state().messages.len(), reference.messages.len());
    let history = v2.history(None, 3).await?;
    assert_eq!(history[1].writes[0].node, "skeptic");
    assert_eq!(
        history[1].writes[0].update.turn,
        Some(2),
        "stored updates read through the migration"
    );

    v2.save_step(Source::Loop, [("n", DebateV2Update::new().turn(3))])
        .await?;
    assert_eq!(v2.head().unwrap().version, 2);
    assert_eq!(Thread::<DebateV2, _>::open(a, &id).await?.state().turn, 3);

    let err = Thread::<Debate, _>::open(a, &id).await.err().unwrap();
    match &err {
        CheckpointError::NewerVersion {
            stored, current, ..
        } => {
            assert_eq!((*stored, *current), (2, 1));
        }
        other => panic!("expected a newer-version error, got {other}"),
    }

    let err = Thread::<DebateV2NoMigration, _>::open(a, &id)
        .await
        .err()
        .unwrap();
    match &err {
        CheckpointError::Migration { from, error, .. } => {
            assert_eq!(*from, 1);
            assert!(error.message().contains("no migration"), "{error}");
        }
        other => panic!("expected a migration error, got {other}"),
    }
    Ok(())
}

/// One of several racing writers of `thread_id`: adds `writer * 1000 + i`
/// to the log for each `i < count`, one step each, reloading and retrying
/// on conflict. Returns how many conflicts it retried.
pub async fn add_with_retries<C: Checkpointer + ?Sized>(
    saver: &C,
    thread_id: &str,
    writer: u64,
    count: u64,
) -> u64 {
    let mut thread = Thread::<Debate, _>::open(saver, thread_id).await.unwrap();
    let mut conflicts = 0;
    for i in 0..count {
        loop {
            let update = DebateUpdate::new().add_log(writer * 1000 + i);
            match thread
                .save_step(Source::Loop, [(format!("w{writer}"), update)])
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
}

/// After [`add_with_retries`] by `writers` writers: every addition is in
/// the log exactly once.
pub fn assert_every_addition_once(state: &Debate, writers: u64, count: u64, conflicts: u64) {
    let mut log = state.log.clone();
    log.sort_unstable();
    let mut expected: Vec<u64> = (0..writers)
        .flat_map(|w| (0..count).map(move |i| w * 1000 + i))
        .collect();
    expected.sort_unstable();
    assert_eq!(log, expected, "{conflicts} conflicts were retried");
}

// ---- what cannot be stored faithfully is refused --------------------------

/// `depth` arrays around a number.
pub fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!([inner]))
}

fn everything(origin: &str) -> Everything {
    Everything {
        origin: origin.into(),
        letter: 'a',
        ..Everything::default()
    }
}

/// Saves a step that must be refused: a `Rejected` error naming `field`,
/// and nothing changed or stored, as a reload through `b` shows.
async fn refused<C: Checkpointer>(
    thread: &mut Thread<'_, Everything, C>,
    b: &C,
    update: EverythingUpdate,
    field: &str,
) -> Result<StateError, CheckpointError> {
    let before = thread.state().clone();
    let head = thread.head().cloned();
    let err = thread
        .save_step(Source::Loop, [("node", update)])
        .await
        .unwrap_err();
    let CheckpointError::Rejected(error) = err else {
        panic!("expected a refusal naming `{field}`, got {err}");
    };
    assert_eq!(error.field(), field, "{error}");
    assert_eq!(thread.state(), &before, "{error}");
    assert_eq!(thread.head(), head.as_ref(), "{error}");
    let reloaded = Thread::<Everything, _>::open(b, thread.thread_id()).await?;
    assert_eq!(reloaded.state(), &before, "{error}");
    assert_eq!(reloaded.head(), head.as_ref(), "{error}");
    Ok(error)
}

fn not_storable(error: &StateError) {
    assert!(
        matches!(error.kind(), ErrorKind::NotStorable { .. }),
        "{error}"
    );
}

/// Values JSON has no faithful form for are refused before anything is
/// stored, naming the field: NaN and infinities anywhere, integers beyond
/// 64 bits, `Some(None)`, messages that would not read back, a `with`
/// reducer's result that could not be stored.
pub async fn unstorable_values_are_refused<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-unstorable");
    let mut thread = Thread::create(a, &id, everything("o")).await?;
    thread
        .save_step(Source::Loop, [("n", EverythingUpdate::new().score(1.5))])
        .await?;
    for (field, update) in [
        ("score", EverythingUpdate::new().score(f64::NAN)),
        ("ratio", EverythingUpdate::new().ratio(f32::INFINITY)),
        ("maybe", EverythingUpdate::new().maybe(f64::NEG_INFINITY)),
        ("samples", EverythingUpdate::new().samples([1.0, f64::NAN])),
        (
            "mode",
            EverythingUpdate::new().mode(Mode::At {
                x: 0.0,
                y: f64::INFINITY,
            }),
        ),
        ("best", EverythingUpdate::new().best(f64::NAN)),
        ("wide", EverythingUpdate::new().wide(u128::MAX)),
        ("twice", EverythingUpdate::new().twice(None)),
    ] {
        not_storable(&refused(&mut thread, b, update, field).await?);
    }
    // Floats inside a part and inside a nested state.
    let mut nested_nan = ProfileUpdate::new();
    nested_nan.history = Some(FieldWrite::Reduce(vec![f64::INFINITY]));
    let mut update = EverythingUpdate::new();
    update.profile = Some(FieldWrite::Reduce(nested_nan));
    not_storable(&refused(&mut thread, b, update, "profile").await?);

    // Messages: one rule, in and out. The reducer refuses what enters...
    for msg in [Message::new(MessageType::Tool, "42"), tool("42", "")] {
        let error = refused(
            &mut thread,
            b,
            EverythingUpdate::new().message(msg),
            "messages",
        )
        .await?;
        assert!(error.to_string().contains("tool_call_id"), "{error}");
    }
    let mut extra = ai("x");
    extra.usage_metadata = Some(Value::Null);
    refused(
        &mut thread,
        b,
        EverythingUpdate::new().add_transcript(extra),
        "transcript",
    )
    .await?;
    // ...and an overwrite, which no reducer sees, is refused when encoded.
    let update =
        EverythingUpdate::new().overwrite_transcript(vec![Message::new(MessageType::Tool, "x")]);
    let error = refused(&mut thread, b, update, "transcript").await?;
    assert!(error.to_string().contains("tool_call_id"), "{error}");

    // A step with one bad write among good ones is refused whole.
    let mut thread2 = Thread::<Everything, _>::open(a, &id).await?;
    let before = thread2.state().clone();
    let err = thread2
        .save_step(
            Source::Loop,
            [
                ("good", EverythingUpdate::new().text("fine".to_owned())),
                ("bad", EverythingUpdate::new().maybe(f64::NAN)),
            ],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CheckpointError::Rejected(e) if e.field() == "maybe"),
        "{err}"
    );
    assert_eq!(thread2.state(), &before);

    // A whole state that cannot be stored starts no thread.
    let fresh = format!("{t}-unstorable-new");
    let mut bad = everything("o");
    bad.score = f64::NAN;
    let err = Thread::create(a, &fresh, bad).await.err().unwrap();
    assert!(
        matches!(&err, CheckpointError::Rejected(e) if e.field() == "score"),
        "{err}"
    );
    assert!(a.head(&fresh).await?.is_none(), "nothing was stored");
    Ok(())
}

/// JSON nested up to [`MAX_FIELD_DEPTH`] round-trips through writes and
/// snapshots; one level more is refused when it comes in and when it is
/// saved, naming the field.
pub async fn depth_limit_round_trips<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-deep");
    let mut thread = Thread::create(a, &id, everything("o")).await?;
    // Snapshot after every step, so loads read snapshots as well as writes.
    thread.set_snapshot_policy(SnapshotPolicy {
        ratio: 0.0,
        min_bytes: 0,
    });
    let at_limit = nested(MAX_FIELD_DEPTH);
    // As a client's JSON, and as a typed update: both accepted.
    let update = EverythingUpdate::from_json(json!({"raw": at_limit.clone()})).unwrap();
    thread
        .save_step(Source::Update, [("client", update)])
        .await?;
    let update = EverythingUpdate::new().overwrite_log(vec![nested(MAX_FIELD_DEPTH - 2)]);
    thread.save_step(Source::Loop, [("n", update)]).await?;
    let mut doc = EverythingUpdate::new();
    doc.doc = Some(FieldWrite::Reduce(
        json!({"k": nested(MAX_FIELD_DEPTH - 1)}),
    ));
    thread.save_step(Source::Loop, [("n", doc)]).await?;
    let loaded = Thread::<Everything, _>::open(b, &id).await?;
    assert_eq!(loaded.state(), thread.state());
    assert_eq!(loaded.state().raw, at_limit);
    let chain = b.chain(&id, thread.head().unwrap().id).await?;
    assert!(chain[0].snapshot.is_some(), "the load read a snapshot");

    // One level more: refused on the way in...
    let over = nested(MAX_FIELD_DEPTH + 1);
    for json in [
        json!({"raw": over.clone()}),
        json!({"log": {"__overwrite__": [nested(MAX_FIELD_DEPTH - 1)]}}),
        json!({"doc": {"__reduce__": {"k": nested(MAX_FIELD_DEPTH - 1)}}}),
    ] {
        let err = EverythingUpdate::from_json(json.clone()).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::TooDeep {
                    max: MAX_FIELD_DEPTH
                }
            ),
            "{json}: {err}"
        );
    }
    let err = Everything::from_json(json!({"raw": over.clone()})).unwrap_err();
    assert_eq!(err.field(), "raw");
    // ...and when a typed update is saved.
    let error = refused(&mut thread, b, EverythingUpdate::new().raw(over), "raw").await?;
    assert!(matches!(error.kind(), ErrorKind::TooDeep { .. }), "{error}");
    let update = EverythingUpdate::new().overwrite_log(vec![nested(MAX_FIELD_DEPTH - 1)]);
    refused(&mut thread, b, update, "log").await?;
    // A `with` reducer whose result would be too deep for a snapshot.
    let mut layer = std::collections::BTreeMap::new();
    layer.insert("k".to_owned(), nested(MAX_FIELD_DEPTH - 1));
    let error = refused(
        &mut thread,
        b,
        EverythingUpdate::new().layers(layer),
        "layers",
    )
    .await?;
    assert!(matches!(error.kind(), ErrorKind::TooDeep { .. }), "{error}");
    Ok(())
}

/// Reduce writes whose JSON has the shape of a marker (`{"__overwrite__":
/// v}`, `{"__reduce__": v}`, `{"type": "__overwrite__", "value": v}`) are
/// stored escaped and replay as the reduce writes they were, for every
/// reducer whose write is a JSON object; a client's `{"__overwrite__": v}`
/// is still an overwrite.
pub async fn marker_shaped_writes_round_trip<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-markers");
    let mut thread = Thread::create(a, &id, everything("o")).await?;
    let mut first = EverythingUpdate::new();
    first.facts = Some(FieldWrite::Reduce([("k".to_owned(), 1.0)].into()));
    first.doc = Some(FieldWrite::Reduce(json!({"kept": true})));
    thread.save_step(Source::Loop, [("n", first)]).await?;

    let mut update = EverythingUpdate::new();
    update.facts = Some(FieldWrite::Reduce(
        [("__overwrite__".to_owned(), 2.5)].into(),
    ));
    update.tree = Some(FieldWrite::Reduce(
        [("__reduce__".to_owned(), json!({"x": 1}))].into(),
    ));
    update.doc = Some(FieldWrite::Reduce(
        json!({"type": "__overwrite__", "value": [1]}),
    ));
    update.object = Some(FieldWrite::Reduce(
        json!({"__overwrite__": {"a": 1}})
            .as_object()
            .unwrap()
            .clone(),
    ));
    let mut profile = ProfileUpdate::new();
    profile.r#type = Some("__overwrite__".to_owned());
    profile.value = Some(Some(7));
    update.profile = Some(FieldWrite::Reduce(profile));
    let layer = [("__overwrite__".to_owned(), json!("layer"))].into();
    update.layers = Some(FieldWrite::Reduce(layer));
    thread
        .save_step(Source::Loop, [("n", update.clone())])
        .await?;

    assert_eq!(thread.state().facts.len(), 2, "merged, not overwritten");
    assert_eq!(thread.state().doc["kept"], true);
    let loaded = Thread::<Everything, _>::open(b, &id).await?;
    assert_eq!(loaded.state(), thread.state());
    let step = loaded.history(None, 1).await?.remove(0);
    assert_eq!(
        step.writes[0].update, update,
        "the stored update reads back as itself"
    );
    let stored = &b.list(&id, None, 1).await?[0].writes;
    let stored: Value = serde_json::from_str(stored).unwrap();
    assert_eq!(
        stored[0]["update"]["facts"],
        json!({"__reduce__": {"__overwrite__": 2.5}})
    );
    assert_eq!(
        stored[0]["update"]["text"],
        Value::Null,
        "no other field is touched"
    );

    // A client's marker keeps its meaning: an overwrite.
    let client =
        EverythingUpdate::from_json(json!({"facts": {"__overwrite__": {"only": 1.0}}})).unwrap();
    thread
        .save_step(Source::Update, [("client", client)])
        .await?;
    assert_eq!(thread.state().facts.len(), 1);
    assert_eq!(
        Thread::<Everything, _>::open(b, &id).await?.state(),
        thread.state()
    );
    Ok(())
}

/// Records that break the chain, written through the backend's own
/// `append` (a faulty writer): a loop, a parent that is not older, a record
/// without a parent or snapshot in the middle of a thread, a gap in the
/// steps. Each load fails, naming the thread, the checkpoint and the break;
/// the checkpoints before the break still load.
pub async fn broken_links_fail_loudly<C: Checkpointer>(a: &C, _b: &C, t: &str) -> R {
    use agent_state::checkpoint::NewCheckpoint;

    let record = |parent: Option<u64>, step: i64| NewCheckpoint {
        parent: parent.map(CheckpointId),
        step,
        source: Source::Loop,
        version: 1,
        writes: "[]".to_owned(),
        log_bytes: 2,
        base_bytes: 0,
        snapshot: None,
    };
    // (case, records appended after the thread's 3 checkpoints (ids 1..3,
    // steps -1..1), the checkpoint the error names, what it says)
    let cases: [(&str, Vec<NewCheckpoint>, u64, &str); 4] = [
        ("self", vec![record(Some(4), 2)], 4, "not older"),
        (
            "loop",
            vec![record(Some(5), 2), record(Some(4), 3)],
            4,
            "not older",
        ),
        (
            "orphan",
            vec![record(None, 2)],
            4,
            "neither a parent nor a snapshot",
        ),
        (
            "gap",
            vec![record(Some(3), 5)],
            4,
            "the records between them are missing",
        ),
    ];
    for (case, records, named, says) in cases {
        let id = format!("{t}-links-{case}");
        let thread = logged_thread(a, &id, case, 2).await?;
        let good = thread.state().clone();
        for record in records {
            let head = a.head(&id).await?.map(|h| h.meta.id);
            a.append(&id, head, record).await?;
        }
        let err = Thread::<Debate, _>::open(a, &id).await.err().unwrap();
        assert_malformed(&err, &id, named, says, case);
        let older = Thread::<Debate, _>::open_at(a, &id, CheckpointId(3)).await?;
        assert_eq!(
            older.state(),
            &good,
            "{case}: the chain before the break loads"
        );
    }
    Ok(())
}

/// The plain SQL that damages a stored thread, one statement at a time.
pub type Sql<'a> = &'a dyn Fn(String) -> agent_state::checkpoint::BoxFuture<'a, ()>;

/// Rows damaged with plain SQL (a middle row deleted or moved to another
/// thread, a parent set to itself, to a newer row or to nothing, a value
/// out of range): a load fails naming the thread, the checkpoint and what
/// is wrong, and returns.
pub async fn damaged_rows_fail_loudly<C: Checkpointer>(a: &C, t: &str, sql: Sql<'_>) -> R {
    let table = "agent_state_checkpoints";
    // (case, statements with `{id}` for the thread, the checkpoint named,
    // what the error says). The thread holds ids 1..=5, steps -1..=3.
    let cases: [(&str, &[&str], u64, &str); 7] = [
        ("self", &["UPDATE {table} SET parent_id = id WHERE thread_id = '{id}' AND id = 4"], 4, "not older"),
        ("loop", &["UPDATE {table} SET parent_id = 5 WHERE thread_id = '{id}' AND id = 4"], 4, "not older"),
        ("gone", &["DELETE FROM {table} WHERE thread_id = '{id}' AND id = 3"], 4, "parent 3 is missing"),
        ("moved", &["UPDATE {table} SET thread_id = '{id}-elsewhere' WHERE thread_id = '{id}' AND id = 3"], 4, "parent 3 is missing"),
        ("orphan", &["UPDATE {table} SET parent_id = NULL WHERE thread_id = '{id}' AND id = 3"], 3, "neither a parent nor a snapshot"),
        ("skipped", &[
            "DELETE FROM {table} WHERE thread_id = '{id}' AND id = 3",
            "UPDATE {table} SET parent_id = 2 WHERE thread_id = '{id}' AND id = 4",
        ], 4, "step 2 but its parent 2 is step 0"),
        ("negative", &["UPDATE {table} SET log_bytes = -5 WHERE thread_id = '{id}' AND id = 4"], 4, "`log_bytes` -5 is out of range"),
    ];
    for (case, statements, named, says) in cases {
        let id = format!("{t}-rows-{case}");
        logged_thread(a, &id, case, 4).await?;
        for statement in statements {
            sql(statement.replace("{table}", table).replace("{id}", &id)).await;
        }
        let err = Thread::<Debate, _>::open(a, &id).await.err().unwrap();
        assert_malformed(&err, &id, named, says, case);
    }
    Ok(())
}

/// `err` is a `Malformed` error about checkpoint `named` of `thread`,
/// saying `says`.
pub fn assert_malformed(err: &CheckpointError, thread: &str, named: u64, says: &str, case: &str) {
    let CheckpointError::Malformed { reason, .. } = err else {
        panic!("{case}: expected a malformed record, got {err}");
    };
    assert!(reason.contains(says), "{case}: {err}");
    assert_names(err, thread, named, case);
}

/// `err` names `thread` and checkpoint `named`, in its fields and its
/// message; returns its kind, for the caller to check.
pub fn assert_names(err: &CheckpointError, thread: &str, named: u64, case: &str) -> &'static str {
    let (kind, thread_id, checkpoint) = match err {
        CheckpointError::Malformed {
            thread_id,
            checkpoint,
            ..
        } => ("malformed", thread_id, checkpoint),
        CheckpointError::Corrupt {
            thread_id,
            checkpoint,
            ..
        } => ("corrupt", thread_id, checkpoint),
        CheckpointError::NewerVersion {
            thread_id,
            checkpoint,
            ..
        } => ("newer", thread_id, checkpoint),
        other => panic!("{case}: expected an error naming the checkpoint, got {other}"),
    };
    assert_eq!(thread_id, thread, "{case}: {err}");
    assert_eq!(*checkpoint, CheckpointId(named), "{case}: {err}");
    let text = err.to_string();
    assert!(
        text.contains(thread) && text.contains(&format!("checkpoint {named}")),
        "{case}: {text}"
    );
    kind
}

/// A damage done to a stored row, and what loading it must say.
type Damage = (&'static str, &'static str, u64, &'static str, &'static str);

/// The damages of [`damaged_values_fail_loudly`]: (case, SET clause, the
/// row changed, what the error is, what it says). The thread holds ids
/// 1..=5, steps -1..=3; 1 has the snapshot.
fn damaged_value_cases(not_json: bool) -> Vec<Damage> {
    let mut cases: Vec<Damage> = vec![
        (
            "writes-shape",
            r#"writes = '[{"node": 3}]'"#,
            3,
            "malformed",
            "not a JSON list",
        ),
        (
            "writes-scalar",
            "writes = '7'",
            3,
            "malformed",
            "not a JSON list",
        ),
        (
            "writes-object",
            r#"writes = '{"not": "a list"}'"#,
            3,
            "malformed",
            "neither a JSON list",
        ),
        (
            "held-on-loop",
            r#"writes = '{"input": []}'"#,
            3,
            "malformed",
            "`loop` checkpoint, not `input`",
        ),
        (
            "update-type",
            r#"writes = '[{"node": "n", "update": {"round": "x"}}]'"#,
            3,
            "corrupt",
            "round",
        ),
        (
            "update-unknown",
            r#"writes = '[{"node": "n", "update": {"nope": 1}}]'"#,
            3,
            "corrupt",
            "nope",
        ),
        ("snapshot-shape", "snapshot = '[1, 2]'", 1, "corrupt", ""),
        (
            "snapshot-type",
            r#"snapshot = '{"round": "x", "topic": "t"}'"#,
            1,
            "corrupt",
            "round",
        ),
        ("newer-update", "version = 99", 4, "newer", "version 99"),
        ("newer-snapshot", "version = 99", 1, "newer", "version 99"),
    ];
    if not_json {
        cases.push((
            "writes-text",
            "writes = 'garbage'",
            3,
            "malformed",
            "not a JSON list",
        ));
        cases.push((
            "snapshot-text",
            r#"snapshot = '{"round'"#,
            1,
            "malformed",
            "snapshot is not JSON",
        ));
        cases.push((
            "held-text",
            r#"writes = '{"input": ['"#,
            3,
            "malformed",
            "not JSON",
        ));
    }
    cases
}

/// Values damaged with plain SQL (the rows' links intact): writes or a
/// snapshot of the wrong shape, a field of the wrong type or unknown, a
/// version newer than the program's, a run's input held by a `loop`
/// record; with `not_json`, text that is not JSON (a `jsonb` column
/// cannot hold it). Each load fails naming the thread, the checkpoint and
/// what is wrong (the field, when one is), never a state with a default
/// in its place.
pub async fn damaged_values_fail_loudly<C: Checkpointer>(
    a: &C,
    t: &str,
    sql: Sql<'_>,
    not_json: bool,
) -> R {
    let table = "agent_state_checkpoints";
    let cases = damaged_value_cases(not_json);
    for (case, set, row, kind, says) in cases {
        let id = format!("{t}-values-{case}");
        logged_thread(a, &id, case, 4).await?;
        sql(format!(
            "UPDATE {table} SET {set} WHERE thread_id = '{id}' AND id = {row}"
        ))
        .await;
        let err = Thread::<Debate, _>::open(a, &id).await.err().unwrap();
        assert_eq!(assert_names(&err, &id, row, case), kind, "{case}: {err}");
        let text = err.to_string();
        assert!(text.contains(says), "{case}: {text}");
        // The checkpoints before the damaged one still load.
        if row > 1 {
            Thread::<Debate, _>::open_at(a, &id, CheckpointId(row - 1)).await?;
        }
    }
    Ok(())
}

/// The ids of a thread's records, newest first.
async fn ids_of<C: Checkpointer>(c: &C, id: &str) -> Result<Vec<u64>, CheckpointError> {
    Ok(c.list(id, None, 1_000)
        .await?
        .iter()
        .map(|r| r.meta.id.0)
        .collect())
}

/// `Thread::keep_last` keeps the newest records only, each still loading
/// as before (the oldest kept gets a snapshot and no parent), the head's
/// pending writes kept and the landed steps' collected; ids go on from
/// the newest; `keep` of 0 is refused naming it; a short or unknown
/// thread loses nothing.
pub async fn keep_last_bounds_a_thread<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let id = format!("{t}-keep");
    let pending = |key: &str| PendingWrite {
        task: "n".into(),
        key: key.into(),
        value: "1".into(),
    };
    let mut thread = logged_thread(a, &id, "keep", 20).await?;
    a.put_pending(&id, CheckpointId(3), vec![pending("old")])
        .await?;
    a.put_pending(&id, CheckpointId(18), vec![pending("landed")])
        .await?;
    let head = thread.head().unwrap().id;
    a.put_pending(&id, head, vec![pending("interrupt")]).await?;
    let mut states = Vec::new();
    for n in 17..=21 {
        states.push(
            Thread::<Debate, _>::open_at(a, &id, CheckpointId(n))
                .await?
                .state()
                .clone(),
        );
    }

    let pruned = Thread::<Debate, _>::keep_last(b, &id, 5).await?;
    assert_eq!((pruned.checkpoints, pruned.writes), (16, 1), "{pruned:?}");
    assert_eq!(ids_of(a, &id).await?, [21, 20, 19, 18, 17]);
    for (n, state) in (17..=21).zip(&states) {
        let at = Thread::<Debate, _>::open_at(a, &id, CheckpointId(n)).await?;
        assert_eq!(at.state(), state, "checkpoint {n} loads as before");
    }
    let oldest = a.list(&id, Some(CheckpointId(18)), 1).await?;
    assert_eq!(oldest[0].meta.parent, None, "its history starts there");
    assert_eq!(a.pending(&id, head).await?, [pending("interrupt")]);
    assert!(a.pending(&id, CheckpointId(18)).await?.is_empty());
    assert!(a.pending(&id, CheckpointId(3)).await?.is_empty());

    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(20))])
        .await?;
    assert_eq!(thread.head().unwrap().id, CheckpointId(22));
    let again = Thread::<Debate, _>::keep_last(a, &id, 2).await?;
    assert_eq!((again.checkpoints, again.writes), (4, 1), "{again:?}");
    assert_eq!(ids_of(b, &id).await?, [22, 21]);
    let reopened = Thread::<Debate, _>::open(b, &id).await?;
    assert_eq!(reopened.state(), thread.state());
    assert_eq!(reopened.state().log, (0..=20).collect::<Vec<u64>>());

    let nothing = Thread::<Debate, _>::keep_last(a, &id, 10).await?;
    assert_eq!(nothing.checkpoints, 0);
    let unknown = Thread::<Debate, _>::keep_last(a, &format!("{t}-none"), 3).await?;
    assert_eq!((unknown.checkpoints, unknown.writes), (0, 0));
    let err = Thread::<Debate, _>::keep_last(a, &id, 0).await.unwrap_err();
    assert!(
        matches!(err, CheckpointError::InvalidArgument { name: "keep", .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("`keep`: "), "{err}");
    assert_eq!(ids_of(a, &id).await?, [22, 21], "a refusal changes nothing");
    Ok(())
}

/// `drop_before` refuses, changing nothing, an `oldest` or a snapshot
/// outside the kept records and a kept record that would lose its parent
/// without a snapshot (a fork from an old checkpoint); `keep_last` gives
/// such a fork a snapshot, so it loads as before.
pub async fn drop_before_keeps_every_kept_record_loading<C: Checkpointer>(
    a: &C,
    b: &C,
    t: &str,
) -> R {
    let id = format!("{t}-drop");
    logged_thread(a, &id, "drop", 9).await?;
    let mut forked = Thread::<Debate, _>::fork(a, &id, CheckpointId(3)).await?;
    forked
        .save_step(Source::Update, [("human", DebateUpdate::new().add_log(99))])
        .await?;
    let fork_state = forked.state().clone();
    let before = ids_of(a, &id).await?;
    assert_eq!(before, (1..=12).rev().collect::<Vec<u64>>());

    let refusals = [
        (CheckpointId(50), vec![], "an unknown oldest"),
        (
            CheckpointId(9),
            vec![(CheckpointId(2), "{}".to_owned())],
            "a snapshot below oldest",
        ),
        (
            CheckpointId(9),
            vec![(CheckpointId(70), "{}".to_owned())],
            "an unknown snapshot",
        ),
    ];
    for (oldest, snapshots, case) in refusals {
        let err = b.drop_before(&id, oldest, snapshots).await.unwrap_err();
        assert!(
            matches!(err, CheckpointError::NotFound { .. }),
            "{case}: {err}"
        );
    }
    let err = b
        .drop_before(&id, CheckpointId(9), vec![])
        .await
        .unwrap_err();
    assert_malformed(&err, &id, 9, "would lose its parent 8", "no snapshot");
    let given = vec![(CheckpointId(9), "{}".to_owned())];
    let err = b
        .drop_before(&id, CheckpointId(9), given)
        .await
        .unwrap_err();
    assert_malformed(&err, &id, 11, "would lose its parent 3", "the fork");
    assert_eq!(ids_of(a, &id).await?, before, "refusals change nothing");

    assert_eq!(
        Thread::<Debate, _>::keep_last(b, &id, 4).await?.checkpoints,
        8
    );
    assert_eq!(ids_of(a, &id).await?, [12, 11, 10, 9]);
    let head = Thread::<Debate, _>::open(a, &id).await?;
    assert_eq!(head.state(), &fork_state);
    let tip = Thread::<Debate, _>::open_at(a, &id, CheckpointId(10)).await?;
    assert_eq!(tip.state().log, (0..9).collect::<Vec<u64>>());
    Ok(())
}

/// `collect_pending` keeps the writes of a checkpoint without a child
/// (what a paused run resumes from) and deletes those of one whose step
/// landed; other threads' are untouched.
pub async fn collect_pending_keeps_what_resumes<C: Checkpointer>(a: &C, b: &C, t: &str) -> R {
    let (id, other) = (format!("{t}-gc"), format!("{t}-gc-other"));
    let write = |key: &str| PendingWrite {
        task: "n".into(),
        key: key.into(),
        value: "[]".into(),
    };
    let mut thread = logged_thread(a, &id, "gc", 1).await?;
    let paused = thread.head().unwrap().id;
    a.put_pending(&id, paused, vec![write("interrupt"), write("done")])
        .await?;
    let mut neighbour = logged_thread(a, &other, "gc", 1).await?;
    let theirs = neighbour.head().unwrap().id;
    a.put_pending(&other, theirs, vec![write("x")]).await?;
    neighbour
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(7))])
        .await?;

    assert_eq!(b.collect_pending(&id).await?, 0, "the head's writes stay");
    assert_eq!(a.pending(&id, paused).await?.len(), 2);
    thread
        .save_step(Source::Loop, [("n", DebateUpdate::new().add_log(1))])
        .await?;
    let resumed = thread.head().unwrap().id;
    a.put_pending(&id, resumed, vec![write("next")]).await?;
    assert_eq!(b.collect_pending(&id).await?, 2, "the landed step's");
    assert!(a.pending(&id, paused).await?.is_empty());
    assert_eq!(a.pending(&id, resumed).await?, [write("next")]);
    assert_eq!(
        a.pending(&other, theirs).await?,
        [write("x")],
        "another thread's"
    );
    assert_eq!(b.collect_pending(&format!("{t}-gc-none")).await?, 0);
    Ok(())
}

/// `delete_children` deletes the threads named `{thread}|..` (a
/// subgraph's), whole, and nothing else: not the thread, not a thread
/// whose id merely starts the same; a child made again starts over.
pub async fn delete_children_takes_the_subgraph_threads<C: Checkpointer>(
    a: &C,
    b: &C,
    t: &str,
) -> R {
    let parent = format!("{t}-kids");
    let kids = [
        format!("{parent}|child:1/0"),
        format!("{parent}|child:2/1|inner:3/0"),
    ];
    let others = [
        parent.clone(),
        format!("{parent}x|y"),
        format!("{parent}}}"),
    ];
    for id in kids.iter().chain(&others) {
        let thread = logged_thread(a, id, "kids", 2).await?;
        let head = thread.head().unwrap().id;
        let write = PendingWrite {
            task: "n".into(),
            key: "k".into(),
            value: "1".into(),
        };
        a.put_pending(id, head, vec![write]).await?;
    }
    assert_eq!(b.delete_children(&parent).await?, 2);
    for kid in &kids {
        assert!(a.head(kid).await?.is_none(), "{kid}");
        assert!(a.pending(kid, CheckpointId(3)).await?.is_empty(), "{kid}");
    }
    for other in &others {
        assert_eq!(ids_of(a, other).await?, [3, 2, 1], "{other}");
        assert_eq!(a.pending(other, CheckpointId(3)).await?.len(), 1, "{other}");
    }
    let again = logged_thread(a, &kids[0], "again", 0).await?;
    assert_eq!(again.head().unwrap().id, CheckpointId(1), "starts over");
    assert_eq!(b.delete_children(&format!("{t}-none")).await?, 0);
    Ok(())
}
