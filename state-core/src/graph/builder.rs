//! Building a graph: nodes, edges, joins, routers, middleware, breakpoints
//! and node policies; `compile` checks them and resolves names.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::into_node::{BuiltNode, IntoNode, NodePolicy};
use super::node::NodeFn;
use super::policy::RetryPolicy;
use super::{Edge, Graph, GraphError, GraphState, Join, Middleware, Router, Target, END, START};
use crate::state::AgentState;
use crate::store::Store;

/// The sources of an edge: one node (or [`START`]), or several, as
/// LangGraph's `add_edge(["a", "b"], "c")`: then the target runs once all
/// of them have finished (a join).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeSources(pub(crate) Vec<String>);

impl From<&str> for EdgeSources {
    fn from(name: &str) -> Self {
        EdgeSources(vec![name.to_owned()])
    }
}

impl From<String> for EdgeSources {
    fn from(name: String) -> Self {
        EdgeSources(vec![name])
    }
}

impl From<&String> for EdgeSources {
    fn from(name: &String) -> Self {
        EdgeSources(vec![name.clone()])
    }
}

impl<const N: usize> From<[&str; N]> for EdgeSources {
    fn from(names: [&str; N]) -> Self {
        EdgeSources(names.iter().map(|n| (*n).to_owned()).collect())
    }
}

impl From<Vec<&str>> for EdgeSources {
    fn from(names: Vec<&str>) -> Self {
        EdgeSources(names.into_iter().map(str::to_owned).collect())
    }
}

impl From<Vec<String>> for EdgeSources {
    fn from(names: Vec<String>) -> Self {
        EdgeSources(names)
    }
}

