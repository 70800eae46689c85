//! A node's cache (LangGraph's `CachePolicy`): a node whose input was seen
//! before, within the policy's time to live, is not run again; its last
//! output for that input is its output.
//!
//! The cache wraps the node's function when the node is added, so the run
//! loops know nothing of it, and lives with the compiled graph: every run
//! and thread of the graph shares it, as LangGraph's `InMemoryCache`
//! given to `compile` is shared.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::context::{NodeContext, Signal};
use super::node::{NodeFn, NodeFuture, NodeOutput, NodeResult};
use crate::send::SendArg;
use crate::state::AgentState;

type KeyFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// When a node's output may be reused: for the same input (its JSON, or
/// the key [`key`](Self::key) makes of it), within [`ttl`](Self::ttl).
/// Attach it with [`Node::cache`](super::Node::cache).
///
/// ```
/// use std::time::Duration;
/// use agent_state::graph::CachePolicy;
///
/// // Same `query` field, same answer, for ten minutes.
/// let policy = CachePolicy::new()
///     .ttl(Duration::from_secs(600))
///     .key(|input| input["query"].to_string());
/// # let _ = policy;
/// ```
#[derive(Clone, Default)]
pub struct CachePolicy {
    ttl: Option<Duration>,
    key: Option<KeyFn>,
}

impl std::fmt::Debug for CachePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .field("key", &self.key.as_ref().map(|_| ".."))
            .finish()
    }
}

impl CachePolicy {
    /// Reuse forever, keyed by the node's whole input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reuse an output for at most `ttl` after it was made.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Key the cache by what `key` makes of the node's input as JSON (the
    /// state, or a [`Send`](super::Send)'s argument) instead of the whole
    /// input: LangGraph's `key_func`.
    #[must_use]
    pub fn key(mut self, key: impl Fn(&Value) -> String + Send + Sync + 'static) -> Self {
        self.key = Some(Arc::new(key));
        self
    }
}

/// The outputs a node made, by key, with when each was made.
struct Entries<U> {
    policy: CachePolicy,
    made: Mutex<HashMap<String, (Instant, NodeOutput<U>)>>,
}

impl<U: Clone> Entries<U> {
    fn key(&self, input: &Value) -> String {
        match &self.policy.key {
            Some(key) => key(input),
            None => input.to_string(),
        }
    }

    /// The output made for `key`, unless it has expired.
    fn get(&self, key: &str) -> Option<NodeOutput<U>> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, output) = made.get(key)?;
        if self.policy.ttl.is_some_and(|ttl| at.elapsed() >= ttl) {
            made.remove(key);
            return None;
        }
        Some(output.clone())
    }

    /// Keeps a successful output; a failure is not kept, so the node runs
    /// again next time.
    fn keep(&self, key: String, result: &NodeResult<U>) {
        if let Ok(output) = result {
            let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
            made.insert(key, (Instant::now(), output.clone()));
        }
    }

    /// The output for `key`: from the cache (marked so on the task's
    /// context), or made by `run` and kept unless the node paused.
    fn sync(
        &self,
        key: String,
        ctx: &NodeContext,
        run: impl FnOnce() -> NodeResult<U>,
    ) -> NodeResult<U> {
        if let Some(output) = self.get(&key) {
            ctx.inner.mark_cached();
            return Ok(output);
        }
        let result = run();
        if !paused(ctx) {
            self.keep(key, &result);
        }
        result
    }

    /// [`sync`](Self::sync) for an async node.
    fn future(
        self: &Arc<Self>,
        key: String,
        ctx: NodeContext,
        run: impl FnOnce() -> NodeFuture<U>,
    ) -> NodeFuture<U>
    where
        U: Send + 'static,
    {
        if let Some(output) = self.get(&key) {
            ctx.inner.mark_cached();
            return Box::pin(async move { Ok(output) });
        }
        let fut = run();
        let entries = Arc::clone(self);
        Box::pin(async move {
            let result = fut.await;
            if !paused(&ctx) {
                entries.keep(key, &result);
            }
            result
        })
    }
}

/// Whether the task paused (or its resume value was refused): its output
/// then stands for no finished run of the node.
fn paused(ctx: &NodeContext) -> bool {
    !matches!(ctx.inner.signal(), Signal::None)
}

/// The JSON a `Send`'s argument is keyed by; an argument that does not
/// serialize is keyed by nothing, so it is never reused.
fn arg_key(arg: &SendArg) -> Value {
    arg.to_json().unwrap_or(Value::Null)
}

/// `f` behind a cache by `policy`; a subgraph is returned as it is
/// (`None`: the caller reports it).
pub(crate) fn cached<S>(
    f: NodeFn<S, S::Update>,
    policy: CachePolicy,
) -> Option<NodeFn<S, S::Update>>
where
    S: AgentState + 'static,
    S::Update: Clone + Send + 'static,
{
    let entries = Arc::new(Entries {
        policy,
        made: Mutex::new(HashMap::new()),
    });
    let e = entries;
    Some(match f {
        // A node without a context is given one: a hit is marked on it.
        NodeFn::Sync(f) => NodeFn::SyncCtx(Box::new(move |s: &S, ctx| {
            e.sync(e.key(&s.to_json()), ctx, || f(s))
        })),
        NodeFn::SyncCtx(f) => NodeFn::SyncCtx(Box::new(move |s: &S, ctx| {
            e.sync(e.key(&s.to_json()), ctx, || f(s, ctx))
        })),
        NodeFn::Async(f) => NodeFn::AsyncCtx(Box::new(move |s: Arc<S>, ctx: NodeContext| {
            e.future(e.key(&s.to_json()), ctx, || f(s))
        })),
        NodeFn::AsyncCtx(f) => NodeFn::AsyncCtx(Box::new(move |s: Arc<S>, ctx: NodeContext| {
            e.future(e.key(&s.to_json()), ctx.clone(), || f(s, ctx))
        })),
        NodeFn::SendSync(f) => NodeFn::SendSync(Box::new(move |arg: &SendArg, ctx| {
            e.sync(e.key(&arg_key(arg)), ctx, || f(arg, ctx))
        })),
        NodeFn::SendAsync(f) => {
            NodeFn::SendAsync(Box::new(move |arg: &SendArg, ctx: NodeContext| {
                e.future(e.key(&arg_key(arg)), ctx.clone(), || f(arg, ctx))
            }))
        }
        NodeFn::Subgraph(_) => return None,
    })
}
