//! What [`StateGraph::add_node`](super::StateGraph::add_node) accepts: any
//! node function, told apart by its argument list (as axum tells handlers
//! apart), a compiled subgraph, and either wrapped in [`Node`] with its
//! policies.
//!
//! Each form becomes one variant of the runtime's node enum once, when the
//! node is added, so the run loops pay nothing for the one way in.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde::de::DeserializeOwned;

use super::cache::{cached, CachePolicy};
use super::context::NodeContext;
use super::node::{IntoNodeResult, NodeFn, NodeFuture};
use super::policy::RetryPolicy;
use crate::send::SendArg;
use crate::state::AgentState;

/// The input a [`Send`](super::Send) carried, as a node's first argument:
/// a node whose first argument is `Sent<I>` runs once per `Send` to it,
/// with the `Send`'s argument instead of the state (LangGraph's map step).
///
/// ```
/// use agent_state::graph::{NodeContext, Sent};
/// # #[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
/// # pub struct Jokes { #[reducer(append)] pub jokes: Vec<String> }
///
/// fn joke(Sent(subject): Sent<String>, _: &NodeContext) -> JokesUpdate {
///     JokesUpdate::new().joke(format!("a joke about {subject}"))
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent<I>(pub I);

/// A node with its policies, attached in one place:
/// `add_node("fetch", Node::new(fetch).retry(policy).timeout(after))`.
///
/// ```
/// use std::time::Duration;
/// use agent_state::graph::{Node, RetryPolicy, StateGraph, START, END};
/// # #[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
/// # pub struct Page { pub body: String }
///
/// async fn fetch(_: std::sync::Arc<Page>) -> PageUpdate {
///     PageUpdate::new().body("<html>".to_owned())
/// }
///
/// let graph = StateGraph::<Page>::new()
///     .add_node(
///         "fetch",
///         Node::new(fetch)
///             .retry(RetryPolicy::new(3))
///             .timeout(Duration::from_secs(5)),
///     )
///     .add_edge(START, "fetch")
///     .add_edge("fetch", END)
///     .compile()?;
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Node<T> {
    node: T,
    policy: NodePolicy,
}

/// What a node may carry beside its function.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodePolicy {
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) cache: Option<CachePolicy>,
    /// A cache was asked of a node that cannot have one (a subgraph).
    pub(crate) uncacheable: bool,
    pub(crate) defer: bool,
}

impl<T> Node<T> {
    /// A node with no policy yet: `node` is anything `add_node` takes.
    pub fn new(node: T) -> Self {
        Node {
            node,
            policy: NodePolicy::default(),
        }
    }

    /// Retries the node by `policy` when it fails.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.policy.retry = Some(policy);
        self
    }

    /// Fails the node with a [`NodeTimeout`](super::NodeTimeout) when it
    /// runs longer than `after` (its future is dropped then). Only an async
    /// node can be stopped midway: on a sync one,
    /// [`compile`](super::StateGraph::compile) fails with
    /// [`GraphError::TimeoutOnSyncNode`](super::GraphError::TimeoutOnSyncNode).
    #[must_use]
    pub fn timeout(mut self, after: Duration) -> Self {
        self.policy.timeout = Some(after);
        self
    }

    /// Reuses the node's output for an input it has seen, as `policy`
    /// says (LangGraph's `cache_policy`): the node is not run again. The
    /// cache belongs to the compiled graph, shared by its runs and
    /// threads, in memory. A subgraph takes no cache:
    /// [`compile`](super::StateGraph::compile) fails with
    /// [`GraphError::CacheOnSubgraph`](super::GraphError::CacheOnSubgraph).
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.policy.cache = Some(policy);
        self
    }

    /// Defers the node (LangGraph's `defer=True`): once reached, it runs
    /// only when nothing else is left to run, and once however many
    /// branches reached it, so it sees every branch's work (a summary
    /// after a fan-out of uneven branches, say). A thread keeps it pending
    /// across restarts.
    #[must_use]
    pub fn defer(mut self) -> Self {
        self.policy.defer = true;
        self
    }
}

