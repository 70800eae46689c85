//! Checkpoints in memory, for tests and short-lived runs (LangGraph's
//! `MemorySaver`). Records are kept as the same JSON text the persistent
//! backends store, so a state that would not survive SQLite fails here too.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::record::{
    CheckpointId, CheckpointMeta, NewCheckpoint, PendingWrite, SnapshotPolicy, StoredCheckpoint,
};
use super::{
    check_thread_id, children_range, lost_parent, now_ms, BoxFuture, CheckpointError, Checkpointer,
};

struct ThreadLog {
    /// `None` once [`Checkpointer::truncate_after`] took every record off.
    head: Option<CheckpointId>,
    /// The highest id given out, kept past a truncation so no id is given
    /// out twice.
    last: u64,
    records: BTreeMap<CheckpointId, StoredCheckpoint>,
    /// Pending writes by (checkpoint, task, key).
    pending: BTreeMap<(CheckpointId, String, String), String>,
}

/// Checkpoints in a process's memory: gone when it exits.
///
/// Cheap to clone behind an `Arc`; every method takes `&self`.
#[derive(Default)]
pub struct MemoryCheckpointer {
    threads: Mutex<HashMap<String, ThreadLog>>,
    policy: Option<SnapshotPolicy>,
}

impl MemoryCheckpointer {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes snapshots by `policy` instead of the default.
    #[must_use]
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ThreadLog>> {
        // A panic elsewhere while holding the lock cannot leave a half-written
        // record: every change below is made after all checks (an insert,
        // or a truncation's cuts, which cannot fail).
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append_sync(
        &self,
        thread_id: &str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> Result<CheckpointMeta, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut threads = self.lock();
        let found = threads.get(thread_id).and_then(|t| t.head);
        if found != expected_head {
            return Err(CheckpointError::Conflict {
                thread_id: thread_id.to_owned(),
                expected: expected_head,
                found,
            });
        }
        let log = threads
            .entry(thread_id.to_owned())
            .or_insert_with(|| ThreadLog {
                head: None,
                last: 0,
                records: BTreeMap::new(),
                pending: BTreeMap::new(),
            });
        let meta = CheckpointMeta {
            thread_id: thread_id.to_owned(),
            id: CheckpointId(log.last + 1),
            parent: record.parent,
            step: record.step,
            source: record.source,
            version: record.version,
            created_at_ms: now_ms(),
        };
        log.head = Some(meta.id);
        log.last = meta.id.0;
        log.records.insert(
            meta.id,
            StoredCheckpoint {
                meta: meta.clone(),
                writes: record.writes,
                log_bytes: record.log_bytes,
                base_bytes: record.base_bytes,
                snapshot: record.snapshot,
            },
        );
        Ok(meta)
    }

    fn put_pending_sync(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        check_thread_id(thread_id)?;
        let mut threads = self.lock();
        let log = threads
            .get_mut(thread_id)
            .filter(|log| log.records.contains_key(&checkpoint))
            .ok_or_else(|| CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(checkpoint),
            })?;
        for w in writes {
            log.pending.insert((checkpoint, w.task, w.key), w.value);
        }
        Ok(())
    }

    fn pending_sync(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
    ) -> Result<Vec<PendingWrite>, CheckpointError> {
        check_thread_id(thread_id)?;
        let threads = self.lock();
        let Some(log) = threads.get(thread_id) else {
            return Ok(Vec::new());
        };
        let from = (checkpoint, String::new(), String::new());
        Ok(log
            .pending
            .range(from..)
            .take_while(|((id, _, _), _)| *id == checkpoint)
            .map(|((_, task, key), value)| PendingWrite {
                task: task.clone(),
                key: key.clone(),
                value: value.clone(),
            })
            .collect())
    }

    /// [`Checkpointer::truncate_after`]: every check before the first
    /// change, all of it under the lock.
    fn truncate_sync(
        &self,
        thread_id: &str,
        keep: Option<CheckpointId>,
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut threads = self.lock();
        let log = threads.get_mut(thread_id);
        let log = match (log, keep) {
            (Some(log), Some(id)) if log.records.contains_key(&id) => log,
            (Some(log), None) => log,
            (None, None) => return Ok(0),
            (_, Some(id)) => {
                return Err(CheckpointError::NotFound {
                    thread_id: thread_id.to_owned(),
                    checkpoint: Some(id),
                })
            }
        };
        // The first id to drop: everything from it on goes.
        let from = CheckpointId(keep.map_or(0, |id| id.0 + 1));
        let dropped = log.records.split_off(&from);
        log.pending.split_off(&(from, String::new(), String::new()));
        log.head = keep;
        Ok(dropped.len() as u64)
    }

