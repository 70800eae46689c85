//! `/assistants/{id}/graph`'s answer: a graph's nodes and edges as
//! LangGraph's `get_graph(xray=..).to_json()` lists them, a subgraph node
//! drawn expanded (its nodes `parent:child`) to the depth `xray` asks.

use agent_state::graph::{Outline, END, START};
use serde_json::{json, Value};

use crate::error::ApiError;

/// `xray`: absent, empty or `false` draws no subgraph (depth 0), `true`
/// every level, a whole number from 1 that many levels; anything else is
/// a 422 naming it (the official server's rule: `True` and `False` too,
/// and a number as Python's `int()` reads it).
pub(crate) fn xray_depth(value: Option<&str>) -> Result<usize, ApiError> {
    match value {
        None | Some("" | "false" | "False") => Ok(0),
        Some("true" | "True") => Ok(usize::MAX),
        Some(text) => match python_int(text) {
            Some((false, digits)) if digits.bytes().any(|b| b != b'0') => {
                // A depth past what fits is every level.
                Ok(digits.parse::<usize>().unwrap_or(usize::MAX))
            }
            _ => Err(bad_xray(text)),
        },
    }
}

/// A whole number as Python's `int()` reads text: spaces around it, a
/// sign, single underscores between digits. Whether it is negative, and
/// its digits.
fn python_int(text: &str) -> Option<(bool, String)> {
    let text = text.trim();
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let groups: Vec<&str> = rest.split('_').collect();
    let digit_groups = groups
        .iter()
        .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()));
    digit_groups.then(|| (negative, groups.concat()))
}

fn bad_xray(value: &str) -> ApiError {
    ApiError::Invalid(format!(
        "xray: `{value}` is not `true`, `false` or a depth of 1 or more"
    ))
}

/// A drawing being put together: node ids in order, each with whether it
/// is a runnable (every node but `END`), and the edges in order.
struct Drawn {
    nodes: Vec<(String, bool)>,
    edges: Vec<Edge>,
}

struct Edge {
    source: String,
    target: String,
    conditional: bool,
}

/// The JSON of a graph outlined to the depth asked.
pub(crate) fn to_json(outline: &Outline) -> Value {
    let drawn = drawn(outline);
    let nodes: Vec<Value> = drawn
        .nodes
        .iter()
        .map(|(id, runnable)| match runnable {
            true => json!({"id": id, "type": "runnable", "data": {"name": id}}),
            false => json!({ "id": id }),
        })
        .collect();
    let edges: Vec<Value> = drawn
        .edges
        .iter()
        .map(|e| match e.conditional {
            true => json!({"source": e.source, "target": e.target, "conditional": true}),
            false => json!({"source": e.source, "target": e.target}),
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

/// `START`, the nodes, `END` when an edge reaches it, the edges; then each
/// subgraph node replaced by its own drawing, as LangGraph replaces it.
fn drawn(outline: &Outline) -> Drawn {
    let mut nodes = vec![(START.to_owned(), true)];
    nodes.extend(outline.nodes.iter().map(|n| (n.clone(), true)));
    if outline.edges.iter().any(|e| e.1 == END) {
        nodes.push((END.to_owned(), false));
    }
    let edges = outline
        .edges
        .iter()
        .map(|(source, target, conditional)| Edge {
            source: source.clone(),
            target: target.clone(),
            conditional: *conditional,
        })
        .collect();
    let mut out = Drawn { nodes, edges };
    for (name, child) in &outline.subgraphs {
        out.expand(name, drawn(child));
    }
    out
}

impl Drawn {
    /// Node `name` replaced by `sub`'s nodes and edges, ids prefixed
    /// `name:`: its `START` and `END` dropped when each is a plain way in
    /// or out, edges into `name` led to the subgraph's first node and
    /// edges out of it from its last. A subgraph with no single first and
    /// last node stays one node (LangGraph's rule).
    fn expand(&mut self, name: &str, mut sub: Drawn) {
        let here = self.nodes.iter().any(|n| n.0 == name);
        if sub.nodes.len() <= 1 || !here || sub.first(None).is_none() || sub.last(None).is_none() {
            return;
        }
        sub.trim_first();
        sub.trim_last();
        let prefixed = |id: &str| format!("{name}:{id}");
        let first = sub.first(None).map(prefixed);
        let last = sub.last(None).map(prefixed);
        self.nodes.retain(|n| n.0 != name);
        self.nodes
            .extend(sub.nodes.iter().map(|(id, r)| (prefixed(id), *r)));
        self.edges.extend(sub.edges.iter().map(|e| Edge {
            source: prefixed(&e.source),
            target: prefixed(&e.target),
            conditional: e.conditional,
        }));
        for edge in &mut self.edges {
            if let (Some(last), true) = (&last, edge.source == name) {
                edge.source.clone_from(last);
            }
            if let (Some(first), true) = (&first, edge.target == name) {
                edge.target.clone_from(first);
            }
        }
    }

    /// The one node that no edge (from a node other than `except`) leads
    /// to, if exactly one.
    fn first(&self, except: Option<&str>) -> Option<&str> {
        let reached = |id: &str| {
            self.edges
                .iter()
                .any(|e| Some(e.source.as_str()) != except && e.target == id)
        };
        only(self.ids().filter(|id| Some(*id) != except && !reached(id)))
    }

    /// The one node that no edge (to a node other than `except`) leaves,
    /// if exactly one.
    fn last(&self, except: Option<&str>) -> Option<&str> {
        let left = |id: &str| {
            self.edges
                .iter()
                .any(|e| Some(e.target.as_str()) != except && e.source == id)
        };
        only(self.ids().filter(|id| Some(*id) != except && !left(id)))
    }

    fn ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.0.as_str())
    }

    /// Drops the first node when it has one edge out and the rest still
    /// has a first node.
    fn trim_first(&mut self) {
        let Some(first) = self.first(None).map(str::to_owned) else {
            return;
        };
        let out = self.edges.iter().filter(|e| e.source == first).count();
        if out == 1 && self.first(Some(&first)).is_some() {
            self.remove(&first);
        }
    }

    /// Drops the last node when it has one edge in and the rest still has
    /// a last node.
    fn trim_last(&mut self) {
        let Some(last) = self.last(None).map(str::to_owned) else {
            return;
        };
        let into = self.edges.iter().filter(|e| e.target == last).count();
        if into == 1 && self.last(Some(&last)).is_some() {
            self.remove(&last);
        }
    }

    fn remove(&mut self, id: &str) {
        self.nodes.retain(|n| n.0 != id);
        self.edges.retain(|e| e.source != id && e.target != id);
    }
}

/// The item when there is exactly one.
fn only<'a>(mut items: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let one = items.next()?;
    items.next().is_none().then_some(one)
}
