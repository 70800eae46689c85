//! What a streamed run yields: one event type for all of LangGraph's
//! stream modes.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{json, Value};

use super::child::{ChildEvent, SubgraphEvent};
use super::mode::{CustomEvent, MessageEvent};
use super::payload;
use crate::checkpoint::{CheckpointMeta, NodeWrite, Source};
use crate::graph::context::Interrupt;
use crate::graph::output::{with_interrupts, RunOutput};
use crate::graph::tasks::SnapshotTask;
pub use crate::graph::tasks::TaskOutcome;
use crate::graph::{GraphState, Send};
use crate::state::AgentState;

/// What a task starts from (`tasks` mode): the state, or a `Send`'s input.
#[derive(Debug, Clone)]
pub enum TaskInput<S> {
    /// The state of the step (a node reached by an edge, a router or a
    /// `Command`'s goto).
    State(Arc<S>),
    /// The `Send` that made the task, carrying its input.
    Send(Send),
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
    /// none at a breakpoint), and, once the step's tasks are all in, the
    /// state with the writes of those that finished, when they wrote any.
    Values {
        /// The step: 0 for a new thread's input applied (its `input`
        /// checkpoint, -1, streams no values), then 1, 2, ...; for the
        /// states a pause shows, the step before the paused one.
        step: i64,
        /// The state, shared: a copy is made only if the run changes it
        /// while the event is still held.
        state: Arc<S>,
        /// The interrupts a task paused on; empty for a step's state.
        interrupts: Vec<Interrupt>,
    },
    /// `updates`: the writes of one task, as soon as it finished (none for
    /// the input, as in LangGraph); the tasks of a step come in the order
    /// they finished, each `Send` task on its own.
    Updates {
        /// The step.
        step: i64,
        /// What made it.
        source: Source,
        /// The task's writes (update and routing): one, or one per
        /// command of a node returning several.
        writes: Vec<NodeWrite<S::Update>>,
        /// The task finished in an earlier attempt at the step (a run
        /// resuming it): LangGraph's `"__metadata__": {"cached": true}`.
        cached: bool,
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
        /// The tasks that run next, with what an earlier attempt at them
        /// left (a checkpoint a run resumes from).
        tasks: Vec<SnapshotTask>,
    },
    /// `tasks`: a task starts.
    TaskStart {
        /// The step.
        step: i64,
        /// The task (`node`, or `node[k]` for a `Send`).
        task: String,
        /// Its node.
        node: String,
        /// What it starts from.
        input: TaskInput<S>,
        /// What makes its node run, by LangGraph's channel names:
        /// `branch:to:<node>` and the joins it ends (`join:a+b:<node>`), or
        /// `__pregel_push` for a `Send`.
        triggers: Vec<String>,
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
        /// Its writes, when it finished.
        writes: Vec<NodeWrite<S::Update>>,
    },
    /// `debug`: a [`Checkpoint`](Self::Checkpoint),
    /// [`TaskStart`](Self::TaskStart) or [`TaskEnd`](Self::TaskEnd) event,
    /// stamped, in LangGraph's `debug` envelope (`checkpoint`, `task`,
    /// `task_result`).
    Debug {
        /// The step: the checkpoint's, or the one the task runs in.
        step: i64,
        /// When it happened.
        timestamp: SystemTime,
        /// The event.
        event: Box<StreamEvent<S>>,
    },
    /// An event of a subgraph's run, under the namespace of the task that
    /// ran it (streams with [`RunStream::subgraphs`](super::RunStream::subgraphs)
    /// on only): LangGraph's `(namespace, mode, chunk)` with `subgraphs=True`.
    Subgraph(SubgraphEvent),
    /// Always last: what the run ended with (its `next` and `interrupts`
    /// say whether it finished or paused).
    End(RunOutput<S>),
}

