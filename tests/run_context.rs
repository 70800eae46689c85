//! What a run gives its nodes beside the state: a typed context
//! (LangGraph's `context=` / `Runtime.context`) and the steps left before
//! the recursion limit (LangGraph's `RemainingSteps`).

use std::sync::Arc;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{Graph, Input, NodeContext, StateGraph, END, START};
use agent_state::AgentState;

/// Who a run serves: run context, not state.
struct User {
    did: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Seen {
    #[reducer(append)]
    pub log: Vec<String>,
}

fn seen(entry: String) -> SeenUpdate {
    SeenUpdate::new().log(vec![entry])
}

fn who(ctx: &NodeContext) -> String {
    ctx.context::<User>()
        .map_or("nobody".to_owned(), |u| u.did.clone())
}

/// A sync node, an async node and a subgraph's node, each logging the
/// user it sees.
fn graph() -> Graph<Seen> {
    let child = StateGraph::<Seen>::new()
        .add_node("inner", |_: &Seen, ctx: &NodeContext| {
            seen(format!("inner:{}", who(ctx)))
        })
        .add_edge(START, "inner")
        .compile()
        .unwrap();
    StateGraph::<Seen>::new()
        .add_node("sync", |_: &Seen, ctx: &NodeContext| {
            seen(format!("sync:{}", who(ctx)))
        })
        .add_node("async", |_: Arc<Seen>, ctx: NodeContext| async move {
            seen(format!("async:{}", who(&ctx)))
        })
        .add_node(
            "sub",
            child.mapped(
                |_: &Seen| Seen::default(),
                |c: &Seen| SeenUpdate::new().log(c.log.clone()),
            ),
        )
        .add_edge(START, "sync")
        .add_edge("sync", "async")
        .add_edge("async", "sub")
        .add_edge("sub", END)
        .compile()
        .unwrap()
}

fn alice() -> User {
    User {
        did: "did:plc:alice".to_owned(),
    }
}

#[test]
fn nodes_and_subgraphs_read_the_runs_context_by_type() {
    let graph = graph();
    let out = block_on(graph.run(Input::Update(SeenUpdate::new())).context(alice())).unwrap();
    let expected = [
        "sync:did:plc:alice",
        "async:did:plc:alice",
        "inner:did:plc:alice",
    ];
    assert_eq!(out.state.log, expected);

    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(SeenUpdate::new()))
        .context(alice())
        .on_thread(&saver, "t");
    assert_eq!(block_on(run).unwrap().state.log, expected);
}

#[test]
fn a_run_without_a_context_or_with_another_type_reads_none() {
    let graph = graph();
    let out = block_on(graph.run(Input::Update(SeenUpdate::new()))).unwrap();
    assert_eq!(
        out.state.log,
        ["sync:nobody", "async:nobody", "inner:nobody"]
    );
    let out = block_on(graph.run(Input::Update(SeenUpdate::new())).context(7u32)).unwrap();
    assert_eq!(
        out.state.log,
        ["sync:nobody", "async:nobody", "inner:nobody"]
    );
}

#[test]
fn a_node_sees_the_steps_left_as_langgraphs_remaining_steps() {
    // langgraph 1.2.22: a node looping on itself until the log holds 10
    // entries, logging `remaining_steps`, with `recursion_limit` 25:
    // 24, 23, ..., 15.
    let graph = StateGraph::<Seen>::new()
        .add_node("a", |_: &Seen, ctx: &NodeContext| {
            seen(ctx.remaining_steps().to_string())
        })
        .add_edge(START, "a")
        .add_conditional_edges("a", |s: &Seen| if s.log.len() < 10 { "a" } else { END })
        .with_recursion_limit(25)
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(SeenUpdate::new()))).unwrap();
    let expected: Vec<String> = (15..=24).rev().map(|n| n.to_string()).collect();
    assert_eq!(out.state.log, expected);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        graph
            .run(Input::Update(SeenUpdate::new()))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!(out.state.log, expected);
}
