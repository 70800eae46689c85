//! The graph runtime: edges, routing, supersteps, commands, middleware,
//! errors, and runs on a checkpointed thread that stop and resume.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use agent_state::checkpoint::{block_on, MemoryCheckpointer, Source};
use agent_state::graph::{
    BoxError, Command, Graph, GraphError, Input, Middleware, StateGraph, END, START,
};
use agent_state::{ai, human, tool, ErrorKind, Messages};
use support::{Debate, DebateUpdate};

fn transcript(state: &Debate) -> Vec<String> {
    state.messages.iter().map(|m| m.text()).collect()
}

/// The debate workflow: optimist, skeptic (bumps the round), moderator (ends
/// the debate after `rounds`).
fn debate_graph(rounds: u32) -> Graph<Debate> {
    StateGraph::<Debate>::new()
        .add_node("optimist", |s: &Debate| {
            DebateUpdate::new().message(ai(format!("optimist {}", s.round)))
        })
        .add_node("skeptic", |s: &Debate| {
            DebateUpdate::new()
                .message(ai(format!("skeptic {}", s.round)))
                .round(s.round + 1)
        })
        .add_node("moderator", move |s: &Debate| {
            let update = DebateUpdate::new().message(ai(format!("moderator {}", s.round)));
            if s.round >= rounds {
                update.status("completed".to_owned())
            } else {
                update
            }
        })
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges("moderator", |s: &Debate| {
            if s.status == "completed" {
                END
            } else {
                "optimist"
            }
        })
        .compile()
        .unwrap()
}

fn topic(t: &str) -> Debate {
    Debate {
        topic: t.into(),
        ..Debate::default()
    }
}

#[test]
fn debate_runs_to_end_and_streams_each_step() {
    let graph = debate_graph(2);
    let mut events = Vec::new();
    let out = block_on(
        graph
            .run(Input::Update(
                DebateUpdate::new().message(human("topic: AI")),
            ))
            .on_step(|e| {
                let nodes: Vec<String> = e.writes.iter().map(|w| w.node.clone()).collect();
                events.push((
                    e.step,
                    e.source,
                    nodes,
                    e.next.to_vec(),
                    e.state.messages.len(),
                ));
            }),
    )
    .unwrap();
    assert_eq!(
        transcript(&out.state),
        [
            "topic: AI",
            "optimist 0",
            "skeptic 0",
            "moderator 1",
            "optimist 1",
            "skeptic 1",
            "moderator 2"
        ]
    );
    assert_eq!(out.state.status, "completed");
    assert!(out.next.is_empty());
    assert_eq!(out.steps, 7);
    // As LangGraph numbers them: the input's checkpoint (-1, the state
    // before it), the input applied (0), then a step per superstep.
    assert_eq!(events.len(), 8);
    assert_eq!(
        events[0],
        (-1, Source::Input, vec![], vec![START.to_owned()], 0)
    );
    assert_eq!(
        events[1],
        (
            0,
            Source::Loop,
            vec![START.to_owned()],
            vec!["optimist".to_owned()],
            1
        )
    );
    assert_eq!(
        events[4],
        (
            3,
            Source::Loop,
            vec!["moderator".to_owned()],
            vec!["optimist".to_owned()],
            4
        )
    );
    assert_eq!(events[7].3, Vec::<String>::new());
}

#[test]
fn fan_out_applies_as_one_step_in_node_name_order() {
    // `b_writer` is added first, but writes apply in node-name order.
    let graph = StateGraph::<Debate>::new()
        .add_node("b_writer", |_: &Debate| {
            DebateUpdate::new().message(ai("from b")).add_log(2)
        })
        .add_node("a_writer", |_: &Debate| {
            DebateUpdate::new().message(ai("from a")).add_log(1)
        })
        .add_node("join", |s: &Debate| {
            DebateUpdate::new().round(s.messages.len() as u32)
        })
        .add_edge(START, "b_writer")
        .add_edge(START, "a_writer")
        .add_edge("a_writer", "join")
        .add_edge("b_writer", "join")
        .add_edge("join", END)
        .compile()
        .unwrap();
    let mut steps = Vec::new();
    let out = block_on(
        graph
            .run(Input::State(topic("fan")))
            .on_step(|e| steps.push(e.writes.iter().map(|w| w.node.clone()).collect::<Vec<_>>())),
    )
    .unwrap();
    assert_eq!(transcript(&out.state), ["from a", "from b"]);
    assert_eq!(out.state.log, [1, 2]);
    assert_eq!(out.state.round, 2, "`join` ran once, after both");
    assert_eq!(
        steps,
        [
            vec![],
            vec![],
            vec!["a_writer".to_owned(), "b_writer".to_owned()],
            vec!["join".to_owned()]
        ]
    );
}

#[test]
fn two_parallel_writes_to_a_plain_field_fail_the_step_whole() {
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| {
            DebateUpdate::new().round(1).message(ai("a"))
        })
        .add_node("b", |_: &Debate| DebateUpdate::new().round(2))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let err = block_on(
        graph
            .run(Input::State(topic("clash")))
            .on_thread(&saver, "clash"),
    )
    .unwrap_err();
    match &err {
        GraphError::InvalidUpdate { step, nodes, error } => {
            assert_eq!(step, &1);
            assert_eq!(nodes, &["a", "b"]);
            assert_eq!(error.field(), "round");
            assert!(matches!(
                error.kind(),
                ErrorKind::ConcurrentWrites { writes: 2 }
            ));
        }
        other => panic!("expected an invalid update, got {other}"),
    }
    // Nothing of the step was stored: the thread is at its input.
    let thread = block_on(agent_state::checkpoint::Thread::<Debate, _>::open(
        &saver, "clash",
    ))
    .unwrap();
    assert!(thread.state().messages.is_empty());
    assert_eq!(thread.head().unwrap().step, 0);
}

