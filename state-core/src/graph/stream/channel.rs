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

use super::{NodeEvent, StreamEvent, StreamModes};
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
        }
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

/// Where a node's context sends what it streams: the run's channel, seen
/// without its state type.
pub(crate) trait NodeSink: Send + Sync {
    /// The modes the consumer asked for.
    fn modes(&self) -> StreamModes;
    /// Queues a node's event whether or not there is room.
    fn push_node(&self, event: NodeEvent);
    /// Ready when there is room for one more event.
    fn poll_node_room(&self, cx: &mut Context<'_>) -> Poll<()>;
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
            NodeEvent::Message(m) => StreamEvent::Message(m),
            NodeEvent::Custom(c) => StreamEvent::Custom(c),
        });
    }

    fn poll_node_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_room(cx)
    }
}