impl<S: AgentState> StreamEvent<S> {
    /// The mode that produced the event (`"values"`, `"updates"`,
    /// `"messages"`, `"custom"`, `"checkpoints"`, `"tasks"`, `"debug"`),
    /// or `"end"`: an SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Values { .. } => "values",
            Self::Updates { .. } | Self::Interrupt { .. } => "updates",
            Self::Message(_) => "messages",
            Self::Custom(_) => "custom",
            Self::Checkpoint { .. } => "checkpoints",
            Self::TaskStart { .. } | Self::TaskEnd { .. } => "tasks",
            Self::Debug { .. } => "debug",
            Self::Subgraph(sub) => sub.name(),
            Self::End(_) => "end",
        }
    }

    /// Where the event comes from: empty for the run's own graph; for a
    /// subgraph's, one `node:task` per level, outermost first (the task
    /// that ran the subgraph, then the task inside it that ran the next
    /// one, ...), LangGraph's namespace tuple (`("child:<task id>",)`).
    pub fn namespace(&self) -> &[String] {
        match self {
            Self::Subgraph(sub) => sub.namespace(),
            _ => &[],
        }
    }

    /// The event's SSE name as LangGraph's server writes it: the
    /// [`name`](Self::name), then each entry of its
    /// [`namespace`](Self::namespace) after a `|`
    /// (`updates|child:child`); the name alone for the run's own graph.
    pub fn sse_name(&self) -> Cow<'static, str> {
        match self.namespace() {
            [] => Cow::Borrowed(self.name()),
            namespace => Cow::Owned(format!("{}|{}", self.name(), namespace.join("|"))),
        }
    }

    /// The event's payload as LangGraph's server streams it: `values` the
    /// state (with `__interrupt__` when a task paused); `updates`
    /// `{node: update}` (`null` for a task that wrote nothing; a list of
    /// one-field updates for a task writing a field several times; with
    /// `"__metadata__": {"cached": true}` for a cached one), or
    /// `{"__interrupt__": [..]}` when the run pauses; `messages`
    /// `[chunk, metadata]` (a returned message: `[message, metadata]`;
    /// `langgraph_node`, `langgraph_step`, `langgraph_task`); `custom` the
    /// value; `checkpoints` the checkpoint, its state and `next`; `tasks`
    /// `{id, name, input, triggers}` as a task starts and
    /// `{id, name, error, result, interrupts}` as it ends; `debug`
    /// `{type, step, timestamp, payload}` (LangGraph's checkpoint payload:
    /// `config`, `parent_config`, `values`, `metadata`, `next`, `tasks`);
    /// `end` the run's `next`, `interrupts`, `steps` and checkpoint; a
    /// subgraph's event, its own (the namespace is not in it).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Values {
                state, interrupts, ..
            } => with_interrupts(state.to_json(), interrupts),
            Self::Updates { writes, cached, .. } => payload::updates(writes, *cached),
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
                ..
            } => json!({
                "thread_id": checkpoint.thread_id,
                "checkpoint_id": checkpoint.id,
                "parent_checkpoint_id": checkpoint.parent,
                "step": checkpoint.step,
                "source": checkpoint.source.as_str(),
                "values": state.to_json(),
                "next": next,
            }),
            Self::TaskStart {
                task,
                node,
                input,
                triggers,
                ..
            } => json!({"id": task, "name": node, "input": input.to_json(), "triggers": triggers}),
            Self::TaskEnd {
                task,
                node,
                outcome,
                writes,
                ..
            } => payload::task_result(task, node, outcome, writes),
            Self::Debug {
                step,
                timestamp,
                event,
            } => debug(*step, *timestamp, event),
            Self::Subgraph(sub) => sub.to_json(),
            Self::End(out) => json!({
                "next": out.next,
                "interrupts": out.interrupts,
                "steps": out.steps,
                "checkpoint_id": out.checkpoint.as_ref().map(|c| c.id),
            }),
        }
    }
}

impl<S: AgentState> TaskInput<S> {
    /// Its JSON: the state's, or the `Send`'s input (`null` if that does
    /// not serialize; the task's run reports that).
    pub fn to_json(&self) -> Value {
        match self {
            Self::State(state) => state.to_json(),
            Self::Send(send) => send.arg_json().unwrap_or(Value::Null),
        }
    }
}