/// The deep agent's `mark_business_idea_complete`: a tool returning a `Command`
/// with a tool message and a state change, routed by `goto`.
#[test]
fn commands_update_and_route() {
    let graph = StateGraph::<Debate>::new()
        .add_node("agent", |s: &Debate| {
            if s.status == "done" {
                Command::update(DebateUpdate::new().message(ai("all set"))).and_goto(END)
            } else {
                Command::goto("mark_complete")
            }
        })
        .add_node("mark_complete", |_: &Debate| {
            Command::update(
                DebateUpdate::new()
                    .message(tool("Marked the business idea complete.", "call-1"))
                    .status("done".to_owned()),
            )
            .and_goto("agent")
        })
        .add_edge(START, "agent")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::State(topic("idea")))).unwrap();
    assert_eq!(
        transcript(&out.state),
        ["Marked the business idea complete.", "all set"]
    );
    assert_eq!(out.state.status, "done");
    assert_eq!(out.steps, 4);
}

#[test]
fn routing_to_a_missing_node_names_both() {
    let graph = StateGraph::<Debate>::new()
        .add_node("a", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &Debate| "nowhere")
        .compile()
        .unwrap();
    let err = block_on(graph.run(Input::State(topic("x")))).unwrap_err();
    assert!(
        matches!(&err, GraphError::UnknownTarget { from, target, .. } if from == "a" && target == "nowhere"),
        "{err}"
    );
}

/// Every error naming a node the graph lacks suggests the nearest node
/// ("did you mean `review`?", by edit distance) and lists the graph's
/// nodes, in one wording: a router's and a `Command`'s target, a `Send`'s,
/// `update_state`'s `as_node`, a breakpoint, an edge's ends at compile.
#[test]
fn unknown_node_errors_suggest_the_nearest_and_list_the_nodes() {
    let says = |err: &GraphError, name: &str| {
        let text = err.to_string();
        let expected = "; did you mean `review`? The graph's nodes: `draft`, `review`";
        assert!(
            text.contains(&format!("`{name}`, which is not a node")),
            "{text}"
        );
        assert!(text.ends_with(expected), "{text}");
    };
    let graph = |route: &'static str| {
        StateGraph::<Debate>::new()
            .add_node("draft", move |_: &Debate| {
                Command::update(DebateUpdate::new()).and_goto(route)
            })
            .add_node("review", |_: &Debate| DebateUpdate::new())
            .add_edge(START, "draft")
    };
    let err = block_on(
        graph("reveiw")
            .compile()
            .unwrap()
            .run(Input::State(topic("x"))),
    )
    .unwrap_err();
    assert!(
        matches!(&err, GraphError::UnknownTarget { nodes, .. } if nodes == &["draft", "review"])
    );
    says(&err, "reveiw");
    let routed = StateGraph::<Debate>::new()
        .add_node("draft", |_: &Debate| DebateUpdate::new())
        .add_node("review", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "draft")
        .add_conditional_edges("draft", |_: &Debate| "Review")
        .compile()
        .unwrap();
    let err = block_on(routed.run(Input::State(topic("x")))).unwrap_err();
    assert!(err.to_string().contains("routed to `Review`"), "{err}");
    says(&err, "Review");
    let err = graph("review")
        .interrupt_before(["reviews"])
        .compile()
        .err()
        .unwrap();
    says(&err, "reviews");
    let err = graph("review")
        .interrupt_after(["reviw"])
        .compile()
        .err()
        .unwrap();
    says(&err, "reviw");
    let err = graph("review")
        .add_edge("draft", "reivew")
        .compile()
        .err()
        .unwrap();
    says(&err, "reivew");
    let err = graph("review")
        .add_conditional_edges("reveiw", |_: &Debate| END)
        .compile()
        .err()
        .unwrap();
    says(&err, "reveiw");
    let saver = MemoryCheckpointer::new();
    let edit = graph("review").compile().unwrap();
    let err =
        block_on(edit.update_state(&saver, "t", DebateUpdate::new(), Some("revew"))).unwrap_err();
    says(&err, "revew");
    // A name near no node gets the list alone.
    let err =
        block_on(edit.update_state(&saver, "t", DebateUpdate::new(), Some("publish"))).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "`publish`, which is not a node of this graph; the graph's nodes: `draft`, `review`"
        ),
        "{err}"
    );
}

/// `Input::Resume` needs a thread that was written: on a new thread it is
/// an error naming the thread, not the default state returned as success
/// (LangGraph: `EmptyInputError`), and it stores nothing; without a thread
/// it is `NoThread`.
#[test]
fn resuming_a_thread_never_written_is_an_error_naming_it() {
    let graph = support::counting(3);
    let saver = MemoryCheckpointer::new();
    let err = block_on(graph.run(Input::Resume).on_thread(&saver, "fresh")).unwrap_err();
    assert!(
        matches!(&err, GraphError::NothingToResume { thread_id } if thread_id == "fresh"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("thread `fresh` has never been written"),
        "{err}"
    );
    assert!(
        block_on(agent_state::checkpoint::Checkpointer::head(&saver, "fresh"))
            .unwrap()
            .is_none()
    );
    let err = block_on(graph.run(Input::Resume)).unwrap_err();
    assert!(matches!(err, GraphError::NoThread { .. }), "{err}");
    // Once written, it resumes.
    block_on(
        graph
            .run(Input::Update(DebateUpdate::new()))
            .on_thread(&saver, "fresh")
            .stop_after(1),
    )
    .unwrap();
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "fresh")).unwrap();
    assert_eq!(out.state.round, 3);
}

