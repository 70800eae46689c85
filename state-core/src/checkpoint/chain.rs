//! What a load checks of the records a backend returns: they must be the
//! chain that was stored, unbroken, or the load fails with
//! [`CheckpointError::Malformed`] naming the thread, the checkpoint and
//! what is wrong. Never a default state plus a tail.
//!
//! The rules every record keeps, as [`Thread`](super::Thread) writes them:
//! a checkpoint's parent is an older checkpoint of the same thread (ids
//! increase); its step is its parent's plus one (or its parent's own, for
//! a fork stored by an earlier version); a checkpoint without a parent is
//! the thread's first: step -1 (a run's input), or 0 for an update made to
//! a new thread. A load starts at a snapshot or at the thread's first
//! checkpoint, so a walk that ends anywhere else has lost records.
//!
//! A run's input is two checkpoints, as LangGraph stores it: `input` (the
//! state before it, no writes) and `loop` (`__start__`'s write applying
//! it). Threads stored before kept one `input` checkpoint with the input
//! applied; both keep these rules, so both load.

use super::record::{CheckpointId, Source, StoredCheckpoint};
use super::CheckpointError;

/// Checks that `chain` (oldest first) is the stored chain of checkpoint
/// `id` in `thread_id`.
pub(super) fn check_chain(
    thread_id: &str,
    id: CheckpointId,
    chain: &[StoredCheckpoint],
) -> Result<(), CheckpointError> {
    let (Some(first), Some(last)) = (chain.first(), chain.last()) else {
        return Err(CheckpointError::NotFound {
            thread_id: thread_id.to_owned(),
            checkpoint: Some(id),
        });
    };
    let broken = |at: CheckpointId, reason: String| CheckpointError::Malformed {
        thread_id: thread_id.to_owned(),
        checkpoint: at,
        reason,
    };
    if last.meta.id != id {
        return Err(broken(
            id,
            format!("the store returned checkpoint {} as its last", last.meta.id),
        ));
    }
    for record in chain {
        let at = record.meta.id;
        if record.meta.thread_id != thread_id {
            return Err(broken(
                at,
                format!(
                    "the store returned it from thread `{}`",
                    record.meta.thread_id
                ),
            ));
        }
        if let Some(parent) = record.meta.parent.filter(|&p| p >= at) {
            return Err(broken(
                at,
                format!("its parent {parent} is not older than it (parent links must lead back to the thread's first checkpoint)"),
            ));
        }
    }
    for pair in chain.windows(2) {
        check_link(&pair[0], &pair[1]).map_err(|reason| broken(pair[1].meta.id, reason))?;
    }
    check_start(first).map_err(|reason| broken(first.meta.id, reason))
}

/// `newer` continues from `older`.
fn check_link(older: &StoredCheckpoint, newer: &StoredCheckpoint) -> Result<(), String> {
    if newer.meta.parent != Some(older.meta.id) {
        return Err(format!(
            "its parent is {}, but the store returned checkpoint {} before it",
            newer
                .meta
                .parent
                .map_or("none".to_owned(), |p| p.to_string()),
            older.meta.id
        ));
    }
    // A fork is its parent's step plus one; one stored before forks were
    // numbered so kept its parent's step.
    let expected = older.meta.step + 1;
    let old_fork = newer.meta.source == Source::Fork && newer.meta.step == older.meta.step;
    if newer.meta.step != expected && !old_fork {
        return Err(format!(
            "it is step {} but its parent {} is step {}: the records between them are missing",
            newer.meta.step, older.meta.id, older.meta.step
        ));
    }
    Ok(())
}