/// A graph being built. Errors (a duplicate node, an edge to nowhere) are
/// collected and reported by [`compile`](Self::compile).
pub struct StateGraph<S: AgentState> {
    pub(crate) nodes: Vec<(String, BuiltNode<S>)>,
    pub(crate) edges: Vec<(Vec<String>, String)>,
    pub(crate) routers: Vec<(String, Router<S>, Option<Vec<String>>)>,
    /// The indexes in `routers` of the fallback ones
    /// ([`add_fallback_edges_to`](Self::add_fallback_edges_to)).
    pub(crate) fallbacks: Vec<usize>,
    pub(crate) middleware: Vec<Arc<dyn Middleware<S>>>,
    pub(crate) recursion_limit: usize,
    /// The store the compiled graph's runs get ([`with_store`](Self::with_store)).
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) before: Vec<String>,
    pub(crate) after: Vec<String>,
    /// What the drawing shows beyond the routing (`mermaid.rs`).
    pub(crate) drawing: super::mermaid::Drawing,
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
            fallbacks: Vec::new(),
            middleware: Vec::new(),
            recursion_limit: 10_000,
            store: None,
            before: Vec::new(),
            after: Vec::new(),
            drawing: super::mermaid::Drawing::default(),
        }
    }

    /// Adds node `name`: anything [`IntoNode`] — a function of the state
    /// (`fn(&S) -> R`), of the state and a [`NodeContext`](super::NodeContext) (its thread and
    /// step, [`interrupt`](super::NodeContext::interrupt) to pause for a value
    /// from outside, [`once`](super::NodeContext::once) for work that must not run
    /// twice), the same async (`async fn(Arc<S>) -> R`, `async fn(Arc<S>,
    /// NodeContext) -> R`), a function of a [`Sent`](super::Sent) input
    /// (run once per [`Send`](super::Send) to it), a compiled subgraph,
    /// or any of these in a [`Node`](super::Node) with its retry and
    /// timeout policies. `R` is an update, a [`Command`](super::Command),
    /// an `Option`, or a `Result` of one ([`IntoNodeResult`](super::IntoNodeResult)).
    ///
    /// An async node gets the state shared: the runtime clones nothing when
    /// the step is applied unless the node kept its `Arc`. A node taking a
    /// `Send`'s input is reached only by `Send`s: an edge to it fails
    /// [`compile`](Self::compile), a router naming it fails the run.
    #[must_use]
    pub fn add_node<M>(mut self, name: impl Into<String>, node: impl IntoNode<S, M>) -> Self {
        self.nodes.push((name.into(), node.into_node()));
        self
    }

    /// Adds an edge: after `from` (or [`START`]) runs, `to` (or [`END`])
    /// runs. Several edges out of one node fan out: their targets run
    /// together in the next superstep. Several sources
    /// (`add_edge(["a", "b"], "c")`) make a join: `c` runs once, after
    /// every source has finished since `c` last ran, even when they finish
    /// in different supersteps.
    #[must_use]
    pub fn add_edge(mut self, from: impl Into<EdgeSources>, to: impl Into<String>) -> Self {
        self.edges.push((from.into().0, to.into()));
        self
    }

    /// Adds a conditional edge: after `from` runs and its step is applied,
    /// `router` reads the new state and names where to go ([`Next`](super::Next)),
    /// [`Send`](super::Send)s included.
    #[must_use]
    pub fn add_conditional_edges<F, N>(mut self, from: impl Into<String>, router: F) -> Self
    where
        F: Fn(&S) -> N + Send + Sync + 'static,
        N: Into<super::Next>,
    {
        let r = move |s: &S| router(s).into();
        self.routers.push((from.into(), Box::new(r), None));
        self
    }

    /// A conditional edge whose router goes only to `targets` (node names,
    /// [`END`], the nodes of its [`Send`](super::Send)s): LangGraph's
    /// `path_map` as a list. The targets are checked when the graph
    /// compiles, the router's answers when it runs (another name is
    /// [`GraphError::UndeclaredTarget`]), and
    /// [`Graph::to_mermaid`](super::Graph::to_mermaid) draws exactly these
    /// edges (a router without them is not drawn, as LangGraph leaves out a
    /// branch with neither `path_map` nor a return type).
    #[must_use]
    pub fn add_conditional_edges_to<F, N, T>(
        mut self,
        from: impl Into<String>,
        router: F,
        targets: impl IntoIterator<Item = T>,
    ) -> Self
    where
        F: Fn(&S) -> N + Send + Sync + 'static,
        N: Into<super::Next>,
        T: Into<String>,
    {
        let r = move |s: &S| router(s).into();
        let targets = targets.into_iter().map(Into::into).collect();
        self.routers.push((from.into(), Box::new(r), Some(targets)));
        self
    }

    /// A conditional edge to `targets` taken only after a write of `from`
    /// that routes nowhere itself (no goto, no `Send`): for nodes that
    /// route by `Command` on every run (the agent's), so that a write made
    /// as them by [`Graph::update_state`](super::Graph::update_state)
    /// leads where their edges would in LangChain's graph.
    #[must_use]
    #[cfg(feature = "agent")]
    pub(crate) fn add_fallback_edges_to<F>(
        mut self,
        from: impl Into<String>,
        router: F,
        targets: Vec<String>,
    ) -> Self
    where
        F: Fn(&S) -> String + Send + Sync + 'static,
    {
        let r = move |s: &S| super::Next::from(router(s));
        self.fallbacks.push(self.routers.len());
        self.routers.push((from.into(), Box::new(r), Some(targets)));
        self
    }

    /// Adds a middleware, after those added before it: its `before_agent`
    /// runs after theirs, its `after_agent` before theirs.
    #[must_use]
    pub fn add_middleware<M: Middleware<S> + 'static>(mut self, middleware: M) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Sets how many node supersteps one run may take (default 10,000), as
    /// LangGraph's `recursion_limit`: `limit` after a run's input (its
    /// input steps not counted), `limit` + 2 for a run resuming a stored
    /// step (LangGraph counts from the step the run starts at).
    #[must_use]
    pub fn with_recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// The store the compiled graph's runs get, as LangGraph's
    /// `compile(store=..)`: its nodes read it with
    /// [`NodeContext::store`](super::NodeContext::store). A run may be
    /// given another ([`Run::store`](super::Run::store)). Same as
    /// [`Graph::with_store`] after compiling.
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
    ///     .with_store(Arc::new(MemoryStore::new()))
    ///     .compile()?;
    /// assert!(graph.store().is_some());
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Static breakpoints: the run pauses before a superstep that would
    /// run one of `nodes` (LangGraph's `interrupt_before`). Resuming runs
    /// it.
    #[must_use]
    pub fn interrupt_before<I, N>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.before.extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Static breakpoints: the run pauses after a superstep that ran one of
    /// `nodes`, once its step is saved (LangGraph's `interrupt_after`).
    #[must_use]
    pub fn interrupt_after<I, N>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.after.extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Checks the graph and builds the runnable form.
    pub fn compile(self) -> Result<Graph<S>, GraphError> {
        let mut nodes = Nodes::default();
        let StateGraph {
            nodes: user_nodes,
            edges,
            routers: user_routers,
            fallbacks,
            middleware,
            recursion_limit,
            store,
            before,
            after,
            drawing,
        } = self;
        let mut node_policies = Vec::with_capacity(user_nodes.len());
        for (name, node) in user_nodes {
            nodes.add(name, node.f)?;
            node_policies.push(node.policy);
        }
        let (befores, mut afters) = add_hooks(&mut nodes, &middleware)?;

        let mut wired = Wired::new(nodes.names.len());
        wired.edges(&nodes, &edges)?;
        wired.routers(&nodes, user_routers, &fallbacks)?;
        let Wired {
            mut routes,
            start,
            joins,
            routers,
            router_ends,
        } = wired;
        if start.is_empty() {
            return Err(GraphError::NoEntry);
        }
        let entry = chain_befores(&befores, &mut routes, start);
        let first_after = chain_afters(&mut afters, &mut routes);
        let mut is_after = vec![false; nodes.names.len()];
        for &a in &afters {
            is_after[a] = true;
        }
        let rank = name_ranks(&nodes.names);
        let policies = Policies::resolve(&nodes, &before, &after, node_policies)?;
        let join_of = join_sources(&joins, nodes.names.len());
        let mut graph = Graph {
            shared_names: nodes.names.iter().map(|n| Arc::from(n.as_str())).collect(),
            names: nodes.names,
            fns: nodes.fns,
            index: nodes.index,
            routes,
            entry,
            routers,
            router_ends,
            first_after,
            is_after,
            rank,
            recursion_limit,
            joins,
            join_of,
            before: policies.before,
            after: policies.after,
            retry: policies.retry,
            timeout: policies.timeout,
            has_deferred: policies.deferred.contains(&true),
            deferred: policies.deferred,
            fixed: Vec::new(),
            drawing,
            store,
        };
        graph.fixed = graph.fixed_routes();
        Ok(graph)
    }
}

