//! LangGraph's control flow on a checkpointed thread, written once and run
//! against the in-memory, SQLite and PostgreSQL checkpointers: interrupts,
//! pending writes, `Send`, joins, breakpoints, subgraphs, editing a thread
//! and cancellation.
//!
//! Each scenario gets two handles on one store (`a` and `b`, as two
//! processes would have) and a prefix for its thread ids.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use agent_state::checkpoint::{Checkpointer, Source, Thread};
use agent_state::graph::{
    self, BoxError, CancelToken, Command, Graph, GraphError, Input, Next, NodeContext, Resume,
    Sent, StateGraph, END, START,
};
use agent_state::{ai, AgentState, Messages};
use serde_json::json;

type R = Result<(), GraphError>;

/// A state whose append-only log shows every node that ran, once each.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Flow {
    /// One entry per node run that was applied.
    #[reducer(append)]
    pub log: Vec<String>,
    /// A plain field a node or an edit sets.
    pub note: String,
    /// A conversation, for subgraphs that share it.
    #[reducer(messages)]
    pub messages: Messages,
}

fn log(entry: impl Into<String>) -> FlowUpdate {
    FlowUpdate::new().add_log(entry.into())
}

/// Counts calls, shared with a node.
#[derive(Clone, Default)]
pub struct Calls(Arc<AtomicUsize>);

impl Calls {
    pub fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// draft → review (asks for approval) → END.
fn approval(drafts: &Calls, reviews: &Calls) -> Graph<Flow> {
    let (drafts, reviews) = (drafts.clone(), reviews.clone());
    StateGraph::<Flow>::new()
        .add_node("draft", move |_: &Flow| {
            drafts.hit();
            log("draft")
        })
        .add_node(
            "review",
            move |s: &Flow, ctx: &NodeContext| -> Result<FlowUpdate, BoxError> {
                reviews.hit();
                let ok: bool = ctx.interrupt(json!({"question": "publish?", "log": s.log}))?;
                Ok(log(format!("review:{ok}")))
            },
        )
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .compile()
        .unwrap()
}

/// A node pauses; another handle (another process) reads the pause and
/// resumes it; the node runs again from its start and gets the value; the
/// node before it does not run again.
pub async fn interrupt_pauses_and_resumes_elsewhere<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let (drafts, reviews) = (Calls::default(), Calls::default());
    let graph = approval(&drafts, &reviews);
    let t = format!("{p}-t");
    let out = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(out.next, ["review"]);
    assert_eq!(out.interrupts.len(), 1);
    assert_eq!(out.interrupts[0].node, "review");
    assert_eq!(
        out.interrupts[0].value,
        json!({"question": "publish?", "log": ["draft"]})
    );
    assert_eq!(out.state.log, ["draft"]);

    let other = approval(&drafts, &reviews);
    let seen = other.get_state(b, &t).await?;
    assert_eq!(seen.next, ["review"]);
    assert_eq!(seen.interrupts, out.interrupts);
    let done = other
        .run(Input::ResumeWith(Resume::value(true)))
        .on_thread(b, &t)
        .await?;
    assert_eq!(done.state.log, ["draft", "review:true"]);
    assert!(done.next.is_empty() && done.interrupts.is_empty());
    assert_eq!(
        (drafts.get(), reviews.get()),
        (1, 2),
        "review re-ran from its start"
    );
    assert!(other.get_state(b, &t).await?.interrupts.is_empty());
    Ok(())
}

