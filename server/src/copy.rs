//! Copying a thread's checkpoints, record by record, through the
//! checkpointer's own interface: what `POST /threads/{id}/copy` stores.
//! (A rolled-back run's steps come off its thread in place, with
//! `Checkpointer::truncate_after`: see `task.rs`.)

use std::collections::HashMap;

use agent_state::checkpoint::{
    CheckpointError, CheckpointId, Checkpointer, NewCheckpoint, StoredCheckpoint,
};

/// Copies the checkpoints of thread `from` (those up to `upto`, or all) to
/// the new thread `to`, oldest first, with their snapshots and pending
/// writes; each copy's parent is the copy of the original's parent.
pub(crate) async fn copy_thread(
    saver: &dyn Checkpointer,
    from: &str,
    to: &str,
    upto: Option<CheckpointId>,
) -> Result<(), CheckpointError> {
    let mut records = saver.list(from, None, usize::MAX).await?;
    records.retain(|r| upto.is_none_or(|last| r.meta.id <= last));
    records.reverse();
    let mut ids: HashMap<CheckpointId, CheckpointId> = HashMap::new();
    let mut head = None;
    for record in records {
        let old = record.meta.id;
        let snapshot = snapshot_of(saver, from, old).await?;
        let new = NewCheckpoint {
            parent: record.meta.parent.and_then(|p| ids.get(&p).copied()),
            step: record.meta.step,
            source: record.meta.source,
            version: record.meta.version,
            writes: record.writes,
            log_bytes: record.log_bytes,
            base_bytes: record.base_bytes,
            snapshot: None,
        };
        let meta = saver.append(to, head, new).await?;
        if let Some(snapshot) = snapshot {
            saver.put_snapshot(to, meta.id, snapshot).await?;
        }
        let pending = saver.pending(from, old).await?;
        if !pending.is_empty() {
            saver.put_pending(to, meta.id, pending).await?;
        }
        ids.insert(old, meta.id);
        head = Some(meta.id);
    }
    Ok(())
}

/// The snapshot stored with checkpoint `id`, if it has one (the chain to a
/// checkpoint starts at the nearest one with a snapshot).
async fn snapshot_of(
    saver: &dyn Checkpointer,
    thread_id: &str,
    id: CheckpointId,
) -> Result<Option<String>, CheckpointError> {
    let chain = saver.chain(thread_id, id).await?;
    Ok(chain
        .into_iter()
        .next()
        .filter(|first: &StoredCheckpoint| first.meta.id == id)
        .and_then(|first| first.snapshot))
}
