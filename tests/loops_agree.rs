//! The runtime has two loops that must agree: the general superstep loop
//! and the fast path a plain run takes through steps of one plain sync
//! node (`run_direct`). Over generated graphs — edges and fan-out, routers,
//! `Command` gotos, `Send`s, failing nodes, concurrent writes to a plain
//! field, async nodes, breakpoints, `stop_after` and the recursion limit —
//! a plain run (the fast path wherever it applies), the same run observed
//! step by step (the general loop only) and the same run on a thread (the
//! general loop, storing every step) end in the same place.

use std::cell::Cell;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{
    self, BoxError, Command, Graph, GraphError, Input, Next, RunOutput, Sent, StateGraph, END,
    START,
};
use agent_state::AgentState;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Gen {
    #[reducer(append)]
    pub log: Vec<String>,
    /// A plain field: two writes in one step fail it.
    pub n: u32,
}

/// Where an edge, a router or a goto leads: a node by index, or END.
#[derive(Debug, Clone, Copy)]
enum Dest {
    Node(usize),
    End,
}

/// What a node does when it runs.
#[derive(Debug, Clone)]
enum Body {
    /// Logs its name.
    Plain,
    /// Logs its name and counts in the plain field.
    Counter,
    /// Returns nothing.
    Nothing,
    /// Logs its name and routes with a `Command` too.
    Goto(usize),
    /// Fails when the log's length is `k` modulo 5.
    Fail(usize),
    /// An async node that logs its name.
    Async,
    /// Sends `k` tasks to the map node.
    SendOut(u32),
}

/// Where a node's run leads, beside a `Command`'s goto.
#[derive(Debug, Clone)]
enum Out {
    Edges(Vec<Dest>),
    /// Picks one of these by the log's length.
    Router(Vec<Dest>),
}

#[derive(Debug, Clone)]
struct Spec {
    nodes: Vec<(Body, Out)>,
    entry: Vec<Dest>,
    before: Option<usize>,
    stop_after: Option<usize>,
    limit: usize,
}

fn name(i: usize) -> String {
    format!("n{i}")
}

fn dest_name(d: Dest) -> String {
    match d {
        Dest::Node(i) => name(i),
        Dest::End => END.to_owned(),
    }
}

fn log(entry: String) -> GenUpdate {
    GenUpdate::new().log(vec![entry])
}

fn dest(nodes: usize) -> impl Strategy<Value = Dest> {
    prop_oneof![4 => (0..nodes).prop_map(Dest::Node), 1 => Just(Dest::End)]
}

fn body(nodes: usize) -> impl Strategy<Value = Body> {
    prop_oneof![
        6 => Just(Body::Plain),
        2 => Just(Body::Counter),
        1 => Just(Body::Nothing),
        2 => (0..nodes).prop_map(Body::Goto),
        1 => (0..5usize).prop_map(Body::Fail),
        1 => Just(Body::Async),
        1 => (0..3u32).prop_map(Body::SendOut),
    ]
}