/// Every wrong way to resume is a clear error that leaves the pause as it
/// was.
pub async fn resume_errors_leave_the_pause<C: Checkpointer + ?Sized>(a: &C, b: &C, p: &str) -> R {
    let graph = approval(&Calls::default(), &Calls::default());
    let t = format!("{p}-t");
    let err = graph
        .run(Input::ResumeWith(Resume::value(true)))
        .on_thread(a, &t)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NotInterrupted { .. }), "{err}");
    let out = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    let id = out.interrupts[0].id.clone();

    let err = graph
        .run(Input::ResumeWith(Resume::value("yes")))
        .on_thread(b, &t)
        .await
        .unwrap_err();
    match &err {
        GraphError::ResumeType {
            id: got,
            node,
            expected,
            ..
        } => {
            assert_eq!((got, node.as_str(), *expected), (&id, "review", "bool"));
        }
        other => panic!("expected a resume type error, got {other}"),
    }
    let err = graph
        .run(Input::ResumeWith(Resume::new().answer("nope/9/0", true)))
        .on_thread(b, &t)
        .await
        .unwrap_err();
    match &err {
        GraphError::UnknownInterrupt { id: got, pending } => {
            assert_eq!(got, "nope/9/0");
            assert_eq!(pending, std::slice::from_ref(&id));
        }
        other => panic!("expected an unknown interrupt error, got {other}"),
    }
    let err = graph
        .run(Input::Update(log("more")))
        .on_thread(b, &t)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::Paused { pending, .. } if pending == std::slice::from_ref(&id)),
        "{err}"
    );
    let state = graph.get_state(b, &t).await?;
    assert_eq!(state.interrupts, out.interrupts, "still paused, unchanged");
    assert_eq!(state.values.log, ["draft"]);
    let done = graph
        .run(Input::ResumeWith(Resume::new().answer(&id, false)))
        .on_thread(b, &t)
        .await?;
    assert_eq!(done.state.log, ["draft", "review:false"]);
    Ok(())
}

/// Two interrupts in one node are answered in call order, each resume
/// running the node from its start.
pub async fn interrupts_in_one_node_match_by_order<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let calls = Calls::default();
    let counted = calls.clone();
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "form",
            move |_: &Flow, ctx: &NodeContext| -> Result<FlowUpdate, BoxError> {
                counted.hit();
                let name: String = ctx.interrupt("name?")?;
                let age: u32 = ctx.interrupt("age?")?;
                Ok(log(format!("{name}:{age}")))
            },
        )
        .add_edge(START, "form")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let first = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(first.interrupts[0].value, "name?");
    let second = graph
        .run(Input::ResumeWith(Resume::value("Ada")))
        .on_thread(b, &t)
        .await?;
    assert_eq!(second.interrupts[0].value, "age?");
    assert_ne!(second.interrupts[0].id, first.interrupts[0].id);
    let done = graph
        .run(Input::ResumeWith(
            Resume::new().answer(&second.interrupts[0].id, 36),
        ))
        .on_thread(a, &t)
        .await?;
    assert_eq!(done.state.log, ["Ada:36"]);
    assert_eq!(calls.get(), 3);
    Ok(())
}

/// Nodes of one step that pause each get an interrupt with its own id; a
/// node of that step that finished is kept, not run again, while the
/// others are answered one by one.
pub async fn parallel_interrupts_keep_finished_nodes<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let done_calls = Calls::default();
    let counted = done_calls.clone();
    let ask = |name: &'static str| {
        move |_: &Flow, ctx: &NodeContext| -> Result<FlowUpdate, BoxError> {
            let answer: String = ctx.interrupt(format!("{name}?"))?;
            Ok(log(format!("{name}:{answer}")))
        }
    };
    let graph = StateGraph::<Flow>::new()
        .add_node("a_done", move |_: &Flow| {
            counted.hit();
            log("a")
        })
        .add_node("b_ask", ask("b"))
        .add_node("c_ask", ask("c"))
        .add_edge(START, "a_done")
        .add_edge(START, "b_ask")
        .add_edge(START, "c_ask")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let out = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    let ids: Vec<String> = out.interrupts.iter().map(|i| i.id.clone()).collect();
    assert_eq!(
        out.interrupts
            .iter()
            .map(|i| i.node.as_str())
            .collect::<Vec<_>>(),
        ["b_ask", "c_ask"]
    );
    assert_ne!(ids[0], ids[1]);
    // LangGraph's `invoke`: the finished node's writes shown (kept as
    // pending writes, not stored as a step), only the paused nodes next.
    assert_eq!(out.state.log, ["a"]);
    assert_eq!(out.next, ["b_ask", "c_ask"]);
    let stored = graph
        .get_state_at(b, &t, out.checkpoint.unwrap().id)
        .await?;
    assert_eq!(stored.values.log, Vec::<String>::new(), "nothing stored");

    let err = graph
        .run(Input::ResumeWith(Resume::value("x")))
        .on_thread(b, &t)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::AmbiguousResume { pending } if pending == &ids),
        "{err}"
    );
    let half = graph
        .run(Input::ResumeWith(Resume::new().answer(&ids[0], "yes")))
        .on_thread(b, &t)
        .await?;
    assert_eq!(half.state.log, ["a", "b:yes"]);
    assert_eq!(half.next, ["c_ask"]);
    assert_eq!(half.interrupts.len(), 1);
    assert_eq!(
        half.interrupts[0].id, ids[1],
        "the unanswered one pauses again, same id"
    );
    let done = graph
        .run(Input::ResumeWith(Resume::new().answer(&ids[1], "no")))
        .on_thread(a, &t)
        .await?;
    assert_eq!(done.state.log, ["a", "b:yes", "c:no"], "node-name order");
    assert_eq!(done_calls.get(), 1, "the finished node never ran again");
    Ok(())
}

