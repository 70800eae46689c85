//! What a streamed run yields: one event type for all of LangGraph's
//! stream modes.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::mode::{CustomEvent, MessageEvent};
use crate::checkpoint::{CheckpointMeta, NodeWrite, Source};
use crate::graph::context::Interrupt;
use crate::graph::output::{with_interrupts, RunOutput};
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

/// One event of a streamed run ([`Run::stream`](crate::graph::Run::stream)).
/// Which ones come depends on the [`StreamModes`](super::StreamModes) asked for; the last is
/// always [`End`](Self::End), unless the run failed (then the stream yields
/// the error).
#[derive(Debug, Clone)]
pub enum StreamEvent<S: AgentState> {
    /// `values`: the state after a step; when a node pauses, the state
    /// it paused on once more with the interrupts, as LangGraph's
    /// `{..state, "__interrupt__": [..]}` (one such event per paused task;
    /// none at a breakpoint).
    Values {
        /// The step: 0 for a new thread's input applied (its `input`
        /// checkpoint, -1, streams no values), then 1, 2, ...
        step: i64,
        /// The state, shared: a copy is made only if the run changes it
        /// while the event is still held.
        state: Arc<S>,
        /// The interrupts a task paused on; empty for a step's state.
        interrupts: Vec<Interrupt>,
    },
    /// `updates`: the writes a step applied, in order (none for the
    /// input, as in LangGraph).
    Updates {
        /// The step.
        step: i64,
        /// What made it.
        source: Source,
        /// Each node's write (update and routing).
        writes: Vec<NodeWrite<S::Update>>,
    },
    /// `updates`: the run paused, on these interrupts (none: a
    /// breakpoint); LangGraph's `{"__interrupt__": [..]}`.
    Interrupt {
        /// What the paused nodes asked, in task order.
        interrupts: Vec<Interrupt>,
    },
    /// `messages`: a piece of a message.
    Message(MessageEvent),
    /// `custom`: what a node wrote.
    Custom(CustomEvent),
    /// `checkpoints`: a step was stored.
    Checkpoint {
        /// The stored checkpoint.
        checkpoint: CheckpointMeta,
        /// The state it holds.
        state: Arc<S>,
        /// The nodes that run next; empty when the run is over.
        next: Vec<String>,
    },
    /// `tasks`: a task starts.
    TaskStart {
        /// The step.
        step: i64,
        /// The task (`node`, or `node[k]` for a `Send`).
        task: String,
        /// Its node.
        node: String,
    },
    /// `tasks`: a task ended.
    TaskEnd {
        /// The step.
        step: i64,
        /// The task.
        task: String,
        /// Its node.
        node: String,
        /// How it ended.
        outcome: TaskOutcome,
    },
    /// Always last: what the run ended with (its `next` and `interrupts`
    /// say whether it finished or paused).
    End(RunOutput<S>),
}

impl<S: AgentState> StreamEvent<S> {
    /// The mode that produced the event (`"values"`, `"updates"`,
    /// `"messages"`, `"custom"`, `"checkpoints"`, `"tasks"`), or `"end"`:
    /// an SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Values { .. } => "values",
            Self::Updates { .. } | Self::Interrupt { .. } => "updates",
            Self::Message(_) => "messages",
            Self::Custom(_) => "custom",
            Self::Checkpoint { .. } => "checkpoints",
            Self::TaskStart { .. } | Self::TaskEnd { .. } => "tasks",
            Self::End(_) => "end",
        }
    }

    /// The event's payload as LangGraph's server streams it: `values` the
    /// state (with `__interrupt__` when a task paused); `updates` `{node: update}` (a node with several writes: a
    /// list), or `{"__interrupt__": [..]}` when the run pauses; `messages` `[chunk, metadata]` (a returned message: `[message, metadata]`; `langgraph_node`,
    /// `langgraph_step`, `langgraph_task`); `custom` the value;
    /// `checkpoints` the checkpoint, its state and `next`; `tasks` the task;
    /// `end` the run's `next`, `interrupts`, `steps` and checkpoint.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Values {
                state, interrupts, ..
            } => with_interrupts(state.to_json(), interrupts),
            Self::Updates { writes, .. } => updates_json(writes),
            Self::Interrupt { interrupts } => json!({"__interrupt__": interrupts}),
            Self::Message(m) => {
                let meta = json!({"langgraph_node": m.node, "langgraph_step": m.step, "langgraph_task": m.task});
                match &m.message {
                    Some(message) => json!([message, meta]),
                    None => json!([m.chunk, meta]),
                }
            }
            Self::Custom(c) => c.value.clone(),
            Self::Checkpoint {
                checkpoint,
                state,
                next,
            } => json!({
                "thread_id": checkpoint.thread_id,
                "checkpoint_id": checkpoint.id,
                "parent_checkpoint_id": checkpoint.parent,
                "step": checkpoint.step,
                "source": checkpoint.source.as_str(),
                "values": state.to_json(),
                "next": next,
            }),
            Self::TaskStart { step, task, node } => {
                json!({"step": step, "id": task, "name": node})
            }
            Self::TaskEnd {
                step,
                task,
                node,
                outcome,
            } => task_end_json(*step, task, node, outcome),
            Self::End(out) => json!({
                "next": out.next,
                "interrupts": out.interrupts,
                "steps": out.steps,
                "checkpoint_id": out.checkpoint.as_ref().map(|c| c.id),
            }),
        }
    }
}

fn updates_json<U: StateUpdate>(writes: &[NodeWrite<U>]) -> Value {
    let mut map = Map::new();
    for write in writes {
        let update = write.update.to_json();
        match map.get_mut(&write.node) {
            None => {
                map.insert(write.node.clone(), update);
            }
            // An update's JSON is an object: an array is the list made here.
            Some(Value::Array(list)) => list.push(update),
            Some(first) => *first = Value::Array(vec![first.take(), update]),
        }
    }
    Value::Object(map)
}

fn task_end_json(step: i64, task: &str, node: &str, outcome: &TaskOutcome) -> Value {
    let mut value = json!({"step": step, "id": task, "name": node});
    match outcome {
        TaskOutcome::Finished => value["error"] = Value::Null,
        TaskOutcome::Paused(interrupts) => value["interrupts"] = json!(interrupts),
        TaskOutcome::Failed(error) => value["error"] = Value::from(error.as_str()),
    }
    value
}
