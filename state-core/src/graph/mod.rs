//! The graph runtime: nodes read the state and return updates, the runtime
//! applies them with LangGraph's step semantics, and checkpoints each step.
//!
//! * One way to add a node, [`StateGraph::add_node`], which reads the
//!   function's argument list ([`IntoNode`]): a function of the state
//!   (sync, or async taking an `Arc<State>`), with a [`NodeContext`] (to
//!   [`interrupt`](NodeContext::interrupt) the run for a value from
//!   outside) or without, of a [`Send`]'s input ([`Sent`]), or a whole
//!   compiled graph; in a [`Node`] with its policies. It returns an update,
//!   a [`Command`] (update plus routing), or nothing ([`IntoNodeResult`]).
//! * Edges, joins (`add_edge(["a", "b"], "c")`), conditional edges
//!   ([`Next`], [`Send`]s included), [`START`] and [`END`]. Several targets
//!   run together as one superstep (sync nodes on threads of their own,
//!   async ones polled together), and their updates apply as one step in
//!   node-name order, then the `Send` tasks' in the order they were made
//!   ([`AgentState::apply_all`] rules: two writes to a plain field are an
//!   error).
//! * Middleware ([`Middleware`]): `before_agent` / `after_agent` hooks, run
//!   once per invocation, each its own step, so each sees the updates of
//!   those before it: `before_agent` in registration order, `after_agent`
//!   in reverse (LangChain v1's order).
//! * Streaming ([`Run::stream`]): LangGraph's stream modes (`values`,
//!   `updates`, `messages`, `custom`, `checkpoints`, `tasks`, `debug`) as a
//!   `futures::Stream`, with backpressure; dropping it cancels the run.
//! * A recursion limit, a step callback, and per-thread runs over a
//!   [`Checkpointer`](crate::checkpoint::Checkpointer) that resume after a
//!   crash from the last saved step without re-applying anything, and
//!   without re-running the tasks of an unfinished step that had finished.
//! * Pauses: interrupts and static breakpoints (`interrupt_before`,
//!   `interrupt_after`), kept in the checkpoint and resumed from any
//!   process ([`Input::ResumeWith`]); reading and editing a thread
//!   ([`Graph::get_state`], [`Graph::update_state`], time travel with
//!   [`Run::from_checkpoint`]).
//! * Node policies ([`Node`]): [`RetryPolicy`], timeouts; cancelling a run
//!   ([`CancelToken`], or dropping its future).
//!
//! ```
//! use agent_state::checkpoint::block_on;
//! use agent_state::graph::{Input, StateGraph, END, START};
//! use agent_state::{ai, AgentState, Messages};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[reducer(messages)]
//!     messages: Messages,
//!     turns: u32,
//! }
//!
//! let graph = StateGraph::<Chat>::new()
//!     .add_node("bot", |s: &Chat| ChatUpdate::new().message(ai("hi")).turns(s.turns + 1))
//!     .add_edge(START, "bot")
//!     .add_conditional_edges("bot", |s: &Chat| if s.turns < 3 { "bot" } else { END })
//!     .compile()?;
//!
//! let out = block_on(graph.run(Input::Update(ChatUpdate::new())))?;
//! assert_eq!(out.state.turns, 3);
//! assert_eq!(out.state.messages.len(), 3);
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```

mod builder;
mod cache;
mod context;
mod edit;
mod error;
mod into_node;
mod joins;
mod mermaid;
mod node;
mod outline;
mod output;
mod pending;
mod policy;
mod resume;
mod route_cache;
mod run;
mod step;
pub(crate) mod stream;
mod subgraph;
mod tasks;
pub(crate) mod timer;
pub(crate) mod trace;
mod unknown;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use crate::send::Send;
pub use builder::{EdgeSources, StateGraph};
pub use cache::CachePolicy;
pub use context::{Interrupt, Interrupted, NodeContext, Resume};
pub use error::GraphError;
pub use into_node::{form, IntoNode, Node, Sent};
pub use node::{BoxError, Command, IntoNodeResult, Next, NodeOutput, ParentCommand};
pub use outline::Outline;
pub use output::RunOutput;
pub use policy::{CancelToken, NodeTimeout, RetryPolicy};
pub use run::{Durability, Input, Run, StepEvent};
pub use stream::{
    CustomEvent, MessageEvent, RunStream, StreamEvent, StreamMode, StreamModes, StreamWriter,
    SubgraphEvent, TaskInput, TaskOutcome, UnknownStreamMode,
};
pub use subgraph::Mapped;
pub use tasks::SnapshotTask;
pub use tasks::StateSnapshot;

use crate::send::SendArg;
use crate::state::AgentState;
use node::NodeFn;

/// The graph's entry: edges from `START` name the first nodes.
pub const START: &str = "__start__";
/// The graph's exit: routing to `END` finishes the run.
pub const END: &str = "__end__";

/// A middleware: state hooks that run once per invocation, as LangChain's
/// `AgentMiddleware.before_agent` / `after_agent`. Each hook runs as its own
/// step (named `<name>.before_agent` / `<name>.after_agent` in the stream
/// and the checkpoints): `before_agent` hooks in registration order,
/// `after_agent` hooks in reverse, so the first middleware wraps the others
/// as in LangChain v1.
///
/// For a model ↔ tools loop with `before_model`, `wrap_model_call` and the
/// other agent hooks, see the `agent` module's `AgentMiddleware`.
///
/// Write it generic over every state that has what it needs, and add it to
/// as many graphs as you like.
pub trait Middleware<S: AgentState>: std::marker::Send + Sync {
    /// The middleware's name; unique within a graph.
    fn name(&self) -> &str;

    /// Runs before the first node. `None`: no change.
    fn before_agent(&self, state: &S) -> Result<Option<S::Update>, BoxError> {
        let _ = state;
        Ok(None)
    }

    /// Runs after the graph reached `END`. `None`: no change.
    fn after_agent(&self, state: &S) -> Result<Option<S::Update>, BoxError> {
        let _ = state;
        Ok(None)
    }

    /// Whether [`before_agent`](Self::before_agent) does anything; a hook
    /// that does not costs no step.
    fn has_before_agent(&self) -> bool {
        true
    }

    /// Whether [`after_agent`](Self::after_agent) does anything.
    fn has_after_agent(&self) -> bool {
        true
    }
}

type Router<S> = Box<dyn Fn(&S) -> Next + std::marker::Send + Sync>;

/// An edge out of a node, resolved.
enum Edge {
    To(Target),
    /// A conditional edge: the router at this index in `Graph::routers`.
    Router(usize),
    /// A conditional edge taken only when the node's write routes nowhere
    /// itself (no goto, no `Send`): how a node that always routes by
    /// `Command` (the agent's) still leads somewhere when
    /// `update_state(.., as_node)` writes as it, as LangChain's agent,
    /// routed by edges, does.
    Fallback(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Node(usize),
    End,
}

/// What the runtime needs of a graph's state, on top of [`AgentState`]:
/// `Default` (a run starts from the default state), `Clone` (the state is
/// shared with async nodes and copied on write), `Send + Sync + 'static`
/// (nodes run on any thread), an update that is `Clone + Send + Sync` and a
/// staged step that is `Send`.
///
/// Implemented for every type that has all of these; required by
/// [`StateGraph::new`], so a state that lacks one is told there which,
/// rather than later that a run "is not a future".
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the state of a graph: it lacks a trait the runtime needs",
    label = "not a graph state",
    note = "a graph's state must be `AgentState + Default + Clone + Send + Sync + 'static` (derive `Clone` next to `AgentState`), with an update that is `Clone + Send + Sync`"
)]
pub trait GraphState:
    AgentState<Update: Clone + std::marker::Send + Sync, Staged: std::marker::Send>
    + Default
    + Clone
    + std::marker::Send
    + Sync
    + 'static
{
}