/// A graph's routing as `compile` wires it: each node's edges, the
/// entry's, the joins, and the routers with the targets they declare.
struct Wired<S: AgentState> {
    routes: Vec<Vec<Edge>>,
    start: Vec<Edge>,
    joins: Vec<Join>,
    routers: Vec<Router<S>>,
    router_ends: Vec<Option<Vec<String>>>,
}

impl<S: AgentState> Wired<S> {
    fn new(nodes: usize) -> Self {
        Self {
            routes: (0..nodes).map(|_| Vec::new()).collect(),
            start: Vec::new(),
            joins: Vec::new(),
            routers: Vec::new(),
            router_ends: Vec::new(),
        }
    }

    /// Plain edges, and joins (an edge from several nodes).
    fn edges(
        &mut self,
        nodes: &Nodes<S>,
        edges: &[(Vec<String>, String)],
    ) -> Result<(), GraphError> {
        for (from, to) in edges {
            if from.len() > 1 {
                self.joins.push(nodes.join(from, to)?);
                continue;
            }
            let from = from.first().map_or("", String::as_str);
            let target = nodes.target(to, from)?;
            match nodes.source(from)? {
                None => self.start.push(Edge::To(target)),
                Some(i) => self.routes[i].push(Edge::To(target)),
            }
        }
        Ok(())
    }

