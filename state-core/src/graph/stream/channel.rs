//! The bounded queue between a streamed run and its consumer. The run's
//! future is polled by the consumer's stream (it has no task of its own),
//! so a producer that finds the queue full waits (`send`) until the
//! consumer has taken events: a slow consumer slows the run down. Writes
//! from sync code (`push`), which cannot wait, go in regardless.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use std::sync::Arc;

use super::event::{StreamEvent, TaskOutcome};
use super::mode::{MessageEvent, NodeEvent, NodeSink, ReturnedBy, StreamMode, StreamModes};
use super::returned::Seen;
use crate::checkpoint::{CheckpointMeta, NodeWrite, Source};
use crate::graph::context::Interrupt;
use crate::graph::step::StepOut;
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
    seen: Mutex<Seen>,
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
            seen: Mutex::new(Seen::default()),
        }
    }

    fn seen_ids(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Queues `event` whether or not there is room.
    pub(crate) fn push(&self, event: StreamEvent<S>) {
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

    fn push_node(&self, event: NodeEvent) {
        self.push(match event {
            NodeEvent::Message(m) => {
                if let Some(id) = &m.chunk.id {
                    self.seen_ids().insert(id);
                }
                StreamEvent::Message(m)
            }
            NodeEvent::Custom(c) => StreamEvent::Custom(c),
        });
    }

    fn poll_node_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_room(cx)
    }

    fn seen(&self, ids: Vec<String>) {
        self.seen_ids().extend(ids);
    }

    fn returned(&self, by: ReturnedBy<'_>, messages: Vec<Message>, overwritten: Vec<String>) {
        let fresh: Vec<Message> = {
            let mut seen = self.seen_ids();
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

/// What a streamed run sends after a step (or its input): `values`,
/// `updates` and `checkpoints`, each if asked for.
pub(crate) struct StepNews<'s, S: AgentState> {
    pub(crate) step: i64,
    /// The run's input applied (no node's update).
    pub(crate) input: bool,
    pub(crate) writes: Option<Vec<NodeWrite<S::Update>>>,
    pub(crate) state: Arc<S>,
    pub(crate) checkpoint: Option<&'s CheckpointMeta>,
    pub(crate) next: &'s [Task],
}

impl<S: GraphState> Channel<S> {
    /// Sends a step's events, waiting for room for each.
    pub(crate) async fn publish(&self, graph: &Graph<S>, news: StepNews<'_, S>) {
        let modes = self.modes();
        // The input is no node's update: LangGraph streams none for it.
        let updates = modes.contains(StreamMode::Updates) && !news.input;
        if let (true, Some(writes)) = (updates, news.writes) {
            self.send(StreamEvent::Updates {
                step: news.step,
                source: Source::Loop,
                writes,
            })
            .await;
        }
        if modes.contains(StreamMode::Values) {
            let state = Arc::clone(&news.state);
            self.send(StreamEvent::Values {
                step: news.step,
                state,
                interrupts: Vec::new(),
            })
            .await;
        }
        if let (true, Some(meta)) = (modes.contains(StreamMode::Checkpoints), news.checkpoint) {
            self.send(StreamEvent::Checkpoint {
                checkpoint: meta.clone(),
                state: news.state,
                next: graph.names_of(news.next),
            })
            .await;
        }
        if modes.contains(StreamMode::Values) || modes.contains(StreamMode::Checkpoints) {
            self.hand_over().await;
        }
    }

    /// `checkpoints` alone, for a checkpoint that streams nothing else: the
    /// `fork` of time travel, and a run's `input` checkpoint.
    pub(crate) async fn forked(
        &self,
        checkpoint: CheckpointMeta,
        state: Arc<S>,
        next: Vec<String>,
    ) {
        if self.modes().contains(StreamMode::Checkpoints) {
            self.send(StreamEvent::Checkpoint {
                checkpoint,
                state,
                next,
            })
            .await;
        }
    }

    /// `values` when a run resumes a stored thread: the state it resumes
    /// from, first, as LangGraph streams it.
    pub(crate) async fn resumed(&self, step: i64, state: Arc<S>) {
        if self.modes().contains(StreamMode::Values) {
            let interrupts = Vec::new();
            self.send(StreamEvent::Values {
                step,
                state,
                interrupts,
            })
            .await;
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

    /// When nodes pause, for each paused task in task order (as LangGraph
    /// streams them): `updates` `{"__interrupt__": [..]}` with its
    /// interrupts, then `values`, the state it paused on (that of the step
    /// before `step`, the one paused) with them.
    pub(crate) async fn paused(
        &self,
        graph: &Graph<S>,
        step: i64,
        tasks: &[Task],
        state: Arc<S>,
        interrupts: &[Interrupt],
    ) {
        let modes = self.modes();
        let (updates, values) = (
            modes.contains(StreamMode::Updates),
            modes.contains(StreamMode::Values),
        );
        if !updates && !values {
            return;
        }
        for task in tasks {
            let asked = task_interrupts(&graph.task_key(task), step, interrupts);
            if asked.is_empty() {
                continue;
            }
            if updates {
                let interrupts = asked.clone();
                self.send(StreamEvent::Interrupt { interrupts }).await;
            }
            if values {
                let state = Arc::clone(&state);
                let interrupts = asked;
                self.send(StreamEvent::Values {
                    step: step - 1,
                    state,
                    interrupts,
                })
                .await;
            }
        }
    }

    /// `tasks`: a step's tasks start.
    pub(crate) async fn tasks_start(&self, graph: &Graph<S>, step: i64, tasks: &[Task]) {
        for task in tasks {
            self.send(StreamEvent::TaskStart {
                step,
                task: graph.task_key(task),
                node: graph.names[task.node].clone(),
            })
            .await;
        }
    }

    /// `tasks`: how a step's tasks ended, read from the step's outcome:
    /// the failed task by its node, the paused ones by their interrupts,
    /// the others finished.
    pub(crate) async fn tasks_end(
        &self,
        graph: &Graph<S>,
        step: i64,
        tasks: &[Task],
        out: &StepOut<S::Update>,
    ) {
        for task in tasks {
            let key = graph.task_key(task);
            let node = graph.names[task.node].clone();
            let paused = task_interrupts(&key, step, &out.interrupts);
            let outcome = match &out.failed {
                Some(GraphError::Node { node: n, error, .. }) if *n == node => {
                    TaskOutcome::Failed(error.to_string())
                }
                _ if !paused.is_empty() => TaskOutcome::Paused(paused),
                _ => TaskOutcome::Finished,
            };
            self.send(StreamEvent::TaskEnd {
                step,
                task: key,
                node,
                outcome,
            })
            .await;
        }
    }
}

/// The interrupts of task `key` in `step` (their ids start with
/// `key/step/`, or `key/step|` for a subgraph's).
fn task_interrupts(key: &str, step: i64, interrupts: &[Interrupt]) -> Vec<Interrupt> {
    let own = format!("{key}/{step}/");
    let child = format!("{key}/{step}|");
    interrupts
        .iter()
        .filter(|i| i.id.starts_with(&own) || i.id.starts_with(&child))
        .cloned()
        .collect()
}