/// A load may start at `first`: it has a snapshot, or it is the thread's
/// first checkpoint.
fn check_start(first: &StoredCheckpoint) -> Result<(), String> {
    if first.snapshot.is_some() {
        return Ok(());
    }
    match first.meta.parent {
        None if first.meta.step == -1 => Ok(()),
        // An update to a new thread (`update_state`), as LangGraph numbers it.
        None if first.meta.step == 0 && first.meta.source == Source::Update => Ok(()),
        None => Err(format!(
            "it has neither a parent nor a snapshot, but is step {}, not the thread's first: the records before it are missing",
            first.meta.step
        )),
        Some(parent) => Err(format!("its parent {parent} is missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointMeta;

    fn record(id: u64, parent: Option<u64>, step: i64) -> StoredCheckpoint {
        StoredCheckpoint {
            meta: CheckpointMeta {
                thread_id: "t".into(),
                id: CheckpointId(id),
                parent: parent.map(CheckpointId),
                step,
                source: Source::Loop,
                version: 1,
                created_at_ms: 0,
            },
            writes: "[]".into(),
            log_bytes: 0,
            base_bytes: 0,
            snapshot: None,
        }
    }

    fn reason(chain: &[StoredCheckpoint], id: u64) -> (CheckpointId, String) {
        match check_chain("t", CheckpointId(id), chain) {
            Err(CheckpointError::Malformed {
                thread_id,
                checkpoint,
                reason,
            }) => {
                assert_eq!(thread_id, "t");
                (checkpoint, reason)
            }
            other => panic!("expected a broken chain, got {other:?}"),
        }
    }

    #[test]
    fn an_unbroken_chain_passes() {
        let chain = [
            record(1, None, -1),
            record(2, Some(1), 0),
            record(3, Some(2), 1),
        ];
        assert!(check_chain("t", CheckpointId(3), &chain).is_ok());
        let mut fork = record(4, Some(2), 1);
        fork.meta.source = Source::Fork;
        let chain = [record(1, None, -1), record(2, Some(1), 0), fork.clone()];
        assert!(check_chain("t", CheckpointId(4), &chain).is_ok());
        // A fork stored with its parent's step (before forks were numbered
        // as LangGraph does) still loads.
        fork.meta.step = 0;
        let chain = [record(1, None, -1), record(2, Some(1), 0), fork];
        assert!(check_chain("t", CheckpointId(4), &chain).is_ok());
        let mut snap = record(5, Some(4), 3);
        snap.snapshot = Some("{}".into());
        assert!(check_chain("t", CheckpointId(6), &[snap, record(6, Some(5), 4)]).is_ok());
    }

    #[test]
    fn the_input_stored_once_or_twice_loads() {
        let input = |id, parent, step, writes: &str| {
            let mut r = record(id, parent, step);
            r.meta.source = Source::Input;
            r.writes = writes.into();
            r
        };
        // Before: the input once, applied (`__start__`'s write), step -1.
        let start = r#"[{"node":"__start__","update":{}}]"#;
        let old = [input(1, None, -1, start), record(2, Some(1), 0)];
        assert!(check_chain("t", CheckpointId(2), &old).is_ok());
        // Now, as LangGraph: the state before it (-1), then applied (0).
        let mut applied = record(2, Some(1), 0);
        applied.writes = start.into();
        let new = [input(1, None, -1, "[]"), applied, record(3, Some(2), 1)];
        assert!(check_chain("t", CheckpointId(3), &new).is_ok());
        // A later run's input on an old thread continues its numbering.
        let mut later = old.to_vec();
        later.push(input(3, Some(2), 1, "[]"));
        assert!(check_chain("t", CheckpointId(3), &later).is_ok());
        // An update to a new thread is its step 0; only an update may be.
        let mut update = record(1, None, 0);
        update.meta.source = Source::Update;
        assert!(check_chain("t", CheckpointId(1), &[update]).is_ok());
        let (_, why) = reason(&[record(1, None, 0)], 1);
        assert!(why.contains("neither a parent nor a snapshot"), "{why}");
    }

    #[test]
    fn every_break_is_named() {
        let (at, why) = reason(&[record(3, Some(3), 1)], 3);
        assert_eq!(at, CheckpointId(3));
        assert!(why.contains("not older"), "{why}");
        let (at, why) = reason(&[record(4, Some(2), 2)], 4);
        assert_eq!(at, CheckpointId(4));
        assert!(why.contains("parent 2 is missing"), "{why}");
        let (at, why) = reason(&[record(4, None, 2)], 4);
        assert_eq!(at, CheckpointId(4));
        assert!(why.contains("neither a parent nor a snapshot"), "{why}");
        let (at, why) = reason(&[record(1, None, -1), record(3, Some(1), 1)], 3);
        assert_eq!(at, CheckpointId(3));
        assert!(why.contains("step 1 but its parent 1 is step -1"), "{why}");
        let (_, why) = reason(&[record(1, None, -1), record(3, Some(2), 0)], 3);
        assert!(why.contains("its parent is 2"), "{why}");
        let mut foreign = record(2, Some(1), 0);
        foreign.meta.thread_id = "other".into();
        let (at, why) = reason(&[record(1, None, -1), foreign], 2);
        assert_eq!(at, CheckpointId(2));
        assert!(why.contains("thread `other`"), "{why}");
        let (at, why) = reason(&[record(1, None, -1)], 2);
        assert_eq!(at, CheckpointId(2));
        assert!(why.contains("returned checkpoint 1"), "{why}");
        assert!(matches!(
            check_chain("t", CheckpointId(1), &[]),
            Err(CheckpointError::NotFound { .. })
        ));
    }
}