/// A node as the builder stores it: its function and its policies. Only
/// [`IntoNode`] makes one.
#[doc(hidden)]
pub struct BuiltNode<S: AgentState> {
    pub(crate) f: NodeFn<S, S::Update>,
    pub(crate) policy: NodePolicy,
}

impl<S: AgentState> BuiltNode<S> {
    pub(crate) fn plain(f: NodeFn<S, S::Update>) -> Self {
        BuiltNode {
            f,
            policy: NodePolicy::default(),
        }
    }
}

/// Anything [`StateGraph::add_node`](super::StateGraph::add_node) takes as a
/// node of a graph over `S`. `M` only tells the forms apart; it is always
/// inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a graph over `{S}`",
    label = "not a node",
    note = "a node is one of: `fn(&S) -> R`, `fn(&S, &NodeContext) -> R`, \
            `async fn(Arc<S>) -> R`, `async fn(Arc<S>, NodeContext) -> R`, \
            `fn(Sent<I>) -> R`, `fn(Sent<I>, &NodeContext) -> R`, `async fn(Sent<I>) -> R` \
            or `async fn(Sent<I>, NodeContext) -> R` (a `Send`'s input), a compiled `Graph<P>` whose state `P` is a \
            `#[state(flatten)]` part of `S`, or any of these in `Node::new(..)`",
    note = "where `R` is `S::Update`, a `Command<S::Update>`, an `Option` or a \
            `NodeOutput` of one, or a `Result` of those; a node that makes a \
            part's update returns `S::lift(part_update)`"
)]
pub trait IntoNode<S: AgentState, M>: Sized {
    /// The node as the builder stores it.
    #[doc(hidden)]
    fn into_node(self) -> BuiltNode<S>;
}

/// Marker types telling the node forms apart; never named by users.
#[doc(hidden)]
pub mod form {
    use std::marker::PhantomData;

    /// `fn(&S) -> R`.
    pub struct State<R>(PhantomData<R>);
    /// `fn(&S, &NodeContext) -> R`.
    pub struct StateCtx<R>(PhantomData<R>);
    /// `fn(Arc<S>) -> Fut`.
    pub struct Shared<Fut>(PhantomData<Fut>);
    /// `fn(Arc<S>, NodeContext) -> Fut`.
    pub struct SharedCtx<Fut>(PhantomData<Fut>);
    /// `fn(Sent<I>, &NodeContext) -> R`.
    pub struct Sent<I, R>(PhantomData<(I, R)>);
    /// `fn(Sent<I>, NodeContext) -> Fut`.
    pub struct SentAsync<I, Fut>(PhantomData<(I, Fut)>);
    /// `fn(Sent<I>) -> R`.
    pub struct SentOnly<I, R>(PhantomData<(I, R)>);
    /// `fn(Sent<I>) -> Fut`.
    pub struct SentOnlyAsync<I, Fut>(PhantomData<(I, Fut)>);
    /// A compiled subgraph.
    pub struct Subgraph<C>(PhantomData<C>);
    /// A [`Node`](super::Node) around another form.
    pub struct Wrapped<M>(PhantomData<M>);
}

impl<S, F, R> IntoNode<S, form::State<R>> for F
where
    S: AgentState + 'static,
    F: Fn(&S) -> R + Send + Sync + 'static,
    R: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |s: &S| self(s).into_node_result();
        BuiltNode::plain(NodeFn::Sync(Box::new(f)))
    }
}

impl<S, F, R> IntoNode<S, form::StateCtx<R>> for F
where
    S: AgentState + 'static,
    F: Fn(&S, &NodeContext) -> R + Send + Sync + 'static,
    R: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |s: &S, ctx: &NodeContext| self(s, ctx).into_node_result();
        BuiltNode::plain(NodeFn::SyncCtx(Box::new(f)))
    }
}