#[test]
fn recursion_limit_stops_a_loop_with_a_clear_error() {
    let graph = StateGraph::<Debate>::new()
        .add_node("again", |s: &Debate| DebateUpdate::new().round(s.round + 1))
        .add_edge(START, "again")
        .add_edge("again", "again")
        .with_recursion_limit(5)
        .compile()
        .unwrap();
    let mut rounds = Vec::new();
    let run = graph.run(Input::State(topic("loop")));
    let err = block_on(run.on_step(|e| rounds.push(e.state.round))).unwrap_err();
    match &err {
        GraphError::RecursionLimit { limit, next } => {
            assert_eq!(*limit, 5);
            assert_eq!(next, &["again"]);
        }
        other => panic!("expected the recursion limit, got {other}"),
    }
    assert!(err.to_string().contains("with_recursion_limit"), "{err}");
    // As LangGraph's `recursion_limit=5`: five node steps after the input.
    assert_eq!(rounds, [0, 0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_runs_own_recursion_limit_takes_the_graphs_place() {
    let graph = StateGraph::<Debate>::new()
        .add_node("again", |s: &Debate| DebateUpdate::new().round(s.round + 1))
        .add_edge(START, "again")
        .add_edge("again", "again")
        .with_recursion_limit(50)
        .compile()
        .unwrap();
    let mut rounds = Vec::new();
    let run = graph.run(Input::State(topic("loop"))).recursion_limit(3);
    let err = block_on(run.on_step(|e| rounds.push(e.state.round))).unwrap_err();
    assert!(
        matches!(&err, GraphError::RecursionLimit { limit: 3, .. }),
        "{err}"
    );
    assert_eq!(rounds, [0, 0, 1, 2, 3]);
    // On a thread too.
    let saver = MemoryCheckpointer::new();
    let run = graph.run(Input::State(topic("loop"))).recursion_limit(2);
    let err = block_on(run.on_thread(&saver, "t")).unwrap_err();
    assert!(matches!(&err, GraphError::RecursionLimit { limit: 2, .. }));
}

#[test]
fn bad_graphs_do_not_compile() {
    let node = |_: &Debate| DebateUpdate::new();
    let dup = StateGraph::<Debate>::new()
        .add_node("a", node)
        .add_node("a", node)
        .add_edge(START, "a")
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&dup, GraphError::DuplicateNode { name } if name == "a"),
        "{dup}"
    );

    let unknown = StateGraph::<Debate>::new()
        .add_node("a", node)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&unknown, GraphError::UnknownNode { name, from, .. } if name == "b" && from == "a"),
        "{unknown}"
    );

    let unknown_source = StateGraph::<Debate>::new()
        .add_node("a", node)
        .add_edge(START, "a")
        .add_conditional_edges("nope", |_: &Debate| END)
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&unknown_source, GraphError::UnknownSource { name, .. } if name == "nope"),
        "{unknown_source}"
    );
    assert!(
        unknown_source.to_string().contains("`nope`"),
        "{unknown_source}"
    );

    let no_entry = StateGraph::<Debate>::new()
        .add_node("a", node)
        .compile()
        .err()
        .unwrap();
    assert!(matches!(no_entry, GraphError::NoEntry));

    let reserved = StateGraph::<Debate>::new()
        .add_node(END, node)
        .add_edge(START, END)
        .compile()
        .err()
        .unwrap();
    assert!(matches!(reserved, GraphError::ReservedName { .. }));

    let twice = StateGraph::<Debate>::new()
        .add_node("a", node)
        .add_edge(START, "a")
        .add_middleware(Tag("m"))
        .add_middleware(Tag("m"))
        .compile()
        .err()
        .unwrap();
    assert!(
        matches!(&twice, GraphError::DuplicateMiddleware { name } if name == "m"),
        "{twice}"
    );
}

/// A middleware that logs its name before and after the agent, and sees
/// what the middleware before it wrote.
struct Tag(&'static str);

impl Middleware<Debate> for Tag {
    fn name(&self) -> &str {
        self.0
    }

    fn before_agent(&self, state: &Debate) -> Result<Option<DebateUpdate>, BoxError> {
        let before: Vec<String> = transcript(state);
        Ok(Some(DebateUpdate::new().message(ai(format!(
            "{} before (saw {})",
            self.0,
            before.join("|")
        )))))
    }

    fn after_agent(&self, state: &Debate) -> Result<Option<DebateUpdate>, BoxError> {
        if state.status != "completed" {
            return Err("after_agent ran before the agent finished".into());
        }
        Ok(Some(
            DebateUpdate::new().message(ai(format!("{} after", self.0))),
        ))
    }
}

#[test]
fn middleware_hooks_run_once_before_in_order_after_in_reverse() {
    let graph = StateGraph::<Debate>::new()
        .add_node("agent", |_: &Debate| {
            DebateUpdate::new()
                .message(ai("agent"))
                .status("completed".to_owned())
        })
        .add_edge(START, "agent")
        .add_edge("agent", END)
        .add_middleware(Tag("first"))
        .add_middleware(Tag("second"))
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(DebateUpdate::new().message(human("hi"))))).unwrap();
    assert_eq!(
        transcript(&out.state),
        [
            "hi",
            "first before (saw hi)",
            "second before (saw hi|first before (saw hi))",
            "agent",
            // `after_*` hooks run last to first, as in LangChain v1.
            "second after",
            "first after"
        ]
    );
    assert_eq!(out.steps, 6);
}

