//! What a streamed run yields: LangGraph's stream modes, and one event
//! type for all of them.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::super::{Interrupt, RunOutput};
use crate::checkpoint::{CheckpointMeta, NodeWrite, Source};
use crate::message::MessageChunk;
use crate::state::{AgentState, StateUpdate};

/// One of LangGraph's stream modes (`stream_mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamMode {
    /// The whole state after each step, the input step included.
    Values,
    /// Each step's writes, node by node.
    Updates,
    /// Model tokens as they arrive, with the node that produced them.
    Messages,
    /// What nodes write through their [`StreamWriter`](super::StreamWriter).
    Custom,
    /// Each stored checkpoint (runs on a thread).
    Checkpoints,
    /// Each task as it starts and as it ends.
    Tasks,
    /// `checkpoints` and `tasks` together, as LangGraph's `debug`.
    Debug,
}

impl StreamMode {
    const ALL: [StreamMode; 7] = [
        Self::Values,
        Self::Updates,
        Self::Messages,
        Self::Custom,
        Self::Checkpoints,
        Self::Tasks,
        Self::Debug,
    ];

    /// LangGraph's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Values => "values",
            Self::Updates => "updates",
            Self::Messages => "messages",
            Self::Custom => "custom",
            Self::Checkpoints => "checkpoints",
            Self::Tasks => "tasks",
            Self::Debug => "debug",
        }
    }

    fn bits(self) -> u8 {
        match self {
            Self::Debug => Self::Checkpoints.bits() | Self::Tasks.bits(),
            other => 1 << (other as u8),
        }
    }
}

impl fmt::Display for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a stream mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStreamMode(pub String);

impl fmt::Display for UnknownStreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = StreamMode::ALL.iter().map(|m| m.as_str()).collect();
        write!(
            f,
            "unknown stream mode `{}`; expected one of {}",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownStreamMode {}

impl FromStr for StreamMode {
    type Err = UnknownStreamMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| UnknownStreamMode(name.to_owned()))
    }
}

/// Several stream modes at once: `[StreamMode::Updates,
/// StreamMode::Messages].into()`, or one mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode: the stream yields only its last event,
    /// [`StreamEvent::End`].
    pub const fn none() -> Self {
        Self(0)
    }

    /// Whether `mode` is on.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bits() == mode.bits()
    }

    /// The modes with `mode` on too.
    #[must_use]
    pub fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode.bits())
    }

    /// Reads a comma-separated list of mode names (`"updates,messages"`).
    pub fn parse_list(list: &str) -> Result<Self, UnknownStreamMode> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(Self::none(), |modes, name| Ok(modes.with(name.parse()?)))
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self::none().with(mode)
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().collect()
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes.iter().copied().collect()
    }
}

impl FromIterator<StreamMode> for StreamModes {
    fn from_iter<I: IntoIterator<Item = StreamMode>>(iter: I) -> Self {
        iter.into_iter().fold(Self::none(), Self::with)
    }
}

/// A piece of a message as a node produced it (`messages` mode): LangGraph
/// yields `(chunk, metadata)`, the metadata naming the node and the step.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageEvent {
    /// The step the node runs in.
    pub step: i64,
    /// The node that produced it.
    pub node: String,
    /// Its task (`node`, or `node[k]` for a `Send`).
    pub task: String,
    /// The piece; the pieces of one message share its id.
    pub chunk: MessageChunk,
}

/// What a node wrote to its [`StreamWriter`](super::StreamWriter)
/// (`custom` mode).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomEvent {
    /// The step the node runs in.
    pub step: i64,
    /// The node that wrote it.
    pub node: String,
    /// Its task.
    pub task: String,
    /// What it wrote.
    pub value: Value,
}

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

/// One event of a streamed run ([`Run::stream`](super::super::Run::stream)).
/// Which ones come depends on the [`StreamModes`] asked for; the last is
/// always [`End`](Self::End), unless the run failed (then the stream yields
/// the error).
#[derive(Debug, Clone)]
pub enum StreamEvent<S: AgentState> {
    /// `values`: the state after a step.
    Values {
        /// The step: -1 for a new thread's input, then 0, 1, ...
        step: i64,
        /// The state, shared: a copy is made only if the run changes it
        /// while the event is still held.
        state: Arc<S>,
    },
    /// `updates`: the writes a step applied, in order.
    Updates {
        /// The step.
        step: i64,
        /// What made it.
        source: Source,
        /// Each node's write (update and routing).
        writes: Vec<NodeWrite<S::Update>>,
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
            Self::Updates { .. } => "updates",
            Self::Message(_) => "messages",
            Self::Custom(_) => "custom",
            Self::Checkpoint { .. } => "checkpoints",
            Self::TaskStart { .. } | Self::TaskEnd { .. } => "tasks",
            Self::End(_) => "end",
        }
    }

    /// The event's payload as LangGraph's server streams it: `values` the
    /// state; `updates` `{node: update}` (a node with several writes: a
    /// list); `messages` `[chunk, metadata]` (`langgraph_node`,
    /// `langgraph_step`, `langgraph_task`); `custom` the value;
    /// `checkpoints` the checkpoint, its state and `next`; `tasks` the task;
    /// `end` the run's `next`, `interrupts`, `steps` and checkpoint.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Values { state, .. } => state.to_json(),
            Self::Updates { writes, .. } => updates_json(writes),
            Self::Message(m) => json!([
                m.chunk,
                {"langgraph_node": m.node, "langgraph_step": m.step, "langgraph_task": m.task}
            ]),
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

/// What a node's context streams, before it is a [`StreamEvent`].
// Unboxed as in `StreamEvent`, which it becomes: a box per token would cost
// more than the bytes a custom event leaves unused.
#[allow(clippy::large_enum_variant)]
pub(crate) enum NodeEvent {
    Message(MessageEvent),
    Custom(CustomEvent),
}