impl<S> GraphState for S where
    S: AgentState<Update: Clone + std::marker::Send + Sync, Staged: std::marker::Send>
        + Default
        + Clone
        + std::marker::Send
        + Sync
        + 'static
{
}

/// A join (`add_edge(["a", "b"], "c")`): `target` runs once every source
/// has finished since it last ran.
pub(crate) struct Join {
    /// `join:a+b:c`, sources sorted: names its progress in a checkpoint.
    pub(crate) key: String,
    pub(crate) sources: Vec<usize>,
    pub(crate) target: usize,
}

/// One of [`Middleware`]'s hooks, called on a middleware.
type Hook<S> = fn(&dyn Middleware<S>, &S) -> Result<Option<<S as AgentState>::Update>, BoxError>;

/// A middleware hook as a node: its `Option` of an update is what a node
/// returning an `Option` gives.
fn hook_node<S: AgentState + 'static>(
    middleware: &Arc<dyn Middleware<S>>,
    hook: Hook<S>,
) -> NodeFn<S, S::Update> {
    let middleware = Arc::clone(middleware);
    NodeFn::Sync(Box::new(move |s: &S| {
        hook(middleware.as_ref(), s).and_then(IntoNodeResult::into_node_result)
    }))
}

/// Node index by name. foldhash, not SipHash: a router's target is looked
/// up on every step it routes, and the names are the graph's own.
pub(crate) type NameIndex = HashMap<String, usize, foldhash::fast::RandomState>;