/// A future pending until `flag` is set, waking itself to be polled again.
pub struct WaitFor(pub Arc<AtomicBool>);

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

/// Yields once to the executor.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Waits until the store keeps the finished write of `task` for the
/// thread's head.
async fn until_kept<C: Checkpointer + ?Sized>(saver: &C, thread: &str, task: &str) {
    loop {
        if let Ok(Some(head)) = saver.head(thread).await {
            let pending = saver.pending(thread, head.meta.id).await.unwrap();
            if pending.iter().any(|w| w.task == task && w.key == "done") {
                return;
            }
        }
        YieldNow(false).await;
    }
}

fn fast_and_slow(fast: &Calls, release: &Arc<AtomicBool>) -> Graph<Flow> {
    let (fast, release) = (fast.clone(), Arc::clone(release));
    StateGraph::<Flow>::new()
        .add_node("fast", move |_: Arc<Flow>| {
            let fast = fast.clone();
            async move {
                fast.hit();
                log("fast")
            }
        })
        .add_node("slow", move |_: Arc<Flow>| {
            let release = Arc::clone(&release);
            async move {
                WaitFor(release).await;
                log("slow")
            }
        })
        .add_edge(START, "fast")
        .add_edge(START, "slow")
        .compile()
        .unwrap()
}

/// A run cancelled mid-step (its future dropped, or a token) leaves the
/// thread at its last saved step, with the step's finished task kept: the
/// resume runs only what had not finished.
pub async fn cancelling_mid_step_keeps_finished_tasks<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let fast = Calls::default();
    let release = Arc::new(AtomicBool::new(false));
    let graph = fast_and_slow(&fast, &release);
    // Dropped: the run loses the race with the watcher.
    let t = format!("{p}-drop");
    {
        let run = graph
            .run(Input::Update(log("in")))
            .on_thread(a, &t)
            .into_future();
        let watch = Box::pin(until_kept(a, &t, "fast"));
        match futures::future::select(run, watch).await {
            futures::future::Either::Left((out, _)) => {
                panic!("the run ended: {:?}", out.map(|o| o.state))
            }
            futures::future::Either::Right(((), run)) => drop(run),
        }
    }
    // As LangGraph's `get_state` shows it: the finished task's writes
    // applied (kept as pending writes, not stored as a step), only the
    // unfinished task next; the checkpoint itself holds the state before.
    let state = graph.get_state(b, &t).await?;
    assert_eq!(state.values.log, ["in", "fast"]);
    assert_eq!(state.next, ["slow"]);
    let head = state.checkpoint.unwrap().id;
    let stored = graph.get_state_at(b, &t, head).await?;
    assert_eq!(stored.values.log, ["in"], "nothing half-written");
    assert_eq!(stored.next, ["fast", "slow"]);
    release.store(true, Ordering::SeqCst);
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(out.state.log, ["in", "fast", "slow"]);
    assert_eq!(fast.get(), 1, "the finished task was kept");

    // A token: the run returns `Cancelled`.
    release.store(false, Ordering::SeqCst);
    let t = format!("{p}-token");
    let token = CancelToken::new();
    let cancel = token.clone();
    let run = graph
        .run(Input::Update(log("in")))
        .on_thread(a, &t)
        .cancel_on(token)
        .into_future();
    let watch = async {
        until_kept(a, &t, "fast").await;
        cancel.cancel();
    };
    let (out, ()) = futures::future::join(run, watch).await;
    assert!(matches!(out, Err(GraphError::Cancelled)));
    release.store(true, Ordering::SeqCst);
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(out.state.log, ["in", "fast", "slow"]);
    assert_eq!(fast.get(), 2, "once per thread");
    Ok(())
}

