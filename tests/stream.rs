//! Streaming a run: LangGraph's stream modes, several at once, the agent's
//! tokens, custom writes, backpressure, and dropping the stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agent_state::agent::{create_agent, input, ChatModel, ModelError, ModelRequest, ScriptedModel};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer, Source};
use agent_state::futures::future::BoxFuture;
use agent_state::futures::stream::{self, BoxStream, StreamExt};
use agent_state::graph::{
    BoxError, Graph, GraphError, Input, NodeContext, Resume, StateGraph, StreamEvent, StreamMode,
    StreamModes, TaskOutcome, END, START,
};
use agent_state::{ai, AgentState, Message, MessageChunk, Messages};
use serde_json::json;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
    #[reducer(append)]
    log: Vec<String>,
}

fn counter(limit: u32) -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .add_conditional_edges(
            "inc",
            move |s: &Count| if s.n < limit { "inc" } else { END },
        )
        .compile()
        .unwrap()
}

fn collect<S: agent_state::graph::GraphState>(
    stream: agent_state::graph::RunStream<'_, S>,
) -> Vec<Result<StreamEvent<S>, GraphError>> {
    block_on(stream.collect::<Vec<_>>())
}

#[test]
fn values_and_updates_come_in_step_order_and_end_last() {
    let graph = counter(2);
    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .stream([StreamMode::Values, StreamMode::Updates]),
    );
    let names: Vec<String> = events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            StreamEvent::Values { step, state, .. } => format!("values {step} n={}", state.n),
            StreamEvent::Updates { step, writes, .. } => {
                format!("updates {step} {}", writes[0].node)
            }
            StreamEvent::End(out) => format!("end {}", out.state.n),
            other => panic!("not asked for: {}", other.name()),
        })
        .collect();
    assert_eq!(
        names,
        [
            "values 0 n=0",
            "updates 1 inc",
            "values 1 n=1",
            "updates 2 inc",
            "values 2 n=2",
            "end 2"
        ]
    );
    // Their JSON is LangGraph's.
    let StreamEvent::Updates { .. } = events[1].as_ref().unwrap() else {
        panic!()
    };
    assert_eq!(
        events[1].as_ref().unwrap().to_json(),
        json!({"inc": {"n": 1}})
    );
    assert_eq!(
        events[2].as_ref().unwrap().to_json(),
        json!({"n": 1, "log": []})
    );
}

#[test]
fn no_mode_yields_only_the_end_and_the_step_callback_still_runs() {
    let graph = counter(3);
    let mut steps = Vec::new();
    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .on_step(|e| steps.push(e.step))
            .stream(StreamModes::none()),
    );
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], Ok(StreamEvent::End(out)) if out.state.n == 3));
    assert_eq!(steps, [-1, 0, 1, 2, 3]);
}

#[test]
fn checkpoints_name_each_stored_step() {
    let graph = counter(2);
    let saver = MemoryCheckpointer::new();
    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, "t")
            .stream(StreamMode::Checkpoints),
    );
    let checkpoints: Vec<(i64, Source, Vec<String>)> = events
        .iter()
        .filter_map(|e| match e.as_ref().unwrap() {
            StreamEvent::Checkpoint {
                checkpoint, next, ..
            } => Some((checkpoint.step, checkpoint.source, next.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        checkpoints,
        [
            // As LangGraph streams them: the input's checkpoint (the
            // state before it, `__start__` next), then the input applied.
            (-1, Source::Input, vec!["__start__".to_owned()]),
            (0, Source::Loop, vec!["inc".to_owned()]),
            (1, Source::Loop, vec!["inc".to_owned()]),
            (2, Source::Loop, vec![]),
        ]
    );
    let head = block_on(saver.head("t")).unwrap().unwrap();
    assert!(
        matches!(events.last(), Some(Ok(StreamEvent::End(out))) if out.checkpoint.as_ref().unwrap().id == head.meta.id)
    );
}

#[test]
fn custom_writes_come_with_their_node_before_the_step_they_belong_to() {
    let graph = StateGraph::<Count>::new()
        .add_node("sync", |_: &Count, ctx: &NodeContext| {
            ctx.writer().write(json!({"at": "sync"})).unwrap();
            CountUpdate::new().n(1)
        })
        .add_node("later", |_: Arc<Count>, ctx: NodeContext| async move {
            ctx.writer().send("half way").await?;
            ctx.writer().send("done").await?;
            Ok::<_, BoxError>(CountUpdate::new().n(2))
        })
        .add_edge(START, "sync")
        .add_edge("sync", "later")
        .compile()
        .unwrap();
    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .stream([StreamMode::Custom, StreamMode::Updates]),
    );
    let seen: Vec<String> = events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            StreamEvent::Custom(c) => format!("{} {} {}", c.step, c.node, c.value),
            other => other.name().to_owned(),
        })
        .collect();
    assert_eq!(
        seen,
        [
            r#"1 sync {"at":"sync"}"#,
            "updates",
            r#"2 later "half way""#,
            r#"2 later "done""#,
            "updates",
            "end"
        ]
    );
    // Not streamed: the writer writes nowhere, and the run is the same.
    let out = block_on(graph.run(Input::Update(CountUpdate::new()))).unwrap();
    assert_eq!(out.state.n, 2);
}

