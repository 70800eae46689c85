//! A checkpointer reached through a gate that runs before every call: it
//! may refuse the call (the SQLite file went away, see [`crate::watch`])
//! or hand over a fresh checkpointer (the PostgreSQL connection was lost
//! and is opened again, see [`crate::reconnect`]).

use std::sync::Arc;

use agent_state::checkpoint::{
    BoxFuture, CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, NewCheckpoint,
    PendingWrite, SnapshotPolicy, StoredCheckpoint,
};

/// What runs before each call to the checkpointer behind it.
pub(crate) trait Gate: Send + Sync {
    /// The checkpointer behind the gate.
    type Inner: Checkpointer + 'static;

    /// The checkpointer to make the call `operation` on, or why not.
    fn open(
        &self,
        operation: &'static str,
    ) -> BoxFuture<'_, Result<Arc<Self::Inner>, CheckpointError>>;

    /// The policy of the checkpointer behind it.
    fn snapshot_policy(&self) -> SnapshotPolicy;
}

/// A checkpointer whose every call goes through its gate.
pub(crate) struct Gated<G>(pub G);

/// Runs `$call` on what the gate opens for operation `$op`.
macro_rules! through {
    ($self:ident, $op:literal, |$inner:ident| $call:expr) => {
        Box::pin(async move {
            let $inner = $self.0.open($op).await?;
            $call.await
        })
    };
}

impl<G: Gate> Checkpointer for Gated<G> {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        through!(self, "append", |c| c.append(
            thread_id,
            expected_head,
            record
        ))
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        through!(self, "put_snapshot", |c| c
            .put_snapshot(thread_id, id, snapshot))
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        through!(self, "head", |c| c.head(thread_id))
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        through!(self, "chain", |c| c.chain(thread_id, id))
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        through!(self, "list", |c| c.list(thread_id, before, limit))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        through!(self, "delete_thread", |c| c.delete_thread(thread_id))
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.0.snapshot_policy()
    }

    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        through!(self, "put_pending", |c| c
            .put_pending(thread_id, checkpoint, writes))
    }

    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        through!(self, "pending", |c| c.pending(thread_id, checkpoint))
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        through!(self, "truncate_after", |c| c
            .truncate_after(thread_id, keep))
    }

    fn drop_before<'a>(
        &'a self,
        thread_id: &'a str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        through!(self, "drop_before", |c| c
            .drop_before(thread_id, oldest, snapshots))
    }

    fn collect_pending<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        through!(self, "collect_pending", |c| c.collect_pending(thread_id))
    }

    fn delete_children<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        through!(self, "delete_children", |c| c.delete_children(thread_id))
    }
}
