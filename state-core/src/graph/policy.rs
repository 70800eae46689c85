//! Node policies (retry with backoff, a timeout) and cancelling a run.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::node::BoxError;

type RetryOn = Arc<dyn Fn(&BoxError) -> bool + Send + Sync>;

/// Runs a failing node again, as LangGraph's `RetryPolicy`: up to
/// `max_attempts` attempts in all, waiting `initial_interval`, then that
/// times `backoff_factor` after each failure (at most `max_interval`),
/// for the errors `retry_on` accepts (every error by default).
///
/// ```
/// use std::time::Duration;
/// use agent_state::graph::{BoxError, RetryPolicy};
///
/// let policy = RetryPolicy::new(3)
///     .initial_interval(Duration::from_millis(10))
///     .retry_on(|e: &BoxError| e.to_string().contains("rate limit"));
/// assert_eq!(policy.max_attempts(), 3);
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_interval: Duration,
    backoff_factor: f64,
    max_interval: Duration,
    retry_on: Option<RetryOn>,
}

impl RetryPolicy {
    /// At most `max_attempts` attempts (1: no retry), 500 ms then doubling
    /// up to 128 s between them, on every error.
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            retry_on: None,
        }
    }

    /// The wait before the second attempt.
    #[must_use]
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// How much longer each wait is than the one before.
    #[must_use]
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = factor.max(1.0);
        self
    }

    /// The longest wait.
    #[must_use]
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// Retries only the errors `predicate` accepts; others fail the node at
    /// once. A [`NodeTimeout`] is an error like any other here.
    #[must_use]
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&BoxError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Some(Arc::new(predicate));
        self
    }

    /// The number of attempts.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether `error`, after attempt `attempt` (1 for the first), is tried
    /// again, and after how long.
    pub(crate) fn next_wait(&self, attempt: u32, error: &BoxError) -> Option<Duration> {
        // A command to the parent graph ends the node on purpose.
        if error.is::<super::ParentCommand>() {
            return None;
        }
        if attempt >= self.max_attempts || !self.retry_on.as_ref().is_none_or(|p| p(error)) {
            return None;
        }
        let factor = self
            .backoff_factor
            .powi(i32::try_from(attempt - 1).unwrap_or(i32::MAX));
        let wait = self.initial_interval.mul_f64(factor.min(1e9));
        Some(wait.min(self.max_interval))
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("retry_on", &self.retry_on.as_ref().map(|_| ".."))
            .finish()
    }
}

/// The error of a node that ran longer than its timeout
/// ([`Node::timeout`](super::Node::timeout)); its future was
/// dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTimeout {
    /// The node.
    pub node: String,
    /// Its timeout.
    pub after: Duration,
}

impl fmt::Display for NodeTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node `{}` timed out after {:?}", self.node, self.after)
    }
}

impl std::error::Error for NodeTimeout {}

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

/// Cancels runs from elsewhere (another task, a signal handler, a request
/// that went away): a run given it with
/// [`Run::cancel_on`](super::Run::cancel_on) stops at once with
/// [`GraphError::Cancelled`](super::GraphError::Cancelled), dropping the
/// step it was running. The thread stays at its last saved step, and the
/// tasks of the interrupted step that had finished stay saved as pending,
/// so a resume does not run them again. Dropping the run's future does the
/// same without a token.
///
/// ```
/// use agent_state::graph::CancelToken;
///
/// let token = CancelToken::new();
/// let handle = token.clone();
/// handle.cancel();
/// assert!(token.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelToken(Arc<CancelInner>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run holding the token (and each later one).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(&mut *self.lock());
        for waker in wakers {
            waker.wake();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waker>> {
        self.0.wakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ready once cancelled; registers the task to be woken then.
    pub(crate) fn poll_cancelled(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_cancelled() {
            return Poll::Ready(());
        }
        let mut wakers = self.lock();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        drop(wakers);
        // A cancel between the check and the registration took the list
        // before this waker was in it: look again.
        if self.is_cancelled() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// A node future with a deadline: its output, or a [`NodeTimeout`] error
/// once the deadline passes (the node's future is dropped then).
pub(crate) struct WithTimeout<F: ?Sized> {
    pub(crate) future: Pin<Box<F>>,
    pub(crate) sleep: super::timer::Sleep,
    pub(crate) error: Option<NodeTimeout>,
}

impl<F, T> Future for WithTimeout<F>
where
    F: Future<Output = Result<T, BoxError>> + ?Sized,
{
    type Output = Result<T, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(out) = self.future.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        // `Sleep` is Unpin (plain fields).
        if Pin::new(&mut self.sleep).poll(cx).is_ready() {
            let error = self.error.take().expect("a timeout fires once");
            return Poll::Ready(Err(Box::new(error)));
        }
        Poll::Pending
    }
}

impl<F: ?Sized> Unpin for WithTimeout<F> {}