#[test]
fn a_failing_node_names_itself_and_applies_nothing_of_its_step() {
    let graph = StateGraph::<Debate>::new()
        .add_node("ok", |_: &Debate| DebateUpdate::new().message(ai("ok")))
        .add_node("model", |_: &Debate| -> Result<DebateUpdate, BoxError> {
            Err("the model timed out".into())
        })
        .add_edge(START, "ok")
        .add_edge(START, "model")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let err = block_on(
        graph
            .run(Input::State(topic("fail")))
            .on_thread(&saver, "f"),
    )
    .unwrap_err();
    match &err {
        GraphError::Node { node, step, error } => {
            assert_eq!(node, "model");
            assert_eq!(step, &1);
            assert_eq!(error.to_string(), "the model timed out");
        }
        other => panic!("expected a node error, got {other}"),
    }
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "f"));
    assert!(
        matches!(out, Err(GraphError::Node { .. })),
        "the resumed step fails again"
    );
}

/// A future that is pending until `flag` is set, waking itself to be
/// polled again: it finishes only if something else runs meanwhile.
struct WaitFor(Arc<AtomicBool>);

impl Future for WaitFor {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn async_nodes_of_one_step_run_together() {
    let flag = Arc::new(AtomicBool::new(false));
    let (waiter, setter) = (Arc::clone(&flag), Arc::clone(&flag));
    let graph = StateGraph::<Debate>::new()
        // `a_waits` sorts first, so it is polled first; it can only finish
        // if `b_sets` runs while it waits.
        .add_node("a_waits", move |_s: Arc<Debate>| {
            let flag = Arc::clone(&waiter);
            async move {
                WaitFor(flag).await;
                DebateUpdate::new().message(ai("a"))
            }
        })
        .add_node("b_sets", move |s: Arc<Debate>| {
            let flag = Arc::clone(&setter);
            async move {
                flag.store(true, Ordering::SeqCst);
                DebateUpdate::new().message(ai(format!("b saw {}", s.topic)))
            }
        })
        .add_edge(START, "a_waits")
        .add_edge(START, "b_sets")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::State(topic("async")))).unwrap();
    assert_eq!(transcript(&out.state), ["a", "b saw async"]);
}

#[test]
fn a_stopped_run_resumes_from_its_last_step_without_reapplying() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Debate>::new()
        .add_node("count", move |s: &Debate| {
            counted.fetch_add(1, Ordering::SeqCst);
            DebateUpdate::new()
                .add_log(s.log.len() as u64)
                .round(s.round + 1)
        })
        .add_edge(START, "count")
        .add_conditional_edges(
            "count",
            |s: &Debate| if s.round < 10 { "count" } else { END },
        )
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let first = block_on(
        graph
            .run(Input::State(topic("resume")))
            .on_thread(&saver, "r")
            .stop_after(4),
    )
    .unwrap();
    assert_eq!(first.state.round, 3);
    assert_eq!(first.next, ["count"]);

    let second = block_on(graph.run(Input::Resume).on_thread(&saver, "r")).unwrap();
    assert_eq!(second.state.round, 10);
    assert_eq!(
        second.state.log,
        (0..10).collect::<Vec<u64>>(),
        "each step once"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 10, "no node ran twice");
    assert!(second.next.is_empty());

    // A finished thread resumes to itself; a whole new state is refused.
    let third = block_on(graph.run(Input::Resume).on_thread(&saver, "r")).unwrap();
    assert_eq!(third.state, second.state);
    assert_eq!(third.steps, 0);
    let err = block_on(
        graph
            .run(Input::State(topic("again")))
            .on_thread(&saver, "r"),
    )
    .unwrap_err();
    assert!(matches!(err, GraphError::ThreadExists { .. }), "{err}");

    // An update continues the thread from START.
    let fourth = block_on(
        graph
            .run(Input::Update(DebateUpdate::new().round(8)))
            .on_thread(&saver, "r"),
    )
    .unwrap();
    assert_eq!(fourth.state.round, 10);
    assert_eq!(fourth.state.log.len(), 12);
}

/// A run cut short by a failure mid-way (as a crash would): what was saved
/// stays, and the resumed run carries on from there.
#[cfg(feature = "sqlite")]
#[test]
fn a_crashed_run_resumes_where_it_stopped() {
    let fail_once = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&fail_once);
    let graph = StateGraph::<Debate>::new()
        .add_node("optimist", |s: &Debate| {
            DebateUpdate::new().message(ai(format!("o{}", s.round)))
        })
        .add_node(
            "skeptic",
            move |s: &Debate| -> Result<DebateUpdate, BoxError> {
                if s.round == 1 && flag.swap(false, Ordering::SeqCst) {
                    return Err("process died".into());
                }
                Ok(DebateUpdate::new()
                    .message(ai(format!("s{}", s.round)))
                    .round(s.round + 1))
            },
        )
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_conditional_edges(
            "skeptic",
            |s: &Debate| if s.round < 3 { "optimist" } else { END },
        )
        .compile()
        .unwrap();
    let path = support::temp_db("graph-crash");
    let saver = agent_state::checkpoint::sqlite::SqliteCheckpointer::open(&path).unwrap();
    assert!(block_on(
        graph
            .run(Input::State(topic("crash")))
            .on_thread(&saver, "c")
    )
    .is_err());
    drop(saver);
    let saver = agent_state::checkpoint::sqlite::SqliteCheckpointer::open(&path).unwrap();
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "c")).unwrap();
    assert_eq!(transcript(&out.state), ["o0", "s0", "o1", "s1", "o2", "s2"]);
    assert_eq!(out.steps, 3, "only the steps not saved before: s1, o2, s2");
}