use std::future::IntoFuture;

/// Map-reduce: a router fans out one `Send` per item to a node taking its
/// own input type; the tasks' writes apply after the step's other nodes',
/// in `Send` order; a stopped run rebuilds the `Send`s on resume.
pub async fn send_fans_out_and_resumes<C: Checkpointer + ?Sized>(a: &C, b: &C, p: &str) -> R {
    let graph = StateGraph::<Flow>::new()
        .add_node("plan", |_: &Flow| log("plan"))
        .add_node("audit", |_: &Flow| log("audit"))
        .add_node("grade", |Sent(n): Sent<u32>, ctx: &NodeContext| {
            log(format!("{}={}", ctx.task(), n * 10))
        })
        .add_node("sum", |s: &Flow| {
            FlowUpdate::new().note(format!("{} entries", s.log.len()))
        })
        .add_edge(START, "plan")
        .add_edge("plan", "audit")
        .add_conditional_edges("plan", |_: &Flow| {
            Next::send([3u32, 1, 2].map(|n| graph::Send::new("grade", n)))
        })
        .add_edge("grade", "sum")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let stopped = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .stop_after(2)
        .await?;
    assert_eq!(stopped.next, ["audit", "grade", "grade", "grade"]);
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(
        out.state.log,
        ["plan", "audit", "grade[0]=30", "grade[1]=10", "grade[2]=20"]
    );
    assert_eq!(out.state.note, "5 entries", "sum ran once");
    Ok(())
}

/// A node's `Command` sends too; its `Send`s are stored with its write, so
/// a resume from another handle rebuilds them without calling the node.
pub async fn command_sends_are_stored<C: Checkpointer + ?Sized>(a: &C, b: &C, p: &str) -> R {
    let splits = Calls::default();
    let counted = splits.clone();
    let graph = StateGraph::<Flow>::new()
        .add_node("split", move |_: &Flow| {
            counted.hit();
            Command::update(log("split"))
                .and_send(graph::Send::new("work", "x".to_owned()))
                .and_send(graph::Send::new("work", "y".to_owned()))
        })
        .add_node("work", |Sent(item): Sent<String>| {
            log(format!("work {item}"))
        })
        .add_edge(START, "split")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .stop_after(2)
        .await?;
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(out.state.log, ["split", "work x", "work y"]);
    assert_eq!(splits.get(), 1);
    Ok(())
}

/// `add_edge(["a", "b2"], "c")`: `c` runs once, after both finished in
/// different steps, and the join's progress survives a stop and a resume
/// from another handle.
pub async fn joins_wait_across_steps_and_resumes<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let c_calls = Calls::default();
    let counted = c_calls.clone();
    let graph = StateGraph::<Flow>::new()
        .add_node("a", |_: &Flow| log("a"))
        .add_node("b1", |_: &Flow| log("b1"))
        .add_node("b2", |_: &Flow| log("b2"))
        .add_node("c", move |_: &Flow| {
            counted.hit();
            log("c")
        })
        .add_edge(START, "a")
        .add_edge(START, "b1")
        .add_edge("b1", "b2")
        .add_edge(["a", "b2"], "c")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let stopped = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .stop_after(2)
        .await?;
    assert_eq!(stopped.state.log, ["a", "b1"]);
    assert_eq!(stopped.next, ["b2"], "c waits for b2");
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(out.state.log, ["a", "b1", "b2", "c"]);
    assert_eq!(c_calls.get(), 1);
    assert!(out.next.is_empty());
    Ok(())
}