/// A node's future, its answer made a node result. A `map`, not an
/// `async` block: a block awaiting the future it captured may hold it
/// twice (as captured and as awaited), in what is allocated and moved for
/// every task.
fn boxed<U: 'static, Fut>(fut: Fut) -> NodeFuture<U>
where
    Fut: Future + Send + 'static,
    Fut::Output: IntoNodeResult<U>,
{
    Box::pin(fut.map(IntoNodeResult::into_node_result))
}

impl<S, F, Fut> IntoNode<S, form::Shared<Fut>> for F
where
    S: AgentState + 'static,
    F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |s: Arc<S>| boxed(self(s));
        BuiltNode::plain(NodeFn::Async(Box::new(f)))
    }
}

impl<S, F, Fut> IntoNode<S, form::SharedCtx<Fut>> for F
where
    S: AgentState + 'static,
    F: Fn(Arc<S>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |s: Arc<S>, ctx: NodeContext| boxed(self(s, ctx));
        BuiltNode::plain(NodeFn::AsyncCtx(Box::new(f)))
    }
}

impl<S, F, I, R> IntoNode<S, form::Sent<I, R>> for F
where
    S: AgentState + 'static,
    I: DeserializeOwned + Clone + Send + Sync + 'static,
    F: Fn(Sent<I>, &NodeContext) -> R + Send + Sync + 'static,
    R: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |arg: &SendArg, ctx: &NodeContext| {
            let input: I = arg.take(ctx.node())?;
            self(Sent(input), ctx).into_node_result()
        };
        BuiltNode::plain(NodeFn::SendSync(Box::new(f)))
    }
}

impl<S, F, I, Fut> IntoNode<S, form::SentAsync<I, Fut>> for F
where
    S: AgentState + 'static,
    I: DeserializeOwned + Clone + Send + Sync + 'static,
    F: Fn(Sent<I>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        let f = move |arg: &SendArg, ctx: NodeContext| -> NodeFuture<S::Update> {
            match arg.take::<I>(ctx.node()) {
                Ok(input) => boxed(self(Sent(input), ctx)),
                Err(e) => Box::pin(async move { Err(e) }),
            }
        };
        BuiltNode::plain(NodeFn::SendAsync(Box::new(f)))
    }
}

impl<S, F, I, R> IntoNode<S, form::SentOnly<I, R>> for F
where
    S: AgentState + 'static,
    I: DeserializeOwned + Clone + Send + Sync + 'static,
    F: Fn(Sent<I>) -> R + Send + Sync + 'static,
    R: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        (move |input: Sent<I>, _: &NodeContext| self(input)).into_node()
    }
}

impl<S, F, I, Fut> IntoNode<S, form::SentOnlyAsync<I, Fut>> for F
where
    S: AgentState + 'static,
    I: DeserializeOwned + Clone + Send + Sync + 'static,
    F: Fn(Sent<I>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoNodeResult<S::Update>,
{
    fn into_node(self) -> BuiltNode<S> {
        (move |input: Sent<I>, _: NodeContext| self(input)).into_node()
    }
}

// Listing it under a failed node would only add noise.
#[diagnostic::do_not_recommend]
impl<S, T, M> IntoNode<S, form::Wrapped<M>> for Node<T>
where
    S: AgentState + 'static,
    S::Update: Clone + Send + 'static,
    T: IntoNode<S, M>,
{
    fn into_node(self) -> BuiltNode<S> {
        let mut policy = self.policy;
        let f = self.node.into_node().f;
        let f = match policy.cache.take() {
            None => f,
            Some(cache) => match f {
                NodeFn::Subgraph(_) => {
                    policy.uncacheable = true;
                    f
                }
                f => cached(f, cache).expect("only a subgraph takes no cache"),
            },
        };
        BuiltNode { f, policy }
    }
}