/// A fork continues a thread from an older step: the graph resumes from
/// what that step would have run next.
#[test]
fn resuming_a_fork_continues_from_its_step() {
    let graph = debate_graph(2);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        graph
            .run(Input::State(topic("fork")))
            .on_thread(&saver, "k"),
    )
    .unwrap();
    assert_eq!(out.state.messages.len(), 6);
    let thread = block_on(agent_state::checkpoint::Thread::<Debate, _>::open(
        &saver, "k",
    ))
    .unwrap();
    let history = block_on(thread.history(None, 100)).unwrap();
    // The step where the first optimist spoke.
    let first_optimist = history.iter().find(|r| r.meta.step == 1).unwrap().meta.id;
    block_on(agent_state::checkpoint::Thread::<Debate, _>::fork(
        &saver,
        "k",
        first_optimist,
    ))
    .unwrap();
    let again = block_on(graph.run(Input::Resume).on_thread(&saver, "k")).unwrap();
    assert_eq!(transcript(&again.state), transcript(&out.state));
    assert_eq!(again.steps, 5);
}

#[test]
fn messages_keep_ids_given_by_nodes() {
    let graph = StateGraph::<Debate>::new()
        .add_node("n", |_: &Debate| {
            DebateUpdate::new().message(ai("x").with_id("fixed"))
        })
        .add_edge(START, "n")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::State(topic("ids")))).unwrap();
    assert_eq!(out.state.messages[0].id.as_deref(), Some("fixed"));
    let _: &Messages = &out.state.messages;
}

/// A `Command` routing to a node that does not exist fails its step before
/// the step is stored (or applied): the thread stays at the step before,
/// and once the node is fixed a resume carries on from there.
#[test]
fn a_command_to_a_missing_node_stores_nothing() {
    let build = |target: &'static str| {
        StateGraph::<Debate>::new()
            .add_node("agent", move |_: &Debate| {
                Command::update(DebateUpdate::new().add_log(7)).and_goto(target)
            })
            .add_node("done", |_: &Debate| {
                DebateUpdate::new().status("completed".to_owned())
            })
            .add_edge(START, "agent")
            .compile()
            .unwrap()
    };
    let saver = MemoryCheckpointer::new();
    let err = block_on(
        build("nowhere")
            .run(Input::Update(DebateUpdate::new().round(1)))
            .on_thread(&saver, "cmd"),
    )
    .unwrap_err();
    assert!(
        matches!(&err, GraphError::UnknownTarget { from, target, .. } if from == "agent" && target == "nowhere"),
        "{err}"
    );
    let thread = block_on(agent_state::checkpoint::Thread::<Debate, _>::open(
        &saver, "cmd",
    ))
    .unwrap();
    assert_eq!(thread.state().round, 1, "the input step is stored");
    assert!(thread.state().log.is_empty(), "the agent's step is not");
    // The input's two checkpoints, as LangGraph stores it.
    assert_eq!(block_on(thread.history(None, 10)).unwrap().len(), 2);

    // Without a thread, nothing is applied either.
    let err = block_on(build("nowhere").run(Input::Update(DebateUpdate::new()))).unwrap_err();
    assert!(matches!(err, GraphError::UnknownTarget { .. }), "{err}");

    // Fixed, the thread resumes from its input step.
    let out = block_on(build("done").run(Input::Resume).on_thread(&saver, "cmd")).unwrap();
    assert_eq!(out.state.log, [7]);
    assert_eq!(out.state.status, "completed");
}

/// A node's update that a checkpoint cannot store faithfully (here a tool
/// message without its call id) fails the step, naming the field; nothing
/// is stored, and the run can be resumed.
#[test]
fn an_unstorable_update_fails_the_step_naming_the_field() {
    let graph = StateGraph::<Debate>::new()
        .add_node("tools", |_: &Debate| {
            let mut msg = tool("42", "call-1");
            msg.tool_call_id = None;
            DebateUpdate::new().message(msg)
        })
        .add_edge(START, "tools")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let err = block_on(
        graph
            .run(Input::Update(DebateUpdate::new().round(1)))
            .on_thread(&saver, "bad"),
    )
    .unwrap_err();
    match &err {
        GraphError::InvalidUpdate { step, nodes, error } => {
            assert_eq!(
                (*step, nodes.as_slice()),
                (1, ["tools".to_owned()].as_slice())
            );
            assert_eq!(error.field(), "messages");
            assert!(error.to_string().contains("tool_call_id"), "{error}");
        }
        other => panic!("expected an invalid update, got {other}"),
    }
    let thread = block_on(agent_state::checkpoint::Thread::<Debate, _>::open(
        &saver, "bad",
    ))
    .unwrap();
    assert_eq!(
        block_on(thread.history(None, 10)).unwrap().len(),
        2,
        "only the input's two checkpoints"
    );

    // A whole input state that cannot be stored is refused the same way.
    use support::everything::Everything;
    let graph = StateGraph::<Everything>::new()
        .add_node("n", |_: &Everything| {
            support::everything::EverythingUpdate::new()
        })
        .add_edge(START, "n")
        .compile()
        .unwrap();
    let state = Everything {
        score: f64::INFINITY,
        ..Everything::default()
    };
    let err = block_on(
        graph
            .run(Input::State(state))
            .on_thread(&saver, "bad-state"),
    )
    .unwrap_err();
    assert!(
        matches!(&err, GraphError::InvalidUpdate { step: 0, error, .. } if error.field() == "score"),
        "{err}"
    );
    use agent_state::checkpoint::Checkpointer;
    // Checked before the input's checkpoint is stored: nothing is.
    assert!(block_on(saver.head("bad-state")).unwrap().is_none());

    // An input update that cannot be stored: the same, on a new thread and
    // on one that has steps (its head stays where it was).
    let mut bad = tool("42", "call-1");
    bad.tool_call_id = None;
    let input = || Input::Update(DebateUpdate::new().message(bad.clone()));
    let err = block_on(debate_graph(1).run(input()).on_thread(&saver, "bad-input")).unwrap_err();
    assert!(
        matches!(&err, GraphError::InvalidUpdate { step: 0, nodes, .. } if nodes == &[START]),
        "{err}"
    );
    assert!(block_on(saver.head("bad-input")).unwrap().is_none());
    let first = Input::Update(DebateUpdate::new().message(human("topic")));
    block_on(debate_graph(1).run(first).on_thread(&saver, "bad-input")).unwrap();
    let head = block_on(saver.head("bad-input")).unwrap().unwrap().meta;
    let err = block_on(debate_graph(1).run(input()).on_thread(&saver, "bad-input")).unwrap_err();
    let step = head.step + 2;
    assert!(
        matches!(&err, GraphError::InvalidUpdate { step: s, .. } if *s == step),
        "{err}"
    );
    let after = block_on(saver.head("bad-input")).unwrap().unwrap().meta;
    assert_eq!(after, head);
}