#[test]
fn a_slow_consumer_holds_the_run_back() {
    let written = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&written);
    let graph = StateGraph::<Count>::new()
        .add_node("chatty", move |_: Arc<Count>, ctx: NodeContext| {
            let count = Arc::clone(&count);
            async move {
                for i in 0..1000 {
                    ctx.writer().send(i).await?;
                    count.fetch_add(1, Ordering::SeqCst);
                }
                Ok::<_, BoxError>(CountUpdate::new().n(1))
            }
        })
        .add_edge(START, "chatty")
        .compile()
        .unwrap();
    let mut stream = graph
        .run(Input::Update(CountUpdate::new()))
        .stream(StreamMode::Custom)
        .buffer(4);
    for taken in 1..=50 {
        let event = block_on(stream.next()).unwrap().unwrap();
        let StreamEvent::Custom(c) = event else {
            panic!("{}", event.name())
        };
        assert_eq!(c.value, json!(taken - 1));
        // The node runs at most a buffer's worth (and the event it is
        // about to send) ahead of what was taken.
        let ahead = written.load(Ordering::SeqCst) - taken;
        assert!(ahead <= 5, "{ahead} events ahead after {taken} taken");
    }
    drop(stream);
    assert!(
        written.load(Ordering::SeqCst) < 60,
        "dropping the stream stopped the node"
    );
}

/// The states of a `values` stream, as addresses, the events dropped as
/// read (`hold`: kept till the end).
fn state_addresses(memory: bool, hold: bool) -> Vec<usize> {
    let graph = counter(20);
    let memory_saver = MemoryCheckpointer::new();
    let saver: &dyn Checkpointer = &memory_saver;
    let run = graph.run(Input::Update(CountUpdate::new()));
    let run = if memory {
        run.on_thread(saver, "t")
    } else {
        run
    };
    let mut stream = run.stream(StreamMode::Values);
    let (mut addresses, mut held) = (Vec::new(), Vec::new());
    while let Some(event) = block_on(stream.next()) {
        if let StreamEvent::Values { state, .. } = event.unwrap() {
            addresses.push(Arc::as_ptr(&state) as usize);
            if hold {
                held.push(state);
            }
        }
    }
    assert_eq!(addresses.len(), 21);
    assert_eq!(
        held.iter().map(|s| s.n).collect::<Vec<_>>(),
        if hold { (0..=20).collect() } else { vec![] }
    );
    addresses
}

#[test]
fn a_consumer_that_drops_each_state_costs_the_run_no_copy() {
    // The run lets its consumer take a step's state before the next step
    // changes it: a state dropped as read is changed in place after it.
    for memory in [false, true] {
        let mut addresses = state_addresses(memory, false);
        addresses.dedup();
        assert_eq!(
            addresses.len(),
            1,
            "one state, never copied (on a thread: {memory})"
        );
        // States held by the consumer stay as they were: each step copies.
        let mut addresses = state_addresses(memory, true);
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), 21);
    }
}

#[test]
fn a_failed_run_streams_what_came_before_then_its_error() {
    let graph = StateGraph::<Count>::new()
        .add_node("ok", |_: &Count| CountUpdate::new().n(1))
        .add_node("boom", |_: &Count| -> Result<CountUpdate, BoxError> {
            Err("no".into())
        })
        .add_edge(START, "ok")
        .add_edge("ok", "boom")
        .compile()
        .unwrap();
    let mut stream = graph
        .run(Input::Update(CountUpdate::new()))
        .stream(StreamMode::Values);
    let mut values = 0;
    let error = loop {
        match block_on(stream.next()) {
            Some(Ok(StreamEvent::Values { .. })) => values += 1,
            Some(Ok(other)) => panic!("{}", other.name()),
            Some(Err(error)) => break error,
            None => panic!("the stream ended without the error"),
        }
    };
    assert_eq!(values, 2);
    assert!(
        matches!(error, GraphError::Node { ref node, .. } if node == "boom"),
        "{error}"
    );
    assert!(block_on(stream.next()).is_none());
}

