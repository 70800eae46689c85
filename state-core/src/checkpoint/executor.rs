//! A minimal `block_on`, so synchronous programs and tests can drive the
//! checkpointers and the graph runtime without pulling in an async runtime.
//! The in-memory and SQLite checkpointers never wait on I/O readiness, so
//! parking the thread until woken is all they need. PostgreSQL needs Tokio.

use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future (or a graph [`Run`](crate::graph::Run)) to completion on the
/// current thread.
///
/// For the in-memory and SQLite checkpointers and for graphs whose nodes do
/// not need an async runtime. Inside Tokio, `.await` instead.
///
/// ```
/// assert_eq!(agent_state::checkpoint::block_on(async { 1 + 1 }), 2);
/// ```
pub fn block_on<F: IntoFuture>(future: F) -> F::Output {
    let mut future = pin!(future.into_future());
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // A wake between the poll and here leaves the token set, so this
        // returns at once: no lost wake-up.
        thread::park();
    }
}
