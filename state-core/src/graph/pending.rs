//! The runtime's pending writes: what a task of an unfinished superstep
//! left in the checkpoint (its writes when it finished, its interrupt
//! when it paused, the values it computed `once`), read back on resume.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::Interrupt;
use super::GraphError;
use crate::checkpoint::codec::upgrade_value;
use crate::checkpoint::{CheckpointError, CheckpointId, NodeWrite, PendingWrite};
use crate::state::{AgentState, StateUpdate, Stored};

/// Key of a finished task's writes.
pub(crate) const DONE: &str = "done";
/// Key of a paused task's interrupts and the answers it had.
pub(crate) const INTERRUPT: &str = "interrupt";
/// Key of the error of a task's failed attempt.
pub(crate) const ERROR: &str = "error";
/// Prefix of the keys of `NodeContext::once` values.
pub(crate) const ONCE: &str = "once:";
/// The task under which a checkpoint keeps its joins' progress.
pub(crate) const JOINS_TASK: &str = "__joins__";
/// The key of that progress.
pub(crate) const JOINS_KEY: &str = "joins";

/// A paused task: the values its earlier interrupts were answered with,
/// in call order, and the interrupts it waits on now (one for a node; a
/// subgraph's child may wait on several).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PausedTask {
    pub(crate) resume: Vec<Value>,
    pub(crate) interrupts: Vec<Interrupt>,
    /// The answers of each interrupt scope (`NodeContext::scoped`: a tool
    /// call's), in call order; absent from checkpoints stored before
    /// scopes were.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) scoped: BTreeMap<String, Vec<Value>>,
}

/// The joins' progress a checkpoint carries: per join, the sources that
/// finished since its target last ran, and the targets that fired in the
/// checkpoint's own step (they run next).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct JoinEntry {
    pub(crate) waiting: std::collections::BTreeMap<String, Vec<String>>,
    pub(crate) fired: Vec<String>,
    /// The deferred nodes reached and waiting for the rest to finish.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deferred: Vec<String>,
}

/// The pending writes of one checkpoint, by task.
pub(crate) struct Pending<U> {
    pub(crate) done: HashMap<String, Vec<NodeWrite<U>>>,
    pub(crate) paused: HashMap<String, PausedTask>,
    /// The error of each task whose last failed attempt left one.
    pub(crate) errors: HashMap<String, String>,
    pub(crate) memos: HashMap<String, HashMap<String, Value>>,
    pub(crate) joins: Option<JoinEntry>,
}

impl<U> Default for Pending<U> {
    fn default() -> Self {
        Self {
            done: HashMap::new(),
            paused: HashMap::new(),
            errors: HashMap::new(),
            memos: HashMap::new(),
            joins: None,
        }
    }
}

impl<U> Pending<U> {
    /// The interrupts still waiting for an answer, in task order.
    pub(crate) fn interrupts(&self, tasks: &[String]) -> Vec<Interrupt> {
        tasks
            .iter()
            .filter(|t| !self.done.contains_key(*t))
            .filter_map(|t| self.paused.get(t))
            .flat_map(|p| p.interrupts.iter().cloned())
            .collect()
    }
}

fn malformed(thread_id: &str, checkpoint: CheckpointId, reason: String) -> GraphError {
    GraphError::Checkpoint(CheckpointError::Malformed {
        thread_id: thread_id.to_owned(),
        checkpoint,
        reason,
    })
}