/// Static breakpoints pause before and after named nodes; resuming passes
/// them.
pub async fn breakpoints_pause_and_resume<C: Checkpointer + ?Sized>(a: &C, b: &C, p: &str) -> R {
    let graph = StateGraph::<Flow>::new()
        .add_node("a", |_: &Flow| log("a"))
        .add_node("b", |_: &Flow| log("b"))
        .add_node("c", |_: &Flow| log("c"))
        .add_node("d", |_: &Flow| log("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", "d")
        .interrupt_before(["b"])
        .interrupt_after(["c"])
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let out = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(
        (out.state.log.clone(), out.next.clone()),
        (vec!["a".to_owned()], vec!["b".to_owned()])
    );
    assert!(out.interrupts.is_empty());
    let out = graph.run(Input::Resume).on_thread(b, &t).await?;
    assert_eq!(out.state.log, ["a", "b", "c"]);
    assert_eq!(out.next, ["d"]);
    // A value at a breakpoint goes to the first interrupt the next step
    // raises (none here), as LangGraph's `Command(resume=..)`: the run
    // goes on. Once finished, a value has nothing to go to.
    let resumed = graph.run(Input::ResumeWith(Resume::value(1)));
    let out = resumed.on_thread(a, &t).await?;
    assert_eq!(out.state.log, ["a", "b", "c", "d"]);
    assert!(out.next.is_empty());
    let err = graph
        .run(Input::ResumeWith(Resume::value(1)))
        .on_thread(b, &t)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NotInterrupted { .. }), "{err}");
    Ok(())
}

/// Input to a thread stopped midway is applied and the run carries on
/// where it stopped: the first node does not run again. Input to a
/// finished thread starts from `START`.
pub async fn input_to_a_stopped_thread_carries_on<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let firsts = Calls::default();
    let counted = firsts.clone();
    let graph = StateGraph::<Flow>::new()
        .add_node("first", move |_: &Flow| {
            counted.hit();
            log("first")
        })
        .add_node("second", |s: &Flow| log(format!("second saw {}", s.note)))
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .stop_after(2)
        .await?;
    let out = graph
        .run(Input::Update(FlowUpdate::new().note("hi".to_owned())))
        .on_thread(b, &t)
        .await?;
    assert_eq!(out.state.log, ["first", "second saw hi"]);
    assert_eq!(firsts.get(), 1, "not restarted from START");
    let again = graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(
        again.state.log,
        ["first", "second saw hi", "first", "second saw hi"]
    );
    Ok(())
}

/// `get_state`, `update_state(as_node)` routing as that node, its errors,
/// the history, and time travel from an older checkpoint as a fork.
pub async fn editing_a_thread<C: Checkpointer + ?Sized>(a: &C, b: &C, p: &str) -> R {
    let graph = StateGraph::<Flow>::new()
        .add_node("ask", |_: &Flow| log("ask"))
        .add_node("answer", |s: &Flow| log(format!("answer {}", s.note)))
        .add_edge(START, "ask")
        .add_conditional_edges(
            "ask",
            |s: &Flow| if s.note == "skip" { END } else { "answer" },
        )
        .interrupt_before(["answer"])
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    graph
        .run(Input::Update(FlowUpdate::new()))
        .on_thread(a, &t)
        .await?;
    let paused = graph.get_state(b, &t).await?;
    assert_eq!(paused.next, ["answer"]);
    let paused_at = paused.checkpoint.clone().unwrap().id;

    let err = graph
        .update_state(b, &t, FlowUpdate::new(), Some("nope"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::UnknownAsNode { name, .. } if name == "nope"),
        "{err}"
    );
    let err = graph
        .update_state(b, &t, log("x").add_log("y".to_owned()), None)
        .await;
    assert!(err.is_ok(), "the last step has one node: `ask`");
    let meta = graph
        .update_state(
            b,
            &t,
            FlowUpdate::new().note("skip".to_owned()),
            Some("ask"),
        )
        .await?;
    assert_eq!(meta.source, Source::Update);
    let edited = graph.get_state(a, &t).await?;
    assert_eq!(edited.values.note, "skip");
    assert!(edited.next.is_empty(), "routed as `ask`: to END");

    let history = graph.state_history(a, &t, 10).await?;
    assert_eq!(history[0].checkpoint.as_ref().unwrap().id, meta.id);
    assert!(history
        .iter()
        .any(|h| h.checkpoint.as_ref().unwrap().id == paused_at));
    // Time travel: from the paused checkpoint, the answer runs on its state.
    let out = graph
        .run(Input::Resume)
        .on_thread(b, &t)
        .from_checkpoint(paused_at)
        .await?;
    assert_eq!(out.state.log, ["ask", "answer "]);
    let newest = graph.state_history(a, &t, 3).await?;
    assert!(newest
        .iter()
        .any(|h| h.checkpoint.as_ref().unwrap().source == Source::Fork));
    Ok(())
}