/// A plain run (nothing kept, nothing watching) runs its steps of one plain
/// node without the step machinery; mixed with commands, a fan-out, a
/// breakpoint and a failing node, it must end, stop and fail exactly as the
/// same run on a thread does.
#[test]
fn plain_runs_match_runs_on_a_thread_step_for_step() {
    let graph = |fail_at: u32| {
        StateGraph::<Debate>::new()
            .add_node("count", support::count)
            .add_node("jump", move |s: &Debate| -> Result<_, BoxError> {
                if s.round == fail_at {
                    return Err(format!("failed at round {}", s.round).into());
                }
                Ok(Command::update(DebateUpdate::new().message(ai("jump"))).and_goto("count"))
            })
            .add_node("left", |_: &Debate| DebateUpdate::new().add_log(100))
            .add_node("right", |_: &Debate| DebateUpdate::new().add_log(200))
            .add_node("idle", |_: &Debate| DebateUpdate::new())
            .add_edge(START, "count")
            .add_conditional_edges("count", |s: &Debate| match s.round {
                r if r >= 9 => "idle",
                r if r % 3 == 0 => "jump",
                _ => "count",
            })
            .add_edge("idle", "left")
            .add_edge("idle", "right")
            .compile()
            .unwrap()
    };
    let saver = MemoryCheckpointer::new();
    let graph_ok = graph(u32::MAX);
    let plain = block_on(graph_ok.run(Input::State(topic("p")))).unwrap();
    let saved = block_on(
        graph_ok
            .run(Input::State(topic("p")))
            .on_thread(&saver, "ok"),
    )
    .unwrap();
    // Message ids are drawn at random: the rest must be equal.
    assert_eq!(transcript(&plain.state), transcript(&saved.state));
    assert_eq!(
        (&plain.state.log, plain.state.round, plain.steps),
        (&saved.state.log, saved.state.round, saved.steps)
    );
    assert_eq!(plain.state.round, 9);
    assert_eq!(transcript(&plain.state), ["jump", "jump"]);
    assert_eq!(&plain.state.log[8..], [8, 100, 200]);

    let graph_fail = graph(6);
    let plain = block_on(graph_fail.run(Input::State(topic("f")))).unwrap_err();
    let saved = block_on(
        graph_fail
            .run(Input::State(topic("f")))
            .on_thread(&saver, "fail"),
    )
    .unwrap_err();
    let (
        GraphError::Node { node, step, .. },
        GraphError::Node {
            step: on_thread, ..
        },
    ) = (&plain, &saved)
    else {
        panic!("expected node errors, got {plain} and {saved}");
    };
    assert_eq!((node.as_str(), *step), ("jump", *on_thread));
    assert_eq!(*step, 8);

    let stopped = block_on(graph_ok.run(Input::State(topic("s"))).stop_after(4)).unwrap();
    assert_eq!((stopped.state.round, stopped.steps), (3, 4));
    assert_eq!(stopped.next, ["jump"]);
    let limited = StateGraph::<Debate>::new()
        .add_node("count", |s: &Debate| DebateUpdate::new().round(s.round + 1))
        .add_node("halt", |_: &Debate| DebateUpdate::new())
        .add_edge(START, "count")
        .add_conditional_edges(
            "count",
            |s: &Debate| if s.round == 2 { "halt" } else { "count" },
        )
        .add_edge("halt", END)
        .interrupt_before(["halt"])
        .compile()
        .unwrap();
    let out = block_on(limited.run(Input::State(topic("b")))).unwrap();
    assert_eq!(
        (out.state.round, out.next.as_slice()),
        (2, &["halt".to_owned()][..])
    );
}

/// The recursion limit stops a plain run and a run on a thread after as
/// many node steps.
#[test]
fn plain_runs_and_runs_on_a_thread_stop_at_the_same_recursion_limit() {
    let saver = MemoryCheckpointer::new();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&calls);
    let looping = StateGraph::<Debate>::new()
        .add_node("count", move |s: &Debate| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            support::count(s)
        })
        .add_edge(START, "count")
        .add_edge("count", "count")
        .with_recursion_limit(4)
        .compile()
        .unwrap();
    let plain = block_on(looping.run(Input::State(topic("l")))).unwrap_err();
    let plain_calls = calls.swap(0, std::sync::atomic::Ordering::SeqCst);
    let saved = block_on(
        looping
            .run(Input::State(topic("l")))
            .on_thread(&saver, "limit"),
    );
    assert_eq!(plain.to_string(), saved.unwrap_err().to_string());
    assert_eq!(
        (plain_calls, calls.load(std::sync::atomic::Ordering::SeqCst)),
        (4, 4)
    );
}

