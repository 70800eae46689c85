//! What a snapshot of a thread and a stream say of it and of a step's
//! tasks: how each ended, what it wrote, its error, a subgraph's own
//! snapshot; below the stream, the run and the editing functions, which
//! all show them.

use serde_json::{json, Map, Value};

use super::context::Interrupt;
use super::error::GraphError;
use super::pending::Pending;
use super::{Graph, Task};
use crate::checkpoint::{CheckpointMeta, NodeWrite};
use crate::state::{AgentState, StateUpdate};

/// How a task ended (`tasks` mode).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// It returned its writes (the step may still fail as a whole).
    Finished,
    /// It paused on these interrupts.
    Paused(Vec<Interrupt>),
    /// It failed, with this error.
    Failed(String),
}

/// A thread as it stands at a checkpoint: LangGraph's `StateSnapshot`.
///
/// [`Graph::get_state`](super::Graph::get_state) shows the thread as it is now: the state with the
/// writes of the tasks of its unfinished step that finished (kept as
/// pending writes), what is still to run and the interrupts still waiting.
/// A checkpoint read by id ([`Graph::get_state_at`](super::Graph::get_state_at),
/// [`Graph::state_history`](super::Graph::state_history)) is a record of its step: the state it holds,
/// every task of the step that follows it and every interrupt they raised.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSnapshot<S> {
    /// The state.
    pub values: S,
    /// The nodes that run next, once per task: empty when the thread's run
    /// finished (or it has none).
    pub next: Vec<String>,
    /// The interrupts the thread is paused on.
    pub interrupts: Vec<Interrupt>,
    /// The checkpoint; `None` for a thread with none.
    pub checkpoint: Option<CheckpointMeta>,
    /// The tasks of the step that follows the checkpoint, in task order,
    /// with what an attempt at them left.
    pub tasks: Vec<SnapshotTask>,
}

/// A task of the step a thread runs next, as a [`StateSnapshot`] lists it:
/// LangGraph's `StateSnapshot.tasks` (a `PregelTask`).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotTask {
    /// The task: its node's name, or `node[k]` for the `k`-th `Send` of the
    /// step (what interrupt ids and the `tasks` stream name it by).
    pub id: String,
    /// Its node.
    pub name: String,
    /// The error of an attempt at it that failed.
    pub error: Option<String>,
    /// The interrupts it paused on: in [`Graph::get_state`](super::Graph::get_state), those still
    /// waiting for an answer (none once it finished); read by id, every
    /// one it raised.
    pub interrupts: Vec<Interrupt>,
    /// What it wrote, once an attempt finished: LangGraph's result,
    /// `{field: value}`, a field written several times as
    /// `{"$writes": [..]}`.
    pub result: Option<Value>,
    /// For a subgraph's task, read by
    /// [`Graph::get_state_with_subgraphs`](super::Graph::get_state_with_subgraphs): the subgraph's own snapshot as
    /// it stands (paused inside, say), its values as JSON, its interrupt
    /// ids those the parent resumes them by (LangGraph's
    /// `StateSnapshot.tasks[i].state` with `subgraphs=True`). `None`
    /// otherwise.
    pub state: Option<Box<StateSnapshot<Value>>>,
}

impl<S: AgentState> StateSnapshot<S> {
    /// The snapshot of a subgraph as its parent's task shows it: values as
    /// JSON, interrupt ids (its own and its subgraphs') after `prefix`,
    /// the id the parent gives them.
    pub(crate) fn into_task_state(self, prefix: &str) -> StateSnapshot<Value> {
        let mut snapshot = StateSnapshot {
            values: self.values.to_json(),
            next: self.next,
            interrupts: self.interrupts,
            checkpoint: self.checkpoint,
            tasks: self.tasks,
        };
        snapshot.prefix_interrupt_ids(prefix);
        snapshot
    }
}

impl StateSnapshot<Value> {
    fn prefix_interrupt_ids(&mut self, prefix: &str) {
        let prefixed = |list: &mut Vec<Interrupt>| {
            for interrupt in list {
                interrupt.id.insert_str(0, prefix);
            }
        };
        prefixed(&mut self.interrupts);
        for task in &mut self.tasks {
            prefixed(&mut task.interrupts);
            if let Some(inside) = &mut task.state {
                inside.prefix_interrupt_ids(prefix);
            }
        }
    }
}

/// The tasks of a step as a snapshot (or a checkpoint's `debug` payload)
/// lists them, with what an earlier attempt left in `pending`: every
/// interrupt a task raised, or, `live`, those still waiting.
pub(crate) fn snapshot_tasks<S: AgentState>(
    graph: &Graph<S>,
    tasks: &[Task],
    pending: &Pending<S::Update>,
    live: bool,
) -> Vec<SnapshotTask> {
    tasks
        .iter()
        .map(|task| {
            let id = graph.task_key(task);
            let done = pending.done.get(&id);
            let interrupts = match pending.paused.get(&id) {
                Some(paused) if !(live && done.is_some()) => paused.interrupts.clone(),
                _ => Vec::new(),
            };
            SnapshotTask {
                error: pending.errors.get(&id).cloned(),
                result: done.map(|writes| result(writes)),
                name: graph.names[task.node].clone(),
                interrupts,
                id,
                state: None,
            }
        })
        .collect()
}

/// Every field a task's writes set, in the order written: LangGraph's
/// `(channel, value)` writes.
pub(crate) fn written<U: StateUpdate>(writes: &[NodeWrite<U>]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for write in writes {
        if let Value::Object(map) = write.update.to_json() {
            out.extend(map);
        }
    }
    out
}

/// A finished task's result, `{field: value}`, a field written several
/// times as `{"$writes": [..]}`: LangGraph's `map_task_result_writes`.
pub(crate) fn result<U: StateUpdate>(writes: &[NodeWrite<U>]) -> Value {
    let mut out = Map::new();
    for (field, value) in written(writes) {
        match out.get_mut(&field) {
            None => {
                out.insert(field, value);
            }
            Some(Value::Object(multi)) if multi.contains_key("$writes") => {
                if let Some(Value::Array(list)) = multi.get_mut("$writes") {
                    list.push(value);
                }
            }
            Some(first) => *first = json!({"$writes": [first.take(), value]}),
        }
    }
    Value::Object(out)
}

/// A task's error as the `tasks` stream and a snapshot show it: a node's
/// own error, else the runtime's.
pub(crate) fn task_error(error: &GraphError) -> String {
    match error {
        GraphError::Node { error, .. } => error.to_string(),
        other => other.to_string(),
    }
}
