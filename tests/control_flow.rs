//! LangGraph's control flow: interrupts, pending writes, `Send`, joins,
//! breakpoints, subgraphs, editing a thread, cancellation (the scenarios of
//! `support/flow.rs` on memory and SQLite; PostgreSQL runs them in
//! `control_flow_postgres.rs`), and what needs no checkpointer: parallel
//! sync nodes, node policies, and the errors of building such graphs.
#![cfg(feature = "sqlite")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{
    self, BoxError, GraphError, Input, Node, NodeContext, NodeTimeout, RetryPolicy, Sent,
    StateGraph, START,
};
use support::flow::{self, Flow, FlowUpdate};
use support::temp_db;

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let saver = MemoryCheckpointer::new();
                    block_on(flow::$name(&saver, &saver, stringify!($name))).unwrap();
                }
            )*
        }
        mod sqlite {
            use super::*;
            $(
                #[test]
                fn $name() {
                    // Two connections to one file, as two processes would have.
                    let path = temp_db(stringify!($name));
                    let a = SqliteCheckpointer::open(&path).unwrap();
                    let b = SqliteCheckpointer::open(&path).unwrap();
                    block_on(flow::$name(&a, &b, stringify!($name))).unwrap();
                }
            )*
        }
    };
}

scenarios!(
    interrupt_pauses_and_resumes_elsewhere,
    resume_errors_leave_the_pause,
    interrupts_in_one_node_match_by_order,
    parallel_interrupts_keep_finished_nodes,
    cancelling_mid_step_keeps_finished_tasks,
    send_fans_out_and_resumes,
    command_sends_are_stored,
    joins_wait_across_steps_and_resumes,
    breakpoints_pause_and_resume,
    input_to_a_stopped_thread_carries_on,
    editing_a_thread,
    unknown_writers_are_errors,
    subgraph_pauses_under_a_namespace,
    mapped_subgraph_runs_under_a_namespace,
    untracked_fields_are_never_stored,
);

fn log(entry: &str) -> FlowUpdate {
    FlowUpdate::new().add_log(entry.to_owned())
}

/// Two sync nodes of one step run at the same time: each waits for the
/// other to have started, which one after the other could not do.
#[test]
fn sync_nodes_of_one_step_run_at_the_same_time() {
    let (a_tx, a_rx) = mpsc::channel::<()>();
    let (b_tx, b_rx) = mpsc::channel::<()>();
    let a_rx = std::sync::Mutex::new(a_rx);
    let b_rx = std::sync::Mutex::new(b_rx);
    let graph = StateGraph::<Flow>::new()
        .add_node("a", move |_: &Flow| -> Result<FlowUpdate, BoxError> {
            b_tx.send(()).unwrap();
            a_rx.lock().unwrap().recv_timeout(Duration::from_secs(10))?;
            Ok(log("a"))
        })
        .add_node("b", move |_: &Flow| -> Result<FlowUpdate, BoxError> {
            a_tx.send(()).unwrap();
            b_rx.lock().unwrap().recv_timeout(Duration::from_secs(10))?;
            Ok(log("b"))
        })
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap();
    assert_eq!(
        out.state.log,
        ["a", "b"],
        "still applied in node-name order"
    );
}

#[test]
fn retry_runs_a_failing_node_again_with_backoff() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "flaky",
            Node::new(move |_: &Flow| -> Result<FlowUpdate, BoxError> {
                if counted.fetch_add(1, Ordering::SeqCst) < 2 {
                    return Err("rate limit".into());
                }
                Ok(log("ok"))
            })
            .retry(RetryPolicy::new(3).initial_interval(Duration::from_millis(20))),
        )
        .add_edge(START, "flaky")
        .compile()
        .unwrap();
    let start = Instant::now();
    let out = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap();
    assert_eq!(out.state.log, ["ok"]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(
        start.elapsed() >= Duration::from_millis(60),
        "20 ms, then 40 ms"
    );
}

#[test]
fn retry_stops_on_errors_the_policy_does_not_name_and_after_its_attempts() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "broken",
            Node::new(move |_: Arc<Flow>| {
                let counted = Arc::clone(&counted);
                async move {
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    let message = if n == 0 { "rate limit" } else { "bad request" };
                    Err::<FlowUpdate, BoxError>(message.into())
                }
            })
            .retry(
                RetryPolicy::new(5)
                    .initial_interval(Duration::from_millis(1))
                    .retry_on(|e: &BoxError| e.to_string().contains("rate limit")),
            ),
        )
        .add_edge(START, "broken")
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap_err();
    assert!(matches!(&err, GraphError::Node { node, .. } if node == "broken"));
    assert_eq!(
        err.to_string(),
        "node `broken` failed in step 1: bad request"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_node_over_its_timeout_fails_with_node_timeout() {
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "slow",
            Node::new(|_: Arc<Flow>| async {
                flow::WaitFor(Arc::new(std::sync::atomic::AtomicBool::new(false))).await;
                log("never")
            })
            .timeout(Duration::from_millis(30)),
        )
        .add_edge(START, "slow")
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap_err();
    let GraphError::Node { node, error, .. } = &err else {
        panic!("expected a node error, got {err}");
    };
    assert_eq!(node, "slow");
    let timeout = error.downcast_ref::<NodeTimeout>().expect("a NodeTimeout");
    assert_eq!(timeout.after, Duration::from_millis(30));
}

