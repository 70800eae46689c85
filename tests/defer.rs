//! Deferred nodes (LangGraph's `add_node(.., defer=True)`): reached, a
//! deferred node waits until nothing else is left to run, then runs once.

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{Graph, Input, Node, StateGraph, END, START};
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Log {
    #[reducer(append)]
    pub log: Vec<String>,
}

fn logs(name: &'static str) -> impl Fn(&Log) -> LogUpdate + Send + Sync + 'static {
    move |_: &Log| LogUpdate::new().log(vec![name.to_owned()])
}

/// START → a, START → b → b2; a → c, b2 → c; c deferred.
fn uneven(after_a: bool) -> Graph<Log> {
    let graph = StateGraph::<Log>::new()
        .add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_node("b2", logs("b2"))
        .add_node("c", Node::new(logs("c")).defer())
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("b", "b2")
        .add_edge("a", "c")
        .add_edge("b2", "c");
    let graph = if after_a {
        graph.interrupt_after(["a"])
    } else {
        graph
    };
    graph.compile().unwrap()
}

fn history(graph: &Graph<Log>, saver: &MemoryCheckpointer) -> Vec<String> {
    block_on(graph.state_history(saver, "t", 100))
        .unwrap()
        .into_iter()
        .map(|s| {
            let step = s.checkpoint.unwrap().step;
            format!("{step} {:?} {:?}", s.next, s.values.log)
        })
        .collect()
}

#[test]
fn a_deferred_node_waits_for_the_longer_branch_and_runs_once() {
    // langgraph 1.2.22, the same graph: updates a, b, b2, c; history
    //   3 ()       ['a', 'b', 'b2', 'c']
    //   2 ('c',)   ['a', 'b', 'b2']
    //   1 ('b2',)  ['a', 'b']        (c reached by a, not listed)
    //   0 ('a', 'b') []
    //  -1 ('__start__',) []
    let graph = uneven(false);
    let plain = block_on(graph.run(Input::Update(LogUpdate::new()))).unwrap();
    assert_eq!(plain.state.log, ["a", "b", "b2", "c"]);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        graph
            .run(Input::Update(LogUpdate::new()))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!(out.state.log, ["a", "b", "b2", "c"]);
    assert_eq!(
        history(&graph, &saver),
        [
            r#"3 [] ["a", "b", "b2", "c"]"#,
            r#"2 ["c"] ["a", "b", "b2"]"#,
            r#"1 ["b2"] ["a", "b"]"#,
            r#"0 ["a", "b"] []"#,
            r#"-1 ["__start__"] []"#,
        ]
    );
}

#[test]
fn a_deferred_node_stays_pending_across_a_pause_and_a_new_handle() {
    // langgraph 1.2.22, `interrupt_after=["a"]`: invoke gives ['a', 'b'],
    // next ('b2',); invoke(None) then ['a', 'b', 'b2', 'c'].
    let graph = uneven(true);
    let saver = MemoryCheckpointer::new();
    let paused = block_on(
        graph
            .run(Input::Update(LogUpdate::new()))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!(
        (paused.state.log.clone(), paused.next.clone()),
        (vec!["a".into(), "b".into()], vec!["b2".to_owned()])
    );
    let other = uneven(true);
    let done = block_on(other.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(done.state.log, ["a", "b", "b2", "c"]);

    // Stopped right after the step that reached it, then resumed.
    let graph = uneven(false);
    let saver = MemoryCheckpointer::new();
    let stopped = block_on(
        graph
            .run(Input::Update(LogUpdate::new()))
            .on_thread(&saver, "t")
            .stop_after(2),
    )
    .unwrap();
    assert_eq!(stopped.next, ["b2"]);
    let done = block_on(uneven(false).run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(done.state.log, ["a", "b", "b2", "c"]);
}

#[test]
fn a_deferred_node_waits_out_a_loop() {
    // langgraph 1.2.22: a → c (deferred), b looping until three "b":
    // ['a', 'b', 'b', 'b', 'c'].
    let graph = StateGraph::<Log>::new()
        .add_node("a", logs("a"))
        .add_node("b", logs("b"))
        .add_node("c", Node::new(logs("c")).defer())
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", "c")
        .add_conditional_edges("b", |s: &Log| {
            if s.log.iter().filter(|l| *l == "b").count() < 3 {
                "b"
            } else {
                END
            }
        })
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(LogUpdate::new()))).unwrap();
    assert_eq!(out.state.log, ["a", "b", "b", "b", "c"]);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        graph
            .run(Input::Update(LogUpdate::new()))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!(out.state.log, ["a", "b", "b", "b", "c"]);
}