/// A compiled graph: run it with [`run`](Self::run).
pub struct Graph<S: AgentState> {
    names: Vec<String>,
    /// The names again, shared: a task's key and its context's node name
    /// are these (a count bumped, not a string copied, every step).
    shared_names: Vec<Arc<str>>,
    fns: Vec<NodeFn<S, S::Update>>,
    index: NameIndex,
    routes: Vec<Vec<Edge>>,
    entry: Vec<Edge>,
    routers: Vec<Router<S>>,
    /// Per router, the targets it declared, if it did.
    router_ends: Vec<Option<Vec<String>>>,
    first_after: Option<usize>,
    is_after: Vec<bool>,
    rank: Vec<usize>,
    recursion_limit: usize,
    joins: Vec<Join>,
    /// Per node: the joins it is a source of, with its bit in each.
    join_of: Vec<Vec<(usize, usize)>>,
    before: Vec<bool>,
    after: Vec<bool>,
    retry: Vec<Option<RetryPolicy>>,
    timeout: Vec<Option<Duration>>,
    /// Per node: whether it is deferred ([`Node::defer`]).
    deferred: Vec<bool>,
    has_deferred: bool,
    /// Per node whose edges are all plain (no router): the nodes that run
    /// after it, in task order, whatever the state.
    fixed: Vec<Option<Vec<usize>>>,
    /// What the drawing shows beyond the routing.
    drawing: mermaid::Drawing,
    /// The store its runs get unless given one ([`Graph::with_store`]).
    store: Option<context::SharedStore>,
}

/// One task of a superstep: a node on the state, or a node on a
/// [`Send`]'s input (the `k`-th `Send` of the step).
#[derive(Clone)]
pub(crate) struct Task {
    pub(crate) node: usize,
    pub(crate) send: Option<(usize, SendArg)>,
}

/// What routing produced, before it is put in order.
#[derive(Default)]
pub(crate) struct Routed {
    pub(crate) pull: Vec<usize>,
    pub(crate) push: Vec<(usize, SendArg)>,
}

impl Routed {
    pub(crate) fn clear(&mut self) {
        self.pull.clear();
        self.push.clear();
    }
}

