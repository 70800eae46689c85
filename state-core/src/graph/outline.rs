//! A compiled graph's structure as data, with the structure of each node
//! that is a compiled graph itself: what a drawing with its subgraphs
//! expanded (LangGraph's `get_graph(xray=..)`) is made from.

use super::node::NodeFn;
use super::Graph;
use crate::state::AgentState;

/// A graph's nodes and edges, and the outline of each of its subgraph
/// nodes, as [`Graph::outline`] gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outline {
    /// The nodes, hooks included, in the order they were added
    /// ([`Graph::node_names`]); `START` and `END` are not among them.
    pub nodes: Vec<String>,
    /// The edges as [`Graph::edges`] lists them: `(source, target,
    /// conditional)`.
    pub edges: Vec<(String, String, bool)>,
    /// Each node that runs a compiled graph (a part's or a mapped one),
    /// with that graph's outline, in node order. Empty past the depth
    /// asked.
    pub subgraphs: Vec<(String, Outline)>,
}

impl<S: AgentState> Graph<S> {
    /// The graph's nodes and edges, and, `depth` levels down, those of the
    /// nodes that are compiled graphs themselves: `0` lists no subgraph,
    /// `1` this graph's subgraph nodes (their own subgraphs left out), and
    /// `usize::MAX` every level. A server draws a graph with its subgraphs
    /// expanded from it, as LangGraph's `get_graph(xray=depth)`.
    ///
    /// ```
    /// use agent_state::graph::{StateGraph, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Count { n: u32 }
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Outer {
    ///     #[state(flatten)]
    ///     count: Count,
    /// }
    ///
    /// let inner = StateGraph::<Count>::new()
    ///     .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
    ///     .add_edge(START, "inc")
    ///     .compile()?;
    /// let graph = StateGraph::<Outer>::new()
    ///     .add_node("child", inner)
    ///     .add_edge(START, "child")
    ///     .compile()?;
    ///
    /// let outline = graph.outline(1);
    /// assert_eq!(outline.nodes, ["child"]);
    /// let (name, child) = &outline.subgraphs[0];
    /// assert_eq!(name, "child");
    /// assert_eq!(child.nodes, ["inc"]);
    /// assert!(child.edges.contains(&("__start__".into(), "inc".into(), false)));
    /// assert!(graph.outline(0).subgraphs.is_empty());
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn outline(&self, depth: usize) -> Outline {
        let subgraphs = match depth {
            0 => Vec::new(),
            _ => self
                .names
                .iter()
                .zip(&self.fns)
                .filter_map(|(name, f)| match f {
                    NodeFn::Subgraph(runner) => Some((name.clone(), runner.outline(depth - 1))),
                    _ => None,
                })
                .collect(),
        };
        Outline {
            nodes: self.names.clone(),
            edges: self.edges(),
            subgraphs,
        }
    }
}
