//! Each thread's protocol events, numbered (`seq`) from 1 in the order
//! they were made, kept in this process so a stream opened at any time
//! replays the thread's runs from the start (or after its `since`), then
//! follows.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

/// How many threads keep their events: the oldest thread is forgotten
/// first, so memory stays bounded on a long-running server.
const THREADS_KEPT: usize = 1024;

/// How many events a thread keeps (the official server's replay buffer):
/// older events are dropped first.
pub(crate) const EVENTS_KEPT: usize = 10_000;

/// The events of one thread.
pub(crate) struct Tape {
    events: Mutex<Kept>,
    /// The `seq` of the last event.
    last: watch::Sender<u64>,
    /// Held by the run being translated: runs go on the tape one after
    /// the other.
    turn: tokio::sync::Mutex<()>,
    /// How many runs started here are not translated to their end.
    running: Arc<AtomicUsize>,
    /// On PostgreSQL: whether a task fills the tape from the stored
    /// events, and the runs it put on it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) feeding: std::sync::atomic::AtomicBool,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) translated: Mutex<std::collections::HashSet<String>>,
}

/// A run in progress on a tape, until dropped.
pub(crate) struct InProgress(Arc<AtomicUsize>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Kept {
    /// The `seq` of `list`'s first event, less one.
    dropped: u64,
    list: VecDeque<Value>,
}

impl Tape {
    fn new() -> Arc<Self> {
        Arc::new(Tape {
            events: Mutex::default(),
            last: watch::channel(0).0,
            turn: tokio::sync::Mutex::new(()),
            running: Arc::default(),
            feeding: Default::default(),
            translated: Mutex::default(),
        })
    }

    /// Counts a run in progress until the answer is dropped.
    pub(crate) fn running(&self) -> InProgress {
        self.running.fetch_add(1, Ordering::SeqCst);
        InProgress(Arc::clone(&self.running))
    }

    /// Whether a run started here is still in progress.
    pub(crate) fn busy(&self) -> bool {
        self.running.load(Ordering::SeqCst) > 0
    }

    /// Waits for the runs before to be on the tape: this run's turn.
    pub(crate) async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Adds an event made by `make` from the `seq` it gets.
    pub(crate) fn push(&self, make: impl FnOnce(u64) -> Value) {
        let mut kept = self.lock();
        let seq = kept.dropped + kept.list.len() as u64 + 1;
        kept.list.push_back(make(seq));
        if kept.list.len() > EVENTS_KEPT {
            kept.list.pop_front();
            kept.dropped += 1;
        }
        drop(kept);
        self.last.send_replace(seq);
    }

    /// The events after `seq` that are still kept.
    pub(crate) fn after(&self, seq: u64) -> Vec<Value> {
        let kept = self.lock();
        let skip = seq.saturating_sub(kept.dropped) as usize;
        kept.list.iter().skip(skip).cloned().collect()
    }

    /// Tells when events are added.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every thread's tape, the oldest that no one holds forgotten past
/// [`THREADS_KEPT`].
#[derive(Default)]
pub(crate) struct Tapes {
    inner: Mutex<Threads>,
}

#[derive(Default)]
struct Threads {
    by_thread: HashMap<String, Arc<Tape>>,
    order: VecDeque<String>,
}

impl Tapes {
    /// The tape of `thread_id`, new if it has none.
    pub(crate) fn of(&self, thread_id: &str) -> Arc<Tape> {
        let mut threads = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tape) = threads.by_thread.get(thread_id) {
            return Arc::clone(tape);
        }
        let tape = Tape::new();
        threads
            .by_thread
            .insert(thread_id.to_owned(), Arc::clone(&tape));
        threads.order.push_back(thread_id.to_owned());
        if threads.order.len() > THREADS_KEPT {
            threads.forget_one();
        }
        tape
    }
}

impl Threads {
    /// Forgets the oldest tape no one holds (no stream follows it, no run
    /// writes it), so a flood of new threads cannot cut the streams in
    /// progress; with every tape held, none.
    fn forget_one(&mut self) {
        let by_thread = &self.by_thread;
        let free = self.order.iter().position(|id| {
            by_thread
                .get(id)
                .is_none_or(|tape| Arc::strong_count(tape) == 1 && !tape.busy())
        });
        if let Some(old) = free.and_then(|at| self.order.remove(at)) {
            self.by_thread.remove(&old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_events_and_drops_the_oldest_past_the_limit() {
        let tape = Tape::new();
        for _ in 0..EVENTS_KEPT + 2 {
            tape.push(|seq| json!(seq));
        }
        assert_eq!(tape.after(0).len(), EVENTS_KEPT);
        assert_eq!(tape.after(0)[0], json!(3));
        assert_eq!(
            tape.after(EVENTS_KEPT as u64 + 1),
            vec![json!(EVENTS_KEPT + 2)]
        );
    }

    #[test]
    fn forgets_the_oldest_thread() {
        let tapes = Tapes::default();
        // Not held: no stream follows it.
        tapes.of("t0").push(|s| json!(s));
        for i in 1..=THREADS_KEPT {
            tapes.of(&format!("t{i}"));
        }
        assert!(tapes.of("t0").after(0).is_empty());
        tapes.of(&format!("t{THREADS_KEPT}")).push(|s| json!(s));
        assert_eq!(
            tapes.of(&format!("t{THREADS_KEPT}")).after(0),
            vec![json!(1)]
        );
    }

    #[test]
    fn a_held_tape_outlives_a_flood_of_new_threads() {
        let tapes = Tapes::default();
        let held = tapes.of("followed");
        held.push(|seq| json!(seq));
        for n in 0..THREADS_KEPT + 5 {
            tapes.of(&format!("t{n}"));
        }
        assert!(Arc::ptr_eq(&tapes.of("followed"), &held));
        assert_eq!(tapes.of("followed").after(0).len(), 1);
        let kept = tapes.inner.lock().expect("lock").by_thread.len();
        assert!(kept <= THREADS_KEPT + 1, "{kept} kept");
    }
}