/// Reads the pending writes of checkpoint `checkpoint`, stored under
/// state version `version` (a finished task's updates are read through the
/// state's migration, as the checkpoint's own writes are).
pub(crate) fn decode<S: AgentState>(
    thread_id: &str,
    checkpoint: CheckpointId,
    version: u32,
    writes: Vec<PendingWrite>,
) -> Result<Pending<S::Update>, GraphError> {
    let mut pending = Pending::default();
    for w in writes {
        let bad = |e: &dyn std::fmt::Display| {
            let reason = format!("pending write `{}` of task `{}`: {e}", w.key, w.task);
            malformed(thread_id, checkpoint, reason)
        };
        let value: Value = serde_json::from_str(&w.value).map_err(|e| bad(&e))?;
        if w.task == JOINS_TASK {
            pending.joins = Some(serde_json::from_value(value).map_err(|e| bad(&e))?);
        } else if let Some(written) = done_version(&w.key, version) {
            let version = written.ok_or_else(|| bad(&"its state version does not read"))?;
            let stored: Vec<NodeWrite<Value>> =
                serde_json::from_value(value).map_err(|e| bad(&e))?;
            let writes = stored
                .into_iter()
                .map(|s| {
                    let value = upgrade_value::<S>(
                        thread_id,
                        checkpoint,
                        version,
                        Stored::Update,
                        s.update,
                    )?;
                    let update = S::Update::from_json(value).map_err(|e| bad(&e))?;
                    Ok(NodeWrite {
                        node: s.node,
                        update,
                        goto: s.goto,
                        send: s.send,
                    })
                })
                .collect::<Result<Vec<_>, GraphError>>()?;
            pending.done.insert(w.task, writes);
        } else if w.key == INTERRUPT {
            let paused = serde_json::from_value(value).map_err(|e| bad(&e))?;
            pending.paused.insert(w.task, paused);
        } else if w.key == ERROR {
            let error = serde_json::from_value(value).map_err(|e| bad(&e))?;
            pending.errors.insert(w.task, error);
        } else if let Some(key) = w.key.strip_prefix(ONCE) {
            pending
                .memos
                .entry(w.task.clone())
                .or_default()
                .insert(key.to_owned(), value);
        } else {
            return Err(bad(&"unknown key"));
        }
    }
    Ok(pending)
}

/// The state version a finished task's writes were kept under, when `key`
/// is such an entry's: `done@<version>` for a state past version 1, `done`
/// for version 1 (and entries kept before versions were: those of
/// `checkpoint_version`, the best guess there is). `Some(None)`: a version
/// that does not read.
fn done_version(key: &str, checkpoint_version: u32) -> Option<Option<u32>> {
    if key == DONE {
        return Some(Some(checkpoint_version));
    }
    let version = key.strip_prefix(DONE)?.strip_prefix('@')?;
    Some(version.parse().ok())
}

/// A finished task's writes, to keep while its step is unfinished, under
/// state version `version` (so a resume by a later version migrates
/// them). Gives their messages ids first, so the step stored later
/// carries the same.
pub(crate) fn done_entry<U: StateUpdate>(
    task: &str,
    step: i64,
    version: u32,
    writes: &mut [NodeWrite<U>],
) -> Result<PendingWrite, GraphError> {
    for w in writes.iter_mut() {
        w.update.assign_message_ids();
        for send in &w.send {
            send.arg_json().map_err(|error| GraphError::SendArg {
                node: send.node().to_owned(),
                error,
            })?;
        }
    }
    // Through the checkpoint's encoder: what it refuses (a value that
    // would not read back) fails the task, naming the field.
    let value = crate::checkpoint::codec::encode_writes(writes).map_err(|error| {
        GraphError::InvalidUpdate {
            step,
            nodes: vec![task.to_owned()],
            error,
        }
    })?;
    let key = match version {
        0 | 1 => DONE.to_owned(),
        _ => format!("{DONE}@{version}"),
    };
    Ok(PendingWrite {
        task: task.to_owned(),
        key,
        value,
    })
}

/// A paused task's entry.
pub(crate) fn paused_entry(task: &str, paused: &PausedTask) -> PendingWrite {
    PendingWrite {
        task: task.to_owned(),
        key: INTERRUPT.to_owned(),
        value: serde_json::to_string(paused).expect("interrupts serialize"),
    }
}

/// A failed task's entry: its error, shown by a snapshot of its
/// checkpoint. U+0000 becomes U+FFFD: PostgreSQL's `jsonb` cannot hold it,
/// and the text is only shown.
pub(crate) fn error_entry(task: &str, error: &str) -> PendingWrite {
    PendingWrite {
        task: task.to_owned(),
        key: ERROR.to_owned(),
        value: Value::from(error.replace('\0', "\u{fffd}")).to_string(),
    }
}

/// A checkpoint's joins entry.
pub(crate) fn joins_entry(entry: &JoinEntry) -> PendingWrite {
    PendingWrite {
        task: JOINS_TASK.to_owned(),
        key: JOINS_KEY.to_owned(),
        value: serde_json::to_string(entry).expect("join progress serializes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paused task stored before interrupt scopes existed still reads.
    #[test]
    fn a_paused_task_without_scopes_reads() {
        let old = serde_json::json!({"resume": ["yes"], "interrupts": []});
        let paused: PausedTask = serde_json::from_value(old).unwrap();
        assert_eq!(paused.resume, ["yes"]);
        assert!(paused.scoped.is_empty());
        let written = serde_json::to_value(&paused).unwrap();
        assert!(written.get("scoped").is_none(), "{written}");
    }
}
