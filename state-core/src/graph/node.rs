//! What a node returns, and how the runtime calls it.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::context::NodeContext;
pub use super::error::BoxError;
use crate::checkpoint::Checkpointer;
use crate::send::{Send, SendArg};

/// An update plus routing, as LangGraph's `Command(update=.., goto=..)`: a
/// tool that records a result and sends the graph to a given node, say.
/// Its [`Send`]s start tasks with their own input (`goto=[Send(..)]`).
///
/// ```
/// use agent_state::graph::{Command, Send};
///
/// let cmd: Command<u32> = Command::update(7).and_goto("review");
/// assert_eq!(cmd.goto, ["review"]);
/// let fan: Command<u32> = Command::send(Send::new("grade", 1)).and_send(Send::new("grade", 2));
/// assert_eq!(fan.send.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Command<U> {
    /// The update, applied with the other writes of the step.
    pub update: Option<U>,
    /// The nodes to run next, on top of the node's edges.
    pub goto: Vec<String>,
    /// Tasks with their own input for the next step.
    pub send: Vec<Send>,
}

impl<U> Command<U> {
    /// A command carrying `update` and no routing.
    pub fn update(update: U) -> Self {
        Self {
            update: Some(update),
            goto: Vec::new(),
            send: Vec::new(),
        }
    }

    /// A command that only routes to `node` (or [`END`](super::END)).
    pub fn goto(node: impl Into<String>) -> Self {
        Self {
            update: None,
            goto: vec![node.into()],
            send: Vec::new(),
        }
    }

    /// A command that only starts a task with its own input.
    pub fn send(task: Send) -> Self {
        Self {
            update: None,
            goto: Vec::new(),
            send: vec![task],
        }
    }

    /// Also routes to `node`.
    #[must_use]
    pub fn and_goto(mut self, node: impl Into<String>) -> Self {
        self.goto.push(node.into());
        self
    }

    /// Also starts `task`.
    #[must_use]
    pub fn and_send(mut self, task: Send) -> Self {
        self.send.push(task);
        self
    }

    /// Carries `update` too.
    #[must_use]
    pub fn with_update(mut self, update: U) -> Self {
        self.update = Some(update);
        self
    }
}

/// A command to the graph that runs this one as a node: LangGraph's
/// `Command(graph=Command.PARENT, update=.., goto=..)`. A node of a
/// subgraph returns it (or its `Err`) to end the subgraph at once: the
/// parent's node then writes `update` (read as the parent's update, so
/// it may name any of the parent's fields) and routes to `goto` on top of
/// its edges; what the subgraph wrote before is dropped, as in LangGraph.
/// In a graph that is no subgraph it fails the node, naming the case.
///
/// ```
/// use agent_state::graph::{BoxError, ParentCommand};
/// # #[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
/// # pub struct Parent { pub reason: String }
/// # #[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
/// # pub struct Child { pub tries: u32 }
///
/// fn check(s: &Child) -> Result<ChildUpdate, BoxError> {
///     if s.tries > 3 {
///         let up = ParentUpdate::new().reason("too many tries".to_owned());
///         return Err(ParentCommand::goto("escalate").with_update(up).into());
///     }
///     Ok(ChildUpdate::new().tries(s.tries + 1))
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParentCommand {
    /// The parent's update, as JSON (read by the parent's update type).
    pub update: Option<serde_json::Value>,
    /// Where the parent goes next, on top of the subgraph node's edges.
    pub goto: Vec<String>,
    /// Why the update could not be made JSON, reported by the parent.
    unserializable: Option<String>,
}

impl ParentCommand {
    /// Routes the parent to `node`.
    pub fn goto(node: impl Into<String>) -> Self {
        Self {
            update: None,
            goto: vec![node.into()],
            unserializable: None,
        }
    }

    /// Writes `update` (the parent's typed update, or any JSON of its
    /// fields) in the parent.
    pub fn update(update: impl serde::Serialize) -> Self {
        Self {
            update: None,
            goto: Vec::new(),
            unserializable: None,
        }
        .with_update(update)
    }

    /// Also routes the parent to `node`.
    #[must_use]
    pub fn and_goto(mut self, node: impl Into<String>) -> Self {
        self.goto.push(node.into());
        self
    }

    /// Carries `update` too.
    #[must_use]
    pub fn with_update(mut self, update: impl serde::Serialize) -> Self {
        match serde_json::to_value(update) {
            Ok(v) => self.update = Some(v),
            Err(e) => self.unserializable = Some(e.to_string()),
        }
        self
    }

    /// The parent's command: the update read by the parent's type.
    pub(crate) fn into_command<U: crate::StateUpdate>(self) -> Result<Command<U>, BoxError> {
        if let Some(error) = self.unserializable {
            return Err(format!(
                "a command to the parent graph: its update does not serialize: {error}"
            )
            .into());
        }
        let update = self.update.map(U::from_json).transpose()?;
        Ok(Command {
            update,
            goto: self.goto,
            send: Vec::new(),
        })
    }
}

impl std::fmt::Display for ParentCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a command to the parent graph (goto {:?}), but this graph runs as no other graph's node",
            self.goto
        )
    }
}

impl std::error::Error for ParentCommand {}

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