    /// Conditional edges; a fallback one (the agent's, taken only by a
    /// write that routes nowhere itself) as [`Edge::Fallback`].
    fn routers(
        &mut self,
        nodes: &Nodes<S>,
        user_routers: Vec<(String, Router<S>, Option<Vec<String>>)>,
        fallbacks: &[usize],
    ) -> Result<(), GraphError> {
        for (from, router, ends) in user_routers {
            let at = self.routers.len();
            self.routers.push(router);
            if let Some(end) = ends
                .iter()
                .flatten()
                .find(|e| *e != END && !nodes.index.contains_key(*e))
            {
                return Err(GraphError::UnknownNode {
                    name: end.clone(),
                    from,
                    nodes: nodes.names.clone(),
                });
            }
            self.router_ends.push(ends);
            match (nodes.source(&from)?, fallbacks.contains(&at)) {
                (None, _) => self.start.push(Edge::Router(at)),
                (Some(i), false) => self.routes[i].push(Edge::Router(at)),
                (Some(i), true) => self.routes[i].push(Edge::Fallback(at)),
            }
        }
        Ok(())
    }
}

/// Per node, the joins it is a source of and its bit in each.
fn join_sources(joins: &[Join], nodes: usize) -> Vec<Vec<(usize, usize)>> {
    let mut join_of = vec![Vec::new(); nodes];
    for (j, join) in joins.iter().enumerate() {
        for (bit, &source) in join.sources.iter().enumerate() {
            join_of[source].push((j, bit));
        }
    }
    join_of
}

/// The nodes being compiled: names, functions, and the name index.
struct Nodes<S: AgentState> {
    names: Vec<String>,
    fns: Vec<NodeFn<S, S::Update>>,
    index: super::NameIndex,
}

impl<S: AgentState> Default for Nodes<S> {
    fn default() -> Self {
        Self {
            names: Vec::new(),
            fns: Vec::new(),
            index: super::NameIndex::default(),
        }
    }
}

impl<S: AgentState> Nodes<S> {
    fn add(&mut self, name: String, f: NodeFn<S, S::Update>) -> Result<usize, GraphError> {
        if name == START || name == END {
            return Err(GraphError::ReservedName { name });
        }
        if self.index.contains_key(&name) {
            return Err(GraphError::DuplicateNode { name });
        }
        self.index.insert(name.clone(), self.names.len());
        self.names.push(name);
        self.fns.push(f);
        Ok(self.names.len() - 1)
    }

    /// The target of a static edge from `from`: a node that reads the
    /// state, or END.
    fn target(&self, name: &str, from: &str) -> Result<Target, GraphError> {
        if name == END {
            return Ok(Target::End);
        }
        let &i = self
            .index
            .get(name)
            .ok_or_else(|| GraphError::UnknownNode {
                name: name.to_owned(),
                from: from.to_owned(),
                nodes: self.names.clone(),
            })?;
        if self.fns[i].takes_send() {
            return Err(GraphError::EdgeToSendNode {
                node: name.to_owned(),
                from: from.to_owned(),
            });
        }
        Ok(Target::Node(i))
    }

    /// The node an edge leaves; `None` for START.
    fn source(&self, name: &str) -> Result<Option<usize>, GraphError> {
        if name == START {
            return Ok(None);
        }
        self.index
            .get(name)
            .map(|&i| Some(i))
            .ok_or_else(|| GraphError::UnknownSource {
                name: name.to_owned(),
                nodes: self.names.clone(),
            })
    }

    /// A join of several sources into `to`.
    fn join(&self, from: &[String], to: &str) -> Result<Join, GraphError> {
        let mut sorted: Vec<&str> = from.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let key = format!("join:{}:{to}", sorted.join("+"));
        if sorted.len() > 64 {
            return Err(GraphError::BadJoin {
                join: key,
                reason: "a join takes at most 64 sources".into(),
            });
        }
        let mut sources = Vec::with_capacity(sorted.len());
        for name in &sorted {
            match self.source(name)? {
                Some(i) => sources.push(i),
                None => {
                    return Err(GraphError::BadJoin {
                        join: key,
                        reason: "START cannot be a source of a join".into(),
                    })
                }
            }
        }
        let target = match self.target(to, &sorted.join("+"))? {
            Target::Node(i) => i,
            Target::End => {
                return Err(GraphError::BadJoin {
                    join: key,
                    reason: "a join leads to a node, not END".into(),
                })
            }
        };
        Ok(Join {
            key,
            sources,
            target,
        })
    }
}

