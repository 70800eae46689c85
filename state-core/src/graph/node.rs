//! What a node returns, and how the runtime calls it.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A node's error, boxed: nodes call models, tools and services whose errors
/// have nothing in common.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An update plus routing, as LangGraph's `Command(update=.., goto=..)`: a
/// tool that records a result and sends the graph to a given node, say.
///
/// ```
/// use agent_state::graph::Command;
///
/// let cmd: Command<u32> = Command::update(7).and_goto("review");
/// assert_eq!(cmd.goto, ["review"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Command<U> {
    /// The update, applied with the other writes of the step.
    pub update: Option<U>,
    /// The nodes to run next, on top of the node's edges.
    pub goto: Vec<String>,
}

impl<U> Command<U> {
    /// A command carrying `update` and no routing.
    pub fn update(update: U) -> Self {
        Self {
            update: Some(update),
            goto: Vec::new(),
        }
    }

    /// A command that only routes to `node` (or [`END`](super::END)).
    pub fn goto(node: impl Into<String>) -> Self {
        Self {
            update: None,
            goto: vec![node.into()],
        }
    }

    /// Also routes to `node`.
    #[must_use]
    pub fn and_goto(mut self, node: impl Into<String>) -> Self {
        self.goto.push(node.into());
        self
    }

    /// Carries `update` too.
    #[must_use]
    pub fn with_update(mut self, update: U) -> Self {
        self.update = Some(update);
        self
    }
}

/// What a node returned.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeOutput<U> {
    /// No change (a node returning `None` in LangGraph).
    Nothing,
    /// A partial update.
    Update(U),
    /// An update plus routing.
    Command(Command<U>),
    /// Several writes of one node, applied in order with the step's other
    /// writes (each its own entry in the checkpoint, under the node's name),
    /// with [`AgentState::apply_all`](crate::AgentState::apply_all)'s rules:
    /// what LangGraph does with the several `Command`s of a tool node, one
    /// per tool call. Their gotos all apply.
    Batch(Vec<Command<U>>),
}

/// The return types a node may have: an update, a [`Command`], an `Option`
/// of an update (`None`: no change), a [`NodeOutput`], or any of these in a
/// `Result` whose error converts into a [`BoxError`].
pub trait IntoNodeResult<U> {
    /// The output, or the node's error.
    fn into_node_result(self) -> Result<NodeOutput<U>, BoxError>;
}

impl<U> IntoNodeResult<U> for U {
    fn into_node_result(self) -> Result<NodeOutput<U>, BoxError> {
        Ok(NodeOutput::Update(self))
    }
}

impl<U> IntoNodeResult<U> for Command<U> {
    fn into_node_result(self) -> Result<NodeOutput<U>, BoxError> {
        Ok(NodeOutput::Command(self))
    }
}

impl<U> IntoNodeResult<U> for Option<U> {
    fn into_node_result(self) -> Result<NodeOutput<U>, BoxError> {
        Ok(self.map_or(NodeOutput::Nothing, NodeOutput::Update))
    }
}

impl<U> IntoNodeResult<U> for NodeOutput<U> {
    fn into_node_result(self) -> Result<NodeOutput<U>, BoxError> {
        Ok(self)
    }
}

macro_rules! fallible {
    ($($ty:ty),*) => {$(
        impl<U, E: Into<BoxError>> IntoNodeResult<U> for Result<$ty, E> {
            fn into_node_result(self) -> Result<NodeOutput<U>, BoxError> {
                self.map_err(Into::into).and_then(IntoNodeResult::into_node_result)
            }
        }
    )*};
}
fallible!(U, Command<U>, Option<U>, NodeOutput<U>);

/// Where a router sends the graph: one node name, [`END`](super::END), or
/// several names (they run together in the next superstep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// One target.
    One(Cow<'static, str>),
    /// Several targets.
    Many(Vec<Cow<'static, str>>),
}

impl From<&'static str> for Next {
    fn from(name: &'static str) -> Self {
        Next::One(Cow::Borrowed(name))
    }
}

impl From<String> for Next {
    fn from(name: String) -> Self {
        Next::One(Cow::Owned(name))
    }
}

impl From<Vec<&'static str>> for Next {
    fn from(names: Vec<&'static str>) -> Self {
        Next::Many(names.into_iter().map(Cow::Borrowed).collect())
    }
}

impl From<Vec<String>> for Next {
    fn from(names: Vec<String>) -> Self {
        Next::Many(names.into_iter().map(Cow::Owned).collect())
    }
}

impl Next {
    pub(crate) fn names(&self) -> &[Cow<'static, str>] {
        match self {
            Next::One(name) => std::slice::from_ref(name),
            Next::Many(names) => names,
        }
    }
}

pub(crate) type NodeResult<U> = Result<NodeOutput<U>, BoxError>;
pub(crate) type NodeFuture<U> = Pin<Box<dyn Future<Output = NodeResult<U>> + Send>>;
pub(crate) type SyncNode<S, U> = Box<dyn Fn(&S) -> NodeResult<U> + Send + Sync>;
pub(crate) type AsyncNode<S, U> = Box<dyn Fn(Arc<S>) -> NodeFuture<U> + Send + Sync>;

/// A node's function, sync or async.
pub(crate) enum NodeFn<S, U> {
    Sync(SyncNode<S, U>),
    Async(AsyncNode<S, U>),
}

/// Polls every node future of a superstep until all are done, so async
/// nodes of one step wait on their models together.
pub(crate) struct JoinAll<U> {
    pending: Vec<Option<NodeFuture<U>>>,
    done: Vec<Option<NodeResult<U>>>,
}

impl<U> JoinAll<U> {
    pub(crate) fn new(futures: Vec<Result<NodeFuture<U>, NodeResult<U>>>) -> Self {
        let mut pending = Vec::with_capacity(futures.len());
        let mut done = Vec::with_capacity(futures.len());
        for f in futures {
            match f {
                Ok(fut) => {
                    pending.push(Some(fut));
                    done.push(None);
                }
                Err(ready) => {
                    pending.push(None);
                    done.push(Some(ready));
                }
            }
        }
        Self { pending, done }
    }
}

// Nothing is pinned in place: the futures are boxed and the results plain.
impl<U> Unpin for JoinAll<U> {}

impl<U> Future for JoinAll<U> {
    type Output = Vec<NodeResult<U>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is Unpin (boxed futures and plain values).
        let this = self.get_mut();
        let mut all = true;
        for (slot, out) in this.pending.iter_mut().zip(this.done.iter_mut()) {
            if let Some(fut) = slot {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        *out = Some(result);
                        *slot = None;
                    }
                    Poll::Pending => all = false,
                }
            }
        }
        if !all {
            return Poll::Pending;
        }
        Poll::Ready(
            this.done
                .iter_mut()
                .map(|r| r.take().expect("every node finished"))
                .collect(),
        )
    }
}