/// A plain run takes a router's repeated answer to the node it led to last
/// time without looking it up again; a new answer is still checked (an
/// undeclared or unknown target fails the run as on a thread), and owned
/// names and END route as before.
#[test]
fn a_plain_runs_router_checks_each_new_answer() {
    let graph = |last: &'static str| {
        StateGraph::<Debate>::new()
            .add_node("count", |s: &Debate| DebateUpdate::new().round(s.round + 1))
            .add_node("other", |_: &Debate| DebateUpdate::new())
            .add_edge(START, "count")
            .add_conditional_edges_to(
                "count",
                move |s: &Debate| if s.round < 4 { "count" } else { last },
                ["count", END],
            )
            .compile()
            .unwrap()
    };
    let saver = MemoryCheckpointer::new();
    for (n, last) in ["other", "nowhere"].into_iter().enumerate() {
        let g = graph(last);
        let plain = block_on(g.run(Input::State(topic("r")))).unwrap_err();
        let saved = block_on(
            g.run(Input::State(topic("r")))
                .on_thread(&saver, format!("r{n}").as_str()),
        )
        .unwrap_err();
        assert_eq!(plain.to_string(), saved.to_string());
        assert!(
            matches!(&plain, GraphError::UndeclaredTarget { target, .. } if target == last),
            "{plain}"
        );
    }
    let g = graph(END);
    let out = block_on(g.run(Input::State(topic("e")))).unwrap();
    let saved = block_on(g.run(Input::State(topic("e"))).on_thread(&saver, "e")).unwrap();
    assert_eq!((out.state.round, out.steps), (4, saved.steps));

    let owned = StateGraph::<Debate>::new()
        .add_node("count", |s: &Debate| DebateUpdate::new().round(s.round + 1))
        .add_edge(START, "count")
        .add_conditional_edges("count", |s: &Debate| {
            if s.round < 5 {
                "count".to_owned()
            } else {
                END.to_owned()
            }
        })
        .compile()
        .unwrap();
    let out = block_on(owned.run(Input::State(topic("o")))).unwrap();
    let saved = block_on(owned.run(Input::State(topic("o"))).on_thread(&saver, "o")).unwrap();
    assert_eq!((out.state.round, out.steps), (5, saved.steps));
}

/// `Durability::Exit` against a real SQLite file: one checkpoint when the
/// run ends (completion, a pause at an interrupt, a node's failure), read
/// back by a new handle as the state the run returned; a crash before the
/// end (a panicking node) loses the run's steps.
#[cfg(feature = "sqlite")]
mod exit_durability {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    use agent_state::checkpoint::{block_on, Source, Thread};
    use agent_state::graph::{
        BoxError, Durability, GraphError, Input, Resume, StateGraph, END, START,
    };

    use super::support::{asking, history, temp_db, Debate, DebateUpdate};
    use super::{debate_graph, topic, transcript};

    #[test]
    fn a_finished_run_stores_one_checkpoint_a_new_handle_reads() {
        let path = temp_db("exit-done");
        let graph = debate_graph(3);
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let out = block_on(
            graph
                .run(Input::State(topic("exit")))
                .on_thread(&saver, "t")
                .durability(Durability::Exit),
        )
        .unwrap();
        let sync = block_on(
            graph
                .run(Input::State(topic("exit")))
                .on_thread(&saver, "s"),
        )
        .unwrap();
        assert_eq!(transcript(&out.state), transcript(&sync.state));
        assert_eq!(out.steps, sync.steps);
        let head = out.checkpoint.clone().unwrap();
        assert_eq!(head.step, sync.checkpoint.as_ref().unwrap().step);
        assert_eq!(
            history(&saver, "t"),
            [(-1, Source::Input), (0, Source::Loop), (9, Source::Loop)]
        );
        assert_eq!(history(&saver, "s").len(), 11);
        drop(saver);

        let saver = SqliteCheckpointer::open(&path).unwrap();
        let thread = block_on(Thread::<Debate, _>::open(&saver, "t")).unwrap();
        assert_eq!(thread.state(), &out.state);
        assert_eq!(thread.head(), Some(&head));
        // Finished: a resume has nothing to run.
        let again = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
        assert!(again.next.is_empty());
        assert_eq!(again.state, out.state);
    }

    #[test]
    fn a_paused_run_stores_its_state_and_interrupt_then_resumes_from_a_new_handle() {
        let path = temp_db("exit-pause");
        let graph = asking(3);
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let out = block_on(
            graph
                .run(Input::State(topic("ask")))
                .on_thread(&saver, "t")
                .durability(Durability::Exit),
        )
        .unwrap();
        assert_eq!(out.next, ["ask"]);
        assert_eq!(out.interrupts.len(), 1);
        assert_eq!(out.state.log, [0, 1, 2]);
        // The three counting steps as one checkpoint, stored before the
        // step that paused (it may leave pending writes).
        assert_eq!(
            history(&saver, "t"),
            [(-1, Source::Input), (0, Source::Loop), (3, Source::Loop)]
        );
        drop(saver);

        let saver = SqliteCheckpointer::open(&path).unwrap();
        let done = block_on(
            graph
                .run(Input::ResumeWith(Resume::value("yes".to_owned())))
                .on_thread(&saver, "t")
                .durability(Durability::Exit),
        )
        .unwrap();
        assert!(done.next.is_empty());
        assert_eq!(transcript(&done.state), ["yes"]);
        assert_eq!(done.state.log, [0, 1, 2]);
        assert_eq!(
            history(&saver, "t"),
            [
                (-1, Source::Input),
                (0, Source::Loop),
                (3, Source::Loop),
                (4, Source::Loop)
            ]
        );
    }