/// Values, updates and pauses of a stream, one line each.
fn told(events: &[Result<StreamEvent<Count>, GraphError>]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            StreamEvent::Values {
                step,
                state,
                interrupts,
            } if !interrupts.is_empty() => {
                let asked: Vec<String> = interrupts.iter().map(|i| i.value.to_string()).collect();
                format!(
                    "values {step} n={} interrupt [{}]",
                    state.n,
                    asked.join(",")
                )
            }
            StreamEvent::Values { step, state, .. } => format!("values {step} n={}", state.n),
            StreamEvent::Updates { step, writes, .. } => {
                format!("updates {step} {}", writes[0].node)
            }
            StreamEvent::Interrupt { interrupts } => {
                let asked: Vec<String> = interrupts.iter().map(|i| i.value.to_string()).collect();
                format!("interrupt [{}]", asked.join(","))
            }
            other => other.name().to_owned(),
        })
        .collect()
}

#[test]
fn a_resumed_run_streams_the_state_it_resumes_from_first() {
    // langgraph 1.2.22: `stream(None, ..)` yields the thread's values
    // first; on a finished thread, only them.
    let graph = counter(3);
    let saver = MemoryCheckpointer::new();
    let first = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    block_on(first.stop_after(2)).unwrap();
    let modes = [StreamMode::Values, StreamMode::Updates];
    let resume = || {
        collect(
            graph
                .run(Input::Resume)
                .on_thread(&saver, "t")
                .stream(modes),
        )
    };
    assert_eq!(
        told(&resume()),
        [
            "values 1 n=1",
            "updates 2 inc",
            "values 2 n=2",
            "updates 3 inc",
            "values 3 n=3",
            "end"
        ]
    );
    assert_eq!(told(&resume()), ["values 3 n=3", "end"]);
    // Without a thread, or on one never written, there is nothing to
    // resume from: an error (LangGraph's `EmptyInputError`), nothing else.
    let events = collect(graph.run(Input::Resume).stream(modes));
    assert!(
        matches!(events.as_slice(), [Err(GraphError::NoThread { .. })]),
        "{events:?}"
    );
    let events = collect(
        graph
            .run(Input::Resume)
            .on_thread(&saver, "new")
            .stream(modes),
    );
    assert!(
        matches!(events.as_slice(), [Err(GraphError::NothingToResume { thread_id })] if thread_id == "new"),
        "{events:?}"
    );
}

#[test]
fn a_pause_streams_as_an_interrupt_update() {
    // langgraph 1.2.22: `{'__interrupt__': ()}` at a breakpoint, the
    // interrupts when a node asks.
    let saver = MemoryCheckpointer::new();
    let modes = [StreamMode::Values, StreamMode::Updates];
    let graph = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .interrupt_before(["inc"])
        .compile()
        .unwrap();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "b");
    assert_eq!(
        told(&collect(run.stream(modes))),
        ["values 0 n=0", "interrupt []", "end"]
    );
    let run = graph.run(Input::Resume).on_thread(&saver, "b");
    assert_eq!(
        told(&collect(run.stream(modes))),
        ["values 0 n=0", "updates 1 inc", "values 1 n=1", "end"]
    );

    let graph = StateGraph::<Count>::new()
        .add_node(
            "ask",
            |_: &Count, ctx: &NodeContext| -> Result<CountUpdate, BoxError> {
                let n: u32 = ctx.interrupt("how many?")?;
                Ok(CountUpdate::new().n(n))
            },
        )
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "i");
    let events = collect(run.stream(modes));
    // langgraph 1.2.22, `stream_mode=["values", "updates"]` when a node
    // interrupts: `('updates', {'__interrupt__': (Interrupt(..),)})`, then
    // `('values', {..state, '__interrupt__': (Interrupt(..),)})`.
    assert_eq!(
        told(&events),
        [
            "values 0 n=0",
            r#"interrupt ["how many?"]"#,
            r#"values 0 n=0 interrupt ["how many?"]"#,
            "end"
        ]
    );
    let paused = events
        .iter()
        .find(|e| e.as_ref().unwrap().name() == "updates")
        .unwrap();
    let json = paused.as_ref().unwrap().to_json();
    assert_eq!(json["__interrupt__"][0]["value"], "how many?", "{json}");
    let run = graph
        .run(Input::ResumeWith(Resume::value(json!(4))))
        .on_thread(&saver, "i");
    assert_eq!(
        told(&collect(run.stream(modes))),
        ["values 0 n=0", "updates 1 ask", "values 1 n=4", "end"]
    );
}

