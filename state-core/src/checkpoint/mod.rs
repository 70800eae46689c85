//! Per-thread persistence of a state's history: what LangGraph calls a
//! checkpointer.
//!
//! A checkpoint stores what a step *changed* (the updates the nodes
//! returned, as JSON), not the whole state. Loading starts from the nearest
//! snapshot of the whole state and replays the updates after it. Snapshots
//! are taken once the updates logged since the last one outweigh it (see
//! [`SnapshotPolicy`]), so a step costs in proportion to its update, and a
//! load costs in proportion to the state, whatever the length of the history.
//!
//! Two layers:
//!
//! * [`Checkpointer`]: the storage backend, at the level of JSON records.
//!   [`MemoryCheckpointer`], [`SqliteCheckpointer`](sqlite::SqliteCheckpointer)
//!   (feature `sqlite`) and [`PostgresCheckpointer`](postgres::PostgresCheckpointer)
//!   (feature `postgres`) implement it; so can you.
//! * [`Thread`]: one thread's typed state, loaded from a checkpointer. Its
//!   [`save_step`](Thread::save_step) checks a step, stores it and only then
//!   applies it, so a step that is rejected or fails to store leaves both the
//!   state and the store as they were.
//!
//! ```
//! use agent_state::checkpoint::{block_on, MemoryCheckpointer, Source, Thread};
//! use agent_state::{ai, AgentState, Messages};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[reducer(messages)]
//!     messages: Messages,
//!     turns: u32,
//! }
//!
//! block_on(async {
//!     let saver = MemoryCheckpointer::new();
//!     let mut thread = Thread::<Chat, _>::open(&saver, "user-1").await?;
//!     thread
//!         .save_step(Source::Loop, [("bot", ChatUpdate::new().message(ai("hi")).turns(1))])
//!         .await?;
//!
//!     // Another process (here: another handle) sees the saved step.
//!     let again = Thread::<Chat, _>::open(&saver, "user-1").await?;
//!     assert_eq!(again.state().turns, 1);
//!     assert_eq!(again.state().messages.len(), 1);
//!     Ok::<(), agent_state::checkpoint::CheckpointError>(())
//! })?;
//! # Ok::<(), agent_state::checkpoint::CheckpointError>(())
//! ```
//!
//! # Backends
//!
//! | backend | feature | use |
//! | --- | --- | --- |
//! | `MemoryCheckpointer` | always | tests, short-lived runs |
//! | `sqlite::SqliteCheckpointer::open(path)` | `sqlite` (SQLite compiled in) | one file, WAL, survives restarts |
//! | `sqlite::SqliteCheckpointer::open_exclusive(path)` | `sqlite` | the same file held by this handle alone (`locking_mode = EXCLUSIVE`): no lock system calls per step, the same crash promise |
//! | `SqliteCheckpointer::with_connection(f)` | `sqlite` | tables of your own in the same file, on the handle's connection: no waits on SQLite's write lock between your statements and the steps |
//! | `postgres::PostgresCheckpointer::connect(url)` | `postgres` (Tokio) | many instances sharing threads |
//!
//! A graph run stores its steps through `run(..).on_thread(&saver, thread)`;
//! `Thread::<State, _>::open(&saver, "thread-id")` loads a thread's latest
//! state by hand, and `save_step` checks a step, stores it, then applies it,
//! so a rejected step or a lost race stores and changes nothing.
//!
//! # What a checkpointer promises
//!
//! * Two writers of one thread: one wins, the other gets
//!   `CheckpointError::Conflict`, reloads and retries; nothing lost or doubled.
//! * History newest first (`thread.history(before, limit)`), a given checkpoint
//!   (`Thread::open_at`), forks (`Thread::fork`), `delete_thread`.
//! * A stored checkpoint that no longer reads as the state fails with the
//!   thread, the checkpoint and the field. `#[state(version = 2, migrate =
//!   path)]` declares a schema version and the function that upgrades older
//!   checkpoints (`fn(u32, Stored, Value) -> Result<Value, MigrationError>`);
//!   a `migrate` without a `version` of 2 or more, which could never run, does
//!   not compile.
//! * Whatever `save_step` (or a run) accepts loads back equal to the state in
//!   memory, floats bit for bit. What a checkpoint could not store and read
//!   back is refused before anything is stored, naming the field
//!   (`CheckpointError::Rejected`, in a run `GraphError::InvalidUpdate`): NaN
//!   and infinite floats, integers beyond 64 bits, `Some(None)`, JSON nested
//!   deeper than `MAX_FIELD_DEPTH` (100; also refused by `apply_json` and
//!   `from_json`), a tool message without its `tool_call_id` (refused in
//!   every shape, JSON or Rust), and in PostgreSQL text holding U+0000.
//! * A load returns exactly the stored chain or fails naming the thread, the
//!   checkpoint and what is wrong: `CheckpointError::Malformed` for a chain
//!   that is not the one stored (a loop in the parent links, a record missing
//!   or moved to another thread) or a record not in the checkpoint format (a
//!   column of the wrong type), `CheckpointError::Corrupt` for a stored value
//!   that no longer reads as the state (naming the field). It always ends:
//!   every walk, the SQL ones included, only goes to older ids.
//! * A step reported saved survives a crash of the process (SQLite: WAL with
//!   `synchronous = NORMAL`; `durable()` adds an `fsync` per step for power
//!   loss).
//!
//! The stored form is JSON with LangChain's messages inside, readable with
//! `sqlite3` and `psql`; the repository's `docs/DECISIONS.md` describes its
//! tables.