/// Where a router sends the graph: one node name, [`END`](super::END),
/// several names (they run together in the next superstep), or tasks with
/// their own input ([`Send`]s, LangGraph's map step), with names or not.
///
/// ```
/// use agent_state::graph::{Next, Send};
///
/// let docs = ["a", "b"];
/// let next = Next::send(docs.iter().map(|d| Send::new("summarize", d.to_string())));
/// assert_eq!(next.sends().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// One target.
    One(Cow<'static, str>),
    /// Several targets.
    Many(Vec<Cow<'static, str>>),
    /// Targets and tasks with their own input.
    Tasks {
        /// The nodes that run on the state.
        nodes: Vec<Cow<'static, str>>,
        /// The tasks with their own input.
        sends: Vec<Send>,
    },
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

impl From<Send> for Next {
    fn from(task: Send) -> Self {
        Next::send([task])
    }
}

impl From<Vec<Send>> for Next {
    fn from(sends: Vec<Send>) -> Self {
        Next::send(sends)
    }
}

impl Next {
    /// Only tasks with their own input: an empty list routes nowhere.
    pub fn send(sends: impl IntoIterator<Item = Send>) -> Self {
        Next::Tasks {
            nodes: Vec::new(),
            sends: sends.into_iter().collect(),
        }
    }

    /// Adds a task with its own input.
    #[must_use]
    pub fn and_send(self, task: Send) -> Self {
        let (nodes, mut sends) = match self {
            Next::One(name) => (vec![name], Vec::new()),
            Next::Many(names) => (names, Vec::new()),
            Next::Tasks { nodes, sends } => (nodes, sends),
        };
        sends.push(task);
        Next::Tasks { nodes, sends }
    }

    /// The node names.
    pub fn names(&self) -> &[Cow<'static, str>] {
        match self {
            Next::One(name) => std::slice::from_ref(name),
            Next::Many(names) | Next::Tasks { nodes: names, .. } => names,
        }
    }

    /// The tasks with their own input.
    pub fn sends(&self) -> &[Send] {
        match self {
            Next::Tasks { sends, .. } => sends,
            _ => &[],
        }
    }
}

pub(crate) type NodeResult<U> = Result<NodeOutput<U>, BoxError>;
pub(crate) type NodeFuture<U> = Pin<Box<dyn Future<Output = NodeResult<U>> + std::marker::Send>>;
pub(crate) type SyncNode<S, U> = Box<dyn Fn(&S) -> NodeResult<U> + std::marker::Send + Sync>;
pub(crate) type AsyncNode<S, U> = Box<dyn Fn(Arc<S>) -> NodeFuture<U> + std::marker::Send + Sync>;
pub(crate) type SyncCtxNode<S, U> =
    Box<dyn Fn(&S, &NodeContext) -> NodeResult<U> + std::marker::Send + Sync>;
pub(crate) type AsyncCtxNode<S, U> =
    Box<dyn Fn(Arc<S>, NodeContext) -> NodeFuture<U> + std::marker::Send + Sync>;
pub(crate) type SendSyncNode<U> =
    Box<dyn Fn(&SendArg, &NodeContext) -> NodeResult<U> + std::marker::Send + Sync>;
pub(crate) type SendAsyncNode<U> =
    Box<dyn Fn(&SendArg, NodeContext) -> NodeFuture<U> + std::marker::Send + Sync>;

/// A node's function: on the state or on a [`Send`]'s input, sync or
/// async, with a context or not, or a subgraph.
pub(crate) enum NodeFn<S, U> {
    Sync(SyncNode<S, U>),
    Async(AsyncNode<S, U>),
    SyncCtx(SyncCtxNode<S, U>),
    AsyncCtx(AsyncCtxNode<S, U>),
    SendSync(SendSyncNode<U>),
    SendAsync(SendAsyncNode<U>),
    Subgraph(Box<dyn SubgraphRunner<S, U>>),
}

impl<S, U> NodeFn<S, U> {
    /// Whether the node takes a [`Send`]'s input rather than the state.
    pub(crate) fn takes_send(&self) -> bool {
        matches!(self, NodeFn::SendSync(_) | NodeFn::SendAsync(_))
    }

    /// Whether the node runs on the calling thread, without awaiting.
    pub(crate) fn is_sync(&self) -> bool {
        matches!(
            self,
            NodeFn::Sync(_) | NodeFn::SyncCtx(_) | NodeFn::SendSync(_)
        )
    }

    /// Whether the node is given a [`NodeContext`].
    pub(crate) fn wants_context(&self) -> bool {
        !matches!(self, NodeFn::Sync(_) | NodeFn::Async(_))
    }
}

/// A compiled graph run as a node of another: see
/// [`IntoNode`](super::IntoNode) for a [`Graph`](super::Graph).
pub(crate) trait SubgraphRunner<S, U>: std::marker::Send + Sync {
    /// Runs the child for one task of the parent: its thread, when the
    /// parent has one, is `<parent thread>|<task>/<step>`.
    fn run<'a>(
        &'a self,
        state: Arc<S>,
        ctx: NodeContext,
        saver: Option<&'a dyn Checkpointer>,
    ) -> Pin<Box<dyn Future<Output = NodeResult<U>> + std::marker::Send + 'a>>;

    /// The child's snapshot on its thread `thread_id`, subgraphs included,
    /// its interrupt ids after `prefix` (the parent task's).
    fn snapshot<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: String,
        prefix: String,
    ) -> SnapshotFuture<'a>;

    /// The child's outline, `depth` levels of its own subgraphs included.
    fn outline(&self, depth: usize) -> super::Outline;
}

/// A subgraph's snapshot on its way, its values as JSON.
pub(crate) type SnapshotFuture<'a> = Pin<
    Box<
        dyn Future<Output = Result<super::StateSnapshot<serde_json::Value>, super::GraphError>>
            + std::marker::Send
            + 'a,
    >,
>;