/// A step saved under a name the graph does not have is an error on
/// resume, not a silent end; so is an edit as an unknown node.
pub async fn unknown_writers_are_errors<C: Checkpointer + ?Sized>(a: &C, _b: &C, p: &str) -> R {
    let graph = approval(&Calls::default(), &Calls::default());
    let t = format!("{p}-t");
    let mut thread = Thread::<Flow, C>::open(a, &t).await?;
    thread
        .save_step(Source::Loop, [("ghost", log("boo"))])
        .await?;
    let err = graph.run(Input::Resume).on_thread(a, &t).await.unwrap_err();
    match &err {
        GraphError::UnknownWriter { node, .. } => assert_eq!(node, "ghost"),
        other => panic!("expected an unknown writer error, got {other}"),
    }
    let err = graph.update_state(a, &t, log("x"), None).await.unwrap_err();
    assert!(matches!(err, GraphError::UnknownAsNode { .. }), "{err}");
    Ok(())
}

/// The child of a subgraph: its state is the parent's part.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Review {
    /// The review's notes.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// The verdict.
    pub verdict: String,
}

/// A parent whose state flattens the child's.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Desk {
    #[state(flatten)]
    pub review: Review,
    #[reducer(append)]
    pub log: Vec<String>,
}

fn review_graph() -> Graph<Review> {
    StateGraph::<Review>::new()
        .add_node("read", |_: &Review| {
            ReviewUpdate::new().notes(["read".to_owned()])
        })
        .add_node(
            "decide",
            |s: &Review, ctx: &NodeContext| -> Result<ReviewUpdate, BoxError> {
                let verdict: String = ctx.interrupt(json!({"notes": s.notes}))?;
                Ok(ReviewUpdate::new()
                    .notes(["decided".to_owned()])
                    .verdict(verdict))
            },
        )
        .add_edge(START, "read")
        .add_edge("read", "decide")
        .compile()
        .unwrap()
}