mod chain;
pub(crate) mod codec;
mod error;
mod executor;
mod memory;
mod record;
mod retain;
mod thread;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;

use std::future::Future;
use std::pin::Pin;

pub(crate) use codec::HeldInput;
pub use error::CheckpointError;
pub use executor::block_on;
pub use memory::MemoryCheckpointer;
pub use record::{
    CheckpointId, CheckpointMeta, NewCheckpoint, NodeWrite, PendingWrite, SnapshotPolicy, Source,
    StoredCheckpoint,
};
pub use retain::Pruned;
pub use thread::{StepRecord, Thread};

/// A boxed future, so [`Checkpointer`] can be used as a trait object
/// (`Arc<dyn Checkpointer>`): one allocation per call, which is nothing next
/// to the I/O behind it.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A storage backend for checkpoints, at the level of JSON records.
///
/// Users call it through [`Thread`]; implement it to add a backend. Every
/// method names a thread id, and threads never see each other's records.
///
/// The contract each backend keeps (the conformance tests in `tests/`
/// check it for the three built in):
///
/// * [`append`](Self::append) is a compare-and-swap on the thread's head: it
///   stores the record and makes it the head only if the head is still
///   `expected_head`, else it stores nothing and returns
///   [`CheckpointError::Conflict`]. Two writers of one thread therefore
///   never lose each other's steps: one wins, the other can reload and retry.
/// * A record that `append` reported stored survives a crash of the process.
/// * Checkpoint ids are allocated per thread, increase, and are never reused,
///   so a child's id is always greater than its parent's. That holds across
///   [`truncate_after`](Self::truncate_after) too: the ids it took off the
///   thread are not handed out again (a client may still hold one).
///   [`delete_thread`](Self::delete_thread) forgets the thread whole, its
///   ids with it: a thread created again under its id starts over.
/// * Records are stored as given: [`Thread`] writes a thread's first
///   checkpoint without a parent at step -1, and every later one with an
///   older parent and the parent's step plus one (a fork too, as in
///   LangGraph; a fork stored before that kept the parent's step, and still
///   loads). A load checks these links, so a chain with a record missing,
///   a loop or a record of another thread fails
///   ([`CheckpointError::Malformed`]), naming the checkpoint.
pub trait Checkpointer: Send + Sync + AsDynCheckpointer {
    /// Stores a new checkpoint as the thread's head if the head is
    /// `expected_head` (`None`: the thread must not exist yet).
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>>;