#[test]
fn tasks_start_and_end_paused_ones_with_their_interrupts() {
    let graph = StateGraph::<Count>::new()
        .add_node("a", |_: &Count| {
            CountUpdate::new().log(vec!["a".to_owned()])
        })
        .add_node(
            "ask",
            |_: &Count, ctx: &NodeContext| -> Result<CountUpdate, BoxError> {
                // Pauses after `a` finished: tasks end in the order they do.
                std::thread::sleep(std::time::Duration::from_millis(50));
                let n: u32 = ctx.interrupt("how many?")?;
                Ok(CountUpdate::new().n(n))
            },
        )
        .add_edge(START, "a")
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, "t")
            .stream(StreamMode::Tasks),
    );
    let tasks: Vec<String> = events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            StreamEvent::TaskStart { task, .. } => format!("start {task}"),
            StreamEvent::TaskEnd { task, outcome, .. } => match outcome {
                TaskOutcome::Finished => format!("end {task}"),
                TaskOutcome::Paused(i) => format!("paused {task} {}", i[0].value),
                TaskOutcome::Failed(e) => format!("failed {task} {e}"),
            },
            StreamEvent::End(out) => format!("end run, next {:?}", out.next),
            other => panic!("{}", other.name()),
        })
        .collect();
    assert_eq!(
        tasks,
        [
            "start a",
            "start ask",
            "end a",
            r#"paused ask "how many?""#,
            // As LangGraph's: the finished task is not to run again.
            r#"end run, next ["ask"]"#
        ]
    );
    let done = block_on(
        graph
            .run(Input::ResumeWith(Resume::value(7)))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    assert_eq!((done.state.n, done.state.log.len()), (7, 1));
}

/// A model that streams its reply word by word.
struct Words(&'static str);

impl<S: Send + Sync> ChatModel<S> for Words {
    fn invoke<'a>(&'a self, _: &'a ModelRequest<S>) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { Ok(ai(self.0)) })
    }

    fn stream<'a>(
        &'a self,
        _: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<MessageChunk, ModelError>> {
        let words: Vec<_> = self.0.split_inclusive(' ').map(MessageChunk::ai).collect();
        stream::iter(words.into_iter().map(Ok)).boxed()
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

#[test]
fn the_agents_tokens_stream_with_their_node_and_add_up_to_the_stored_message() {
    let agent = create_agent(Words("Tea is a fine choice."))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let events = collect(
        agent
            .run(input::<Chat>("What should I drink?"))
            .on_thread(&saver, "chat")
            .stream([StreamMode::Messages, StreamMode::Updates]),
    );
    let mut pieces = agent_state::MessageChunks::new();
    let mut order = Vec::new();
    for event in &events {
        match event.as_ref().unwrap() {
            StreamEvent::Message(m) => {
                assert_eq!((m.node.as_str(), m.step), ("model", 1));
                order.push(format!("token {:?}", m.chunk.text()));
                pieces.push(m.chunk.clone()).unwrap();
            }
            other => order.push(other.name().to_owned()),
        }
    }
    assert_eq!(
        order,
        [
            r#"token "Tea ""#,
            r#"token "is ""#,
            r#"token "a ""#,
            r#"token "fine ""#,
            r#"token "choice.""#,
            r#"token """#,
            "updates",
            "end"
        ]
    );
    let streamed = pieces.into_messages();
    let StreamEvent::End(out) = events.last().unwrap().as_ref().unwrap() else {
        panic!()
    };
    let stored = &out.state.messages()[1];
    assert_eq!(stored.text(), "Tea is a fine choice.");
    assert_eq!(
        streamed,
        std::slice::from_ref(stored),
        "the pieces add up to the stored message, id included"
    );
    assert!(stored.id.as_deref().unwrap().starts_with("lc_run-"));
    // The message's JSON in the `messages` event is LangChain's chunk.
    let StreamEvent::Message(first) = events[1].as_ref().unwrap() else {
        panic!()
    };
    let json = events[1].as_ref().unwrap().to_json();
    assert_eq!(json[0]["type"], "AIMessageChunk");
    assert_eq!(json[1]["langgraph_node"], "model");
    assert_eq!(first.chunk.id, stored.id);
}

#[test]
fn a_scripted_agent_not_streamed_keeps_no_run_id() {
    let agent = create_agent(ScriptedModel::new([ai("hi")]))
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("hello"))).unwrap();
    assert!(!out.state.messages()[1]
        .id
        .as_deref()
        .unwrap()
        .starts_with("lc_run-"));
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Debate {
    #[reducer(messages)]
    messages: Messages,
    round: u32,
}

/// Three nodes a round, each an async node that yields once (as a model
/// call would) before it answers.
fn debate(rounds: u32) -> Graph<Debate> {
    let speak = |who: &'static str| {
        move |s: Arc<Debate>| async move {
            agent_state::futures::future::ready(()).await;
            let update = DebateUpdate::new().message(ai(format!("{who} {}", s.round)));
            if who == "skeptic" {
                update.round(s.round + 1)
            } else {
                update
            }
        }
    };
    StateGraph::<Debate>::new()
        .add_node("optimist", speak("optimist"))
        .add_node("skeptic", speak("skeptic"))
        .add_node("moderator", speak("moderator"))
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges("moderator", move |s: &Debate| {
            if s.round >= rounds {
                END
            } else {
                "optimist"
            }
        })
        .compile()
        .unwrap()
}