impl<S: AgentState> Graph<S> {
    /// Gives the graph's runs `store` (LangGraph's `compile(store=..)`),
    /// replacing the one it had: its nodes read it with
    /// [`NodeContext::store`], an agent's tools and middleware through
    /// their runtime and requests. A run given a store of its own
    /// ([`Run::store`]) uses that one instead.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::graph::{StateGraph, START};
    /// use agent_state::store::MemoryStore;
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { n: u32 }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("inc", |s: &S| SUpdate::new().n(s.n + 1))
    ///     .add_edge(START, "inc")
    ///     .compile()?;
    /// assert!(graph.store().is_none());
    /// let graph = graph.with_store(Arc::new(MemoryStore::new()));
    /// assert!(graph.store().is_some());
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The store the graph's runs get unless given one; `None` when it has
    /// none.
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// The node names, hooks included, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Whether node `name` takes a [`Send`]'s input (its function's first
    /// argument is [`Sent<T>`](Sent)) rather than the state; `None` when
    /// the graph has no such node. What a caller checks before it routes
    /// a `Send` that it builds from outside (a server's `command.goto`).
    ///
    /// ```
    /// use agent_state::graph::{Sent, StateGraph, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { n: u32 }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("plan", |_: &S| SUpdate::new())
    ///     .add_node("work", |Sent(n): Sent<u32>| SUpdate::new().n(n))
    ///     .add_edge(START, "plan")
    ///     .compile()?;
    /// assert_eq!(graph.takes_send("work"), Some(true));
    /// assert_eq!(graph.takes_send("plan"), Some(false));
    /// assert_eq!(graph.takes_send("nope"), None);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn takes_send(&self, name: &str) -> Option<bool> {
        self.index.get(name).map(|&i| self.fns[i].takes_send())
    }

    /// A task's key: the node's name, or `node[k]` for a `Send` task.
    pub(crate) fn task_key(&self, task: &Task) -> String {
        match &task.send {
            None => self.names[task.node].clone(),
            Some((k, _)) => format!("{}[{k}]", self.names[task.node]),
        }
    }

    /// [`task_key`](Self::task_key), shared: for a task on the state, the
    /// node's own name (no copy).
    pub(crate) fn shared_task_key(&self, task: &Task) -> Arc<str> {
        match &task.send {
            None => Arc::clone(&self.shared_names[task.node]),
            Some((k, _)) => format!("{}[{k}]", self.names[task.node]).into(),
        }
    }

    /// Node `node`'s name, shared.
    pub(crate) fn shared_name(&self, node: usize) -> &Arc<str> {
        &self.shared_names[node]
    }

    /// The node of a name, for routing: a node that reads the state.
    fn pull_target(&self, name: &str, from: &dyn Fn() -> String) -> Result<Target, GraphError> {
        if name == END {
            return Ok(Target::End);
        }
        let &i = self
            .index
            .get(name)
            .ok_or_else(|| GraphError::UnknownTarget {
                from: from(),
                target: name.to_owned(),
                nodes: self.names.clone(),
            })?;
        if self.fns[i].takes_send() {
            return Err(GraphError::EdgeToSendNode {
                node: name.to_owned(),
                from: from(),
            });
        }
        Ok(Target::Node(i))
    }

    /// The node of a `Send`: one that takes a `Send`'s input.
    fn push_target(&self, send: &Send, from: &dyn Fn() -> String) -> Result<usize, GraphError> {
        let &i = self
            .index
            .get(send.node())
            .ok_or_else(|| GraphError::UnknownTarget {
                from: from(),
                target: send.node().to_owned(),
                nodes: self.names.clone(),
            })?;
        if !self.fns[i].takes_send() {
            return Err(GraphError::SendToStateNode {
                node: send.node().to_owned(),
                from: from(),
            });
        }
        Ok(i)
    }

    /// Where routing from `from` (a node, or `None` for START) leads on
    /// `state`, plus a `Command`'s `goto` targets and `Send`s; END taken to
    /// the after hooks first.
    pub(crate) fn route_into(
        &self,
        from: Option<usize>,
        goto: &[String],
        sends: &[Send],
        state: &S,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let directed = !goto.is_empty() || !sends.is_empty();
        if directed {
            self.route_targets(from, goto, sends, out)?;
        }
        let edges = match from {
            None => &self.entry,
            Some(i) => &self.routes[i],
        };
        for edge in edges {
            match edge {
                Edge::To(target) => self.push_pull(from, *target, out),
                Edge::Router(r) => self.route_router(from, *r, state, out)?,
                Edge::Fallback(r) if !directed => self.route_router(from, *r, state, out)?,
                Edge::Fallback(_) => {}
            }
        }
        Ok(())
    }

    /// Where router `r` leads from `from` on `state`.
    fn route_router(
        &self,
        from: Option<usize>,
        r: usize,
        state: &S,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let next = (self.routers[r])(state);
        self.route_next(from, r, &next, out)
    }

    /// Where router `r`'s answer `next` leads from `from`.
    fn route_next(
        &self,
        from: Option<usize>,
        r: usize,
        next: &Next,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        if let Some(declared) = &self.router_ends[r] {
            self.check_declared(from, declared, next)?;
        }
        if !next.sends().is_empty() {
            self.route_targets(from, &[], next.sends(), out)?;
        }
        let from_name = || self.source_name(from);
        for name in next.names() {
            let target = self.pull_target(name, &from_name)?;
            self.push_pull(from, target, out);
        }
        Ok(())
    }

    /// Routes to named targets and `Send`s only (a `Command`'s).
    pub(crate) fn route_targets(
        &self,
        from: Option<usize>,
        goto: &[String],
        sends: &[Send],
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let from_name = || self.source_name(from);
        for name in goto {
            let target = self.pull_target(name, &from_name)?;
            self.push_pull(from, target, out);
        }
        for send in sends {
            let i = self.push_target(send, &from_name)?;
            out.push.push((i, send.arg().clone()));
        }
        Ok(())
    }

    /// A declared router's answer names only its declared targets.
    fn check_declared(
        &self,
        from: Option<usize>,
        declared: &[String],
        next: &Next,
    ) -> Result<(), GraphError> {
        let names = next.names().iter().map(|n| n.as_ref());
        let sends = next.sends().iter().map(Send::node);
        match names
            .chain(sends)
            .find(|n| !declared.iter().any(|d| d == n))
        {
            None => Ok(()),
            Some(target) => Err(GraphError::UndeclaredTarget {
                from: self.source_name(from),
                target: target.to_owned(),
                declared: declared.to_vec(),
            }),
        }
    }

    fn source_name(&self, from: Option<usize>) -> String {
        from.map_or(START.to_owned(), |i| self.names[i].clone())
    }

    /// A target of routing from `from`: END leads to the after hooks first
    /// (unless `from` is one).
    fn push_pull(&self, from: Option<usize>, target: Target, out: &mut Routed) {
        if let Some(node) = self.pulled(from, target) {
            out.pull.push(node);
        }
    }

    /// The node a target of routing from `from` runs, if any: END's is
    /// the first after hook (unless `from` is one).
    fn pulled(&self, from: Option<usize>, target: Target) -> Option<usize> {
        match target {
            Target::Node(i) => Some(i),
            Target::End => self
                .first_after
                .filter(|_| !from.is_some_and(|i| self.is_after[i])),
        }
    }

    /// What routing from each node whose edges are all plain gives, once
    /// for all (see [`Graph::fixed_next`]).
    pub(crate) fn fixed_routes(&self) -> Vec<Option<Vec<usize>>> {
        (0..self.names.len())
            .map(|i| {
                let mut routed = Routed::default();
                for edge in &self.routes[i] {
                    match edge {
                        Edge::To(target) => self.push_pull(Some(i), *target, &mut routed),
                        Edge::Router(_) | Edge::Fallback(_) => return None,
                    }
                }
                routed.pull.sort_unstable_by_key(|&n| self.rank[n]);
                routed.pull.dedup();
                Some(routed.pull)
            })
            .collect()
    }

    /// Whether a step of `tasks` may leave pending writes to keep with a
    /// stored checkpoint: several tasks (each one's writes kept when done),
    /// a node taking a context (it may pause or run a subgraph), a retry
    /// policy, or a join waiting. Under `Exit` and `Async` only such a step
    /// stores the state it starts from first.
    pub(crate) fn may_leave_pending(&self, tasks: &[Task]) -> bool {
        tasks.len() > 1
            || self.keeps_progress()
            || tasks
                .iter()
                .any(|t| self.fns[t.node].wants_context() || self.retry[t.node].is_some())
    }

    /// The nodes that run after a step of the one node `node` whose writes
    /// route nowhere themselves, when that does not depend on the state
    /// (no router, no join): what [`route_into`](Self::route_into) and
    /// [`settle`](Self::settle) would give, without their work.
    pub(crate) fn fixed_next(&self, node: usize) -> Option<&[usize]> {
        if self.keeps_progress() {
            return None;
        }
        self.fixed[node].as_deref()
    }

    /// Whether runs keep progress beside the state: joins waiting, or
    /// deferred nodes reached ([`JoinState`](joins::JoinState)).
    pub(crate) fn keeps_progress(&self) -> bool {
        !self.joins.is_empty() || self.has_deferred
    }

    /// The tasks of the next superstep: the nodes on the state in node-name
    /// order without repeats, then the `Send` tasks in the order they were
    /// made.
    pub(crate) fn settle(&self, routed: &mut Routed, tasks: &mut Vec<Task>) {
        tasks.clear();
        if let ([node], true) = (&routed.pull[..], routed.push.is_empty()) {
            // One node next (most steps): nothing to order.
            tasks.push(Task {
                node: *node,
                send: None,
            });
            return;
        }
        routed.pull.sort_unstable_by_key(|&i| self.rank[i]);
        routed.pull.dedup();
        tasks.extend(routed.pull.iter().map(|&node| Task { node, send: None }));
        tasks.extend(
            routed
                .push
                .drain(..)
                .enumerate()
                .map(|(k, (node, arg))| Task {
                    node,
                    send: Some((k, arg)),
                }),
        );
    }

    /// The names of tasks' nodes, in task order.
    pub(crate) fn names_of(&self, tasks: &[Task]) -> Vec<String> {
        tasks.iter().map(|t| self.names[t.node].clone()).collect()
    }

    /// Checks a `Command`'s targets before its step is stored: stored, a
    /// bad one would fail every resume the same way.
    pub(crate) fn check_targets(
        &self,
        node: &str,
        goto: &[String],
        sends: &[Send],
    ) -> Result<(), GraphError> {
        let from = || node.to_owned();
        for name in goto {
            self.pull_target(name, &from)?;
        }
        for send in sends {
            self.push_target(send, &from)?;
        }
        Ok(())
    }
}
