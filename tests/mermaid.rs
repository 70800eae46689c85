//! `Graph::to_mermaid` draws what LangGraph's `draw_mermaid` draws.

use agent_state::checkpoint::block_on;
use agent_state::graph::{GraphError, Input, StateGraph, END, START};
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Debate {
    round: u32,
}

/// langgraph 1.2.22's `draw_mermaid()` of the same graph (three nodes in a
/// row, the last routing back or to END with `path_map=["optimist", END]`).
const LANGGRAPH_DEBATE: &str = "---
config:
  flowchart:
    curve: linear
---
graph TD;
\t__start__([<p>__start__</p>]):::first
\toptimist(optimist)
\tskeptic(skeptic)
\tmoderator(moderator)
\t__end__([<p>__end__</p>]):::last
\t__start__ --> optimist;
\tmoderator -.-> __end__;
\tmoderator -.-> optimist;
\toptimist --> skeptic;
\tskeptic --> moderator;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
";

fn debate() -> StateGraph<Debate> {
    StateGraph::<Debate>::new()
        .add_node("optimist", |_: &Debate| DebateUpdate::new())
        .add_node("skeptic", |s: &Debate| {
            DebateUpdate::new().round(s.round + 1)
        })
        .add_node("moderator", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
}

#[test]
fn the_debate_is_drawn_as_langgraph_draws_it() {
    let graph = debate()
        .add_conditional_edges_to(
            "moderator",
            |s: &Debate| if s.round >= 3 { END } else { "optimist" },
            ["optimist", END],
        )
        .compile()
        .unwrap();
    assert_eq!(graph.to_mermaid(), LANGGRAPH_DEBATE);
}

#[test]
fn joins_and_odd_names_are_drawn() {
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_node("b", |_: &Debate| DebateUpdate::new())
        .add_node("c", |_: &Debate| DebateUpdate::new())
        .add_node("d.x", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], "c")
        .add_edge("c", "d.x")
        .compile()
        .unwrap();
    let drawing = graph.to_mermaid();
    for line in [
        "\t__start__([<p>__start__</p>]):::first\n",
        "\td\\2ex(d.x)\n",
        "\t__end__([<p>__end__</p>]):::last\n",
        "\t__start__ --> a;\n\t__start__ --> b;\n\ta --> c;\n\tb --> c;\n\tc --> d\\2ex;\n\td\\2ex --> __end__;\n",
    ] {
        assert!(drawing.contains(line), "{line:?} not in\n{drawing}");
    }
}

/// The body of a drawing: its node and edge lines.
fn body(drawing: &str) -> &str {
    let body = drawing.split_once("graph TD;\n").unwrap().1;
    body.split_once("\tclassDef").unwrap().0
}

#[test]
fn an_undeclared_router_is_not_drawn() {
    // langgraph draws a branch without path_map (and without a return
    // type) as nothing: its node is left as a terminus, drawn to END.
    let graph = debate()
        .add_conditional_edges("moderator", |_: &Debate| END)
        .compile()
        .unwrap();
    let drawing = graph.to_mermaid();
    assert!(drawing.contains("\tmoderator --> __end__;\n"), "{drawing}");
    assert!(!drawing.contains("-.->"), "{drawing}");
}

#[test]
fn edges_are_sorted_as_langgraph_sorts_them() {
    // langgraph 1.2.22: START's edges sorted among the others (`B` before
    // `__start__`), whatever order they were added in.
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_node("B", |_: &Debate| DebateUpdate::new())
        .add_node("c", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "c")
        .add_edge(START, "B")
        .add_edge(START, "a")
        .add_edge("B", "c")
        .add_edge("a", "c")
        .compile()
        .unwrap();
    let expected = "\t__start__([<p>__start__</p>]):::first
\ta(a)
\tB(B)
\tc(c)
\t__end__([<p>__end__</p>]):::last
\tB --> c;
\t__start__ --> B;
\t__start__ --> a;
\t__start__ --> c;
\ta --> c;
\tc --> __end__;
";
    assert_eq!(body(&graph.to_mermaid()), expected);
}

#[test]
fn a_router_beside_a_static_edge() {
    // langgraph 1.2.22: `a -> b` plus a branch from `a` to [c, END]; b and
    // c are termini.
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_node("b", |_: &Debate| DebateUpdate::new())
        .add_node("c", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_conditional_edges_to("a", |_: &Debate| "c", ["c", END])
        .compile()
        .unwrap();
    let expected = "\t__start__([<p>__start__</p>]):::first
\ta(a)
\tb(b)
\tc(c)
\t__end__([<p>__end__</p>]):::last
\t__start__ --> a;
\ta -.-> __end__;
\ta --> b;
\ta -.-> c;
\tb --> __end__;
\tc --> __end__;
";
    assert_eq!(body(&graph.to_mermaid()), expected);
}

#[test]
fn a_router_from_start() {
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_node("b", |_: &Debate| DebateUpdate::new())
        .add_conditional_edges_to(START, |_: &Debate| "a", ["a", "b"])
        .compile()
        .unwrap();
    let expected = "\t__start__([<p>__start__</p>]):::first
\ta(a)
\tb(b)
\t__end__([<p>__end__</p>]):::last
\t__start__ -.-> a;
\t__start__ -.-> b;
\ta --> __end__;
\tb --> __end__;
";
    assert_eq!(body(&graph.to_mermaid()), expected);
}

#[test]
fn declared_targets_are_checked_when_compiled_and_when_run() {
    let err = debate()
        .add_conditional_edges_to("moderator", |_: &Debate| END, ["optimist", "judge"])
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(err, GraphError::UnknownNode { ref name, .. } if name == "judge"),
        "{err}"
    );
    let graph = debate()
        .add_conditional_edges_to("moderator", |_: &Debate| "skeptic", ["optimist", END])
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(DebateUpdate::new()))).unwrap_err();
    assert!(
        matches!(err, GraphError::UndeclaredTarget { ref target, .. } if target == "skeptic"),
        "{err}"
    );
    assert!(err.to_string().contains("optimist, __end__"), "{err}");
}

