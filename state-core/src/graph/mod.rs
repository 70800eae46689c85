//! The graph runtime: nodes read the state and return updates, the runtime
//! applies them with LangGraph's step semantics, and checkpoints each step.
//!
//! * Nodes are functions of the state (sync, or async taking an
//!   `Arc<State>`) returning an update, a [`Command`] (update plus routing),
//!   or nothing; see [`IntoNodeResult`].
//! * Edges, conditional edges ([`Next`]), [`START`] and [`END`]. Several
//!   targets run together as one superstep, and their updates apply as one
//!   step in node-name order ([`AgentState::apply_all`] rules: two writes to
//!   a plain field are an error).
//! * Middleware ([`Middleware`]): `before_agent` / `after_agent` hooks, run
//!   once per invocation, each its own step, so each sees the updates of
//!   those before it: `before_agent` in registration order, `after_agent`
//!   in reverse (LangChain v1's order).
//! * A recursion limit, a stream of step events, and per-thread runs over a
//!   [`Checkpointer`](crate::checkpoint::Checkpointer) that resume after a
//!   crash from the last saved step without re-applying anything.
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

mod error;
mod node;
mod run;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

pub use error::GraphError;
pub use node::{BoxError, Command, IntoNodeResult, Next, NodeOutput};
pub use run::{Input, Run, RunOutput, StepEvent};

use crate::state::AgentState;
use node::{NodeFn, NodeResult};

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
pub trait Middleware<S: AgentState>: Send + Sync {
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

type Router<S> = Box<dyn Fn(&S) -> Next + Send + Sync>;

/// An edge out of a node, resolved.
enum Edge {
    To(Target),
    /// A conditional edge: the router at this index in `Graph::routers`.
    Router(usize),
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
    AgentState<Update: Clone + Send + Sync, Staged: Send> + Default + Clone + Send + Sync + 'static
{
}

impl<S> GraphState for S where
    S: AgentState<Update: Clone + Send + Sync, Staged: Send>
        + Default
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// A graph being built. Errors (a duplicate node, an edge to nowhere) are
/// collected and reported by [`compile`](Self::compile).
pub struct StateGraph<S: AgentState> {
    nodes: Vec<(String, NodeFn<S, S::Update>)>,
    edges: Vec<(String, String)>,
    routers: Vec<(String, Router<S>)>,
    middleware: Vec<Arc<dyn Middleware<S>>>,
    recursion_limit: usize,
}

impl<S: GraphState> Default for StateGraph<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: AgentState + 'static> StateGraph<S> {
    /// An empty graph. The state must be a [`GraphState`].
    pub fn new() -> Self
    where
        S: GraphState,
    {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            routers: Vec::new(),
            middleware: Vec::new(),
            recursion_limit: 10_000,
        }
    }

    /// Adds a node: a function of the state returning anything
    /// [`IntoNodeResult`] (an update, a [`Command`], an `Option`, a `Result`).
    #[must_use]
    pub fn add_node<F, R>(mut self, name: impl Into<String>, node: F) -> Self
    where
        F: Fn(&S) -> R + Send + Sync + 'static,
        R: IntoNodeResult<S::Update>,
    {
        let f = move |s: &S| node(s).into_node_result();
        self.nodes.push((name.into(), NodeFn::Sync(Box::new(f))));
        self
    }

    /// Adds an async node (a model call, say). It gets the state shared: the
    /// runtime drops nothing of it while the step's nodes run, and clones
    /// nothing when the step is applied unless the node kept its `Arc`.
    #[must_use]
    pub fn add_async_node<F, Fut, R>(mut self, name: impl Into<String>, node: F) -> Self
    where
        F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoNodeResult<S::Update>,
    {
        let f = move |s: Arc<S>| {
            let fut = node(s);
            Box::pin(async move { fut.await.into_node_result() })
                as std::pin::Pin<Box<dyn Future<Output = NodeResult<S::Update>> + Send>>
        };
        self.nodes.push((name.into(), NodeFn::Async(Box::new(f))));
        self
    }

    /// Adds an edge: after `from` (or [`START`]) runs, `to` (or [`END`])
    /// runs. Several edges out of one node fan out: their targets run
    /// together in the next superstep.
    #[must_use]
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// Adds a conditional edge: after `from` runs and its step is applied,
    /// `router` reads the new state and names where to go ([`Next`]).
    #[must_use]
    pub fn add_conditional_edges<F, N>(mut self, from: impl Into<String>, router: F) -> Self
    where
        F: Fn(&S) -> N + Send + Sync + 'static,
        N: Into<Next>,
    {
        let r = move |s: &S| router(s).into();
        self.routers.push((from.into(), Box::new(r)));
        self
    }

