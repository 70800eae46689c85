//! A compiled graph drawn in Mermaid, as LangGraph's
//! `graph.get_graph().draw_mermaid()` draws it: the same front matter,
//! node shapes, class definitions and edge order (langgraph 1.x's
//! `pregel/_draw.py`), conditional edges dashed.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{Edge, Graph, Target, END, START};
use crate::state::AgentState;

/// One edge of the drawing: source, target, conditional.
type Line = (String, String, bool);

/// What a drawing shows beyond the routing, as LangChain's agent graph
/// shows it: fallback edges where LangChain has static ones, drawn solid,
/// and metadata under a node's name (the tools node's `__tools`).
#[derive(Default)]
pub(crate) struct Drawing {
    /// The fallback routers drawn solid (indexes in the graph's routers).
    solid: Vec<usize>,
    /// `key = value` lines under a node's name: (node, line), in order.
    metadata: Vec<(String, String)>,
}

#[cfg(feature = "agent")]
impl<S: AgentState + 'static> super::StateGraph<S> {
    /// A fallback edge from `from` to `to`
    /// ([`add_fallback_edges_to`](Self::add_fallback_edges_to)) drawn as
    /// LangGraph draws a static edge: solid.
    #[must_use]
    pub(crate) fn add_fallback_edge(self, from: impl Into<String>, to: String) -> Self {
        let at = self.routers.len();
        let target = to.clone();
        let mut graph = self.add_fallback_edges_to(from, move |_: &S| target.clone(), vec![to]);
        graph.drawing.solid.push(at);
        graph
    }

    /// Shows `key = value` under node `node`'s name in the drawing, as
    /// LangGraph shows a node's metadata.
    #[must_use]
    pub(crate) fn with_node_metadata(mut self, node: &str, key: &str, value: &str) -> Self {
        let line = format!("{key} = {value}");
        self.drawing.metadata.push((node.to_owned(), line));
        self
    }
}

impl<S: AgentState> Graph<S> {
    /// The graph in Mermaid's flowchart syntax, as LangGraph draws it:
    /// `START` and `END` as rounded nodes, static edges solid (a join's
    /// sources each to its target), conditional edges dashed (to the
    /// targets a router declared with
    /// [`add_conditional_edges_to`](super::StateGraph::add_conditional_edges_to);
    /// a router that declared none is not drawn, as LangGraph leaves out a
    /// branch it cannot read targets from), a node entered but never left
    /// drawn to `END` (a static edge to `END` is drawn so, and only so, as
    /// LangGraph draws it). Edges come in LangGraph's order: sorted, then
    /// those to `END` of nodes never left, then a node's edges to itself.
    /// Paste it in a ```` ```mermaid ```` block.
    ///
    /// Routing a node decides at run time (a `Command`'s `goto`) is not
    /// drawn: nothing declares it (LangGraph reads it from type hints).
    ///
    /// ```
    /// use agent_state::graph::{StateGraph, END, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { n: u32 }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("inc", |s: &S| SUpdate::new().n(s.n + 1))
    ///     .add_edge(START, "inc")
    ///     .add_conditional_edges_to("inc", |s: &S| if s.n < 3 { "inc" } else { END }, ["inc", END])
    ///     .compile()?;
    /// let drawing = graph.to_mermaid();
    /// assert!(drawing.contains("\t__start__ --> inc;\n"));
    /// assert!(drawing.contains("\tinc -.-> __end__;\n"));
    /// assert!(drawing.contains("\tinc -.-> inc;\n"));
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn to_mermaid(&self) -> String {
        let lines = self.lines();
        let mut out =
            String::from("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n");
        let mut names = vec![START.to_owned()];
        names.extend(self.names.iter().cloned());
        if lines.iter().any(|l| l.1 == END) {
            names.push(END.to_owned());
        }
        let first = only(&names, |n| !lines.iter().any(|l| l.1 == *n));
        let last = only(&names, |n| !lines.iter().any(|l| l.0 == *n));
        for name in &names {
            let class = match (Some(name) == first, Some(name) == last) {
                (true, _) => Some("first"),
                (_, true) => Some("last"),
                _ => None,
            };
            let label = self.label(name);
            let _ = match class {
                Some(class) => writeln!(out, "\t{}([{label}]):::{class}", safe_id(name)),
                None => writeln!(out, "\t{}({label})", safe_id(name)),
            };
        }
        for (from, to, conditional) in &lines {
            let arrow = if *conditional { "-.->" } else { "-->" };
            let _ = writeln!(out, "\t{} {arrow} {};", safe_id(from), safe_id(to));
        }
        out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
        out.push_str("\tclassDef first fill-opacity:0\n");
        out.push_str("\tclassDef last fill:#bfb6fc\n");
        out
    }

    /// The edges [`to_mermaid`](Self::to_mermaid) draws, as data: `(source,
    /// target, conditional)`, sorted, `START` and `END` by their names. What
    /// a server's graph endpoint lists.
    pub fn edges(&self) -> Vec<(String, String, bool)> {
        self.lines()
    }