    /// [`Checkpointer::drop_before`]: every check before the first
    /// change, all of it under the lock.
    fn drop_before_sync(
        &self,
        thread_id: &str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut threads = self.lock();
        let not_found = |id| CheckpointError::NotFound {
            thread_id: thread_id.to_owned(),
            checkpoint: Some(id),
        };
        let log = threads
            .get_mut(thread_id)
            .ok_or_else(|| not_found(oldest))?;
        let kept = |id: &CheckpointId| *id >= oldest && log.records.contains_key(id);
        if let Some(id) = std::iter::once(oldest)
            .chain(snapshots.iter().map(|(id, _)| *id))
            .find(|id| !kept(id))
        {
            return Err(not_found(id));
        }
        let broken = log.records.range(oldest..).find(|(id, r)| {
            r.snapshot.is_none()
                && r.meta.parent.is_some_and(|p| p < oldest)
                && !snapshots.iter().any(|(s, _)| s == *id)
        });
        if let Some((id, record)) = broken {
            return Err(lost_parent(thread_id, *id, record.meta.parent));
        }
        for (id, snapshot) in snapshots {
            let record = log.records.get_mut(&id).expect("checked above");
            record.base_bytes = snapshot.len() as u64;
            record.log_bytes = 0;
            record.snapshot = Some(snapshot);
        }
        let kept = log.records.split_off(&oldest);
        let dropped = std::mem::replace(&mut log.records, kept).len();
        let kept_writes = log
            .pending
            .split_off(&(oldest, String::new(), String::new()));
        log.pending = kept_writes;
        for record in log.records.values_mut() {
            if record.meta.parent.is_some_and(|p| p < oldest) {
                record.meta.parent = None;
            }
        }
        Ok(dropped as u64)
    }

    /// [`Checkpointer::collect_pending`].
    fn collect_pending_sync(&self, thread_id: &str) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut threads = self.lock();
        let Some(log) = threads.get_mut(thread_id) else {
            return Ok(0);
        };
        let landed: std::collections::HashSet<CheckpointId> =
            log.records.values().filter_map(|r| r.meta.parent).collect();
        let before = log.pending.len();
        log.pending.retain(|(id, _, _), _| !landed.contains(id));
        Ok((before - log.pending.len()) as u64)
    }

    fn chain_sync(
        &self,
        thread_id: &str,
        id: CheckpointId,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let threads = self.lock();
        let not_found = || CheckpointError::NotFound {
            thread_id: thread_id.to_owned(),
            checkpoint: Some(id),
        };
        let log = threads.get(thread_id).ok_or_else(not_found)?;
        let mut chain = Vec::new();
        let mut next = Some(id);
        // The walk ends at a snapshot, at the thread's first checkpoint, at
        // a missing parent, or at a parent that is not older (never loops):
        // the loader names the last two.
        while let Some(at) = next {
            let Some(record) = log.records.get(&at) else {
                break;
            };
            chain.push(record.clone());
            if record.snapshot.is_some() {
                break;
            }
            next = record.meta.parent.filter(|&parent| parent < at);
        }
        if chain.is_empty() {
            return Err(not_found());
        }
        chain.reverse();
        Ok(chain)
    }
}

fn without_snapshot(record: &StoredCheckpoint) -> StoredCheckpoint {
    StoredCheckpoint {
        meta: record.meta.clone(),
        writes: record.writes.clone(),
        log_bytes: record.log_bytes,
        base_bytes: record.base_bytes,
        snapshot: None,
    }
}

impl Checkpointer for MemoryCheckpointer {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        Box::pin(async move { self.append_sync(thread_id, expected_head, record) })
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let mut threads = self.lock();
            let record = threads
                .get_mut(thread_id)
                .and_then(|log| log.records.get_mut(&id))
                .ok_or_else(|| CheckpointError::NotFound {
                    thread_id: thread_id.to_owned(),
                    checkpoint: Some(id),
                })?;
            record.base_bytes = snapshot.len() as u64;
            record.log_bytes = 0;
            record.snapshot = Some(snapshot);
            Ok(())
        })
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let threads = self.lock();
            Ok(threads
                .get(thread_id)
                .and_then(|log| log.records.get(&log.head?))
                .map(without_snapshot))
        })
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move { self.chain_sync(thread_id, id) })
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let threads = self.lock();
            let Some(log) = threads.get(thread_id) else {
                return Ok(Vec::new());
            };
            let upper = before.unwrap_or(CheckpointId(u64::MAX));
            Ok(log
                .records
                .range(..upper)
                .rev()
                .take(limit)
                .map(|(_, r)| without_snapshot(r))
                .collect())
        })
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            Ok(self.lock().remove(thread_id).is_some())
        })
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.policy.unwrap_or_default()
    }

    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move { self.put_pending_sync(thread_id, checkpoint, writes) })
    }

    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        Box::pin(async move { self.pending_sync(thread_id, checkpoint) })
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.truncate_sync(thread_id, keep) })
    }

    fn drop_before<'a>(
        &'a self,
        thread_id: &'a str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.drop_before_sync(thread_id, oldest, snapshots) })
    }

    fn collect_pending<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.collect_pending_sync(thread_id) })
    }

    fn delete_children<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let (from, to) = children_range(thread_id);
            let mut threads = self.lock();
            let before = threads.len();
            threads.retain(|id, _| !(*id >= from && *id < to));
            Ok((before - threads.len()) as u64)
        })
    }
}