    /// Adds a middleware, after those added before it: its `before_agent`
    /// runs after theirs, its `after_agent` before theirs.
    #[must_use]
    pub fn add_middleware<M: Middleware<S> + 'static>(mut self, middleware: M) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Sets how many supersteps one run may take (default 10,000).
    #[must_use]
    pub fn with_recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Checks the graph and builds the runnable form.
    pub fn compile(self) -> Result<Graph<S>, GraphError> {
        let mut names: Vec<String> = Vec::new();
        let mut fns: Vec<NodeFn<S, S::Update>> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut add = |name: String, f: NodeFn<S, S::Update>| -> Result<usize, GraphError> {
            if name == START || name == END {
                return Err(GraphError::ReservedName { name });
            }
            if index.contains_key(&name) {
                return Err(GraphError::DuplicateNode { name });
            }
            index.insert(name.clone(), names.len());
            names.push(name);
            fns.push(f);
            Ok(names.len() - 1)
        };
        for (name, f) in self.nodes {
            add(name, f)?;
        }

        // Middleware hooks become nodes, chained around the user's graph.
        let mut seen = std::collections::HashSet::new();
        let mut befores = Vec::new();
        let mut afters = Vec::new();
        for m in &self.middleware {
            let name = m.name().to_owned();
            if !seen.insert(name.clone()) {
                return Err(GraphError::DuplicateMiddleware { name });
            }
            if m.has_before_agent() {
                let node = hook_node(m, |m, s| m.before_agent(s));
                befores.push(add(format!("{name}.before_agent"), node)?);
            }
            if m.has_after_agent() {
                let node = hook_node(m, |m, s| m.after_agent(s));
                afters.push(add(format!("{name}.after_agent"), node)?);
            }
        }

        let resolve = |name: &str, from: &str| -> Result<Target, GraphError> {
            if name == END {
                return Ok(Target::End);
            }
            index
                .get(name)
                .map(|&i| Target::Node(i))
                .ok_or_else(|| GraphError::UnknownNode {
                    name: name.to_owned(),
                    from: from.to_owned(),
                })
        };
        let source = |name: &str| -> Result<Option<usize>, GraphError> {
            if name == START {
                return Ok(None);
            }
            index
                .get(name)
                .map(|&i| Some(i))
                .ok_or_else(|| GraphError::UnknownSource {
                    name: name.to_owned(),
                })
        };

        let mut routes: Vec<Vec<Edge>> = (0..names.len()).map(|_| Vec::new()).collect();
        let mut start: Vec<Edge> = Vec::new();
        for (from, to) in &self.edges {
            let target = resolve(to, from)?;
            match source(from)? {
                None => start.push(Edge::To(target)),
                Some(i) => routes[i].push(Edge::To(target)),
            }
        }
        let mut routers = Vec::new();
        for (from, router) in self.routers {
            let at = routers.len();
            routers.push(router);
            match source(&from)? {
                None => start.push(Edge::Router(at)),
                Some(i) => routes[i].push(Edge::Router(at)),
            }
        }
        if start.is_empty() {
            return Err(GraphError::NoEntry);
        }

        // START → before hooks in order → the user's entry edges.
        let entry = if let Some((&first, rest)) = befores.split_first() {
            let mut prev = first;
            for &b in rest {
                routes[prev] = vec![Edge::To(Target::Node(b))];
                prev = b;
            }
            routes[prev] = start;
            vec![Edge::To(Target::Node(first))]
        } else {
            start
        };
        // END → after hooks, last registered first (LangChain's order for
        // every `after_*` hook) → the real end.
        afters.reverse();
        let mut is_after = vec![false; names.len()];
        for (k, &a) in afters.iter().enumerate() {
            is_after[a] = true;
            routes[a] = vec![Edge::To(
                afters.get(k + 1).map_or(Target::End, |&n| Target::Node(n)),
            )];
        }

        // Node-name order: the order a step's writes apply in.
        let mut by_name: Vec<usize> = (0..names.len()).collect();
        by_name.sort_by(|&a, &b| names[a].cmp(&names[b]));
        let mut rank = vec![0; names.len()];
        for (r, &i) in by_name.iter().enumerate() {
            rank[i] = r;
        }

        Ok(Graph {
            names,
            fns,
            index,
            routes,
            entry,
            routers,
            first_after: afters.first().copied(),
            is_after,
            rank,
            recursion_limit: self.recursion_limit,
        })
    }
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

/// A compiled graph: run it with [`run`](Self::run).
pub struct Graph<S: AgentState> {
    names: Vec<String>,
    fns: Vec<NodeFn<S, S::Update>>,
    index: HashMap<String, usize>,
    routes: Vec<Vec<Edge>>,
    entry: Vec<Edge>,
    routers: Vec<Router<S>>,
    first_after: Option<usize>,
    is_after: Vec<bool>,
    rank: Vec<usize>,
    recursion_limit: usize,
}

impl<S: AgentState> Graph<S> {
    /// The node names, hooks included, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Where routing from `from` (a node, or `None` for START) leads on
    /// `state`, plus `goto` targets; END taken to the after hooks first.
    fn route_into(
        &self,
        from: Option<usize>,
        goto: &[String],
        state: &S,
        next: &mut Vec<usize>,
    ) -> Result<(), GraphError> {
        let from_name = || from.map_or(START.to_owned(), |i| self.names[i].clone());
        let push = |target: Target, next: &mut Vec<usize>| match target {
            Target::Node(i) => next.push(i),
            Target::End => {
                if let (Some(first), false) =
                    (self.first_after, from.is_some_and(|i| self.is_after[i]))
                {
                    next.push(first);
                }
            }
        };
        let by_name = |name: &str| -> Result<Target, GraphError> {
            if name == END {
                return Ok(Target::End);
            }
            self.index
                .get(name)
                .map(|&i| Target::Node(i))
                .ok_or_else(|| GraphError::UnknownTarget {
                    from: from_name(),
                    target: name.to_owned(),
                })
        };
        for name in goto {
            push(by_name(name)?, next);
        }
        let edges = match from {
            None => &self.entry,
            Some(i) => &self.routes[i],
        };
        for edge in edges {
            match edge {
                Edge::To(target) => push(*target, next),
                Edge::Router(r) => {
                    for name in (self.routers[*r])(state).names() {
                        push(by_name(name)?, next);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sorts targets in node-name order and drops repeats.
    fn settle(&self, next: &mut Vec<usize>) {
        next.sort_unstable_by_key(|&i| self.rank[i]);
        next.dedup();
    }
}