    /// Every edge sorted by (source, target, conditional), one per pair
    /// (a static edge wins over a conditional one to the same node), then
    /// a solid edge to `END` from each node that is entered but never left
    /// (LangGraph's "termini"), then the edges from a node to itself
    /// (LangChain draws them after the others: they share a prefix).
    fn lines(&self) -> Vec<Line> {
        let mut all = BTreeSet::new();
        for edge in &self.entry {
            self.edge_lines(None, edge, &mut all);
        }
        for (i, edges) in self.routes.iter().enumerate() {
            for edge in edges {
                self.edge_lines(Some(i), edge, &mut all);
            }
        }
        for join in &self.joins {
            for &source in &join.sources {
                let target = self.names[join.target].clone();
                all.insert((self.names[source].clone(), target, false));
            }
        }
        let termini: BTreeSet<String> = all
            .iter()
            .map(|l| l.1.clone())
            .filter(|to| to != END && !all.iter().any(|l| l.0 == *to))
            .collect();
        let mut pairs = BTreeSet::new();
        let (loops, mut lines): (Vec<Line>, Vec<Line>) = all
            .into_iter()
            .filter(|l| pairs.insert((l.0.clone(), l.1.clone())))
            .partition(|l| l.0 == l.1);
        lines.extend(termini.into_iter().map(|t| (t, END.to_owned(), false)));
        lines.extend(loops);
        lines
    }

    /// The lines of one edge. A router is drawn to the targets it declared;
    /// one that declared none is not drawn, as LangGraph draws a
    /// `path_map`-less branch whose function has no return type.
    fn edge_lines(&self, from: Option<usize>, edge: &Edge, out: &mut BTreeSet<Line>) {
        let source = from.map_or_else(|| START.to_owned(), |i| self.names[i].clone());
        // A static edge to END is not drawn: its node, left for END only,
        // is a terminus (LangGraph draws no other).
        let mut add = |target: String, conditional: bool| {
            if conditional || target != END {
                out.insert((source.clone(), target, conditional));
            }
        };
        match edge {
            Edge::To(target) => add(self.drawn(from, *target), false),
            Edge::Router(r) | Edge::Fallback(r) => {
                let solid = matches!(edge, Edge::Fallback(_)) && self.drawing.solid.contains(r);
                for target in self.router_ends[*r].iter().flatten() {
                    let target = match self.index.get(target) {
                        Some(&i) => self.names[i].clone(),
                        None => self.drawn(from, Target::End),
                    };
                    add(target, !solid);
                }
            }
        }
    }

    /// Where an edge to `target` leads: END goes through the after hooks
    /// first, as at run time.
    fn drawn(&self, from: Option<usize>, target: Target) -> String {
        match target {
            Target::Node(i) => self.names[i].clone(),
            Target::End => match (self.first_after, from.is_some_and(|i| self.is_after[i])) {
                (Some(first), false) => self.names[first].clone(),
                _ => END.to_owned(),
            },
        }
    }
}

/// The one name that `pred` holds for, if exactly one.
fn only(names: &[String], pred: impl Fn(&String) -> bool) -> Option<&String> {
    let mut found = names.iter().filter(|n| pred(n));
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

impl<S: AgentState> Graph<S> {
    /// A node's label: its name, in `<p>..</p>` when it starts and ends
    /// with a Markdown character (`__start__`), then its metadata lines
    /// under a rule, as LangChain writes them.
    fn label(&self, name: &str) -> String {
        let special = |c: Option<char>| c.is_some_and(|c| "*_`".contains(c));
        let mut label = if special(name.chars().next()) && special(name.chars().last()) {
            format!("<p>{name}</p>")
        } else {
            name.to_owned()
        };
        let lines: Vec<String> = self
            .drawing
            .metadata
            .iter()
            .filter(|(node, _)| node == name)
            .map(|(_, line)| escape_label(line))
            .collect();
        if !lines.is_empty() {
            let _ = write!(label, "<hr/><small><em>{}</em></small>", lines.join("\n"));
        }
        label
    }
}

/// A metadata line with Mermaid's label characters as entities (`#` first,
/// since the entities hold one), as LangChain escapes them.
fn escape_label(text: &str) -> String {
    let mut out = text.replace('#', "#35;");
    for (c, entity) in [
        ('[', "#91;"),
        (']', "#93;"),
        ('(', "#40;"),
        (')', "#41;"),
        ('{', "#123;"),
        ('}', "#125;"),
        ('"', "#quot;"),
        ('<', "#60;"),
        ('>', "#62;"),
        ('|', "#124;"),
    ] {
        out = out.replace(c, entity);
    }
    out
}

/// A Mermaid node id: ASCII letters, digits, `_` and `-` as they are, any
/// other character as `\` and its code point in hex (LangChain's rule).
fn safe_id(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{:x}", u32::from(c))
            }
        })
        .collect()
}