#[test]
fn dropping_the_stream_leaves_the_sqlite_thread_at_its_last_stored_step() {
    let dir = std::env::temp_dir().join(format!("agent-state-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("drop.db");
    let _ = std::fs::remove_file(&path);
    let graph = debate(5);
    let saver = SqliteCheckpointer::open(&path).unwrap();
    let mut stream = graph
        .run(Input::Update(DebateUpdate::new()))
        .on_thread(&saver, "d")
        .stream(StreamMode::Checkpoints)
        .buffer(1);
    let mut last_seen = None;
    for _ in 0..7 {
        let Some(Ok(StreamEvent::Checkpoint { checkpoint, .. })) = block_on(stream.next()) else {
            panic!("a checkpoint")
        };
        last_seen = Some(checkpoint);
    }
    drop(stream);
    let last_seen = last_seen.unwrap();
    // Another connection to the file: the head is the last step the stream
    // reported, or at most the one step the run had stored while its
    // event waited for room.
    let other = SqliteCheckpointer::open(&path).unwrap();
    let head = block_on(other.head("d")).unwrap().unwrap().meta;
    assert!(
        head.step == last_seen.step || head.step == last_seen.step + 1,
        "head {} after seeing {}",
        head.step,
        last_seen.step
    );
    // Nothing runs any more: the head stays.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(block_on(other.head("d")).unwrap().unwrap().meta.id, head.id);
    // Resuming finishes the debate with nothing lost or doubled.
    let out = block_on(graph.run(Input::Resume).on_thread(&other, "d")).unwrap();
    assert_eq!(out.state.round, 5);
    assert_eq!(out.state.messages.len(), 15);
    let texts: Vec<String> = out.state.messages.iter().map(Message::text).collect();
    let mut unique = texts.clone();
    unique.dedup();
    assert_eq!(texts, unique);
    drop((saver, other));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_shared_stream_owns_its_graph_and_checkpointer() {
    fn spawnable<T: Send + 'static>(t: T) -> T {
        t
    }
    let graph = Arc::new(counter(3));
    let saver = Arc::new(MemoryCheckpointer::new());
    let stream = spawnable(agent_state::graph::RunStream::shared(
        Arc::clone(&graph),
        Arc::clone(&saver),
        "owned",
        Input::Update(CountUpdate::new()),
        StreamMode::Values,
        |run| run.stop_after(2),
    ));
    let events = collect(stream);
    assert_eq!(events.len(), 3, "the input, one step, the end");
    let head = block_on(saver.head("owned")).unwrap().unwrap();
    assert_eq!(head.meta.step, 1);
}

#[test]
fn mode_names_read_back() {
    let modes = StreamModes::parse_list("updates, messages").unwrap();
    assert!(modes.contains(StreamMode::Updates) && modes.contains(StreamMode::Messages));
    assert!(!modes.contains(StreamMode::Values));
    // `debug` is a mode of its own (LangGraph's envelope), not the other two.
    let debug: StreamModes = StreamMode::Debug.into();
    assert!(!debug.contains(StreamMode::Checkpoints) && !debug.contains(StreamMode::Tasks));
    assert_eq!("debug".parse(), Ok(StreamMode::Debug));
    let err = StreamModes::parse_list("values,tokens").unwrap_err();
    assert!(err.to_string().contains("`tokens`"), "{err}");
}

#[allow(dead_code)]
fn chat_has_messages(c: &Chat) -> usize {
    c.messages().len()
}
