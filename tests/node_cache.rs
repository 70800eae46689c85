//! A node's cache (LangGraph's `CachePolicy` with the graph's
//! `InMemoryCache`): a node is not run again for an input it has seen.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::futures::StreamExt;
use agent_state::graph::{
    self, BoxError, CachePolicy, Graph, GraphError, Input, Next, Node, NodeContext, Sent,
    StateGraph, END, START,
};
use agent_state::graph::{StreamEvent, StreamMode};
use agent_state::AgentState;
use serde_json::{json, Value};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Calc {
    pub x: u32,
    #[reducer(append)]
    pub out: Vec<u32>,
}

type Calls = Arc<AtomicUsize>;

fn count(calls: &Calls) -> usize {
    calls.load(Ordering::SeqCst)
}

/// `slow` doubles `x` into `out`, counting its calls, behind `policy`.
fn doubling(policy: CachePolicy) -> (Graph<Calc>, Calls) {
    let calls = Calls::default();
    let counted = Arc::clone(&calls);
    let slow = move |s: &Calc| {
        counted.fetch_add(1, Ordering::SeqCst);
        CalcUpdate::new().out(vec![s.x * 2])
    };
    let graph = StateGraph::<Calc>::new()
        .add_node("slow", Node::new(slow).cache(policy))
        .add_edge(START, "slow")
        .add_edge("slow", END)
        .compile()
        .unwrap();
    (graph, calls)
}

fn run_x(graph: &Graph<Calc>, x: u32) -> Vec<u32> {
    block_on(graph.run(Input::Update(CalcUpdate::new().x(x))))
        .unwrap()
        .state
        .out
}

#[test]
fn a_cached_node_runs_once_per_input() {
    // langgraph 1.2.22: invoke({"x": 1}) twice, then {"x": 2}: the node
    // ran for 1 and 2 only; the second run's output is the first's.
    let (graph, calls) = doubling(CachePolicy::new());
    assert_eq!(run_x(&graph, 1), [2]);
    assert_eq!(run_x(&graph, 1), [2]);
    assert_eq!(count(&calls), 1);
    assert_eq!(run_x(&graph, 2), [4]);
    assert_eq!(count(&calls), 2);
    // Runs on threads share the graph's cache.
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        graph
            .run(Input::Update(CalcUpdate::new().x(2)))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!((out.state.out, count(&calls)), (vec![4], 2));
}

#[test]
fn a_cached_tasks_update_is_marked_and_it_streams_no_task_result() {
    // langgraph 1.2.22, the second `stream({"x": 1}, stream_mode=["updates",
    // "tasks"])`: ('tasks', {id, name: 'slow', input, triggers}), then
    // ('updates', {'slow': {'out': [2]}, '__metadata__': {'cached': True}})
    // and no task result.
    let (graph, calls) = doubling(CachePolicy::new());
    run_x(&graph, 1);
    let modes = [StreamMode::Updates, StreamMode::Tasks];
    let stream = graph
        .run(Input::Update(CalcUpdate::new().x(1)))
        .stream(modes.as_slice());
    let events: Vec<(String, Value)> = block_on(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !matches!(e, StreamEvent::End(_)))
        .map(|e| (e.name().to_owned(), e.to_json()))
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["tasks", "updates"], "{events:?}");
    assert_eq!(events[0].1["name"], "slow");
    assert_eq!(
        events[1].1,
        json!({"slow": {"out": [2]}, "__metadata__": {"cached": true}})
    );
    assert_eq!(count(&calls), 1);
}

#[test]
fn a_key_function_and_a_ttl_decide_what_is_reused() {
    // langgraph 1.2.22, key_func `str(x % 2)`, ttl 1 s: {"x": 1} then
    // {"x": 3} gives [2] twice (one call); after the ttl, {"x": 3} runs:
    // [6].
    let policy = CachePolicy::new()
        .key(|input| (input["x"].as_u64().unwrap() % 2).to_string())
        .ttl(Duration::from_millis(200));
    let (graph, calls) = doubling(policy);
    assert_eq!(run_x(&graph, 1), [2]);
    assert_eq!(run_x(&graph, 3), [2]);
    assert_eq!(count(&calls), 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(run_x(&graph, 3), [6]);
    assert_eq!(count(&calls), 2);
}

#[test]
fn failures_and_pauses_are_not_kept() {
    let calls = Calls::default();
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Calc>::new()
        .add_node(
            "flaky",
            Node::new(
                move |s: &Calc, ctx: &NodeContext| -> Result<CalcUpdate, BoxError> {
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    if n == 0 {
                        return Err("down".into());
                    }
                    let ok: bool = ctx.interrupt("ok?")?;
                    Ok(CalcUpdate::new().out(vec![s.x + u32::from(ok)]))
                },
            )
            .cache(CachePolicy::new()),
        )
        .add_edge(START, "flaky")
        .compile()
        .unwrap();
    let input = || Input::Update(CalcUpdate::new().x(1));
    assert!(block_on(graph.run(input())).is_err());
    let paused = block_on(graph.run(input())).unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let paused = block_on(graph.run(input())).unwrap();
    assert_eq!(
        paused.interrupts.len(),
        1,
        "the pause was not kept as an output"
    );
    assert_eq!(count(&calls), 3);
}

#[test]
fn send_tasks_are_keyed_by_their_argument() {
    let calls = Calls::default();
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Calc>::new()
        .add_node(
            "double",
            Node::new(move |Sent(n): Sent<u32>| {
                counted.fetch_add(1, Ordering::SeqCst);
                CalcUpdate::new().out(vec![n * 2])
            })
            .cache(CachePolicy::new()),
        )
        .add_conditional_edges(START, |_: &Calc| {
            Next::send([1u32, 2, 1].map(|n| graph::Send::new("double", n)))
        })
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(CalcUpdate::new()))).unwrap();
    assert_eq!(out.state.out, [2, 4, 2]);
    // The two tasks of argument 1 run at once: the second may miss.
    let first = count(&calls);
    assert!((2..=3).contains(&first), "{first} calls");
    let out = block_on(graph.run(Input::Update(CalcUpdate::new()))).unwrap();
    assert_eq!(out.state.out, [2, 4, 2]);
    assert_eq!(count(&calls), first, "the second run ran nothing");
}

#[test]
fn a_subgraph_takes_no_cache() {
    let child = StateGraph::<Calc>::new()
        .add_node("c", |_: &Calc| CalcUpdate::new())
        .add_edge(START, "c")
        .compile()
        .unwrap();
    let err = StateGraph::<Calc>::new()
        .add_node(
            "sub",
            Node::new(child.mapped(Calc::clone, |_: &Calc| CalcUpdate::new()))
                .cache(CachePolicy::new()),
        )
        .add_edge(START, "sub")
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&err, GraphError::CacheOnSubgraph { node } if node == "sub"),
        "{err}"
    );
}