/// A subgraph on the parent's part: its steps are checkpointed under the
/// parent's thread; its interrupt pauses the parent with a namespaced id;
/// resuming the parent (from another handle) resumes the child; its writes
/// reach the part through the part's reducers.
pub async fn subgraph_pauses_under_a_namespace<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let parent = |child: Graph<Review>| {
        StateGraph::<Desk>::new()
            .add_node("intake", |_: &Desk| {
                DeskUpdate::new().add_log("intake".to_owned())
            })
            .add_node("review", child)
            .add_node("publish", |s: &Desk| {
                DeskUpdate::new().add_log(format!("publish {}", s.review.verdict))
            })
            .add_edge(START, "intake")
            .add_edge("intake", "review")
            .add_edge("review", "publish")
            .compile()
            .unwrap()
    };
    let graph = parent(review_graph());
    let t = format!("{p}-t");
    let out = graph
        .run(Input::Update(DeskUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(out.next, ["review"]);
    let interrupt = &out.interrupts[0];
    assert_eq!(interrupt.node, "decide");
    assert_eq!(interrupt.value, json!({"notes": ["read"]}));
    assert!(
        interrupt.id.starts_with("review/2|decide/"),
        "{}",
        interrupt.id
    );
    let child = format!("{t}|review/2");
    assert!(
        a.head(&child).await.unwrap().is_some(),
        "the child's thread"
    );
    assert!(
        out.state.review.notes.is_empty(),
        "nothing of the child applied yet"
    );

    let again = parent(review_graph());
    let done = again
        .run(Input::ResumeWith(
            Resume::new().answer(&interrupt.id, "approved"),
        ))
        .on_thread(b, &t)
        .await?;
    assert_eq!(done.state.review.notes, ["read", "decided"]);
    assert_eq!(done.state.review.verdict, "approved");
    assert_eq!(done.state.log, ["intake", "publish approved"]);
    Ok(())
}

/// A subgraph mapped by two functions, here sharing a conversation.
pub async fn mapped_subgraph_runs_under_a_namespace<C: Checkpointer + ?Sized>(
    a: &C,
    _b: &C,
    p: &str,
) -> R {
    let child = StateGraph::<Review>::new()
        .add_node("read", |_: &Review| {
            ReviewUpdate::new()
                .notes(["read".to_owned()])
                .verdict("ok".to_owned())
        })
        .add_edge(START, "read")
        .compile()
        .unwrap();
    let graph = StateGraph::<Flow>::new()
        .add_node(
            "check",
            child.mapped(
                |s: &Flow| Review {
                    notes: s.log.clone(),
                    verdict: String::new(),
                },
                |r: &Review| {
                    FlowUpdate::new()
                        .note(r.verdict.clone())
                        .message(ai(r.notes.join(",")))
                },
            ),
        )
        .add_edge(START, "check")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let out = graph.run(Input::Update(log("in"))).on_thread(a, &t).await?;
    assert_eq!(out.state.note, "ok");
    assert_eq!(out.state.messages[0].text(), "in,read");
    assert!(a.head(&format!("{t}|check/1")).await.unwrap().is_some());
    Ok(())
}

/// A state with an `untracked` field: a live handle, never stored.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Live {
    #[reducer(append)]
    pub seen: Vec<String>,
    #[reducer(untracked)]
    pub client: Option<String>,
}

/// An `untracked` field is seen within the run, is in no stored write or
/// snapshot, and reads as its default from the store.
pub async fn untracked_fields_are_never_stored<C: Checkpointer + ?Sized>(
    a: &C,
    b: &C,
    p: &str,
) -> R {
    let graph = StateGraph::<Live>::new()
        .add_node("connect", |_: &Live| {
            LiveUpdate::new().client("live handle".to_owned())
        })
        .add_node("use", |s: &Live| {
            LiveUpdate::new().seen(vec![format!("{:?}", s.client.is_some())])
        })
        .add_edge(START, "connect")
        .add_edge("connect", "use")
        .compile()
        .unwrap();
    let t = format!("{p}-t");
    let out = graph
        .run(Input::Update(LiveUpdate::new()))
        .on_thread(a, &t)
        .await?;
    assert_eq!(out.state.seen, ["true"]);
    assert_eq!(out.state.client.as_deref(), Some("live handle"));
    let stored = graph.get_state(b, &t).await?;
    assert_eq!(
        (stored.values.seen.clone(), stored.values.client.clone()),
        (out.state.seen.clone(), None)
    );
    let thread = Thread::<Live, C>::open(b, &t).await?;
    for record in thread.history(None, 10).await? {
        assert!(record.writes.iter().all(|w| w.update.client.is_none()));
    }
    let start = Live {
        seen: Vec::new(),
        client: Some("live handle".into()),
    };
    let created = Thread::create(a, format!("{p}-created"), start).await?;
    assert!(created.state().client.is_some());
    let reopened = Thread::<Live, C>::open(b, &format!("{p}-created")).await?;
    assert_eq!(reopened.state().client, None, "not in the snapshot");
    Ok(())
}
