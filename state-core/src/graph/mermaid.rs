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

impl<S: AgentState> Graph<S> {
    /// The graph in Mermaid's flowchart syntax, as LangGraph draws it:
    /// `START` and `END` as rounded nodes, static edges solid (a join's
    /// sources each to its target), conditional edges dashed (to the
    /// targets a router declared with
    /// [`add_conditional_edges_to`](super::StateGraph::add_conditional_edges_to);
    /// a router that declared none is not drawn, as LangGraph leaves out a
    /// branch it cannot read targets from), a node entered but never left
    /// drawn to `END`. Edges are sorted as LangGraph sorts them. Paste it in
    /// a ```` ```mermaid ```` block.
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
            let label = label(name);
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
    /// (LangGraph's "termini").
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
        all.extend(termini.into_iter().map(|t| (t, END.to_owned(), false)));
        let mut pairs = BTreeSet::new();
        all.into_iter()
            .filter(|l| pairs.insert((l.0.clone(), l.1.clone())))
            .collect()
    }

    /// The lines of one edge. A router is drawn to the targets it declared;
    /// one that declared none is not drawn, as LangGraph draws a
    /// `path_map`-less branch whose function has no return type.
    fn edge_lines(&self, from: Option<usize>, edge: &Edge, out: &mut BTreeSet<Line>) {
        let source = from.map_or_else(|| START.to_owned(), |i| self.names[i].clone());
        match edge {
            Edge::To(target) => {
                out.insert((source, self.drawn(from, *target), false));
            }
            Edge::Router(r) | Edge::Fallback(r) => {
                for target in self.router_ends[*r].iter().flatten() {
                    let target = match self.index.get(target) {
                        Some(&i) => self.names[i].clone(),
                        None => self.drawn(from, Target::End),
                    };
                    out.insert((source.clone(), target, true));
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

/// A node's label: its name, in `<p>..</p>` when it starts and ends with a
/// Markdown character (`__start__`), as LangChain writes it.
fn label(name: &str) -> String {
    let special = |c: Option<char>| c.is_some_and(|c| "*_`".contains(c));
    if special(name.chars().next()) && special(name.chars().last()) {
        format!("<p>{name}</p>")
    } else {
        name.to_owned()
    }
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
