//! The bounded queue between a streamed run and its consumer. The run's
//! future is polled by the consumer's stream (it has no task of its own),
//! so a producer that finds the queue full waits (`send`) until the
//! consumer has taken events: a slow consumer slows the run down. Writes
//! from sync code (`push`), which cannot wait, go in regardless.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use std::sync::Arc;
use std::time::SystemTime;

use super::child::SubgraphEvent;
use super::event::{StreamEvent, TaskInput, TaskOutcome};
use super::mode::{MessageEvent, NodeEvent, NodeSink, ReturnedBy, StreamMode, StreamModes};
use super::returned::Seen;
use crate::checkpoint::{CheckpointMeta, NodeWrite, Source};
use crate::graph::context::Interrupt;
use crate::graph::pending::Pending;
use crate::graph::tasks::{snapshot_tasks, task_error, SnapshotTask};
use crate::graph::{Graph, GraphError, GraphState, Task};
use crate::message::{Message, MessageChunk};
use crate::state::AgentState;

/// How many events a stream holds before its run waits for the consumer.
pub(crate) const DEFAULT_CAPACITY: usize = 64;

struct Queue<E> {
    events: VecDeque<E>,
    consumer: Option<Waker>,
    producers: Vec<Waker>,
}

/// A run's events on their way to the consumer.
pub(crate) struct Channel<S: AgentState> {
    modes: StreamModes,
    capacity: AtomicUsize,
    queue: Mutex<Queue<StreamEvent<S>>>,
    /// `messages` mode: the message ids shown or started from.
    seen: Arc<Mutex<Seen>>,
    /// Whether subgraphs' events stream too.
    subgraphs: AtomicBool,
    /// A subgraph's channel: where its events go instead of the queue.
    forward: Option<Forward<S>>,
}

/// A subgraph's events on their way into its parent's stream.
struct Forward<S: AgentState> {
    parent: Arc<dyn NodeSink>,
    /// The parent's task that runs the subgraph, `node:task`.
    entry: String,
    /// What the parent puts before the subgraph's interrupt ids.
    prefix: String,
    /// The event as the parent's, typed where the child's type is known.
    wrap: fn(StreamEvent<S>, &str, &str) -> Option<SubgraphEvent>,
}

impl<S: AgentState> Channel<S> {
    pub(crate) fn new(modes: StreamModes) -> Self {
        Self {
            modes,
            capacity: AtomicUsize::new(DEFAULT_CAPACITY),
            queue: Mutex::new(Queue {
                events: VecDeque::new(),
                consumer: None,
                producers: Vec::new(),
            }),
            seen: Arc::default(),
            subgraphs: AtomicBool::new(false),
            forward: None,
        }
    }

