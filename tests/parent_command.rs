//! A subgraph's node commanding its parent, as LangGraph's
//! `Command(graph=Command.PARENT, update=.., goto=..)`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{
    BoxError, Graph, GraphError, Input, Node, ParentCommand, RetryPolicy, StateGraph, END, START,
};
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Work {
    #[reducer(append)]
    pub log: Vec<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Desk {
    #[state(flatten)]
    pub work: Work,
    pub who: String,
}

fn work_log(entry: &str) -> WorkUpdate {
    WorkUpdate::new().log(vec![entry.to_owned()])
}

fn desk_log(entry: &str) -> DeskUpdate {
    Desk::lift(work_log(entry))
}

/// c1 logs "c1"; c2 commands the parent: log "c2->parent", who "child",
/// goto p2.
fn child() -> Graph<Work> {
    StateGraph::<Work>::new()
        .add_node("c1", |_: &Work| work_log("c1"))
        .add_node("c2", |_: &Work| -> Result<WorkUpdate, BoxError> {
            let update = desk_log("c2->parent").who("child".to_owned());
            Err(ParentCommand::goto("p2").with_update(update).into())
        })
        .add_edge(START, "c1")
        .add_edge("c1", "c2")
        .compile()
        .unwrap()
}

fn parent() -> Graph<Desk> {
    StateGraph::<Desk>::new()
        .add_node("sub", child())
        .add_node("p2", |_: &Desk| desk_log("p2"))
        .add_node("p3", |_: &Desk| desk_log("p3"))
        .add_edge(START, "sub")
        .add_edge("sub", "p3")
        .compile()
        .unwrap()
}

#[test]
fn a_subgraph_node_writes_to_its_parent_and_routes_it() {
    // langgraph 1.2.22, the same graphs (the child's state the parent's),
    // `invoke({"log": ["in"]})` on a thread: the parent's values
    // {'log': ['in', 'c2->parent', 'p2', 'p3'], 'who': 'child'}: c1's write
    // is dropped with the subgraph, p2 runs from the command and p3 from
    // the subgraph node's edge, in one step; history steps 2, 1 (next
    // ('p2', 'p3')), 0, -1.
    let graph = parent();
    let input = || Input::Update(desk_log("in"));
    let plain = block_on(graph.run(input())).unwrap();
    assert_eq!(plain.state.work.log, ["in", "c2->parent", "p2", "p3"]);
    assert_eq!(plain.state.who, "child");

    let saver = MemoryCheckpointer::new();
    let out = block_on(graph.run(input()).on_thread(&saver, "t")).unwrap();
    assert_eq!(out.state, plain.state);
    let history = block_on(graph.state_history(&saver, "t", 10)).unwrap();
    let steps: Vec<(i64, Vec<String>)> = history
        .iter()
        .map(|s| (s.checkpoint.as_ref().unwrap().step, s.next.clone()))
        .collect();
    assert_eq!(
        steps,
        [
            (2, vec![]),
            (1, vec!["p2".to_owned(), "p3".to_owned()]),
            (0, vec!["sub".to_owned()]),
            (-1, vec!["__start__".to_owned()]),
        ]
    );
}

#[test]
fn a_command_to_the_parent_from_a_graph_that_has_none_fails_its_node() {
    // langgraph 1.2.22 raises ParentCommand out of `invoke` there.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Work>::new()
        .add_node(
            "c2",
            Node::new(move |_: &Work| -> Result<WorkUpdate, BoxError> {
                counted.fetch_add(1, Ordering::SeqCst);
                Err(ParentCommand::goto("p2").into())
            })
            .retry(RetryPolicy::new(3)),
        )
        .add_edge(START, "c2")
        .add_edge("c2", END)
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(WorkUpdate::new()))).unwrap_err();
    assert!(
        matches!(&err, GraphError::Node { node, .. } if node == "c2"),
        "{err}"
    );
    assert!(
        err.to_string().contains("a command to the parent graph"),
        "{err}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
}

#[test]
fn a_parent_update_the_parent_cannot_read_fails_the_subgraph_node() {
    let child = StateGraph::<Work>::new()
        .add_node("c", |_: &Work| -> Result<WorkUpdate, BoxError> {
            let update = serde_json::json!({"nope": 1});
            Err(ParentCommand::update(update).into())
        })
        .add_edge(START, "c")
        .compile()
        .unwrap();
    let graph = StateGraph::<Desk>::new()
        .add_node("sub", child)
        .add_edge(START, "sub")
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(desk_log("in")))).unwrap_err();
    assert!(
        matches!(&err, GraphError::Node { node, .. } if node == "sub"),
        "{err}"
    );
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn a_parent_update_that_does_not_serialize_fails_the_subgraph_node() {
    let child = StateGraph::<Work>::new()
        .add_node("c", |_: &Work| -> Result<WorkUpdate, BoxError> {
            // JSON object keys are strings: a map keyed by lists is no JSON.
            let update = std::collections::BTreeMap::from([(vec![1u8], 1u8)]);
            Err(ParentCommand::goto("p2").with_update(update).into())
        })
        .add_edge(START, "c")
        .compile()
        .unwrap();
    let graph = StateGraph::<Desk>::new()
        .add_node("sub", child)
        .add_edge(START, "sub")
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(desk_log("in")))).unwrap_err();
    assert!(
        matches!(&err, GraphError::Node { node, .. } if node == "sub"),
        "{err}"
    );
    assert!(err.to_string().contains("does not serialize"), "{err}");
}
