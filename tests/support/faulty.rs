//! A delegating [`Checkpointer`] that fails on cue: it wraps a real backend
//! (memory, a SQLite file, PostgreSQL) and can be told to fail its Nth
//! `append` or `put_pending` once, to "crash" (fail every call after its
//! Nth `append` has stored, as a process that died would make no more), or
//! to keep each `append` pending once before it stores (as a networked
//! store's round trip is), so `Durability::Async` has a store under way
//! while the next step runs; or to answer every load with another thread's
//! records, a chain it never stored for the thread asked.
//!
//! Counts are from the last [`Faulty::reset`] (or creation), 1-based.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};

use agent_state::checkpoint::{
    BoxFuture, CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, NewCheckpoint,
    PendingWrite, SnapshotPolicy, StoredCheckpoint,
};

/// A backend that fails on cue; see the module docs.
pub struct Faulty<C> {
    /// The real backend.
    pub inner: C,
    appends: AtomicUsize,
    pendings: AtomicUsize,
    fail_append: AtomicUsize,
    fail_pending: AtomicUsize,
    crash_after: AtomicUsize,
    crashed: AtomicBool,
    defer: AtomicBool,
    deferred: AtomicUsize,
    chains_of: Mutex<Option<String>>,
}

const NEVER: usize = usize::MAX;

/// The error a cued failure gives: a backend failure, as a lost
/// connection or a full disk gives.
fn injected(operation: &'static str) -> CheckpointError {
    CheckpointError::backend(operation, "injected failure")
}

/// Pending once, then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<C: Checkpointer> Faulty<C> {
    /// `inner`, failing nothing yet.
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            appends: AtomicUsize::new(0),
            pendings: AtomicUsize::new(0),
            fail_append: AtomicUsize::new(NEVER),
            fail_pending: AtomicUsize::new(NEVER),
            crash_after: AtomicUsize::new(NEVER),
            crashed: AtomicBool::new(false),
            defer: AtomicBool::new(false),
            deferred: AtomicUsize::new(0),
            chains_of: Mutex::new(None),
        }
    }

    /// Every `append` is pending once before it stores.
    pub fn deferred(self) -> Self {
        self.defer.store(true, Ordering::Relaxed);
        self
    }

    /// How many appends were pending when first polled.
    pub fn deferred_appends(&self) -> usize {
        self.deferred.load(Ordering::Relaxed)
    }

    /// The `n`th `append` from now fails, storing nothing; the others store.
    pub fn fail_append(&self, n: usize) -> &Self {
        self.reset();
        self.fail_append.store(n, Ordering::Relaxed);
        self
    }

    /// The `n`th `put_pending` from now fails, storing nothing.
    pub fn fail_put_pending(&self, n: usize) -> &Self {
        self.reset();
        self.fail_pending.store(n, Ordering::Relaxed);
        self
    }

    /// Once the `n`th `append` from now has stored, every call fails (as
    /// from a process that died then); `0`: every call fails now.
    pub fn crash_after_append(&self, n: usize) -> &Self {
        self.reset();
        self.crash_after.store(n, Ordering::Relaxed);
        self.crashed.store(n == 0, Ordering::Relaxed);
        self
    }

    /// Every `chain` (a load) reads `thread`'s records instead of those of
    /// the thread asked: a chain never stored for it.
    pub fn serve_chains_of(&self, thread: &str) -> &Self {
        *self.chains_of.lock().unwrap() = Some(thread.to_owned());
        self
    }

    /// Fails nothing again and counts from zero.
    pub fn reset(&self) {
        *self.chains_of.lock().unwrap() = None;
        self.appends.store(0, Ordering::Relaxed);
        self.pendings.store(0, Ordering::Relaxed);
        self.fail_append.store(NEVER, Ordering::Relaxed);
        self.fail_pending.store(NEVER, Ordering::Relaxed);
        self.crash_after.store(NEVER, Ordering::Relaxed);
        self.crashed.store(false, Ordering::Relaxed);
    }

    fn alive(&self, operation: &'static str) -> Result<(), CheckpointError> {
        if self.crashed.load(Ordering::Relaxed) {
            return Err(injected(operation));
        }
        Ok(())
    }

    /// The inner backend's `call`, made only once the store is known
    /// alive (a crashed store reaches no backend).
    fn guarded<'a, T: 'a>(
        &'a self,
        operation: &'static str,
        call: impl FnOnce() -> BoxFuture<'a, Result<T, CheckpointError>> + Send + 'a,
    ) -> BoxFuture<'a, Result<T, CheckpointError>> {
        Box::pin(async move {
            self.alive(operation)?;
            call().await
        })
    }
}

impl<C: Checkpointer> Checkpointer for Faulty<C> {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        Box::pin(async move {
            self.alive("append")?;
            let n = self.appends.fetch_add(1, Ordering::Relaxed) + 1;
            if self.defer.load(Ordering::Relaxed) {
                self.deferred.fetch_add(1, Ordering::Relaxed);
                YieldOnce(false).await;
            }
            if n == self.fail_append.load(Ordering::Relaxed) {
                return Err(injected("append"));
            }
            let stored = self.inner.append(thread_id, expected, record).await;
            if n >= self.crash_after.load(Ordering::Relaxed) {
                self.crashed.store(true, Ordering::Relaxed);
            }
            stored
        })
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.guarded("put_snapshot", move || {
            self.inner.put_snapshot(thread_id, id, snapshot)
        })
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        self.guarded("head", move || self.inner.head(thread_id))
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        let other = self.chains_of.lock().unwrap().clone();
        Box::pin(async move {
            self.alive("chain")?;
            let from = other.as_deref().unwrap_or(thread_id);
            self.inner.chain(from, id).await
        })
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        self.guarded("list", move || self.inner.list(thread_id, before, limit))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        self.guarded("delete_thread", move || self.inner.delete_thread(thread_id))
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.inner.snapshot_policy()
    }

    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            self.alive("put_pending")?;
            let n = self.pendings.fetch_add(1, Ordering::Relaxed) + 1;
            if n == self.fail_pending.load(Ordering::Relaxed) {
                return Err(injected("put_pending"));
            }
            self.inner.put_pending(thread_id, checkpoint, writes).await
        })
    }

    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        self.guarded("pending", move || self.inner.pending(thread_id, checkpoint))
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.guarded("truncate_after", move || {
            self.inner.truncate_after(thread_id, keep)
        })
    }
}