    fn seen_lock(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether subgraphs' events stream too (LangGraph's
    /// `subgraphs=True`).
    pub(crate) fn set_subgraphs(&self, on: bool) {
        self.subgraphs.store(on, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, Queue<StreamEvent<S>>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn modes(&self) -> StreamModes {
        self.modes
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
    }

    fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Queues `event` whether or not there is room (a subgraph's channel
    /// sends it to its parent's stream instead).
    pub(crate) fn push(&self, event: StreamEvent<S>) {
        if let Some(forward) = &self.forward {
            if let Some(event) = (forward.wrap)(event, &forward.entry, &forward.prefix) {
                forward.parent.push_node(NodeEvent::Subgraph(event));
            }
            return;
        }
        let waker = {
            let mut queue = self.lock();
            queue.events.push_back(event);
            queue.consumer.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ready when the queue has room for one more event.
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(forward) = &self.forward {
            return forward.parent.poll_node_room(cx);
        }
        let mut queue = self.lock();
        if queue.events.len() < self.capacity() {
            return Poll::Ready(());
        }
        if !queue.producers.iter().any(|w| w.will_wake(cx.waker())) {
            queue.producers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Queues `event` once there is room.
    pub(crate) async fn send(&self, event: StreamEvent<S>) {
        poll_fn(|cx| self.poll_room(cx)).await;
        self.push(event);
    }

    /// The oldest event, and wakes the producers waiting for room.
    pub(crate) fn pop(&self) -> Option<StreamEvent<S>> {
        let (event, wake) = {
            let mut queue = self.lock();
            let event = queue.events.pop_front();
            let room = queue.events.len() < self.capacity();
            let wake = if room {
                std::mem::take(&mut queue.producers)
            } else {
                Vec::new()
            };
            (event, wake)
        };
        wake.into_iter().for_each(Waker::wake);
        event
    }

    /// Lets the consumer take what is queued before the run goes on. The
    /// run is polled by the consumer's stream, so returning `Pending` once
    /// (having woken itself) hands the turn to the consumer, which polls
    /// the run again once it has emptied the queue. A consumer that drops
    /// each state as it reads it (`values`, `checkpoints`) thus leaves the
    /// run sole owner of its state, and the next step changes the state in
    /// place instead of copying it whole.
    pub(crate) async fn hand_over(&self) {
        let mut handed = false;
        poll_fn(|cx| {
            if handed || self.is_empty() {
                return Poll::Ready(());
            }
            handed = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await;
    }

    /// Whether events are waiting for the consumer.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().events.is_empty()
    }

    /// The consumer's waker, woken by the next push.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut queue = self.lock();
        match &queue.consumer {
            Some(w) if w.will_wake(waker) => {}
            _ => queue.consumer = Some(waker.clone()),
        }
    }
}

impl<S> NodeSink for Channel<S>
where
    S: AgentState + Send + Sync,
    S::Update: Send,
{
    fn modes(&self) -> StreamModes {
        self.modes
    }

    fn subgraphs(&self) -> bool {
        self.subgraphs.load(Ordering::Relaxed)
    }

    fn seen_ids(&self) -> Arc<Mutex<Seen>> {
        Arc::clone(&self.seen)
    }

    fn push_node(&self, event: NodeEvent) {
        self.push(match event {
            NodeEvent::Message(m) => {
                if let Some(id) = &m.chunk.id {
                    self.seen_lock().insert(id);
                }
                StreamEvent::Message(m)
            }
            NodeEvent::Custom(c) => StreamEvent::Custom(c),
            NodeEvent::Subgraph(sub) => StreamEvent::Subgraph(sub),
        });
    }

    fn poll_node_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_room(cx)
    }

    fn seen(&self, ids: Vec<String>) {
        self.seen_lock().extend(ids);
    }

    fn returned(&self, by: ReturnedBy<'_>, messages: Vec<Message>, overwritten: Vec<String>) {
        let fresh: Vec<Message> = {
            let mut seen = self.seen_lock();
            seen.extend(overwritten);
            messages
                .into_iter()
                .filter(|m| m.id.as_deref().is_none_or(|id| seen.insert(id)))
                .collect()
        };
        for message in fresh {
            self.push(StreamEvent::Message(MessageEvent {
                step: by.step,
                node: by.node.to_owned(),
                task: by.task.to_owned(),
                chunk: MessageChunk::whole(&message),
                message: Some(Box::new(message)),
            }));
        }
    }
}

/// What a streamed run sends after a step (or its input): `values`, and
/// `checkpoints` (or `debug`) when it was stored.
pub(crate) struct StepNews<'s, S: AgentState> {
    pub(crate) step: i64,
    pub(crate) state: Arc<S>,
    pub(crate) checkpoint: Option<&'s CheckpointMeta>,
    pub(crate) next: &'s [Task],
}

/// How a task ended, for the events it streams.
pub(crate) enum Ended<'o, U> {
    /// It finished with these writes.
    Wrote(&'o [NodeWrite<U>]),
    /// It finished in an earlier attempt at the step, with these writes.
    Cached(&'o [NodeWrite<U>]),
    /// It paused on these interrupts.
    Paused(&'o [Interrupt]),
    /// It failed.
    Failed(&'o GraphError),
}

/// A task of a step, for its events.
#[derive(Clone, Copy)]
pub(crate) struct TaskAt<'t> {
    pub(crate) step: i64,
    pub(crate) task: &'t Task,
}

impl<S: GraphState> Channel<S> {
    /// The channel of a subgraph run by a task of a streamed run: its
    /// events go into `parent`'s stream under `entry` (`node:task`), their
    /// interrupt ids after `prefix`, in the modes `parent` streams; the
    /// messages it shows are those `parent` shows.
    pub(crate) fn forwarding(parent: Arc<dyn NodeSink>, entry: String, prefix: String) -> Self {
        let mut channel = Self::new(parent.modes());
        channel.seen = parent.seen_ids();
        channel.set_subgraphs(true);
        channel.forward = Some(Forward {
            parent,
            entry,
            prefix,
            wrap: as_parents::<S>,
        });
        channel
    }

    /// Sends a step's events, waiting for room for each.
    pub(crate) async fn publish(&self, graph: &Graph<S>, news: StepNews<'_, S>) {
        let modes = self.modes();
        if modes.contains(StreamMode::Values) {
            let state = Arc::clone(&news.state);
            self.send(StreamEvent::Values {
                step: news.step,
                state,
                interrupts: Vec::new(),
            })
            .await;
        }
        if let Some(meta) = news.checkpoint {
            let tasks = || snapshot_tasks(graph, news.next, &Pending::default(), false);
            let next = graph.names_of(news.next);
            self.checkpoint(meta, news.state, next, tasks).await;
        }
        if self.shows_states() {
            self.hand_over().await;
        }
    }

    /// Whether the consumer is shown states (`values`, `checkpoints`,
    /// `debug`): then the run hands it the turn after each step.
    fn shows_states(&self) -> bool {
        let modes = self.modes();
        [
            StreamMode::Values,
            StreamMode::Checkpoints,
            StreamMode::Debug,
        ]
        .into_iter()
        .any(|m| modes.contains(m))
    }

    /// `checkpoints` (and `debug`): checkpoint `meta`, holding `state`,
    /// before `next` runs as `tasks`.
    async fn checkpoint(
        &self,
        meta: &CheckpointMeta,
        state: Arc<S>,
        next: Vec<String>,
        tasks: impl FnOnce() -> Vec<SnapshotTask>,
    ) {
        let modes = self.modes();
        let debug = modes.contains(StreamMode::Debug);
        if !modes.contains(StreamMode::Checkpoints) && !debug {
            return;
        }
        let event = StreamEvent::Checkpoint {
            checkpoint: meta.clone(),
            state,
            next,
            tasks: tasks(),
        };
        // Each mode's event, then its `debug` one, as LangGraph sends them.
        let debug = debug.then(|| debug_of(meta.step, event.clone()));
        if modes.contains(StreamMode::Checkpoints) {
            self.send(event).await;
        }
        if let Some(debug) = debug {
            self.send(debug).await;
        }
    }

    /// `checkpoints` (and `debug`) alone, for a checkpoint that streams
    /// nothing else: the `fork` of time travel, and a run's `input`
    /// checkpoint.
    pub(crate) async fn forked(
        &self,
        checkpoint: &CheckpointMeta,
        state: Arc<S>,
        tasks: Vec<SnapshotTask>,
    ) {
        let next = tasks.iter().map(|t| t.name.clone()).collect();
        self.checkpoint(checkpoint, state, next, || tasks).await;
    }

    /// When a run resumes a stored thread, as LangGraph streams it: first
    /// `values`, the state it resumes from, then `checkpoints` (and
    /// `debug`), the checkpoint, its `tasks` showing what an earlier
    /// attempt at them left (unless it is a fork, reported as such).
    pub(crate) async fn resumed(
        &self,
        checkpoint: &CheckpointMeta,
        state: Arc<S>,
        forked: bool,
        tasks: Vec<SnapshotTask>,
    ) {
        if self.modes().contains(StreamMode::Values) {
            let interrupts = Vec::new();
            self.send(StreamEvent::Values {
                step: checkpoint.step,
                state: Arc::clone(&state),
                interrupts,
            })
            .await;
        }
        // A fork is streamed as the run reports it.
        if !forked {
            let next = tasks.iter().map(|t| t.name.clone()).collect();
            self.checkpoint(checkpoint, state, next, || tasks).await;
        }
        if self.shows_states() {
            self.hand_over().await;
        }
    }

    /// `updates` at a breakpoint: LangGraph's `{"__interrupt__": ()}`
    /// (and no `values`: the state is the one just streamed).
    pub(crate) async fn at_breakpoint(&self) {
        if self.modes().contains(StreamMode::Updates) {
            let interrupts = Vec::new();
            self.send(StreamEvent::Interrupt { interrupts }).await;
        }
    }

    /// `values` once a paused step's tasks are all in, when those that
    /// finished wrote anything: the state of step `step` (the one before
    /// the paused step) with their writes, as LangGraph streams it last.
    pub(crate) async fn paused_with_writes(&self, step: i64, state: Arc<S>) {
        if self.modes().contains(StreamMode::Values) {
            let interrupts = Vec::new();
            self.send(StreamEvent::Values {
                step,
                state,
                interrupts,
            })
            .await;
        }
    }

    /// `tasks` (and `debug`): a step's tasks start, on `state`: the `Send`
    /// tasks first, then the others, as LangGraph lists them.
    pub(crate) async fn tasks_start(
        &self,
        graph: &Graph<S>,
        step: i64,
        tasks: &[Task],
        state: &Arc<S>,
    ) {
        let modes = self.modes();
        let (listed, debug) = (
            modes.contains(StreamMode::Tasks),
            modes.contains(StreamMode::Debug),
        );
        if !listed && !debug {
            return;
        }
        let pushed = tasks.iter().filter(|t| t.send.is_some());
        for task in pushed.chain(tasks.iter().filter(|t| t.send.is_none())) {
            let event = task_start(graph, step, task, state);
            let debug = debug.then(|| debug_of(step, event.clone()));
            if listed {
                self.send(event).await;
            }
            if let Some(debug) = debug {
                self.send(debug).await;
            }
        }
    }
}

impl<S> Channel<S>
where
    S: AgentState + Clone,
    S::Update: Clone,
{
    /// A task's events as it ends, as LangGraph's `output_writes` sends
    /// them: `updates` (its writes, or the interrupts it paused on),
    /// `values` (the state it paused on, with its interrupts, when
    /// `paused_on` is given), then `tasks` and `debug` (its result; none
    /// for a task finished in an earlier attempt). Queued without waiting:
    /// a task ends in code that cannot wait, and a step's tasks are few.
    pub(crate) fn task_ended(
        &self,
        graph: &Graph<S>,
        at: TaskAt<'_>,
        paused_on: Option<&Arc<S>>,
        ended: Ended<'_, S::Update>,
    ) {
        let modes = self.modes();
        let step = at.step;
        match ended {
            Ended::Wrote(writes) | Ended::Cached(writes) if modes.contains(StreamMode::Updates) => {
                self.push(StreamEvent::Updates {
                    step,
                    source: Source::Loop,
                    writes: writes.to_vec(),
                    cached: matches!(ended, Ended::Cached(_)),
                });
            }
            Ended::Paused(interrupts) => {
                if modes.contains(StreamMode::Updates) {
                    let interrupts = interrupts.to_vec();
                    self.push(StreamEvent::Interrupt { interrupts });
                }
                if let (true, Some(state)) = (modes.contains(StreamMode::Values), paused_on) {
                    self.push(StreamEvent::Values {
                        step: step - 1,
                        state: Arc::clone(state),
                        interrupts: interrupts.to_vec(),
                    });
                }
            }
            _ => {}
        }
        let (listed, debug) = (
            modes.contains(StreamMode::Tasks),
            modes.contains(StreamMode::Debug),
        );
        if matches!(ended, Ended::Cached(_)) || (!listed && !debug) {
            return;
        }
        let event = task_end(graph, at, ended);
        let debug = debug.then(|| debug_of(step, event.clone()));
        if listed {
            self.push(event);
        }
        if let Some(debug) = debug {
            self.push(debug);
        }
    }
}

/// A subgraph's event as its parent's stream holds it: its own, or one
/// of a subgraph of its own, one level deeper; the `End` of its run is
/// none (the parent's task reports how it ended).
fn as_parents<S: GraphState>(
    event: StreamEvent<S>,
    entry: &str,
    prefix: &str,
) -> Option<SubgraphEvent> {
    match event {
        StreamEvent::End(_) => None,
        StreamEvent::Subgraph(sub) => Some(sub.nested(entry, prefix)),
        mut event => {
            event.prefix_interrupt_ids(prefix);
            Some(SubgraphEvent::new(entry.to_owned(), event))
        }
    }
}

/// `event` in LangGraph's `debug` envelope, stamped now.
fn debug_of<S: AgentState>(step: i64, event: StreamEvent<S>) -> StreamEvent<S> {
    StreamEvent::Debug {
        step,
        timestamp: SystemTime::now(),
        event: Box::new(event),
    }
}

/// The `tasks` event of a task starting on `state`.
fn task_start<S: AgentState>(
    graph: &Graph<S>,
    step: i64,
    task: &Task,
    state: &Arc<S>,
) -> StreamEvent<S> {
    let name = &graph.names[task.node];
    let (input, triggers) = match &task.send {
        Some((_, arg)) => (
            TaskInput::Send(crate::send::Send::from_arg(name, arg.clone())),
            vec!["__pregel_push".to_owned()],
        ),
        None => {
            let joins = graph.joins.iter().filter(|j| j.target == task.node);
            let triggers = std::iter::once(format!("branch:to:{name}"))
                .chain(joins.map(|j| j.key.clone()))
                .collect();
            (TaskInput::State(Arc::clone(state)), triggers)
        }
    };
    StreamEvent::TaskStart {
        step,
        task: graph.task_key(task),
        node: name.clone(),
        input,
        triggers,
    }
}

/// The `tasks` event of a task that ended.
fn task_end<S: AgentState>(
    graph: &Graph<S>,
    at: TaskAt<'_>,
    ended: Ended<'_, S::Update>,
) -> StreamEvent<S>
where
    S::Update: Clone,
{
    let (outcome, writes) = match ended {
        Ended::Wrote(writes) | Ended::Cached(writes) => (TaskOutcome::Finished, writes.to_vec()),
        Ended::Paused(interrupts) => (TaskOutcome::Paused(interrupts.to_vec()), Vec::new()),
        Ended::Failed(error) => (TaskOutcome::Failed(task_error(error)), Vec::new()),
    };
    StreamEvent::TaskEnd {
        step: at.step,
        task: graph.task_key(at.task),
        node: graph.names[at.task.node].clone(),
        outcome,
        writes,
    }
}