/// Middleware hooks as nodes: the `before_agent` and `after_agent` node of
/// each middleware, in registration order.
fn add_hooks<S: AgentState + 'static>(
    nodes: &mut Nodes<S>,
    middleware: &[Arc<dyn Middleware<S>>],
) -> Result<(Vec<usize>, Vec<usize>), GraphError> {
    let mut seen = HashSet::new();
    let mut befores = Vec::new();
    let mut afters = Vec::new();
    for m in middleware {
        let name = m.name().to_owned();
        if !seen.insert(name.clone()) {
            return Err(GraphError::DuplicateMiddleware { name });
        }
        if m.has_before_agent() {
            let node = super::hook_node(m, |m, s| m.before_agent(s));
            befores.push(nodes.add(format!("{name}.before_agent"), node)?);
        }
        if m.has_after_agent() {
            let node = super::hook_node(m, |m, s| m.after_agent(s));
            afters.push(nodes.add(format!("{name}.after_agent"), node)?);
        }
    }
    Ok((befores, afters))
}

/// START → before hooks in order → the user's entry edges.
fn chain_befores(befores: &[usize], routes: &mut [Vec<Edge>], start: Vec<Edge>) -> Vec<Edge> {
    let Some((&first, rest)) = befores.split_first() else {
        return start;
    };
    let mut prev = first;
    for &b in rest {
        routes[prev] = vec![Edge::To(Target::Node(b))];
        prev = b;
    }
    routes[prev] = start;
    vec![Edge::To(Target::Node(first))]
}

/// END → after hooks, last registered first (LangChain's order for every
/// `after_*` hook) → the real end. Returns the first after hook.
fn chain_afters(afters: &mut [usize], routes: &mut [Vec<Edge>]) -> Option<usize> {
    afters.reverse();
    for (k, &a) in afters.iter().enumerate() {
        routes[a] = vec![Edge::To(
            afters.get(k + 1).map_or(Target::End, |&n| Target::Node(n)),
        )];
    }
    afters.first().copied()
}

/// Node-name order: the order a step's writes apply in.
fn name_ranks(names: &[String]) -> Vec<usize> {
    let mut by_name: Vec<usize> = (0..names.len()).collect();
    by_name.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let mut rank = vec![0; names.len()];
    for (r, &i) in by_name.iter().enumerate() {
        rank[i] = r;
    }
    rank
}

/// Breakpoints and node policies, per node index.
struct Policies {
    before: Vec<bool>,
    after: Vec<bool>,
    retry: Vec<Option<RetryPolicy>>,
    timeout: Vec<Option<Duration>>,
    deferred: Vec<bool>,
}

impl Policies {
    fn resolve<S: AgentState>(
        nodes: &Nodes<S>,
        before: &[String],
        after: &[String],
        node_policies: Vec<NodePolicy>,
    ) -> Result<Self, GraphError> {
        let n = nodes.names.len();
        let find = |name: &str, what: &'static str| {
            nodes
                .index
                .get(name)
                .copied()
                .ok_or_else(|| GraphError::UnknownPolicyNode {
                    name: name.to_owned(),
                    what,
                    nodes: nodes.names.clone(),
                })
        };
        let mut out = Policies {
            before: vec![false; n],
            after: vec![false; n],
            retry: vec![None; n],
            timeout: vec![None; n],
            deferred: vec![false; n],
        };
        for name in before {
            out.before[find(name, "interrupt_before")?] = true;
        }
        for name in after {
            out.after[find(name, "interrupt_after")?] = true;
        }
        // The user's nodes come first, in the order they were added.
        for (i, policy) in node_policies.into_iter().enumerate() {
            let node = || nodes.names[i].clone();
            if policy.timeout.is_some() && nodes.fns[i].is_sync() {
                return Err(GraphError::TimeoutOnSyncNode { node: node() });
            }
            if policy.uncacheable {
                return Err(GraphError::CacheOnSubgraph { node: node() });
            }
            out.retry[i] = policy.retry;
            out.timeout[i] = policy.timeout;
            out.deferred[i] = policy.defer;
        }
        Ok(out)
    }
}