#[test]
fn interrupting_without_a_checkpointer_pauses_and_cannot_be_resumed() {
    // langgraph 1.2.22, compiled without a checkpointer, a node calling
    // `interrupt("q?")`: `invoke` returns `{'n': 1, '__interrupt__':
    // [Interrupt(value='q?', ..)]}`; `invoke(Command(resume=5))` raises
    // `RuntimeError: Cannot use Command(resume=...) without checkpointer`.
    // (This test once asserted an error at the interrupt.)
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "ask",
            |_: &Flow, ctx: &NodeContext| -> Result<FlowUpdate, BoxError> {
                let _: bool = ctx.interrupt("ok?")?;
                Ok(log("asked"))
            },
        )
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap();
    assert_eq!(out.next, ["ask"]);
    let asked: Vec<_> = out
        .interrupts
        .iter()
        .map(|i| (&*i.node, &i.value))
        .collect();
    assert_eq!(asked, [("ask", &serde_json::json!("ok?"))]);
    assert_eq!(out.to_json()["__interrupt__"][0]["value"], "ok?");
    let err = block_on(graph.run(Input::ResumeWith(graph::Resume::value(true)))).unwrap_err();
    assert!(matches!(err, GraphError::NoThread { .. }));
}

#[test]
fn sends_reach_only_nodes_that_take_them() {
    let send_node =
        || StateGraph::<Flow>::new().add_node("work", |Sent(n): Sent<u32>| log(&n.to_string()));
    let err = send_node().add_edge(START, "work").compile().err().unwrap();
    assert!(
        matches!(&err, GraphError::EdgeToSendNode { node, .. } if node == "work"),
        "{err}"
    );

    let graph = send_node()
        .add_node("plain", |_: &Flow| log("plain"))
        .add_conditional_edges(START, |_: &Flow| {
            graph::Next::from(graph::Send::new("plain", 1u32))
        })
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap_err();
    assert!(
        matches!(&err, GraphError::SendToStateNode { node, .. } if node == "plain"),
        "{err}"
    );

    let graph = send_node()
        .add_conditional_edges(START, |_: &Flow| {
            graph::Next::from(graph::Send::new("work", "text"))
        })
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::Update(FlowUpdate::new()))).unwrap_err();
    assert!(
        err.to_string()
            .contains("node `work` takes `u32`, but a Send to it carried `&str`"),
        "{err}"
    );
}

#[test]
fn bad_joins_breakpoints_and_policies_do_not_compile() {
    let base = || {
        StateGraph::<Flow>::new()
            .add_node("a", |_: &Flow| log("a"))
            .add_node("s", |_: &Flow| log("s"))
            .add_edge(START, "a")
    };
    let err = base().add_edge(["a", "nope"], "s").compile().err().unwrap();
    assert!(matches!(err, GraphError::UnknownSource { .. }), "{err}");
    let err = base().add_edge([START, "a"], "s").compile().err().unwrap();
    assert!(matches!(err, GraphError::BadJoin { .. }), "{err}");
    let err = base().interrupt_before(["zz"]).compile().err().unwrap();
    assert_eq!(
        err.to_string(),
        "`interrupt_before` names `zz`, which is not a node; the graph's nodes: `a`, `s`"
    );
    let sync_with_timeout = Node::new(|_: &Flow| log("t")).timeout(Duration::from_secs(1));
    let err = base()
        .add_node("t", sync_with_timeout)
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&err, GraphError::TimeoutOnSyncNode { node } if node == "t"),
        "{err}"
    );
}

/// Breakpoints given to one run (LangGraph's `interrupt_before` /
/// `interrupt_after` passed to `invoke`): that run pauses there, the next
/// run of the graph does not, and a name that is no node fails the run
/// before it stores anything.
#[test]
fn breakpoints_given_to_one_run_pause_that_run_only() {
    let graph = StateGraph::<Flow>::new()
        .add_node("a", |_: &Flow| log("a"))
        .add_node("b", |_: &Flow| log("b"))
        .add_node("c", |_: &Flow| log("c"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let input = || Input::Update(FlowUpdate::new());
    let run = graph
        .run(input())
        .on_thread(&saver, "t")
        .interrupt_before(["b"]);
    let out = block_on(run).unwrap();
    assert_eq!(
        (out.state.log.clone(), out.next),
        (vec!["a".to_owned()], vec!["b".to_owned()])
    );
    let run = graph
        .run(Input::Resume)
        .on_thread(&saver, "t")
        .interrupt_after(["b"]);
    let out = block_on(run).unwrap();
    assert_eq!(
        (out.state.log.clone(), out.next),
        (vec!["a".into(), "b".into()], vec!["c".to_owned()])
    );
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(out.state.log, ["a", "b", "c"]);
    assert!(out.next.is_empty());
    let run = graph
        .run(input())
        .on_thread(&saver, "u")
        .interrupt_after(["a", "zz"]);
    let err = block_on(run).err().unwrap();
    assert_eq!(
        err.to_string(),
        "`interrupt_after` names `zz`, which is not a node; the graph's nodes: `a`, `b`, `c`"
    );
    let none = block_on(graph.get_state(&saver, "u")).unwrap();
    assert!(none.checkpoint.is_none(), "the refused run stored nothing");
    // Without a thread (the direct path of plain sync nodes) too.
    let out = block_on(graph.run(input()).interrupt_before(["c"])).unwrap();
    assert_eq!(out.state.log, ["a", "b"]);
}