    /// Attaches a snapshot of the whole state (JSON) to a stored checkpoint.
    /// Snapshots only speed loading up: losing one loses nothing.
    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// The thread's head, without its snapshot; `None` for an unknown thread.
    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>>;

    /// What loading checkpoint `id` needs: the records from the nearest one
    /// with a snapshot (or the thread's first) to `id`, oldest first, the
    /// first with its snapshot. [`CheckpointError::NotFound`] if `id` is not
    /// in the thread.
    ///
    /// The walk follows parent links only to older checkpoints and stops at
    /// one that is missing, so it ends whatever the rows hold; [`Thread`]
    /// then checks the chain it got and names any break
    /// ([`CheckpointError::Malformed`]).
    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>>;

    /// Up to `limit` records of the thread with ids below `before` (all when
    /// `None`), newest first, without snapshots.
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>>;

    /// Deletes every record of the thread, and what it knew of the ids it
    /// gave out. Returns whether it existed.
    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>>;

    /// When [`Thread`] takes snapshots for this store.
    fn snapshot_policy(&self) -> SnapshotPolicy {
        SnapshotPolicy::default()
    }

    /// Keeps `writes` for the superstep running on checkpoint `checkpoint`
    /// (see [`PendingWrite`]); a write with the task and key of one kept
    /// before replaces it. All or none are stored. The default refuses
    /// with [`CheckpointError::Unsupported`]: a backend without pending
    /// writes runs graphs, but cannot pause them.
    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let _ = (thread_id, checkpoint, writes);
        Box::pin(async {
            Err(CheckpointError::Unsupported {
                operation: "put_pending",
            })
        })
    }

    /// Makes checkpoint `keep` the thread's head again, as one atomic
    /// change: every record after it (every id above it, forks included)
    /// is deleted with its pending writes, and nothing else. This is how a
    /// cancelled run's steps come off its thread (the Agent Server's
    /// `rollback`); a crash leaves the thread as it was before or after,
    /// never between. Returns how many records were deleted.
    ///
    /// `keep` of `None` takes every record off (the run that created the
    /// thread is rolled back): the thread has no checkpoint left, so
    /// [`head`](Self::head) answers `None` and the next
    /// [`append`](Self::append) expects no head, as for a new thread; unlike
    /// [`delete_thread`](Self::delete_thread), the thread keeps counting
    /// its ids. Either way the next id given out is greater than every id
    /// given out before, so a truncated id never names another record.
    ///
    /// `keep` itself keeps its snapshot and its own pending writes (those
    /// of the superstep that ran on it). Truncating to the head deletes
    /// nothing; `None` on a thread without records too.
    /// [`CheckpointError::NotFound`] if `keep` is not a record of the
    /// thread, and nothing changes.
    ///
    /// The default refuses with [`CheckpointError::Unsupported`]: a backend
    /// of your own must do it in one transaction (or under one lock) and
    /// remember the highest id it gave out, or it would break the
    /// contract above; the server's rollback then fails and says so.
    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        let _ = (thread_id, keep);
        Box::pin(async {
            Err(CheckpointError::Unsupported {
                operation: "truncate_after",
            })
        })
    }

    /// Takes every record older than `oldest` off the thread, as one
    /// atomic change, so its storage stays bounded: what
    /// [`Thread::keep_last`] stores after computing the `snapshots`.
    ///
    /// First each of `snapshots` (a checkpoint id of the thread, at or
    /// after `oldest`, and its whole state as [`put_snapshot`](Self::put_snapshot)
    /// takes it) is attached. Then every record kept (id `oldest` or
    /// above) must load without the ones taken off: it has a snapshot,
    /// or its parent is kept too; else nothing changes and the answer is
    /// [`CheckpointError::Malformed`] naming the first record that would
    /// break. Then the records below `oldest` go, with their pending
    /// writes, and a kept record whose parent went has no parent any
    /// more (its history starts there). The head, the ids given out and
    /// the kept records' pending writes are untouched. Returns how many
    /// records went. [`CheckpointError::NotFound`] if `oldest` or a
    /// snapshot's checkpoint is not a kept record of the thread.
    ///
    /// The default refuses with [`CheckpointError::Unsupported`].
    fn drop_before<'a>(
        &'a self,
        thread_id: &'a str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        let _ = (thread_id, oldest, snapshots);
        Box::pin(async {
            Err(CheckpointError::Unsupported {
                operation: "drop_before",
            })
        })
    }

    /// Deletes the pending writes no resume can read any more: those kept
    /// for a checkpoint that has a child (the step that ran on it landed,
    /// so a run goes on from the child, with the child's own writes).
    /// The writes of a checkpoint without a child stay, so a paused run
    /// (interrupts) and a step cut short still resume from theirs.
    /// Running a graph again from an older checkpoint (time travel) then
    /// runs that step's tasks again instead of reusing their writes.
    /// Returns how many writes went.
    ///
    /// The default refuses with [`CheckpointError::Unsupported`].
    fn collect_pending<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        let _ = thread_id;
        Box::pin(async {
            Err(CheckpointError::Unsupported {
                operation: "collect_pending",
            })
        })
    }

    /// Deletes the threads of the subgraphs the thread's steps ran: every
    /// thread whose id starts with `{thread_id}|` (a subgraph node runs
    /// its child on such a thread), with their records, pending writes and
    /// ids, as one atomic change; the thread itself stays (see
    /// [`delete_thread`](Self::delete_thread)). Returns how many threads
    /// went. What deleting a thread whole (the Agent Server's `DELETE
    /// /threads/{id}`) calls too, so no subgraph's records outlive it.
    ///
    /// The default refuses with [`CheckpointError::Unsupported`].
    fn delete_children<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        let _ = thread_id;
        Box::pin(async {
            Err(CheckpointError::Unsupported {
                operation: "delete_children",
            })
        })
    }

    /// The pending writes kept for checkpoint `checkpoint`, in task then
    /// key order; none for a checkpoint without any (or an unknown one).
    /// The default has none.
    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        let _ = (thread_id, checkpoint);
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A checkpointer as a trait object, so code generic over a checkpointer
/// (sized or not) can hand it to code that is not: what a subgraph node
/// needs to run its child on its parent's store. Implemented for every
/// checkpointer.
#[doc(hidden)]
pub trait AsDynCheckpointer {
    /// `self` as `&dyn Checkpointer`.
    fn as_dyn(&self) -> &dyn Checkpointer;
}

