//! The error of checkpointers: every case names the thread, and the
//! checkpoint where there is one.

use std::error::Error;
use std::fmt;

use super::record::CheckpointId;
use crate::error::StateError;
use crate::state::MigrationError;

/// Why a checkpoint could not be saved or loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The thread id was empty. Checkpoints are kept per thread, and a
    /// default thread would silently merge unrelated conversations.
    MissingThreadId,
    /// Another writer moved the thread's head since this one loaded it.
    /// Nothing was stored: reload the thread and retry the step.
    Conflict {
        /// The thread.
        thread_id: String,
        /// The head the writer expected (`None`: a new thread).
        expected: Option<CheckpointId>,
        /// The head it found (`None`: the thread is gone).
        found: Option<CheckpointId>,
    },
    /// The thread, or the checkpoint in it, does not exist.
    NotFound {
        /// The thread.
        thread_id: String,
        /// The checkpoint asked for, if one was.
        checkpoint: Option<CheckpointId>,
    },
    /// The state rejected the step (see the [`StateError`]); nothing was
    /// stored and the state is unchanged.
    Rejected(StateError),
    /// A stored checkpoint no longer reads as the state: a field renamed or
    /// retyped since it was written, without a version bump and migration.
    /// Never papered over with defaults. The error names the field; a record
    /// or a chain at fault without one (not in the checkpoint format, not
    /// the chain that was stored) is [`Malformed`](Self::Malformed).
    Corrupt {
        /// The thread.
        thread_id: String,
        /// The checkpoint whose snapshot or writes failed.
        checkpoint: CheckpointId,
        /// What failed, naming the field.
        error: StateError,
    },
    /// A stored record is not in the checkpoint format at all (its writes
    /// are not a JSON list of `{node, update}`, its source is unknown, a
    /// column holds a value of the wrong type), or the chain a load reads is
    /// not the one that was stored: broken at this checkpoint (its parent is
    /// missing, is not older than it, is of another step; the records
    /// before it are gone), or never stored for the thread (a record of
    /// another thread, a chain ending at another checkpoint).
    Malformed {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint was written by a newer version of the state than this
    /// program's: loading it could drop what the newer version added.
    NewerVersion {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The version it was written under.
        stored: u32,
        /// This program's [`AgentState::VERSION`](crate::AgentState::VERSION).
        current: u32,
    },
    /// The state's migration could not upgrade a stored checkpoint.
    Migration {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The version the migration was asked to upgrade from.
        from: u32,
        /// The migration's error.
        error: MigrationError,
    },
    /// The step was stored and applied, but the snapshot after it was not:
    /// do not retry the step. Loading still works, by replaying more.
    Snapshot {
        /// The thread.
        thread_id: String,
        /// The checkpoint whose snapshot failed.
        checkpoint: CheckpointId,
        /// Why.
        error: Box<CheckpointError>,
    },
    /// The backend does not implement an operation a feature needs: a
    /// [`Checkpointer`](super::Checkpointer) without pending writes cannot
    /// keep a paused run (interrupts) or a half-finished superstep; one
    /// without `truncate_after` cannot take a rolled-back run's steps off
    /// its thread.
    Unsupported {
        /// The operation: `"put_pending"`, `"truncate_after"`, ...
        operation: &'static str,
    },
    /// An argument was refused before anything was read or changed: a
    /// [`Thread::keep_last`](super::Thread::keep_last) of 0 checkpoints,
    /// say (a thread always keeps its head).
    InvalidArgument {
        /// The argument, by name: `"keep"`, ...
        name: &'static str,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The storage itself failed (I/O, SQL, connection).
    Backend {
        /// What was being done: `"append"`, `"open"`, ...
        operation: &'static str,
        /// The driver's error.
        source: Box<dyn Error + Send + Sync>,
    },
}

impl CheckpointError {
    /// A storage failure during `operation`.
    pub fn backend(
        operation: &'static str,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        CheckpointError::Backend {
            operation,
            source: source.into(),
        }
    }

    /// Whether this is a [`Conflict`](CheckpointError::Conflict): another
    /// writer won, and reloading then retrying is the right move.
    pub fn is_conflict(&self) -> bool {
        matches!(self, CheckpointError::Conflict { .. })
    }
}

fn fmt_head(head: Option<CheckpointId>) -> String {
    head.map_or_else(|| "none".to_owned(), |id| id.to_string())
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::MissingThreadId => {
                f.write_str("a thread id is required to save or load checkpoints")
            }
            CheckpointError::Conflict {
                thread_id,
                expected,
                found,
            } => write!(
                f,
                "thread `{thread_id}`: another writer saved first (expected head {}, found {}); reload and retry",
                fmt_head(*expected),
                fmt_head(*found)
            ),
            CheckpointError::NotFound {
                thread_id,
                checkpoint: None,
            } => write!(f, "thread `{thread_id}` has no checkpoints"),
            CheckpointError::NotFound {
                thread_id,
                checkpoint: Some(id),
            } => write!(f, "thread `{thread_id}` has no checkpoint {id}"),
            CheckpointError::Rejected(error) => write!(f, "step rejected: {error}"),
            CheckpointError::Corrupt {
                thread_id,
                checkpoint,
                error,
            } => write!(
                f,
                "thread `{thread_id}`, checkpoint {checkpoint} does not load: {error}"
            ),
            CheckpointError::Malformed {
                thread_id,
                checkpoint,
                reason,
            } => write!(
                f,
                "thread `{thread_id}`, checkpoint {checkpoint} is malformed: {reason}"
            ),
            CheckpointError::NewerVersion {
                thread_id,
                checkpoint,
                stored,
                current,
            } => write!(
                f,
                "thread `{thread_id}`, checkpoint {checkpoint} was written by state version {stored}, newer than this program's {current}"
            ),
            CheckpointError::Migration {
                thread_id,
                checkpoint,
                from,
                error,
            } => write!(
                f,
                "thread `{thread_id}`, checkpoint {checkpoint}: migration from version {from} failed: {error}"
            ),
            CheckpointError::Snapshot {
                thread_id,
                checkpoint,
                error,
            } => write!(
                f,
                "thread `{thread_id}`, checkpoint {checkpoint} was saved, but its snapshot was not: {error}"
            ),
            CheckpointError::Unsupported { operation } => write!(
                f,
                "this checkpointer does not implement `{operation}`, which {} need",
                needed_by(operation)
            ),
            CheckpointError::InvalidArgument { name, reason } => {
                write!(f, "`{name}`: {reason}")
            }
            CheckpointError::Backend { operation, source } => {
                write!(f, "checkpoint storage failed during {operation}: {source}")
            }
        }
    }
}

impl Error for CheckpointError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CheckpointError::Rejected(error) | CheckpointError::Corrupt { error, .. } => {
                Some(error)
            }
            CheckpointError::Migration { error, .. } => Some(error),
            CheckpointError::Snapshot { error, .. } => Some(error.as_ref()),
            CheckpointError::Backend { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

impl From<StateError> for CheckpointError {
    fn from(error: StateError) -> Self {
        CheckpointError::Rejected(error)
    }
}

/// What needs a checkpointer's optional `operation`, for its
/// [`CheckpointError::Unsupported`] message.
fn needed_by(operation: &str) -> &'static str {
    match operation {
        "truncate_after" => "rolling a run back (taking its steps off its thread)",
        "drop_before" => "keeping only a thread's last checkpoints",
        "collect_pending" => "collecting the pending writes of steps that landed",
        "delete_children" => "deleting the threads of a thread's subgraphs",
        _ => "pausing a run (interrupts) and keeping a superstep's finished tasks",
    }
}
