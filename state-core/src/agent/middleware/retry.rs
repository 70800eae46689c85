//! What [`ModelRetry`](super::ModelRetry) and [`ToolRetry`](super::ToolRetry)
//! share: the backoff between attempts and what to do once they are spent
//! (LangChain's `_retry.py`).

use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

/// Waits out a delay: the crate's own timer by default (no runtime needed),
/// or the caller's (Tokio's `sleep`, for a paused test clock).
pub type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// A retry setting out of range: LangChain's `ValueError`s of
/// `validate_retry_params`, naming the setting.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfigError {
    /// The setting (`backoff_factor`).
    pub field: &'static str,
    /// The value given.
    pub value: f64,
}

impl fmt::Display for RetryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} must be a number >= 0, got {}",
            self.field, self.value
        )
    }
}

impl std::error::Error for RetryConfigError {}

/// Exponential backoff between attempts, as LangChain's `calculate_delay`:
/// before retry `n` (0 for the first) it waits
/// `initial_delay * backoff_factor^n`, at most `max_delay`, then (with
/// `jitter`) a uniform ±25% of that. A factor of 0 waits `initial_delay`
/// every time. Defaults are LangChain's: 1 s, factor 2, at most 60 s,
/// jitter on.
///
/// ```
/// use std::time::Duration;
/// use agent_state::agent::middleware::Backoff;
///
/// let backoff = Backoff::default().jitter(false).max_delay(Duration::from_secs(3));
/// let waits: Vec<_> = (0..4).map(|n| backoff.delay(n)).collect();
/// assert_eq!(waits, [1, 2, 3, 3].map(Duration::from_secs));
/// ```
#[derive(Clone)]
pub struct Backoff {
    initial_delay: Duration,
    backoff_factor: f64,
    max_delay: Duration,
    jitter: bool,
    sleeper: Option<Sleeper>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_secs(1),
            backoff_factor: 2.0,
            max_delay: Duration::from_secs(60),
            jitter: true,
            sleeper: None,
        }
    }
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("initial_delay", &self.initial_delay)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_delay", &self.max_delay)
            .field("jitter", &self.jitter)
            .field("custom_sleeper", &self.sleeper.is_some())
            .finish()
    }
}

impl Backoff {
    /// The wait before the first retry (default 1 s).
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The factor each wait grows by (default 2; 0 keeps it constant). An
    /// error when negative or not a number.
    pub fn backoff_factor(mut self, factor: f64) -> Result<Self, RetryConfigError> {
        if factor.is_nan() || factor < 0.0 {
            return Err(RetryConfigError {
                field: "backoff_factor",
                value: factor,
            });
        }
        self.backoff_factor = factor;
        Ok(self)
    }

    /// The longest wait (default 60 s).
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Whether to add ±25% of random jitter to each wait (default on).
    #[must_use]
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// Waits with `sleep` instead of the crate's timer: a Tokio user may
    /// pass `tokio::time::sleep` (and pause the clock in tests).
    #[must_use]
    pub fn sleep_with<F>(mut self, sleep: F) -> Self
    where
        F: Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync + 'static,
    {
        self.sleeper = Some(Arc::new(sleep));
        self
    }

    /// The wait before retry `retry` (0-indexed) without jitter.
    pub fn base_delay(&self, retry: u32) -> Duration {
        let initial = self.initial_delay.as_secs_f64();
        let delay = if self.backoff_factor == 0.0 {
            initial
        } else {
            let exponent = i32::try_from(retry).unwrap_or(i32::MAX);
            initial * self.backoff_factor.powi(exponent)
        };
        Duration::try_from_secs_f64(delay.min(self.max_delay.as_secs_f64()))
            .unwrap_or(self.max_delay)
    }

    /// The wait before retry `retry` (0-indexed), jitter included.
    pub fn delay(&self, retry: u32) -> Duration {
        let base = self.base_delay(retry);
        if !self.jitter || base.is_zero() {
            return base;
        }
        let spread = base.as_secs_f64() * 0.25;
        let offset = spread * (2.0 * unit_random() - 1.0);
        // `base` may be a `max_delay` of `Duration::MAX` ("no cap"): a
        // quarter more does not fit, and the base is waited as it is.
        Duration::try_from_secs_f64((base.as_secs_f64() + offset).max(0.0)).unwrap_or(base)
    }

    /// Waits before retry `retry`: nothing when the delay is zero.
    pub(crate) async fn wait(&self, retry: u32) {
        let delay = self.delay(retry);
        if delay.is_zero() {
            return;
        }
        tracing::debug!(
            retry,
            delay_ms = delay.as_millis(),
            "waiting before a retry"
        );
        match &self.sleeper {
            Some(sleep) => sleep(delay).await,
            None => crate::graph::timer::sleep(delay).await,
        }
    }
}

