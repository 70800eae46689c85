//! A timer that needs no async runtime: one helper thread, started on first
//! use, wakes the futures whose deadline passed. Node timeouts and retry
//! backoff use it, so the graph runs under Tokio, another executor or
//! [`block_on`](crate::checkpoint::block_on) alike.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// One sleeper's state, shared with the timer thread.
#[derive(Default)]
struct Slot {
    fired: bool,
    waker: Option<Waker>,
}

struct Entry {
    at: Instant,
    slot: Arc<Mutex<Slot>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

struct Timer {
    queue: Mutex<BinaryHeap<Reverse<Entry>>>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(BinaryHeap::new()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("agent-state-timer".into())
            .spawn(move || timer.run())
            .expect("the timer thread starts");
        timer
    })
}

impl Timer {
    fn run(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            while queue.peek().is_some_and(|Reverse(e)| e.at <= now) {
                let Reverse(entry) = queue.pop().expect("peeked");
                let mut slot = entry.slot.lock().unwrap_or_else(PoisonError::into_inner);
                slot.fired = true;
                if let Some(waker) = slot.waker.take() {
                    waker.wake();
                }
            }
            queue = match queue.peek() {
                Some(Reverse(next)) => {
                    let wait = next.at.saturating_duration_since(now);
                    self.changed
                        .wait_timeout(queue, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .changed
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

/// A future that is ready once `duration` has passed.
pub(crate) struct Sleep {
    at: Instant,
    slot: Option<Arc<Mutex<Slot>>>,
}

/// Sleeps for `duration` without blocking the thread.
pub(crate) fn sleep(duration: Duration) -> Sleep {
    // A wait past what an `Instant` holds (a `Duration::MAX` "forever")
    // is a century: never reached, and no overflow.
    let now = Instant::now();
    let at = now
        .checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
    Sleep { at, slot: None }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        let at = self.at;
        let slot = self.slot.get_or_insert_with(|| {
            let slot = Arc::new(Mutex::new(Slot::default()));
            let timer = timer();
            let entry = Entry {
                at,
                slot: Arc::clone(&slot),
            };
            timer
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Reverse(entry));
            timer.changed.notify_one();
            slot
        });
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.fired {
            return Poll::Ready(());
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::block_on;

    #[test]
    fn sleeps_at_least_the_duration() {
        let start = Instant::now();
        block_on(sleep(Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn earlier_deadlines_fire_first() {
        let start = Instant::now();
        let order = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = [60u64, 10, 30]
            .into_iter()
            .map(|ms| {
                let order = Arc::clone(&order);
                std::thread::spawn(move || {
                    block_on(sleep(Duration::from_millis(ms)));
                    order.lock().unwrap().push(ms);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [10, 30, 60]);
        assert!(start.elapsed() >= Duration::from_millis(60));
    }
}