/// Three nodes `z`, `a`, `b`, entered at `z`.
fn zab() -> StateGraph<Debate> {
    StateGraph::<Debate>::new()
        .add_node("z", |_: &Debate| DebateUpdate::new())
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_node("b", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "z")
        .add_edge("z", "a")
}

const ZAB_NODES: &str = "\t__start__([<p>__start__</p>]):::first
\tz(z)
\ta(a)
\tb(b)
\t__end__([<p>__end__</p>]):::last
";

#[test]
fn static_edges_to_end_are_drawn_as_langgraph_draws_them() {
    // langgraph 1.2.22 draws no static edge to END: a node left only for
    // END is a terminus, drawn to END after the sorted edges; a node
    // with another edge out is not drawn to END at all.
    let graph = zab()
        .add_edge("a", "b")
        .add_edge("b", END)
        .add_edge("a", END)
        .compile()
        .unwrap();
    let expected =
        format!("{ZAB_NODES}\t__start__ --> z;\n\ta --> b;\n\tz --> a;\n\tb --> __end__;\n");
    assert_eq!(body(&graph.to_mermaid()), expected);
}

#[test]
fn edges_of_a_node_to_itself_come_last() {
    // langgraph 1.2.22 (langchain-core's drawer groups a node's edge to
    // itself apart, after the others).
    let graph = zab()
        .add_edge("a", "b")
        .add_conditional_edges_to("b", |_: &Debate| END, ["b", END])
        .compile()
        .unwrap();
    let expected = format!(
        "{ZAB_NODES}\t__start__ --> z;\n\ta --> b;\n\tb -.-> __end__;\n\tz --> a;\n\tb -.-> b;\n"
    );
    assert_eq!(body(&graph.to_mermaid()), expected);
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Middle {
    #[state(flatten)]
    count: Count,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Top {
    #[state(flatten)]
    middle: Middle,
    label: String,
}

/// `top` runs `mid` (a part: `Middle`, whose node `child` runs `Count`'s
/// `inc`) and `side` (`Count`'s graph mapped from and to `Top`'s state),
/// then `last`.
fn nested() -> Result<agent_state::graph::Graph<Top>, GraphError> {
    let count = || {
        StateGraph::<Count>::new()
            .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
            .add_edge(START, "inc")
            .compile()
    };
    let middle = StateGraph::<Middle>::new()
        .add_node("child", count()?)
        .add_edge(START, "child")
        .compile()?;
    let side = count()?.mapped(
        |s: &Top| s.middle.count.clone(),
        |c: &Count| TopUpdate::new().label(c.n.to_string()),
    );
    StateGraph::<Top>::new()
        .add_node("mid", middle)
        .add_node("side", side)
        .add_node("last", |_: &Top| TopUpdate::new())
        .add_edge(START, "mid")
        .add_edge("mid", "side")
        .add_edge("side", "last")
        .compile()
}

#[test]
fn outlines_list_subgraph_nodes_to_the_depth_asked() -> Result<(), GraphError> {
    let graph = nested()?;
    let edge = |a: &str, b: &str| (a.to_owned(), b.to_owned(), false);
    // Depth 0: the graph alone, as `node_names` and `edges` give it.
    let flat = graph.outline(0);
    assert_eq!(flat.nodes, ["mid", "side", "last"]);
    assert_eq!(flat.edges, graph.edges());
    assert!(flat.subgraphs.is_empty());
    // Depth 1: both subgraph nodes, a part's and a mapped one, in node
    // order; the part's own subgraph node left out.
    let one = graph.outline(1);
    let names: Vec<&str> = one.subgraphs.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["mid", "side"]);
    let mid = &one.subgraphs[0].1;
    assert_eq!(mid.nodes, ["child"]);
    assert_eq!(
        mid.edges,
        [edge(START, "child"), edge("child", END)],
        "as its own drawing lists them"
    );
    assert!(mid.subgraphs.is_empty());
    assert_eq!(one.subgraphs[1].1.nodes, ["inc"]);
    // Every level: the part's subgraph node has its own outline.
    let all = graph.outline(usize::MAX);
    let inner = &all.subgraphs[0].1.subgraphs;
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0].0, "child");
    assert_eq!(inner[0].1.nodes, ["inc"]);
    assert_eq!(inner[0].1.edges, [edge(START, "inc"), edge("inc", END)]);
    assert_eq!(graph.outline(2), all, "two levels are all this graph has");
    Ok(())
}