fn out(nodes: usize) -> impl Strategy<Value = Out> {
    let dests = move || proptest::collection::vec(dest(nodes), 1..3);
    prop_oneof![
        3 => dests().prop_map(Out::Edges),
        2 => dests().prop_map(Out::Router),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (2..6usize).prop_flat_map(|n| {
        (
            proptest::collection::vec((body(n), out(n)), n),
            proptest::collection::vec((0..n).prop_map(Dest::Node), 1..3),
            proptest::option::weighted(0.2, 0..n),
            proptest::option::weighted(0.3, 1..12usize),
            4..30usize,
        )
            .prop_map(|(nodes, entry, before, stop_after, limit)| Spec {
                nodes,
                entry,
                before,
                stop_after,
                limit,
            })
    })
}

fn add_body(graph: StateGraph<Gen>, i: usize, body: &Body) -> StateGraph<Gen> {
    let me = name(i);
    match body.clone() {
        Body::Plain => graph.add_node(me.clone(), move |_: &Gen| log(me.clone())),
        Body::Counter => graph.add_node(me.clone(), move |s: &Gen| log(me.clone()).n(s.n + 1)),
        Body::Nothing => graph.add_node(me, |_: &Gen| None::<GenUpdate>),
        Body::Goto(t) => graph.add_node(me.clone(), move |_: &Gen| {
            Command::update(log(me.clone())).and_goto(name(t))
        }),
        Body::Fail(k) => graph.add_node(me.clone(), move |s: &Gen| -> Result<_, BoxError> {
            if s.log.len() % 5 == k {
                return Err(format!("{me} fails at {}", s.log.len()).into());
            }
            Ok(log(me.clone()))
        }),
        Body::Async => graph.add_node(me.clone(), move |_: std::sync::Arc<Gen>| {
            let me = me.clone();
            async move { log(me) }
        }),
        Body::SendOut(k) => graph.add_node(me.clone(), move |_: &Gen| {
            (0..k).fold(Command::update(log(me.clone())), |c, x| {
                c.and_send(graph::Send::new("map", x))
            })
        }),
    }
}

fn add_out(graph: StateGraph<Gen>, i: usize, out: &Out) -> StateGraph<Gen> {
    match out.clone() {
        Out::Edges(dests) => dests
            .into_iter()
            .fold(graph, |g, d| g.add_edge(name(i), dest_name(d))),
        Out::Router(dests) => graph.add_conditional_edges(name(i), move |s: &Gen| {
            Next::from(dest_name(dests[s.log.len() % dests.len()]))
        }),
    }
}

fn build(spec: &Spec) -> Result<Graph<Gen>, GraphError> {
    let mut graph = StateGraph::<Gen>::new()
        .add_node("map", |Sent(x): Sent<u32>| log(format!("map{x}")))
        .with_recursion_limit(spec.limit);
    for (i, (body, out)) in spec.nodes.iter().enumerate() {
        graph = add_out(add_body(graph, i, body), i, out);
    }
    for &d in &spec.entry {
        graph = graph.add_edge(START, dest_name(d));
    }
    if let Some(b) = spec.before {
        graph = graph.interrupt_before([name(b)]);
    }
    graph.compile()
}

/// What a run ends with, compared across the three ways to run it.
type Ending = Result<(Vec<String>, u32, usize, Vec<String>), String>;

fn ending(out: Result<RunOutput<Gen>, GraphError>) -> Ending {
    out.map(|o| (o.state.log, o.state.n, o.steps, o.next))
        .map_err(|e| e.to_string())
}

fn run_three_ways(spec: &Spec) -> Option<[Ending; 3]> {
    let graph = build(spec).ok()?;
    let run = || {
        let run = graph.run(Input::Update(GenUpdate::new()));
        match spec.stop_after {
            Some(k) => run.stop_after(k),
            None => run,
        }
    };
    let plain = ending(block_on(run()));
    let observed = ending(block_on(run().on_step(|_| {})));
    let saver = MemoryCheckpointer::new();
    let stored = ending(block_on(run().on_thread(&saver, "t")));
    Some([plain, observed, stored])
}

#[test]
fn the_fast_path_and_the_general_loop_agree_on_generated_graphs() {
    let mut runner = TestRunner::new(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    });
    let compiled = Cell::new(0usize);
    let outcomes = Cell::new([0usize; 3]);
    runner
        .run(&spec(), |spec| {
            let Some([plain, observed, stored]) = run_three_ways(&spec) else {
                return Ok(());
            };
            compiled.set(compiled.get() + 1);
            let mut seen = outcomes.get();
            seen[match &plain {
                Ok((_, _, _, next)) if next.is_empty() => 0,
                Ok(_) => 1,
                Err(_) => 2,
            }] += 1;
            outcomes.set(seen);
            prop_assert_eq!(&plain, &observed, "plain vs observed");
            prop_assert_eq!(&plain, &stored, "plain vs on a thread");
            Ok(())
        })
        .unwrap();
    // The generator reaches finished, stopped and failed runs alike.
    let (compiled, outcomes) = (compiled.get(), outcomes.get());
    assert!(compiled > 300, "{compiled} graphs compiled");
    assert!(outcomes.iter().all(|&n| n > 20), "{outcomes:?}");
}