/// A number in `[0, 1)`, random enough for jitter: std's randomly keyed
/// hasher over a counter (no random-number crate for one spread).
fn unit_random() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    // 53 random bits, the precision of an f64 in [0, 1).
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What a retry middleware does once the attempts are spent on an error
/// `E`: LangChain's `on_failure`.
pub enum OnFailure<E: ?Sized> {
    /// Return the error: the run (or, for a tool, the call) fails with it
    /// (LangChain's `"error"`).
    Error,
    /// Answer with a message that says what failed, so the agent goes on
    /// (LangChain's `"continue"`, the default): an AI message for a model,
    /// an error tool message for a tool, in LangChain's words.
    Continue,
    /// Answer with this function's text instead (LangChain's callable).
    Message(Arc<dyn Fn(&E) -> String + Send + Sync>),
}

impl<E: ?Sized> Clone for OnFailure<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Error => Self::Error,
            Self::Continue => Self::Continue,
            Self::Message(f) => Self::Message(Arc::clone(f)),
        }
    }
}

impl<E: ?Sized> fmt::Debug for OnFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error => f.write_str("Error"),
            Self::Continue => f.write_str("Continue"),
            Self::Message(_) => f.write_str("Message(..)"),
        }
    }
}

impl<E: ?Sized> OnFailure<E> {
    /// Answer with `f`'s text.
    pub fn message(f: impl Fn(&E) -> String + Send + Sync + 'static) -> Self {
        Self::Message(Arc::new(f))
    }
}

/// "attempt" or "attempts", as LangChain's failure messages say it.
fn attempts_word(attempts: u32) -> &'static str {
    if attempts == 1 {
        "attempt"
    } else {
        "attempts"
    }
}

/// Which errors are retried (a model's, a tool's): LangChain's `retry_on`
/// as a predicate.
pub type RetryOn<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;

/// What both retries hold: how often, which errors, what once spent, and
/// the waits between.
pub(crate) struct RetryPolicy<E> {
    pub(crate) max_retries: u32,
    pub(crate) retry_on: RetryOn<E>,
    pub(crate) on_failure: OnFailure<E>,
    pub(crate) backoff: Backoff,
}

impl<E> Clone for RetryPolicy<E> {
    fn clone(&self) -> Self {
        Self {
            max_retries: self.max_retries,
            retry_on: Arc::clone(&self.retry_on),
            on_failure: self.on_failure.clone(),
            backoff: self.backoff.clone(),
        }
    }
}

impl<E> fmt::Debug for RetryPolicy<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_retries", &self.max_retries)
            .field("on_failure", &self.on_failure)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

/// A retried call that gave no answer: its error, and how many attempts
/// failed when the attempts were spent (`None`: an error not retried, or
/// an interrupt, returned as it came).
pub(crate) struct GaveUp<E> {
    pub(crate) error: E,
    pub(crate) spent: Option<u32>,
}

impl<E: fmt::Display> RetryPolicy<E> {
    /// LangChain's defaults: 2 retries, [`OnFailure::Continue`],
    /// [`Backoff::default`], retrying what `retry_on` accepts.
    pub(crate) fn new(retry_on: RetryOn<E>) -> Self {
        Self {
            max_retries: 2,
            retry_on,
            on_failure: OnFailure::Continue,
            backoff: Backoff::default(),
        }
    }

    /// Calls `call` until it answers, fails with an error not retried (an
    /// interrupt never is), or `max_retries` retries failed too, waiting
    /// the backoff between.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        interrupt: fn(&E) -> bool,
        what: &str,
        mut call: F,
    ) -> Result<T, GaveUp<E>>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        let mut attempt = 0;
        loop {
            let error = match call().await {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            if interrupt(&error) || !(self.retry_on)(&error) {
                return Err(GaveUp { error, spent: None });
            }
            if attempt >= self.max_retries {
                let spent = Some(attempt + 1);
                return Err(GaveUp { error, spent });
            }
            tracing::info!(what, attempt = attempt + 1, %error, "call failed; retrying");
            self.backoff.wait(attempt).await;
            attempt += 1;
        }
    }

    /// The answer's text once `attempts` attempts failed with `error`, by
    /// [`OnFailure`]: LangChain's words (`langchain`) for `Continue`, the
    /// user's for `Message`; `Err` for `Error`.
    pub(crate) fn failure_text(
        &self,
        error: E,
        attempts: u32,
        langchain: impl FnOnce(&E, &str) -> String,
    ) -> Result<String, E> {
        match &self.on_failure {
            OnFailure::Error => Err(error),
            OnFailure::Message(f) => Ok(f(&error)),
            OnFailure::Continue => Ok(langchain(&error, attempts_word(attempts))),
        }
    }
}