/// LangGraph's `debug` envelope around a checkpoint or task event.
pub(crate) fn debug<S: AgentState>(
    step: i64,
    timestamp: SystemTime,
    event: &StreamEvent<S>,
) -> Value {
    let (kind, payload) = match event {
        StreamEvent::Checkpoint {
            checkpoint,
            state,
            next,
            tasks,
        } => (
            "checkpoint",
            payload::checkpoint_payload(checkpoint, state.to_json(), next, tasks),
        ),
        StreamEvent::TaskStart { .. } => ("task", event.to_json()),
        other => ("task_result", other.to_json()),
    };
    json!({
        "step": step,
        "timestamp": payload::iso_timestamp(timestamp),
        "type": kind,
        "payload": payload,
    })
}

impl SubgraphEvent {
    /// `event` of the subgraph run by the task `entry` (`node:task`).
    pub(crate) fn new<C: GraphState>(entry: String, event: StreamEvent<C>) -> Self
    where
        StreamEvent<C>: std::marker::Send + Sync,
    {
        Self {
            namespace: vec![entry],
            event: Arc::new(event),
        }
    }

    /// The event itself, when the subgraph that sent it has state `C`
    /// (the innermost graph of the namespace); `None` for another type.
    pub fn event<C: AgentState + 'static>(&self) -> Option<&StreamEvent<C>> {
        self.event.as_any().downcast_ref()
    }
}

impl<C: GraphState> ChildEvent for StreamEvent<C>
where
    StreamEvent<C>: std::marker::Send + Sync,
{
    fn name(&self) -> &'static str {
        StreamEvent::name(self)
    }

    fn to_json(&self) -> Value {
        StreamEvent::to_json(self)
    }

    fn to_output_json(&self) -> Value {
        match self {
            Self::Values {
                state, interrupts, ..
            } => with_interrupts(state.to_output_json(), interrupts),
            Self::Subgraph(sub) => sub.to_output_json(),
            other => other.to_json(),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn with_id_prefix(&self, prefix: &str) -> Option<Arc<dyn ChildEvent>> {
        if !self.has_interrupts() {
            return None;
        }
        let mut copy = self.clone();
        copy.prefix_interrupt_ids(prefix);
        Some(Arc::new(copy))
    }
}

impl<S: AgentState> StreamEvent<S> {
    /// Whether the event names an interrupt.
    fn has_interrupts(&self) -> bool {
        match self {
            Self::Values { interrupts, .. } | Self::Interrupt { interrupts } => {
                !interrupts.is_empty()
            }
            Self::TaskEnd { outcome, .. } => {
                matches!(outcome, TaskOutcome::Paused(i) if !i.is_empty())
            }
            Self::Checkpoint { tasks, .. } => tasks.iter().any(|t| !t.interrupts.is_empty()),
            Self::Debug { event, .. } => event.has_interrupts(),
            _ => false,
        }
    }

    /// Puts `prefix` before every interrupt id the event names: a
    /// subgraph's events carry the ids its parent resumes them by, as the
    /// parent's own events do.
    pub(crate) fn prefix_interrupt_ids(&mut self, prefix: &str) {
        let prefixed = |list: &mut Vec<Interrupt>| {
            for interrupt in list {
                interrupt.id.insert_str(0, prefix);
            }
        };
        match self {
            Self::Values { interrupts, .. } | Self::Interrupt { interrupts } => {
                prefixed(interrupts)
            }
            Self::TaskEnd {
                outcome: TaskOutcome::Paused(interrupts),
                ..
            } => prefixed(interrupts),
            Self::Checkpoint { tasks, .. } => {
                tasks.iter_mut().for_each(|t| prefixed(&mut t.interrupts));
            }
            Self::Debug { event, .. } => event.prefix_interrupt_ids(prefix),
            _ => {}
        }
    }
}