    /// Counts to 5; `count` fails at round `fail_at` and panics at round
    /// `panic_at` (`u32::MAX`: never). Given per graph, not in a static,
    /// so tests running at once do not change each other's graphs.
    pub(super) fn failing_graph(fail_at: u32, panic_at: u32) -> agent_state::graph::Graph<Debate> {
        StateGraph::<Debate>::new()
            .add_node(
                "count",
                move |s: &Debate| -> Result<DebateUpdate, BoxError> {
                    if s.round == fail_at {
                        return Err(format!("failed at round {}", s.round).into());
                    }
                    if s.round == panic_at {
                        panic!("the process dies here");
                    }
                    Ok(DebateUpdate::new()
                        .round(s.round + 1)
                        .add_log(s.round.into()))
                },
            )
            .add_edge(START, "count")
            .add_conditional_edges(
                "count",
                |s: &Debate| if s.round < 5 { "count" } else { END },
            )
            .compile()
            .unwrap()
    }

    #[test]
    fn a_failed_run_stores_the_steps_before_the_failure_and_a_crash_loses_them() {
        let path = temp_db("exit-fail");
        let graph = failing_graph(3, u32::MAX);
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let err = block_on(
            graph
                .run(Input::State(topic("fail")))
                .on_thread(&saver, "t")
                .durability(Durability::Exit),
        )
        .unwrap_err();
        assert!(
            matches!(&err, GraphError::Node { node, step: 4, .. } if node == "count"),
            "{err}"
        );
        assert_eq!(
            history(&saver, "t"),
            [(-1, Source::Input), (0, Source::Loop), (3, Source::Loop)]
        );
        let stored = block_on(Thread::<Debate, _>::open(&saver, "t")).unwrap();
        assert_eq!(
            (stored.state().round, &stored.state().log[..]),
            (3, &[0, 1, 2][..])
        );

        // Fixed, the run resumes from there and ends as a run that never
        // failed.
        let fixed = failing_graph(u32::MAX, u32::MAX);
        let done = block_on(
            fixed
                .run(Input::Resume)
                .on_thread(&saver, "t")
                .durability(Durability::Exit),
        )
        .unwrap();
        assert_eq!(done.state.log, [0, 1, 2, 3, 4]);

        // A panic unwinds through the run as a crash would end the process:
        // nothing of the run is stored.
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let dying = failing_graph(u32::MAX, 3);
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = block_on(
                dying
                    .run(Input::State(topic("crash")))
                    .on_thread(&saver, "c")
                    .durability(Durability::Exit),
            );
        }));
        assert!(crashed.is_err());
        assert_eq!(
            history(&saver, "c"),
            [(-1, Source::Input), (0, Source::Loop)]
        );
        let t = block_on(Thread::<Debate, _>::open(&saver, "c")).unwrap();
        assert_eq!(t.state().round, 0);
    }
}

/// `Durability::Async` against a real SQLite file, behind a wrapper whose
/// `append` is pending once before it stores (as a networked store's round
/// trip is), so each step's store is still under way when the next step
/// runs: a run that returns, pauses or fails has stored every step it
/// applied, exactly as under `Sync`.
#[cfg(feature = "sqlite")]
mod async_durability {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    use agent_state::checkpoint::{block_on, Thread};
    use agent_state::graph::{Durability, GraphError, Input, Resume};

    use super::exit_durability::failing_graph;
    use super::support::faulty::Faulty;
    use super::support::{asking, history, temp_db, Debate};
    use super::{debate_graph, topic, transcript};

    /// SQLite whose `append` is pending once before it stores.
    fn deferred(path: &std::path::Path) -> Faulty<SqliteCheckpointer> {
        Faulty::new(SqliteCheckpointer::open(path).unwrap()).deferred()
    }

    #[test]
    fn a_finished_run_has_stored_every_step() {
        let path = temp_db("async-done");
        let graph = debate_graph(3);
        let saver = deferred(&path);
        let out = block_on(
            graph
                .run(Input::State(topic("async")))
                .on_thread(&saver, "t")
                .durability(Durability::Async),
        )
        .unwrap();
        // The thread's first state (its input checkpoint, then the state
        // applied), then nine node steps, each stored in the background.
        assert_eq!(saver.deferred_appends(), 11);
        let sync = block_on(
            graph
                .run(Input::State(topic("async")))
                .on_thread(&saver, "s"),
        )
        .unwrap();
        assert_eq!(transcript(&out.state), transcript(&sync.state));
        assert_eq!(history(&saver.inner, "t"), history(&saver.inner, "s"));
        assert_eq!(history(&saver.inner, "t").len(), 11);
        drop(saver);
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let thread = block_on(Thread::<Debate, _>::open(&saver, "t")).unwrap();
        assert_eq!(thread.state(), &out.state);
        assert_eq!(thread.head(), out.checkpoint.as_ref());
    }

    #[test]
    fn a_paused_or_failed_run_has_stored_every_step_before() {
        let path = temp_db("async-pause");
        let graph = asking(3);
        let saver = deferred(&path);
        let out = block_on(
            graph
                .run(Input::State(topic("ask")))
                .on_thread(&saver, "t")
                .durability(Durability::Async),
        )
        .unwrap();
        assert_eq!(
            (out.next.as_slice(), out.interrupts.len()),
            (&["ask".to_owned()][..], 1)
        );
        assert_eq!(history(&saver.inner, "t").len(), 5);
        let done = block_on(
            graph
                .run(Input::ResumeWith(Resume::value("yes".to_owned())))
                .on_thread(&saver, "t")
                .durability(Durability::Async),
        )
        .unwrap();
        assert_eq!(transcript(&done.state), ["yes"]);

        let graph = failing_graph(3, u32::MAX);
        let err = block_on(
            graph
                .run(Input::State(topic("fail")))
                .on_thread(&saver, "f")
                .durability(Durability::Async),
        )
        .unwrap_err();
        assert!(matches!(err, GraphError::Node { step: 4, .. }), "{err}");
        let steps: Vec<i64> = history(&saver.inner, "f").iter().map(|s| s.0).collect();
        assert_eq!(steps, [-1, 0, 1, 2, 3]);
    }
}