impl<T: Checkpointer> AsDynCheckpointer for T {
    fn as_dyn(&self) -> &dyn Checkpointer {
        self
    }
}

/// Rejects an empty thread id: LangGraph's checkpointers require one, and a
/// default would silently merge unrelated conversations.
pub(crate) fn check_thread_id(thread_id: &str) -> Result<(), CheckpointError> {
    if thread_id.is_empty() {
        Err(CheckpointError::MissingThreadId)
    } else {
        Ok(())
    }
}

/// The range of thread ids [`Checkpointer::delete_children`] deletes:
/// from `{thread_id}|` (included) to `{thread_id}}` (excluded), `}`
/// being the character after `|`, so an index on the id finds them.
pub(crate) fn children_range(thread_id: &str) -> (String, String) {
    (format!("{thread_id}|"), format!("{thread_id}}}"))
}

/// What [`Checkpointer::drop_before`] answers when a kept record would
/// lose its parent and has no snapshot to load from.
pub(crate) fn lost_parent(
    thread_id: &str,
    id: CheckpointId,
    parent: Option<CheckpointId>,
) -> CheckpointError {
    CheckpointError::Malformed {
        thread_id: thread_id.to_owned(),
        checkpoint: id,
        reason: format!(
            "it would lose its parent {} and has no snapshot to load from: give one for it",
            parent.map_or_else(|| "none".to_owned(), |p| p.to_string())
        ),
    }
}

/// Milliseconds since the Unix epoch, for `created_at_ms`.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
