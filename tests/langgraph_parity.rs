//! LangGraph's behaviour, case by case, where our runtime once differed:
//! what a stream and a run show when a node interrupts, whole messages a
//! node returns in `messages` mode, a run continuing after
//! `update_state(.., as_node)`, and the step numbers a run reports. Each
//! test quotes what langgraph 1.2.22 printed for the same graph.

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::futures::StreamExt;
use agent_state::graph::Command;
use agent_state::graph::{
    BoxError, Durability, Graph, GraphError, GraphState, Input, NodeContext, Resume, RunStream,
    Sent, StateGraph, StreamEvent, StreamMode, END, START,
};
use agent_state::{ai, human, AgentState, Message, MessageChunk, Messages};
use serde_json::{json, Value};
use std::time::Duration;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
    #[reducer(append)]
    log: Vec<String>,
}

fn collect<S: GraphState>(stream: RunStream<'_, S>) -> Vec<StreamEvent<S>> {
    block_on(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|e| e.expect("the run succeeds"))
        .collect()
}

/// Each event as LangGraph's `(mode, chunk)`, interrupt ids left out
/// (LangGraph's are hashes, ours name the task).
fn as_langgraph<S: GraphState>(events: &[StreamEvent<S>]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|e| !matches!(e, StreamEvent::End(_)))
        .map(|e| (e.name().to_owned(), without_ids(e.to_json())))
        .collect()
}

fn without_ids(mut value: Value) -> Value {
    if let Some(Value::Array(list)) = value.get_mut("__interrupt__") {
        for interrupt in list {
            let map = interrupt.as_object_mut().unwrap();
            map.retain(|k, _| k == "value");
        }
    }
    value
}

fn ask(_: &Count, ctx: &NodeContext) -> Result<CountUpdate, BoxError> {
    let answer: String = ctx.interrupt(json!({"q": "ok?"}))?;
    Ok(CountUpdate::new().log(vec![format!("b:{answer}")]))
}

/// Node `a` of the Python scripts quoted below: `n + 1`, logs "a".
fn add_one(s: &Count) -> CountUpdate {
    CountUpdate::new().n(s.n + 1).log(vec!["a".to_owned()])
}

/// a → `b` → END.
fn a_then(b: fn(&Count) -> CountUpdate) -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("b", b)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile()
        .unwrap()
}

/// Node `b` of the Python scripts quoted below: logs "b".
fn log_b(_: &Count) -> CountUpdate {
    CountUpdate::new().log(vec!["b".to_owned()])
}

/// a → b → END, b logging "b".
fn a_then_b() -> Graph<Count> {
    a_then(log_b)
}

/// a → b → END, b multiplying `n` by ten.
fn a_then_times_ten() -> Graph<Count> {
    a_then(|s| CountUpdate::new().n(s.n * 10).log(vec!["b".to_owned()]))
}

/// a → b (interrupts) → c, as in the Python script quoted below.
fn a_b_c() -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("b", ask)
        .add_node("c", |_: &Count| {
            CountUpdate::new().log(vec!["c".to_owned()])
        })
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .compile()
        .unwrap()
}

#[test]
fn values_mode_shows_the_state_with_its_interrupts_when_a_node_pauses() {
    // langgraph 1.2.22, `app.stream({"n": 0, "log": []}, cfg, stream_mode="values")`:
    //    {'n': 0, 'log': []}
    //    {'n': 1, 'log': ['a']}
    //    {'n': 1, 'log': ['a'], '__interrupt__': (Interrupt(value={'q': 'ok?'}, id='af66..'),)}
    //   then `app.stream(Command(resume="yes"), cfg, stream_mode="values")`:
    //    {'n': 1, 'log': ['a']}
    //    {'n': 1, 'log': ['a', 'b:yes']}
    //    {'n': 1, 'log': ['a', 'b:yes', 'c']}
    let graph = a_b_c();
    let saver = MemoryCheckpointer::new();
    let start = Input::Update(CountUpdate::new());
    let run = graph.run(start).on_thread(&saver, "values");
    let events = collect(run.stream(StreamMode::Values));
    let asked = json!([{"value": {"q": "ok?"}}]);
    let values = |v: Value| ("values".to_owned(), v);
    assert_eq!(
        as_langgraph(&events),
        [
            values(json!({"n": 0, "log": []})),
            values(json!({"n": 1, "log": ["a"]})),
            values(json!({"n": 1, "log": ["a"], "__interrupt__": asked})),
        ]
    );
    let StreamEvent::End(out) = events.last().unwrap() else {
        panic!("the stream ends with End")
    };
    assert_eq!(out.next, ["b"]);
    let resume = Input::ResumeWith(Resume::value("yes"));
    let run = graph.run(resume).on_thread(&saver, "values");
    assert_eq!(
        as_langgraph(&collect(run.stream(StreamMode::Values))),
        [
            values(json!({"n": 1, "log": ["a"]})),
            values(json!({"n": 1, "log": ["a", "b:yes"]})),
            values(json!({"n": 1, "log": ["a", "b:yes", "c"]})),
        ]
    );
}

#[test]
fn values_and_updates_together_show_the_interrupt_in_both_in_that_order() {
    // langgraph 1.2.22, `stream_mode=["values", "updates"]`:
    //    ('values', {'n': 0, 'log': []})
    //    ('updates', {'a': {'n': 1, 'log': ['a']}})
    //    ('values', {'n': 1, 'log': ['a']})
    //    ('updates', {'__interrupt__': (Interrupt(value={'q': 'ok?'}, ..),)})
    //    ('values', {'n': 1, 'log': ['a'], '__interrupt__': (Interrupt(value={'q': 'ok?'}, ..),)})
    let graph = a_b_c();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "both");
    let events = collect(run.stream([StreamMode::Values, StreamMode::Updates]));
    let asked = json!([{"value": {"q": "ok?"}}]);
    let got = as_langgraph(&events);
    let expected = [
        ("values", json!({"n": 0, "log": []})),
        ("updates", json!({"a": {"n": 1, "log": ["a"]}})),
        ("values", json!({"n": 1, "log": ["a"]})),
        ("updates", json!({"__interrupt__": asked})),
        (
            "values",
            json!({"n": 1, "log": ["a"], "__interrupt__": asked}),
        ),
    ];
    let expected: Vec<(String, Value)> = expected
        .into_iter()
        .map(|(m, v)| (m.to_owned(), v))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_resume_after_update_state_answers_the_first_interrupt_raised_again() {
    // langgraph 1.2.22, a → b (interrupts) → c: invoke, then
    //   update_state({"n": 7}); get_state().next -> ('b',), interrupts -> ()
    //   invoke(Command(resume="yes")) -> {'n': 7, 'log': ['a', 'b:yes', 'c']}
    // and with p and q both after START, each interrupting:
    //   update_state({"n": 1}); invoke(Command(resume="yes"))
    //   -> {'n': 1, 'log': ['yes'], '__interrupt__': [Interrupt(value='q?', ..)]}
    let graph = a_b_c();
    let saver = MemoryCheckpointer::new();
    block_on(
        graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, "t"),
    )
    .unwrap();
    block_on(graph.update_state(&saver, "t", CountUpdate::new().n(7), None)).unwrap();
    let state = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(state.next, ["b"]);
    assert!(state.interrupts.is_empty());
    let resumed = graph.run(Input::ResumeWith(Resume::value("yes")));
    let out = block_on(resumed.on_thread(&saver, "t")).unwrap();
    assert_eq!(out.to_json(), json!({"n": 7, "log": ["a", "b:yes", "c"]}));

    let asking = |q: &'static str| {
        move |_: &Count, ctx: &NodeContext| -> Result<CountUpdate, BoxError> {
            Ok(CountUpdate::new().log(vec![ctx.interrupt::<String>(q)?]))
        }
    };
    let graph = StateGraph::<Count>::new()
        .add_node("p", asking("p?"))
        .add_node("q", asking("q?"))
        .add_edge(START, "p")
        .add_edge(START, "q")
        .compile()
        .unwrap();
    block_on(
        graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, "p"),
    )
    .unwrap();
    block_on(graph.update_state(&saver, "p", CountUpdate::new().n(1), None)).unwrap();
    let resumed = graph.run(Input::ResumeWith(Resume::value("yes")));
    let out = block_on(resumed.on_thread(&saver, "p")).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 1, "log": ["yes"], "__interrupt__": [{"value": "q?"}]})
    );
}

#[test]
fn each_paused_task_streams_its_own_interrupt() {
    // langgraph 1.2.22, p and q both after START, each interrupting,
    // `stream_mode=["values", "updates"]`:
    //    ('values', {'n': 0, 'log': []})
    //    ('updates', {'__interrupt__': (Interrupt(value='p?', ..),)})
    //    ('values', {'n': 0, 'log': [], '__interrupt__': (Interrupt(value='p?', ..),)})
    //    ('updates', {'__interrupt__': (Interrupt(value='q?', ..),)})
    //    ('values', {'n': 0, 'log': [], '__interrupt__': (Interrupt(value='q?', ..),)})
    //   and `invoke` returns both:
    //    {'n': 0, 'log': [], '__interrupt__': [Interrupt(value='p?', ..), Interrupt(value='q?', ..)]}
    //   Each task's events come as it pauses: q is held back here so that
    //   it pauses second, as it did there.
    fn asking(
        question: &'static str,
        after: Duration,
    ) -> impl Fn(&Count, &NodeContext) -> Result<CountUpdate, BoxError> {
        move |_, ctx| {
            std::thread::sleep(after);
            let answer: String = ctx.interrupt(question)?;
            Ok(CountUpdate::new().log(vec![answer]))
        }
    }
    let graph = StateGraph::<Count>::new()
        .add_node("p", asking("p?", Duration::ZERO))
        .add_node("q", asking("q?", Duration::from_millis(100)))
        .add_edge(START, "p")
        .add_edge(START, "q")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "par");
    let got = as_langgraph(&collect(
        run.stream([StreamMode::Values, StreamMode::Updates]),
    ));
    let p = json!([{"value": "p?"}]);
    let q = json!([{"value": "q?"}]);
    let expected: Vec<(String, Value)> = [
        ("values", json!({"n": 0, "log": []})),
        ("updates", json!({"__interrupt__": p})),
        ("values", json!({"n": 0, "log": [], "__interrupt__": p})),
        ("updates", json!({"__interrupt__": q})),
        ("values", json!({"n": 0, "log": [], "__interrupt__": q})),
    ]
    .into_iter()
    .map(|(m, v)| (m.to_owned(), v))
    .collect();
    assert_eq!(got, expected);

    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "invoke");
    let out = block_on(run).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 0, "log": [], "__interrupt__": [{"value": "p?"}, {"value": "q?"}]})
    );
}

#[test]
fn invoke_output_carries_interrupts_but_not_at_a_breakpoint() {
    // langgraph 1.2.22, `app.invoke({"n": 0, "log": []}, cfg)` on a → b → c:
    //    {'n': 1, 'log': ['a'], '__interrupt__': [Interrupt(value={'q': 'ok?'}, ..)]}
    //   then `app.invoke(Command(resume="yes"), cfg)`:
    //    {'n': 1, 'log': ['a', 'b:yes', 'c']}
    let graph = a_b_c();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    let out = block_on(run).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 1, "log": ["a"], "__interrupt__": [{"value": {"q": "ok?"}}]})
    );
    let run = graph
        .run(Input::ResumeWith(Resume::value("yes")))
        .on_thread(&saver, "t");
    let out = block_on(run).unwrap();
    assert_eq!(out.to_json(), json!({"n": 1, "log": ["a", "b:yes", "c"]}));

    // langgraph 1.2.22 with `interrupt_before=["b"]` (b a plain node):
    // `invoke` returns `{'n': 1, 'log': ['a']}`, and the stream
    //    ('values', {'n': 0, 'log': []})
    //    ('updates', {'a': {'n': 1, 'log': ['a']}})
    //    ('values', {'n': 1, 'log': ['a']})
    //    ('updates', {'__interrupt__': ()})
    let graph = StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("b", log_b)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .interrupt_before(["b"])
        .compile()
        .unwrap();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "bp");
    let out = block_on(run).unwrap();
    assert_eq!(out.to_json(), json!({"n": 1, "log": ["a"]}));
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "bp-stream");
    let got = as_langgraph(&collect(
        run.stream([StreamMode::Values, StreamMode::Updates]),
    ));
    let expected: Vec<(String, Value)> = [
        ("values", json!({"n": 0, "log": []})),
        ("updates", json!({"a": {"n": 1, "log": ["a"]}})),
        ("values", json!({"n": 1, "log": ["a"]})),
        ("updates", json!({"__interrupt__": []})),
    ]
    .into_iter()
    .map(|(m, v)| (m.to_owned(), v))
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_run_without_a_checkpointer_pauses_on_an_interrupt_too() {
    // langgraph 1.2.22, compiled without a checkpointer, a → b → c:
    //   invoke(..) -> {.., '__interrupt__': [Interrupt(value=..)]}, and
    //   stream(.., stream_mode=["values", "updates"]) as with one;
    //   invoke(Command(resume=5)) -> RuntimeError: Cannot use
    //   Command(resume=...) without checkpointer
    let graph = a_b_c();
    let out = block_on(graph.run(Input::Update(CountUpdate::new()))).unwrap();
    assert_eq!(out.next, ["b"]);
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 1, "log": ["a"], "__interrupt__": [{"value": {"q": "ok?"}}]})
    );
    let run = graph.run(Input::Update(CountUpdate::new()));
    let got = as_langgraph(&collect(
        run.stream([StreamMode::Values, StreamMode::Updates]),
    ));
    let asked = json!([{"value": {"q": "ok?"}}]);
    let expected: Vec<(String, Value)> = [
        ("values", json!({"n": 0, "log": []})),
        ("updates", json!({"a": {"n": 1, "log": ["a"]}})),
        ("values", json!({"n": 1, "log": ["a"]})),
        ("updates", json!({"__interrupt__": asked})),
        (
            "values",
            json!({"n": 1, "log": ["a"], "__interrupt__": asked}),
        ),
    ]
    .into_iter()
    .map(|(m, v)| (m.to_owned(), v))
    .collect();
    assert_eq!(got, expected);
    let resume = graph.run(Input::ResumeWith(Resume::value("yes")));
    let error = block_on(resume).unwrap_err();
    assert!(matches!(error, GraphError::NoThread { .. }), "{error}");
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[reducer(messages)]
    messages: Messages,
}

/// Each `messages` event as the Python scripts print it: the message's
/// type, content and id, the node and the step.
fn message_lines<S: GraphState>(events: &[StreamEvent<S>]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.name() == "messages")
        .map(|e| {
            let json = e.to_json();
            let (message, meta) = (&json[0], &json[1]);
            json!([
                message["type"],
                message["content"],
                message["id"],
                meta["langgraph_node"],
                meta["langgraph_step"]
            ])
        })
        .collect()
}

/// A node that streams a model's answer in pieces (id `m1`), then returns
/// the message they make.
fn streamed(_: &Chat, ctx: &NodeContext) -> Result<ChatUpdate, BoxError> {
    let writer = ctx.writer();
    for piece in ["hello", " ", "there"] {
        writer.write_message(MessageChunk::ai(piece).with_id("m1"));
    }
    Ok(ChatUpdate::new().message(ai("hello there").with_id("m1")))
}

type ChatNode = fn(&Chat) -> ChatUpdate;

fn chat_graph() -> Graph<Chat> {
    let nodes: [(&str, ChatNode); 4] = [
        ("plain", |_| {
            ChatUpdate::new()
                .message(ai("returned").with_id("r1"))
                .message(human("h").with_id("h1"))
        }),
        ("again", |_| {
            ChatUpdate::new().message(ai("returned edited").with_id("r1"))
        }),
        ("noid", |_| ChatUpdate::new().message(ai("no id"))),
        ("none", |_| ChatUpdate::new()),
    ];
    let mut graph = StateGraph::<Chat>::new()
        .add_node("streamed", streamed)
        .add_edge(START, "streamed");
    let mut last = "streamed";
    for (name, node) in nodes {
        graph = graph.add_node(name, node).add_edge(last, name);
        last = name;
    }
    graph
        .add_node("cmd", |_: &Chat| {
            Command::update(ChatUpdate::new().message(ai("via command").with_id("c1")))
                .and_goto(END)
        })
        .add_edge(last, "cmd")
        .compile()
        .unwrap()
}

#[test]
fn messages_mode_streams_the_messages_a_node_returns_once_each() {
    // langgraph 1.2.22, `stream_mode="messages"`, input
    // `[HumanMessage("hi", id="in1")]`, the nodes in a line as here:
    //    AIMessageChunk 'hello' m1 {langgraph_node: 'streamed', langgraph_step: 1}
    //    AIMessageChunk ' ' m1 {.. 'streamed' ..}
    //    AIMessageChunk 'there' m1 {.. 'streamed' ..}
    //    AIMessage 'returned' r1 {langgraph_node: 'plain', langgraph_step: 2}
    //    HumanMessage 'h' h1 {.. 'plain' ..}
    //    AIMessage 'no id' 73f7717e-.. {langgraph_node: 'noid', ..}  (the id the state then holds)
    //    AIMessage 'via command' c1 {langgraph_node: 'cmd', ..}
    // `streamed`'s returned m1 is not repeated (its pieces were streamed),
    // `again`'s r1 is not repeated (its id was in the state it started
    // from), `none` streams nothing, and the input's in1 is not streamed.
    let graph = chat_graph();
    let saver = MemoryCheckpointer::new();
    let input = Input::Update(ChatUpdate::new().message(human("hi").with_id("in1")));
    let run = graph.run(input).on_thread(&saver, "m");
    let events = collect(run.stream(StreamMode::Messages));
    let StreamEvent::End(out) = events.last().unwrap() else {
        panic!("the stream ends with End")
    };
    let no_id = out.state.messages[4].id.clone().unwrap();
    let got = message_lines(&events);
    assert_eq!(
        got,
        [
            json!(["AIMessageChunk", "hello", "m1", "streamed", 1]),
            json!(["AIMessageChunk", " ", "m1", "streamed", 1]),
            json!(["AIMessageChunk", "there", "m1", "streamed", 1]),
            json!(["ai", "returned", "r1", "plain", 2]),
            json!(["human", "h", "h1", "plain", 2]),
            json!(["ai", "no id", no_id, "noid", 4]),
            json!(["ai", "via command", "c1", "cmd", 6]),
        ]
    );
    // The returned message is handed out whole as well.
    let whole = events.iter().find_map(|e| match e {
        StreamEvent::Message(m) if m.node == "plain" => m.message.as_deref().cloned(),
        _ => None,
    });
    assert_eq!(whole, Some(ai("returned").with_id("r1")));
}

#[test]
fn messages_mode_does_not_repeat_what_a_thread_already_holds() {
    // LangGraph marks the ids of the messages a node starts from as seen:
    // a node returning a message the thread holds (an edit, same id)
    // streams nothing, even in a later run.
    let graph = StateGraph::<Chat>::new()
        .add_node("edit", |s: &Chat| {
            let mut last = s.messages.last().unwrap().clone();
            last.content = "edited".into();
            ChatUpdate::new().message(last)
        })
        .add_edge(START, "edit")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let input = Input::Update(ChatUpdate::new().message(human("hi").with_id("in1")));
    let run = graph.run(input).on_thread(&saver, "e");
    let events = collect(run.stream([StreamMode::Messages, StreamMode::Updates]));
    let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["updates", "end"]);
}

/// a → (n >= 5 ? c : b) → END, as in the Python script quoted below.
fn routed() -> agent_state::graph::StateGraph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("b", log_b)
        .add_node("c", |_: &Count| {
            CountUpdate::new().log(vec!["c".to_owned()])
        })
        .add_edge(START, "a")
        .add_conditional_edges_to(
            "a",
            |s: &Count| if s.n >= 5 { "c" } else { "b" },
            ["b", "c"],
        )
        .add_edge("b", END)
        .add_edge("c", END)
}

#[test]
fn a_run_without_input_continues_from_the_node_update_state_wrote_as() {
    // langgraph 1.2.22, compiled with `interrupt_before=["a"]`:
    //   invoke({"n": 0, "log": []})            -> {'n': 0, 'log': []}, next ('a',)
    //   update_state({"n": 7, "log": ["manual"]}, as_node="a")
    //   get_state().next                        -> ('c',)   (the router on n = 7)
    //   invoke(None)                            -> {'n': 7, 'log': ['manual', 'c']}
    let graph = routed().interrupt_before(["a"]).compile().unwrap();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    assert_eq!(block_on(run).unwrap().next, ["a"]);
    let edit = CountUpdate::new().n(7).log(vec!["manual".to_owned()]);
    block_on(graph.update_state(&saver, "t", edit, Some("a"))).unwrap();
    assert_eq!(block_on(graph.get_state(&saver, "t")).unwrap().next, ["c"]);
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(out.to_json(), json!({"n": 7, "log": ["manual", "c"]}));

    // On a finished thread (no breakpoint):
    //   invoke({"n": 0, "log": []})             -> {'n': 1, 'log': ['a', 'b']}
    //   update_state({"n": 9}, as_node="a"); get_state().next -> ('c',)
    //   invoke(None)                            -> {'n': 9, 'log': ['a', 'b', 'c']}
    //   (without as_node, or as "b": next is ())
    let graph = routed().compile().unwrap();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "f");
    assert_eq!(
        block_on(run).unwrap().to_json(),
        json!({"n": 1, "log": ["a", "b"]})
    );
    block_on(graph.update_state(&saver, "f", CountUpdate::new().n(9), Some("a"))).unwrap();
    assert_eq!(block_on(graph.get_state(&saver, "f")).unwrap().next, ["c"]);
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "f")).unwrap();
    assert_eq!(out.to_json(), json!({"n": 9, "log": ["a", "b", "c"]}));
    for (thread, as_node) in [("none", None), ("b", Some("b"))] {
        let run = graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, thread);
        block_on(run).unwrap();
        block_on(graph.update_state(&saver, thread, CountUpdate::new().n(9), as_node)).unwrap();
        let next = block_on(graph.get_state(&saver, thread)).unwrap().next;
        assert!(next.is_empty(), "{thread}: {next:?}");
    }
}

#[test]
fn on_step_reports_the_steps_the_thread_stores() {
    // langgraph 1.2.22, a -> b, `stream_mode="debug"` then
    // `get_state_history`, two runs on one thread:
    //   checkpoint step -1 {'source': 'input'} {'log': []}                 next ['__start__']
    //   checkpoint step  0 {'source': 'loop'}  {'n': 0, 'log': []}         next ['a']
    //   task 1 a;  checkpoint step 1 {'source': 'loop'} {'n': 1, 'log': ['a@1']}  next ['b']
    //   task 2 b;  checkpoint step 2 {'source': 'loop'} {.., 'log': ['a@1', 'b@2']} next []
    //   second run: step 3 {'source': 'input'} (the state before the input),
    //   step 4 {'source': 'loop'} (the input applied), tasks 5 a, 6 b.
    //   `get_state().metadata` -> {'source': 'loop', 'step': 2}.
    // The input is stored twice (before and after it applies), and the
    // step a run reports is the step of the checkpoint it stored, as
    // `get_state` and the history read it, with its source, state and
    // next nodes. See also `checkpoint_steps_and_sources_are_langgraphs`.
    let graph = a_then_b();
    let saver = MemoryCheckpointer::new();
    let mut reported = Vec::new();
    for input in [CountUpdate::new(), CountUpdate::new().n(10)] {
        let run = graph.run(Input::Update(input)).on_thread(&saver, "t");
        let out = block_on(run.on_step(|e| {
            let stored = e.checkpoint.expect("a run on a thread stores each step");
            assert_eq!(stored.step, e.step);
            assert_eq!(stored.source, e.source);
            reported.push((e.step, e.source, e.state.clone(), e.next.to_vec()));
        }))
        .unwrap();
        let head = block_on(graph.get_state(&saver, "t")).unwrap();
        assert_eq!(head.checkpoint.unwrap().step, reported.last().unwrap().0);
        assert_eq!(out.checkpoint.unwrap().step, reported.last().unwrap().0);
    }
    let steps: Vec<i64> = reported.iter().map(|r| r.0).collect();
    assert_eq!(steps, [-1, 0, 1, 2, 3, 4, 5, 6]);
    let mut history = block_on(graph.state_history(&saver, "t", 100)).unwrap();
    history.reverse();
    let stored: Vec<_> = history
        .into_iter()
        .map(|s| {
            let meta = s.checkpoint.unwrap();
            (meta.step, meta.source, s.values, s.next)
        })
        .collect();
    assert_eq!(stored, reported);
    assert_eq!(reported[0].1, agent_state::checkpoint::Source::Input);
    assert_eq!(reported[0].3, [START]);
    assert_eq!(reported[4].1, agent_state::checkpoint::Source::Input);
    assert_eq!(reported[4].2, reported[3].2, "the state before the input");
    assert_eq!(reported[5].3, ["a"]);

    // A plain run (no thread) numbers its steps the same way.
    let mut plain = Vec::new();
    let run = graph.run(Input::Update(CountUpdate::new()));
    block_on(run.on_step(|e| plain.push(e.step))).unwrap();
    assert_eq!(plain, [-1, 0, 1, 2]);
}

#[test]
fn time_travel_stores_and_reports_the_fork_as_a_step_of_its_own() {
    // langgraph 1.2.22, a -> b run once (steps -1 .. 2), then
    // `stream(None, <config of step 1, next ('b',)>, stream_mode=["values",
    // "updates", "checkpoints"])`:
    //    ('values', {'n': 1, 'log': ['a']})
    //    checkpoints {'source': 'fork', 'step': 2} {'n': 1, 'log': ['a']}
    //    ('updates', {'b': {'log': ['b']}})
    //    ('values', {'n': 1, 'log': ['a', 'b']})
    //    checkpoints {'source': 'loop', 'step': 3} {'n': 1, 'log': ['a', 'b']}
    //   history steps, newest first: 3 loop, 2 fork, 2 loop, 1 loop, 0 loop, -1 input.
    // The fork is the step after the one it copies.
    use agent_state::checkpoint::Source;
    let graph = a_then_b();
    let saver = MemoryCheckpointer::new();
    let run = graph.run(Input::Update(CountUpdate::new()));
    block_on(run.on_thread(&saver, "t")).unwrap();
    let history = block_on(graph.state_history(&saver, "t", 100)).unwrap();
    let after_a = history.iter().find(|s| s.next == ["b"]).unwrap();
    let after_a = after_a.checkpoint.clone().unwrap();
    assert_eq!(after_a.step, 1);

    let mut reported = Vec::new();
    let run = graph
        .run(Input::Resume)
        .on_thread(&saver, "t")
        .from_checkpoint(after_a.id)
        .on_step(|e| reported.push((e.step, e.source)));
    let modes = [
        StreamMode::Values,
        StreamMode::Updates,
        StreamMode::Checkpoints,
    ];
    let events = collect(run.stream(modes));
    let told: Vec<String> = events
        .iter()
        .map(|e| match e {
            StreamEvent::Checkpoint {
                checkpoint, state, ..
            } => format!(
                "checkpoints {} {} {}",
                checkpoint.source.as_str(),
                checkpoint.step,
                state.to_json()
            ),
            other => format!("{} {}", other.name(), other.to_json()),
        })
        .filter(|line| !line.starts_with("end"))
        .collect();
    assert_eq!(
        told,
        [
            r#"values {"log":["a"],"n":1}"#,
            r#"checkpoints fork 2 {"log":["a"],"n":1}"#,
            r#"updates {"b":{"log":["b"]}}"#,
            r#"values {"log":["a","b"],"n":1}"#,
            r#"checkpoints loop 3 {"log":["a","b"],"n":1}"#,
        ]
    );
    assert_eq!(reported, [(2, Source::Fork), (3, Source::Loop)]);
    let history = block_on(graph.state_history(&saver, "t", 100)).unwrap();
    let steps: Vec<(i64, Source)> = history
        .iter()
        .map(|s| {
            let meta = s.checkpoint.as_ref().unwrap();
            (meta.step, meta.source)
        })
        .collect();
    assert_eq!(
        steps,
        [
            (3, Source::Loop),
            (2, Source::Fork),
            (2, Source::Loop),
            (1, Source::Loop),
            (0, Source::Loop),
            (-1, Source::Input)
        ]
    );
}

/// The agent built by `create_agent`: its nodes route by `Command` when
/// they run, and by LangChain's edges after `update_state(.., as_node)`.
#[cfg(feature = "agent")]
mod agent {
    use super::*;
    use agent_state::agent::{
        create_agent, input, AgentMiddleware, FnTool, HookOutput, HookResult, Hooks, ScriptedModel,
        ToolRuntime,
    };
    use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
    use agent_state::schemars::JsonSchema;
    use agent_state::serde::Deserialize;
    use agent_state::{MessageType, ToolCall};

    /// The agent's state: the conversation.
    #[derive(AgentState, Debug, Clone, PartialEq)]
    struct Talk {
        #[state(flatten)]
        base: MessagesState,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(crate = "agent_state::serde")]
    #[schemars(crate = "agent_state::schemars")]
    struct City {
        city: String,
    }

    fn weather() -> FnTool<Talk> {
        FnTool::sync(
            "get_weather",
            "The weather in a city",
            |args: City, _: &ToolRuntime<Talk>| format!("sunny in {}", args.city),
        )
    }

    fn weather_call() -> agent_state::Message {
        ai("").with_id("x1").with_tool_call(ToolCall::new(
            "get_weather",
            json!({"city": "Paris"}).as_object().cloned().unwrap(),
            "c1",
        ))
    }

    fn said(state: &Talk) -> Vec<(MessageType, String)> {
        state
            .messages()
            .iter()
            .map(|m| (m.kind, m.text()))
            .collect()
    }

    #[test]
    fn update_state_as_the_agents_model_leads_to_its_tools_or_the_end() {
        // langchain 1.4.7 `create_agent(model, tools=[get_weather])` on
        // langgraph 1.2.22 (edges: model -> tools | END conditional, tools ->
        // model conditional), after a first run answered "hi there":
        //   update_state({"messages": [AIMessage("", tool_calls=[get_weather(Paris)])]}, as_node="model")
        //   get_state().next -> ('tools',)
        //   invoke(None)     -> [human 'hi', ai 'hi there', ai '', tool 'sunny in Paris', ai 'done']
        //   update_state({"messages": [AIMessage("plain")]}, as_node="model");  next -> ()
        //   update_state({"messages": [ToolMessage("r", tool_call_id="zz")]}, as_node="tools"); next -> ('model',)
        let model = ScriptedModel::new([ai("hi there"), ai("done")]);
        let agent = create_agent(model).tool(weather()).compile().unwrap();
        let saver = MemoryCheckpointer::new();
        let out = block_on(agent.run(input::<Talk>("hi")).on_thread(&saver, "a")).unwrap();
        assert!(out.next.is_empty());
        let edit = Talk::lift(MessagesStateUpdate::new().message(weather_call()));
        block_on(agent.update_state(&saver, "a", edit, Some("model"))).unwrap();
        assert_eq!(
            block_on(agent.get_state(&saver, "a")).unwrap().next,
            ["tools"]
        );
        let out = block_on(agent.run(Input::Resume).on_thread(&saver, "a")).unwrap();
        assert_eq!(
            said(&out.state),
            [
                (MessageType::Human, "hi".to_owned()),
                (MessageType::Ai, "hi there".to_owned()),
                (MessageType::Ai, String::new()),
                (MessageType::Tool, "sunny in Paris".to_owned()),
                (MessageType::Ai, "done".to_owned()),
            ]
        );
        let edit = Talk::lift(MessagesStateUpdate::new().message(ai("plain")));
        block_on(agent.update_state(&saver, "a", edit, Some("model"))).unwrap();
        assert!(block_on(agent.get_state(&saver, "a"))
            .unwrap()
            .next
            .is_empty());
        let answer = agent_state::Message::new(MessageType::Tool, "r");
        let mut answer = answer.with_id("t9");
        answer.tool_call_id = Some("zz".to_owned());
        let edit = Talk::lift(MessagesStateUpdate::new().message(answer));
        block_on(agent.update_state(&saver, "a", edit, Some("tools"))).unwrap();
        assert_eq!(
            block_on(agent.get_state(&saver, "a")).unwrap().next,
            ["model"]
        );
    }

    /// A middleware with `before_model` and `after_model` hooks that change
    /// nothing.
    struct Quiet;

    impl AgentMiddleware<Talk> for Quiet {
        fn name(&self) -> &str {
            "M"
        }

        fn hooks(&self) -> Hooks {
            Hooks::BEFORE_MODEL | Hooks::AFTER_MODEL
        }

        fn before_model(&self, _: &Talk, _: &NodeContext) -> HookResult<Talk> {
            Ok(HookOutput::none())
        }

        fn after_model(&self, _: &Talk, _: &NodeContext) -> HookResult<Talk> {
            Ok(HookOutput::none())
        }
    }

    #[test]
    fn update_state_as_an_agents_hook_follows_langchains_edges() {
        // langchain 1.4.7, `create_agent(model, tools=[get_weather], middleware=[M()])`
        // with M's before_model and after_model (edges: M.before_model -> model,
        // model -> M.after_model, M.after_model -> tools | M.before_model | END
        // conditional, tools -> M.before_model conditional), after a first run:
        //   update_state({"messages": [AIMessage(tool_calls=[..])]}, as_node="model") -> next ('M.after_model',)
        //   update_state({"messages": []}, as_node="M.after_model")                 -> next ('tools',)
        //   update_state({"messages": []}, as_node="M.before_model")                -> next ('model',)
        let model = ScriptedModel::new([ai("hi there"), ai("done")]);
        let agent = create_agent(model)
            .tool(weather())
            .middleware(Quiet)
            .compile()
            .unwrap();
        let saver = MemoryCheckpointer::new();
        block_on(agent.run(input::<Talk>("hi")).on_thread(&saver, "m")).unwrap();
        let steps = [
            (Some(weather_call()), "model", "M.after_model"),
            (None, "M.before_model", "model"),
            (None, "M.after_model", "tools"),
        ];
        for (message, as_node, next) in steps {
            let edit = Talk::lift(message.map_or_else(MessagesStateUpdate::new, |m| {
                MessagesStateUpdate::new().message(m)
            }));
            block_on(agent.update_state(&saver, "m", edit, Some(as_node))).unwrap();
            let state = block_on(agent.get_state(&saver, "m")).unwrap();
            assert_eq!(state.next, [next], "as {as_node}");
        }
        // And the run goes on from there: the tool answers, the model ends.
        let out = block_on(agent.run(Input::Resume).on_thread(&saver, "m")).unwrap();
        let last: Vec<_> = said(&out.state).into_iter().rev().take(2).collect();
        assert_eq!(
            last,
            [
                (MessageType::Ai, "done".to_owned()),
                (MessageType::Tool, "sunny in Paris".to_owned()),
            ]
        );
    }

    #[test]
    fn the_agents_tool_messages_stream_whole_and_its_model_answers_once() {
        // langgraph 1.2.22's `messages` handler (`StreamMessagesHandler`,
        // v1, what `stream_mode="messages"` uses) streams a chat model's
        // chunks as they come and, at a node's end, every message of its
        // output whose id it has not seen: the tools node's `ToolMessage`s
        // come whole; the model's message, streamed as chunks, does not
        // come again. Each streamed model message ends with the empty
        // chunk marked `chunk_position: "last"` (langchain-core's
        // streaming models send it; the agent sends it for any model).
        let model = ScriptedModel::new([weather_call(), ai("done")]);
        let agent = create_agent(model).tool(weather()).compile().unwrap();
        let run = agent.run(input::<Talk>("hi"));
        let events = collect(run.stream(StreamMode::Messages));
        let got: Vec<(String, String, String)> = events
            .iter()
            .filter(|e| e.name() == "messages")
            .map(|e| {
                let json = e.to_json();
                let text = json[0]["content"].as_str().unwrap_or_default().to_owned();
                let node = json[1]["langgraph_node"].as_str().unwrap().to_owned();
                (json[0]["type"].as_str().unwrap().to_owned(), text, node)
            })
            .collect();
        let row = |t: &str, c: &str, n: &str| (t.to_owned(), c.to_owned(), n.to_owned());
        assert_eq!(
            got,
            [
                row("AIMessageChunk", "", "model"),
                row("AIMessageChunk", "", "model"),
                row("tool", "sunny in Paris", "tools"),
                row("AIMessageChunk", "done", "model"),
                row("AIMessageChunk", "", "model"),
            ]
        );
    }
}

/// A thread's history as `step source values next`, newest first.
fn history_lines(graph: &Graph<Count>, saver: &MemoryCheckpointer, thread: &str) -> Vec<String> {
    let history = block_on(graph.state_history(saver, thread, 100)).unwrap();
    history
        .into_iter()
        .map(|s| {
            let meta = s.checkpoint.unwrap();
            let source = meta.source.as_str();
            format!("{} {source} {} {:?}", meta.step, s.values.to_json(), s.next)
        })
        .collect()
}

#[test]
fn checkpoint_steps_and_sources_are_langgraphs() {
    // langgraph 1.2.22, InMemorySaver, a (n + 1, log "a") -> b (n * 10,
    // log "b"); `get_state_history` (newest first) as `step source values
    // next`, after `invoke({"n": 1, "log": ["in"]})`:
    //    2 loop   {'n': 20, 'log': ['in', 'a', 'b']} ()
    //    1 loop   {'n': 2, 'log': ['in', 'a']} ('b',)
    //    0 loop   {'n': 1, 'log': ['in']} ('a',)
    //   -1 input  {'log': []} ('__start__',)
    // (the input checkpoint holds the state before the input, the input
    // being its pending writes; our state before is the default state.)
    let graph = a_then_times_ten();
    let saver = MemoryCheckpointer::new();
    let input =
        |n: u32, log: &str| Input::Update(CountUpdate::new().n(n).log(vec![log.to_owned()]));
    block_on(graph.run(input(1, "in")).on_thread(&saver, "t")).unwrap();
    let first = [
        r#"2 loop {"log":["in","a","b"],"n":20} []"#,
        r#"1 loop {"log":["in","a"],"n":2} ["b"]"#,
        r#"0 loop {"log":["in"],"n":1} ["a"]"#,
        r#"-1 input {"log":[],"n":0} ["__start__"]"#,
    ];
    assert_eq!(history_lines(&graph, &saver, "t"), first);

    // A second run on the thread, `invoke({"n": 5, "log": ["in2"]})`,
    // continues the numbering; its input checkpoint is the state before:
    //    6 loop   {'n': 60, 'log': ['in', 'a', 'b', 'in2', 'a', 'b']} ()
    //    5 loop   {'n': 6, 'log': ['in', 'a', 'b', 'in2', 'a']} ('b',)
    //    4 loop   {'n': 5, 'log': ['in', 'a', 'b', 'in2']} ('a',)
    //    3 input  {'n': 20, 'log': ['in', 'a', 'b']} ('__start__',)
    //    (then the four above; 8 in all)
    //   `get_state().metadata` -> {'source': 'loop', 'step': 6, 'parents': {}}
    // `invoke(None)` on the finished thread stores nothing (still 8).
    block_on(graph.run(input(5, "in2")).on_thread(&saver, "t")).unwrap();
    block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    let second = [
        r#"6 loop {"log":["in","a","b","in2","a","b"],"n":60} []"#,
        r#"5 loop {"log":["in","a","b","in2","a"],"n":6} ["b"]"#,
        r#"4 loop {"log":["in","a","b","in2"],"n":5} ["a"]"#,
        r#"3 input {"log":["in","a","b"],"n":20} ["__start__"]"#,
    ];
    let lines = history_lines(&graph, &saver, "t");
    assert_eq!(lines[..4], second);
    assert_eq!(lines[4..], first);
    let head = block_on(graph.get_state(&saver, "t")).unwrap().checkpoint;
    let head = head.unwrap();
    assert_eq!((head.step, head.source.as_str()), (6, "loop"));

    // `update_state({"n": 100, "log": ["upd"]})`, then
    // `update_state({"n": 7}, as_node="a")`:
    //    8 update {'n': 7, 'log': [.., 'b', 'upd']} ('b',)
    //    7 update {'n': 100, 'log': [.., 'b', 'upd']} ()
    let upd = CountUpdate::new().n(100).log(vec!["upd".to_owned()]);
    block_on(graph.update_state(&saver, "t", upd, None)).unwrap();
    block_on(graph.update_state(&saver, "t", CountUpdate::new().n(7), Some("a"))).unwrap();
    let lines = history_lines(&graph, &saver, "t");
    assert_eq!(lines.len(), 10);
    assert_eq!(
        lines[..2],
        [
            r#"8 update {"log":["in","a","b","in2","a","b","upd"],"n":7} ["b"]"#,
            r#"7 update {"log":["in","a","b","in2","a","b","upd"],"n":100} []"#,
        ]
    );

    // `update_state({"n": 3, "log": ["x"]})` on a new thread is its step
    // 0, then `invoke(None)` runs from START:
    //    2 loop   {'n': 40, 'log': ['x', 'a', 'b']} ()
    //    1 loop   {'n': 4, 'log': ['x', 'a']} ('b',)
    //    0 update {'n': 3, 'log': ['x']} ('a',)
    let x = CountUpdate::new().n(3).log(vec!["x".to_owned()]);
    block_on(graph.update_state(&saver, "new", x, None)).unwrap();
    assert_eq!(
        history_lines(&graph, &saver, "new"),
        [r#"0 update {"log":["x"],"n":3} ["a"]"#]
    );
    block_on(graph.run(Input::Resume).on_thread(&saver, "new")).unwrap();
    assert_eq!(
        history_lines(&graph, &saver, "new"),
        [
            r#"2 loop {"log":["x","a","b"],"n":40} []"#,
            r#"1 loop {"log":["x","a"],"n":4} ["b"]"#,
            r#"0 update {"log":["x"],"n":3} ["a"]"#,
        ]
    );
}

#[test]
fn a_resumed_interrupt_stores_no_input_checkpoint() {
    // langgraph 1.2.22, a (n + 1) -> ask (`interrupt("q?")`, then n + the
    // answer, log "ask"); `invoke({"n": 1, "log": []})` pauses:
    //    1 loop   {'n': 2, 'log': ['a']} ('ask',)
    //    0 loop   {'n': 1, 'log': []} ('a',)
    //   -1 input  {'log': []} ('__start__',)
    // `invoke(Command(resume=5))` adds one checkpoint, no input:
    //    2 loop   {'n': 7, 'log': ['a', 'ask']} ()
    let graph = StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("ask", |s: &Count, ctx: &NodeContext| {
            let answer: u32 = ctx.interrupt("q?")?;
            Ok::<_, BoxError>(
                CountUpdate::new()
                    .n(s.n + answer)
                    .log(vec!["ask".to_owned()]),
            )
        })
        .add_edge(START, "a")
        .add_edge("a", "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let input = Input::Update(CountUpdate::new().n(1));
    let paused = block_on(graph.run(input).on_thread(&saver, "i")).unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let before = [
        r#"1 loop {"log":["a"],"n":2} ["ask"]"#,
        r#"0 loop {"log":[],"n":1} ["a"]"#,
        r#"-1 input {"log":[],"n":0} ["__start__"]"#,
    ];
    assert_eq!(history_lines(&graph, &saver, "i"), before);
    let resume = Input::ResumeWith(Resume::value(5));
    let done = block_on(graph.run(resume).on_thread(&saver, "i")).unwrap();
    assert_eq!(done.to_json(), json!({"n": 7, "log": ["a", "ask"]}));
    let lines = history_lines(&graph, &saver, "i");
    assert_eq!(lines[0], r#"2 loop {"log":["a","ask"],"n":7} []"#);
    assert_eq!(lines[1..], before);
}

#[test]
fn a_thread_stored_with_its_input_once_still_loads_and_runs() {
    // Before the input was stored as LangGraph stores it, a run stored it
    // once, applied, as step -1 (source `input`), its first node as step
    // 0. `Thread::save_step` writes such a chain as the runtime did.
    use agent_state::checkpoint::{Source, Thread};
    let graph = a_then_times_ten();
    let saver = MemoryCheckpointer::new();
    let log = |s: &str| vec![s.to_owned()];
    block_on(async {
        for thread_id in ["old", "stopped"] {
            let mut thread = Thread::<Count, _>::open(&saver, thread_id).await?;
            let input = CountUpdate::new().n(1).log(log("in"));
            thread.save_step(Source::Input, [(START, input)]).await?;
            if thread_id == "stopped" {
                continue;
            }
            let a = CountUpdate::new().n(2).log(log("a"));
            thread.save_step(Source::Loop, [("a", a)]).await?;
            let b = CountUpdate::new().n(20).log(log("b"));
            thread.save_step(Source::Loop, [("b", b)]).await?;
        }
        Ok::<(), agent_state::checkpoint::CheckpointError>(())
    })
    .unwrap();
    let old = [
        r#"1 loop {"log":["in","a","b"],"n":20} []"#,
        r#"0 loop {"log":["in","a"],"n":2} ["b"]"#,
        r#"-1 input {"log":["in"],"n":1} ["a"]"#,
    ];
    assert_eq!(history_lines(&graph, &saver, "old"), old);

    // A new run on it continues the numbering the new way.
    let input = Input::Update(CountUpdate::new().n(5).log(log("in2")));
    let out = block_on(graph.run(input).on_thread(&saver, "old")).unwrap();
    assert_eq!(
        out.to_json(),
        json!({"n": 60, "log": ["in", "a", "b", "in2", "a", "b"]})
    );
    let lines = history_lines(&graph, &saver, "old");
    assert_eq!(
        lines[..4],
        [
            r#"5 loop {"log":["in","a","b","in2","a","b"],"n":60} []"#,
            r#"4 loop {"log":["in","a","b","in2","a"],"n":6} ["b"]"#,
            r#"3 loop {"log":["in","a","b","in2"],"n":5} ["a"]"#,
            r#"2 input {"log":["in","a","b"],"n":20} ["__start__"]"#,
        ]
    );
    assert_eq!(lines[4..], old);

    // A thread stopped after its old-style input resumes from it.
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "stopped")).unwrap();
    assert_eq!(out.to_json(), json!({"n": 20, "log": ["in", "a", "b"]}));
    assert_eq!(history_lines(&graph, &saver, "stopped"), old);
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Notes {
    #[reducer(messages)]
    messages: Messages,
    last: Option<Message>,
    #[reducer(append)]
    notes: Vec<Message>,
}

type NotesNode = fn(&Notes) -> NotesUpdate;

/// a → b → c → d → END, as in the Python script quoted below.
fn notes_graph() -> Graph<Notes> {
    let nodes: [(&str, NotesNode); 4] = [
        ("a", |_| {
            NotesUpdate::new().last(ai("plain field").with_id("p1"))
        }),
        ("b", |_| {
            NotesUpdate::new()
                .note(ai("in list").with_id("l1"))
                .note(human("h2"))
                .last(ai("plain field").with_id("p1"))
        }),
        ("c", |_| NotesUpdate::new().last(ai("no id"))),
        ("d", |_| {
            NotesUpdate::new().message(ai("again").with_id("l1"))
        }),
    ];
    let mut graph = StateGraph::<Notes>::new();
    let mut last = START;
    for (name, node) in nodes {
        graph = graph.add_node(name, node).add_edge(last, name);
        last = name;
    }
    graph.add_edge(last, END).compile().unwrap()
}

#[test]
fn messages_mode_streams_messages_of_any_field() {
    // langgraph 1.2.22, `stream_mode="messages"`; the state
    // `messages: Annotated[list[AnyMessage], add_messages]`,
    // `last: Optional[AnyMessage]`, `notes: list[AnyMessage]`; input
    // `{"messages": [HumanMessage("hi", id="in1")], "last": AIMessage("init", id="i0")}`:
    //    AIMessage 'plain field' p1 a 1
    //    AIMessage 'in list' l1 b 2
    //    HumanMessage 'h2' 7503f834-.. b 2      (the id the state then holds)
    //    AIMessage 'no id' 14703dee-.. c 3      (the id the state then holds)
    // `b`'s p1 and `d`'s l1 are not repeated, the input's i0 not streamed.
    let graph = notes_graph();
    let saver = MemoryCheckpointer::new();
    let input = Input::Update(
        NotesUpdate::new()
            .message(human("hi").with_id("in1"))
            .last(ai("init").with_id("i0")),
    );
    let run = graph.run(input).on_thread(&saver, "n");
    let events = collect(run.stream(StreamMode::Messages));
    let StreamEvent::End(out) = events.last().unwrap() else {
        panic!("the stream ends with End")
    };
    let h2 = out.state.notes[1].id.clone().expect("h2 was given an id");
    let no_id = out.state.last.as_ref().and_then(|m| m.id.clone());
    let no_id = no_id.expect("the plain field's message was given an id");
    let got = message_lines(&events);
    assert_eq!(
        got,
        [
            json!(["ai", "plain field", "p1", "a", 1]),
            json!(["ai", "in list", "l1", "b", 2]),
            json!(["human", "h2", h2, "b", 2]),
            json!(["ai", "no id", no_id, "c", 3]),
        ]
    );
}

#[test]
fn without_messages_mode_a_plain_fields_message_keeps_no_id() {
    // LangGraph gives the id in its stream handler only: a run that does
    // not stream messages stores the message as returned.
    let graph = notes_graph();
    let out = block_on(graph.run(Input::Update(NotesUpdate::new()))).unwrap();
    assert_eq!(out.state.last, Some(ai("no id")));
    assert_eq!(out.state.notes[1], human("h2"));
}

/// Each event as [`as_langgraph`] gives it, with what names a run rather
/// than what it did left out: task and interrupt ids (LangGraph's are
/// hashes), timestamps and checkpoint ids.
fn without_run_ids<S: GraphState>(events: &[StreamEvent<S>]) -> Vec<(String, Value)> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in ["id", "timestamp", "checkpoint_id"] {
                    map.remove(key);
                }
                // An interrupt shows its value alike; the rest is ids
                // (LangGraph adds `response_schema`, we the node).
                if let Some(Value::Array(list)) = map.get_mut("interrupts") {
                    for interrupt in list.iter_mut().filter_map(Value::as_object_mut) {
                        interrupt.retain(|k, _| k == "value");
                    }
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    as_langgraph(events)
        .into_iter()
        .map(|(mode, mut value)| {
            strip(&mut value);
            (mode, value)
        })
        .collect()
}

fn lines(expected: Vec<(&str, Value)>) -> Vec<(String, Value)> {
    expected
        .into_iter()
        .map(|(m, v)| (m.to_owned(), v))
        .collect()
}

/// Counts its calls.
#[derive(Clone, Default)]
struct Calls(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Calls {
    fn hit(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A node that interrupts with `question` after `after` (so that it pauses
/// after its siblings finished, as in the Python runs), then logs
/// `<name>:<answer>`.
fn asks(
    name: &'static str,
    question: Value,
    after: Duration,
) -> impl Fn(&Count, &NodeContext) -> Result<CountUpdate, BoxError> {
    move |_, ctx| {
        std::thread::sleep(after);
        let answer: String = ctx.interrupt(question.clone())?;
        Ok(CountUpdate::new().log(vec![format!("{name}:{answer}")]))
    }
}

#[test]
// langgraph 1.2.22, a (n + 1, log "a") and ask (`interrupt({"q":
// "ok?"})`, log "ask:<answer>") both after START, then c (log "c"):
//   invoke({"n": 0, "log": []}, cfg) ->
//    {'n': 1, 'log': ['a'], '__interrupt__': [Interrupt(value={'q': 'ok?'}, ..)]}
//   get_state(cfg): values {'n': 1, 'log': ['a']}, next ('ask',), tasks
//    (a: result {'n': 1, 'log': ['a']}, no interrupts;
//     ask: no result, interrupts (Interrupt(value={'q': 'ok?'}),))
//   stream(Command(resume="yes"), cfg, stream_mode=["values", "updates"]):
//    ('values', {'n': 0, 'log': []})
//    ('updates', {'a': {'n': 1, 'log': ['a']}, '__metadata__': {'cached': True}})
//    ('updates', {'ask': {'log': ['ask:yes']}})
//    ('values', {'n': 1, 'log': ['a', 'ask:yes']})
//    ('updates', {'c': {'log': ['c']}})
//    ('values', {'n': 1, 'log': ['a', 'ask:yes', 'c']})
//   a ran once in all.
//   The first run, streamed (`stream_mode=["values", "updates"]`):
//    ('values', {'n': 0, 'log': []})
//    ('updates', {'a': {'n': 1, 'log': ['a']}})
//    ('updates', {'__interrupt__': (Interrupt(value={'q': 'ok?'}, ..),)})
//    ('values', {'n': 0, 'log': [], '__interrupt__': (Interrupt(value={'q': 'ok?'}, ..),)})
//    ('values', {'n': 1, 'log': ['a']})
fn a_paused_steps_finished_sibling_shows_in_the_output_and_does_not_run_again() {
    let a_calls = Calls::default();
    let counted = a_calls.clone();
    let graph = StateGraph::<Count>::new()
        .add_node("a", move |s: &Count| {
            counted.hit();
            add_one(s)
        })
        .add_node(
            "ask",
            asks("ask", json!({"q": "ok?"}), Duration::from_millis(100)),
        )
        .add_node("c", |_: &Count| {
            CountUpdate::new().log(vec!["c".to_owned()])
        })
        .add_edge(START, "a")
        .add_edge(START, "ask")
        .add_edge("a", "c")
        .add_edge("ask", "c")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let start = || Input::Update(CountUpdate::new());
    let out = block_on(graph.run(start()).on_thread(&saver, "t")).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 1, "log": ["a"], "__interrupt__": [{"value": {"q": "ok?"}}]})
    );
    assert_eq!(out.next, ["ask"]);
    let now = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(
        (now.values.n, now.values.log.as_slice()),
        (1, &["a".to_owned()][..])
    );
    assert_eq!(now.next, ["ask"]);
    let tasks: Vec<_> = now
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.result.clone(), t.interrupts.len()))
        .collect();
    assert_eq!(
        tasks,
        [
            ("a", Some(json!({"n": 1, "log": ["a"]})), 0),
            ("ask", None, 1)
        ]
    );
    assert_eq!(now.interrupts, out.interrupts);

    let resume = Input::ResumeWith(Resume::value("yes"));
    let run = graph.run(resume).on_thread(&saver, "t");
    assert_eq!(
        as_langgraph(&collect(
            run.stream([StreamMode::Values, StreamMode::Updates])
        )),
        lines(vec![
            ("values", json!({"n": 0, "log": []})),
            (
                "updates",
                json!({"a": {"n": 1, "log": ["a"]}, "__metadata__": {"cached": true}})
            ),
            ("updates", json!({"ask": {"log": ["ask:yes"]}})),
            ("values", json!({"n": 1, "log": ["a", "ask:yes"]})),
            ("updates", json!({"c": {"log": ["c"]}})),
            ("values", json!({"n": 1, "log": ["a", "ask:yes", "c"]})),
        ])
    );
    assert_eq!(a_calls.get(), 1, "the finished sibling never ran again");

    let run = graph.run(start()).on_thread(&saver, "streamed");
    let asked = json!([{"value": {"q": "ok?"}}]);
    let events = collect(run.stream([StreamMode::Values, StreamMode::Updates]));
    assert_eq!(
        as_langgraph(&events),
        lines(vec![
            ("values", json!({"n": 0, "log": []})),
            ("updates", json!({"a": {"n": 1, "log": ["a"]}})),
            ("updates", json!({"__interrupt__": asked})),
            ("values", json!({"n": 0, "log": [], "__interrupt__": asked})),
            ("values", json!({"n": 1, "log": ["a"]})),
        ])
    );
    let Some(StreamEvent::End(out)) = events.last() else {
        panic!("the stream ends with End")
    };
    assert_eq!(
        (out.state.n, out.next.as_slice()),
        (1, &["ask".to_owned()][..])
    );
}

/// a_done (logs "a", counted), b_ask and c_ask (each asks, after 50 and
/// 150 ms), all after START.
fn done_and_two_asking(a_calls: Calls) -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a_done", move |_: &Count| {
            a_calls.hit();
            CountUpdate::new().log(vec!["a".to_owned()])
        })
        .add_node("b_ask", asks("b", json!("b?"), Duration::from_millis(50)))
        .add_node("c_ask", asks("c", json!("c?"), Duration::from_millis(150)))
        .add_edge(START, "a_done")
        .add_edge(START, "b_ask")
        .add_edge(START, "c_ask")
        .compile()
        .unwrap()
}

/// A snapshot's tasks as (id, finished, interrupts shown).
fn task_rows(s: &agent_state::graph::StateSnapshot<Count>) -> Vec<(String, bool, usize)> {
    s.tasks
        .iter()
        .map(|t| (t.id.clone(), t.result.is_some(), t.interrupts.len()))
        .collect()
}

fn task_row(id: &str, done: bool, asked: usize) -> (String, bool, usize) {
    (id.to_owned(), done, asked)
}

#[test]
// langgraph 1.2.22, a_done (log "a"), b_ask and c_ask (each
// `interrupt("<x>?")`, log "<x>:<answer>"), all after START:
//   invoke -> {'n': 0, 'log': ['a'], '__interrupt__': [Interrupt(value='b?'), Interrupt(value='c?')]}
//   get_state: values {'n': 0, 'log': ['a']}, next ('b_ask', 'c_ask')
//   stream(Command(resume={<b's id>: "yes"}), stream_mode=["values", "updates"]):
//    ('values', {'n': 0, 'log': []})
//    ('updates', {'a_done': {'log': ['a']}, '__metadata__': {'cached': True}})
//    ('updates', {'b_ask': {'log': ['b:yes']}})
//    ('updates', {'__interrupt__': (Interrupt(value='c?', id=<c's id>),)})
//    ('values', {'n': 0, 'log': [], '__interrupt__': (Interrupt(value='c?', ..),)})
//    ('values', {'n': 0, 'log': ['a', 'b:yes']})
//   get_state: values {'n': 0, 'log': ['a', 'b:yes']}, next ('c_ask',),
//    tasks a_done (result), b_ask (result, no interrupts: answered),
//    c_ask (its interrupt); the same checkpoint read by id (as
//    `get_state_history` does): values {'n': 0, 'log': []}, next
//    ('a_done', 'b_ask', 'c_ask'), b_ask showing its interrupt too.
//   invoke(Command(resume={<c's id>: "no"})) -> {'n': 0, 'log': ['a', 'b:yes', 'c:no']}
fn resuming_one_of_two_parallel_interrupts_keeps_both_finished_tasks() {
    let a_calls = Calls::default();
    let graph = done_and_two_asking(a_calls.clone());
    let saver = MemoryCheckpointer::new();
    let run = graph.run(Input::Update(CountUpdate::new()));
    let out = block_on(run.on_thread(&saver, "t")).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 0, "log": ["a"], "__interrupt__": [{"value": "b?"}, {"value": "c?"}]})
    );
    assert_eq!(out.next, ["b_ask", "c_ask"]);
    let (b, c) = (out.interrupts[0].id.clone(), out.interrupts[1].id.clone());

    let half = Input::ResumeWith(Resume::new().answer(&b, "yes"));
    let events = collect(
        graph
            .run(half)
            .on_thread(&saver, "t")
            .stream([StreamMode::Values, StreamMode::Updates]),
    );
    let asked = json!([{"value": "c?"}]);
    assert_eq!(
        as_langgraph(&events),
        lines(vec![
            ("values", json!({"n": 0, "log": []})),
            (
                "updates",
                json!({"a_done": {"log": ["a"]}, "__metadata__": {"cached": true}})
            ),
            ("updates", json!({"b_ask": {"log": ["b:yes"]}})),
            ("updates", json!({"__interrupt__": asked})),
            ("values", json!({"n": 0, "log": [], "__interrupt__": asked})),
            ("values", json!({"n": 0, "log": ["a", "b:yes"]})),
        ])
    );
    let Some(StreamEvent::End(half)) = events.last() else {
        panic!("the stream ends with End")
    };
    assert_eq!(half.next, ["c_ask"]);
    assert_eq!(half.state.log, ["a", "b:yes"]);
    assert_eq!(half.interrupts.len(), 1);
    assert_eq!(half.interrupts[0].id, c, "the unanswered one keeps its id");

    let now = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(
        (now.values.log.as_slice(), now.next.as_slice()),
        (
            &["a".to_owned(), "b:yes".to_owned()][..],
            &["c_ask".to_owned()][..]
        )
    );
    let (shown, row) = (task_rows, task_row);
    assert_eq!(
        shown(&now),
        [
            row("a_done", true, 0),
            row("b_ask", true, 0),
            row("c_ask", false, 1)
        ]
    );
    let head = now.checkpoint.as_ref().unwrap().id;
    let record = block_on(graph.get_state_at(&saver, "t", head)).unwrap();
    assert!(record.values.log.is_empty());
    assert_eq!(record.next, ["a_done", "b_ask", "c_ask"]);
    assert_eq!(
        shown(&record),
        [
            row("a_done", true, 0),
            row("b_ask", true, 1),
            row("c_ask", false, 1)
        ]
    );
    assert_eq!(record.interrupts.len(), 2);
    let history = block_on(graph.state_history(&saver, "t", 1)).unwrap();
    assert_eq!(history[0], record, "the history shows records");

    let rest = Input::ResumeWith(Resume::new().answer(&c, "no"));
    let done = block_on(graph.run(rest).on_thread(&saver, "t")).unwrap();
    assert_eq!(
        done.to_json(),
        json!({"n": 0, "log": ["a", "b:yes", "c:no"]})
    );
    assert_eq!(a_calls.get(), 1, "the finished task never ran again");
}

/// Sleeps `ms` milliseconds, then logs `entry`: a node finishing when the
/// Python run's did.
fn logs_after(entry: &'static str, ms: u64) -> impl Fn(&Count) -> CountUpdate {
    move |_| {
        std::thread::sleep(Duration::from_millis(ms));
        CountUpdate::new().log(vec![entry.to_owned()])
    }
}

/// a and b after START; a fans out `Send("w", 1)`, `Send("w", 2)`, b leads
/// to j (n = 5): the graph of the Python script quoted below, its nodes
/// finishing in the same order.
fn fan_out() -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", logs_after("a", 100))
        .add_node("b", logs_after("b", 0))
        .add_node("w", |Sent(arg): Sent<u32>| {
            std::thread::sleep(Duration::from_millis(u64::from(arg - 1) * 50));
            CountUpdate::new().log(vec![format!("w{arg}")])
        })
        .add_node("j", |_: &Count| {
            std::thread::sleep(Duration::from_millis(150));
            CountUpdate::new().n(5)
        })
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_conditional_edges("a", |_: &Count| {
            agent_state::graph::Next::send([1u32, 2].map(|n| agent_state::graph::Send::new("w", n)))
        })
        .add_edge("b", "j")
        .add_edge("w", END)
        .add_edge("j", END)
        .compile()
        .unwrap()
}

#[test]
fn updates_and_tasks_stream_each_task_as_it_finishes() {
    // langgraph 1.2.22, the graph of `fan_out` (a finishing last in its
    // step), `stream({"n": 0, "log": []}, cfg, stream_mode=["updates",
    // "values", "tasks"])` (task ids left out):
    //    ('values', {'n': 0, 'log': []})
    //    ('tasks', {'name': 'a', 'input': {'n': 0, 'log': []}, 'triggers': ('branch:to:a',)})
    //    ('tasks', {'name': 'b', 'input': {'n': 0, 'log': []}, 'triggers': ('branch:to:b',)})
    //    ('updates', {'b': {'log': ['b']}})
    //    ('tasks', {'name': 'b', 'error': None, 'result': {'log': ['b']}, 'interrupts': []})
    //    ('updates', {'a': {'log': ['a']}})
    //    ('tasks', {'name': 'a', 'error': None, 'result': {'log': ['a']}, 'interrupts': []})
    //    ('values', {'n': 0, 'log': ['a', 'b']})
    //    ('tasks', {'name': 'w', 'input': 1, 'triggers': ('__pregel_push',)})
    //    ('tasks', {'name': 'w', 'input': 2, 'triggers': ('__pregel_push',)})
    //    ('tasks', {'name': 'j', 'input': {'n': 0, 'log': ['a', 'b']}, 'triggers': ('branch:to:j',)})
    //    ('updates', {'w': {'log': ['w1']}})
    //    ('tasks', {'name': 'w', 'error': None, 'result': {'log': ['w1']}, 'interrupts': []})
    //    ('updates', {'w': {'log': ['w2']}})
    //    ('tasks', {'name': 'w', 'error': None, 'result': {'log': ['w2']}, 'interrupts': []})
    //    ('updates', {'j': {'n': 5}})
    //    ('tasks', {'name': 'j', 'error': None, 'result': {'n': 5}, 'interrupts': []})
    //    ('values', {'n': 5, 'log': ['a', 'b', 'w1', 'w2']})
    //   and without a checkpointer, `stream_mode="updates"`: the same five
    //   updates, in that order.
    let graph = fan_out();
    let saver = MemoryCheckpointer::new();
    let modes = [StreamMode::Updates, StreamMode::Values, StreamMode::Tasks];
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    let events = collect(run.stream(modes));
    let state = |n: u32, log: &[&str]| json!({"n": n, "log": log});
    let start = |name: &str, input: Value, trigger: &str| {
        (
            "tasks",
            json!({"name": name, "input": input, "triggers": [trigger]}),
        )
    };
    let result = |name: &str, result: Value| {
        (
            "tasks",
            json!({"name": name, "error": null, "result": result, "interrupts": []}),
        )
    };
    let updates = |name: &str, update: Value| ("updates", json!({ name: update }));
    let expected = vec![
        ("values", state(0, &[])),
        start("a", state(0, &[]), "branch:to:a"),
        start("b", state(0, &[]), "branch:to:b"),
        updates("b", json!({"log": ["b"]})),
        result("b", json!({"log": ["b"]})),
        updates("a", json!({"log": ["a"]})),
        result("a", json!({"log": ["a"]})),
        ("values", state(0, &["a", "b"])),
        start("w", json!(1), "__pregel_push"),
        start("w", json!(2), "__pregel_push"),
        start("j", state(0, &["a", "b"]), "branch:to:j"),
        updates("w", json!({"log": ["w1"]})),
        result("w", json!({"log": ["w1"]})),
        updates("w", json!({"log": ["w2"]})),
        result("w", json!({"log": ["w2"]})),
        updates("j", json!({"n": 5})),
        result("j", json!({"n": 5})),
        ("values", state(5, &["a", "b", "w1", "w2"])),
    ];
    assert_eq!(without_run_ids(&events), lines(expected));
    // Our task ids name the task: its node, or `node[k]` for a `Send`.
    let ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TaskStart { task, .. } => Some(task.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a", "b", "w[0]", "w[1]", "j"]);

    let events = collect(
        graph
            .run(Input::Update(CountUpdate::new()))
            .stream(StreamMode::Updates),
    );
    assert_eq!(
        as_langgraph(&events),
        lines(vec![
            updates("b", json!({"log": ["b"]})),
            updates("a", json!({"log": ["a"]})),
            updates("w", json!({"log": ["w1"]})),
            updates("w", json!({"log": ["w2"]})),
            updates("j", json!({"n": 5})),
        ])
    );
}

#[test]
fn a_task_that_writes_no_field_updates_with_null() {
    // langgraph 1.2.22, e returns {}, f `Command(goto="g")`, g {"n": 3};
    // `stream({"n": 0}, stream_mode=["tasks", "updates"])` (ids left out):
    //    ('tasks', {'name': 'e', 'input': {'n': 0}, 'triggers': ('branch:to:e',)})
    //    ('updates', {'e': None})
    //    ('tasks', {'name': 'e', 'error': None, 'result': {}, 'interrupts': []})
    //    ('tasks', {'name': 'f', 'input': {'n': 0}, 'triggers': ('branch:to:f',)})
    //    ('updates', {'f': None})
    //    ('tasks', {'name': 'f', 'error': None, 'result': {}, 'interrupts': []})
    //    ('tasks', {'name': 'g', 'input': {'n': 0}, 'triggers': ('branch:to:g',)})
    //    ('updates', {'g': {'n': 3}})
    //    ('tasks', {'name': 'g', 'error': None, 'result': {'n': 3}, 'interrupts': []})
    #[derive(AgentState, Debug, Clone, PartialEq)]
    struct N {
        n: u32,
    }
    let graph = StateGraph::<N>::new()
        .add_node("e", |_: &N| NUpdate::new())
        .add_node("f", |_: &N| Command::<NUpdate>::goto("g"))
        .add_node("g", |_: &N| NUpdate::new().n(3))
        .add_edge(START, "e")
        .add_edge("e", "f")
        .compile()
        .unwrap();
    let events = collect(
        graph
            .run(Input::Update(NUpdate::new()))
            .stream([StreamMode::Tasks, StreamMode::Updates]),
    );
    let mut expected = Vec::new();
    for (name, update) in [
        ("e", json!(null)),
        ("f", json!(null)),
        ("g", json!({"n": 3})),
    ] {
        let input = json!({"n": 0});
        let trigger = format!("branch:to:{name}");
        let result = if update.is_null() {
            json!({})
        } else {
            update.clone()
        };
        expected.extend([
            (
                "tasks",
                json!({"name": name, "input": input, "triggers": [trigger]}),
            ),
            ("updates", json!({ name: update })),
            (
                "tasks",
                json!({"name": name, "error": null, "result": result, "interrupts": []}),
            ),
        ]);
    }
    assert_eq!(without_run_ids(&events), lines(expected));
}

/// a (n + 1, log "a") -> ask (`interrupt("q?")`, log "ask:<answer>").
fn a_then_ask() -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("ask", asks("ask", json!("q?"), Duration::ZERO))
        .add_edge(START, "a")
        .add_edge("a", "ask")
        .compile()
        .unwrap()
}

/// A `Count` state as LangGraph's JSON.
fn count_state(n: u32, log: &[&str]) -> Value {
    json!({"n": n, "log": log})
}

/// LangGraph's `debug` checkpoint event on thread "1" (ids left out).
fn debug_checkpoint(
    step: i64,
    source: &str,
    values: Value,
    next: &[&str],
    tasks: Value,
) -> (&'static str, Value) {
    let config = json!({"configurable": {"checkpoint_ns": "", "thread_id": "1"}});
    let parent = if step == -1 {
        json!(null)
    } else {
        config.clone()
    };
    let metadata = json!({"source": source, "step": step, "parents": {}});
    let payload = json!({"config": config, "parent_config": parent, "values": values,
        "metadata": metadata, "next": next, "tasks": tasks});
    (
        "debug",
        json!({"step": step, "type": "checkpoint", "payload": payload}),
    )
}

/// A checkpoint's one pending task, as its `debug` payload lists it.
fn debug_pending(name: &str, interrupts: Value) -> Value {
    json!([{"name": name, "interrupts": interrupts, "state": null}])
}

/// LangGraph's `debug` event of a task starting.
fn debug_task(step: i64, name: &str, input: Value) -> (&'static str, Value) {
    let payload = json!({"name": name, "input": input, "triggers": [format!("branch:to:{name}")]});
    (
        "debug",
        json!({"step": step, "type": "task", "payload": payload}),
    )
}

/// LangGraph's `debug` event of a task's result.
fn debug_result(step: i64, name: &str, result: Value, interrupts: Value) -> (&'static str, Value) {
    let payload = json!({"name": name, "error": null, "result": result, "interrupts": interrupts});
    (
        "debug",
        json!({"step": step, "type": "task_result", "payload": payload}),
    )
}

#[test]
// langgraph 1.2.22, a (n + 1, log "a") -> ask (`interrupt("q?")`, log
// "ask:<answer>"), InMemorySaver, thread "1", `stream({"n": 0, "log":
// []}, cfg, stream_mode=["debug"])` (ids and timestamps left out; an
// interrupt as its value):
//    ('debug', {'step': -1, 'type': 'checkpoint', 'payload': {'config': {'configurable': {'checkpoint_ns': '', 'thread_id': '1'}}, 'parent_config': None, 'values': {'log': []}, 'metadata': {'source': 'input', 'step': -1, 'parents': {}}, 'next': ['__start__'], 'tasks': [{'name': '__start__', 'interrupts': (), 'state': None}]}})
//    ('debug', {'step': 0, 'type': 'checkpoint', 'payload': {'config': {..}, 'parent_config': {'configurable': {'checkpoint_ns': '', 'thread_id': '1'}}, 'values': {'n': 0, 'log': []}, 'metadata': {'source': 'loop', 'step': 0, 'parents': {}}, 'next': ['a'], 'tasks': [{'name': 'a', 'interrupts': (), 'state': None}]}})
//    ('debug', {'step': 1, 'type': 'task', 'payload': {'name': 'a', 'input': {'n': 0, 'log': []}, 'triggers': ('branch:to:a',)}})
//    ('debug', {'step': 1, 'type': 'task_result', 'payload': {'name': 'a', 'error': None, 'result': {'n': 1, 'log': ['a']}, 'interrupts': []}})
//    ('debug', {'step': 1, 'type': 'checkpoint', 'payload': {.., 'values': {'n': 1, 'log': ['a']}, 'metadata': {'source': 'loop', 'step': 1, 'parents': {}}, 'next': ['ask'], 'tasks': [{'name': 'ask', 'interrupts': (), 'state': None}]}})
//    ('debug', {'step': 2, 'type': 'task', 'payload': {'name': 'ask', 'input': {'n': 1, 'log': ['a']}, 'triggers': ('branch:to:ask',)}})
//    ('debug', {'step': 2, 'type': 'task_result', 'payload': {'name': 'ask', 'error': None, 'result': {}, 'interrupts': [{'value': 'q?'}]}})
//   then `stream(Command(resume="y"), cfg, stream_mode=["debug", "tasks"])`:
//    ('debug', {'step': 1, 'type': 'checkpoint', 'payload': {.., 'values': {'n': 1, 'log': ['a']}, 'metadata': {'source': 'loop', 'step': 1, 'parents': {}}, 'next': ['ask'], 'tasks': [{'name': 'ask', 'interrupts': ({'value': 'q?'},), 'state': None}]}})
//    ('tasks', {'name': 'ask', 'input': {'n': 1, 'log': ['a']}, 'triggers': ('branch:to:ask',)})
//    ('debug', {'step': 2, 'type': 'task', 'payload': {'name': 'ask', 'input': {'n': 1, 'log': ['a']}, 'triggers': ('branch:to:ask',)}})
//    ('tasks', {'name': 'ask', 'error': None, 'result': {'log': ['ask:y']}, 'interrupts': []})
//    ('debug', {'step': 2, 'type': 'task_result', 'payload': {'name': 'ask', 'error': None, 'result': {'log': ['ask:y']}, 'interrupts': []}})
//    ('debug', {'step': 2, 'type': 'checkpoint', 'payload': {.., 'values': {'n': 1, 'log': ['a', 'ask:y']}, 'metadata': {'source': 'loop', 'step': 2, 'parents': {}}, 'next': [], 'tasks': []}})
//   Without a checkpointer, only the four task events.
fn debug_mode_is_langgraphs_envelope_of_checkpoints_and_tasks() {
    let graph = a_then_ask();
    let saver = MemoryCheckpointer::new();
    let (checkpoint, pending) = (debug_checkpoint, debug_pending);
    let (task, result, state) = (debug_task, debug_result, count_state);
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "1");
    let events = collect(run.stream(StreamMode::Debug));
    assert_eq!(
        without_run_ids(&events),
        lines(vec![
            // Our state before the input is the default state, every field
            // set (a documented difference).
            checkpoint(
                -1,
                "input",
                state(0, &[]),
                &["__start__"],
                pending("__start__", json!([]))
            ),
            checkpoint(0, "loop", state(0, &[]), &["a"], pending("a", json!([]))),
            task(1, "a", state(0, &[])),
            result(1, "a", json!({"n": 1, "log": ["a"]}), json!([])),
            checkpoint(
                1,
                "loop",
                state(1, &["a"]),
                &["ask"],
                pending("ask", json!([]))
            ),
            task(2, "ask", state(1, &["a"])),
            result(2, "ask", json!({}), json!([{"value": "q?"}])),
        ])
    );
    let stamps: Vec<String> = events
        .iter()
        .filter(|e| e.name() == "debug")
        .map(|e| e.to_json()["timestamp"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        stamps
            .iter()
            .all(|t| t.len() >= 25 && t.ends_with("+00:00") && t.as_bytes()[10] == b'T'),
        "{stamps:?}"
    );
    let StreamEvent::Debug { event, .. } = &events[4] else {
        panic!("a debug event")
    };
    let StreamEvent::Checkpoint {
        checkpoint: meta, ..
    } = event.as_ref()
    else {
        panic!("a checkpoint")
    };
    let payload = events[4].to_json()["payload"].clone();
    assert_eq!(
        payload["config"]["configurable"]["checkpoint_id"],
        json!(meta.id)
    );
    assert_eq!(
        payload["parent_config"]["configurable"]["checkpoint_id"],
        json!(meta.parent)
    );
    assert_eq!(
        payload["tasks"][0]["id"], "ask",
        "our task ids name the task"
    );

    let resume = Input::ResumeWith(Resume::value("y"));
    let run = graph.run(resume).on_thread(&saver, "1");
    let events = collect(run.stream([StreamMode::Debug, StreamMode::Tasks]));
    let task_start =
        json!({"name": "ask", "input": state(1, &["a"]), "triggers": ["branch:to:ask"]});
    let done =
        json!({"name": "ask", "error": null, "result": {"log": ["ask:y"]}, "interrupts": []});
    assert_eq!(
        without_run_ids(&events),
        lines(vec![
            checkpoint(
                1,
                "loop",
                state(1, &["a"]),
                &["ask"],
                pending("ask", json!([{"value": "q?"}]))
            ),
            ("tasks", task_start),
            task(2, "ask", state(1, &["a"])),
            ("tasks", done),
            result(2, "ask", json!({"log": ["ask:y"]}), json!([])),
            checkpoint(2, "loop", state(1, &["a", "ask:y"]), &[], json!([])),
        ])
    );
}

#[test]
fn debug_mode_without_a_checkpointer_shows_the_task_events_alone() {
    // langgraph 1.2.22, the graph of the test above without a
    // checkpointer: only its four task events.
    let events = collect(
        a_then_ask()
            .run(Input::Update(CountUpdate::new()))
            .stream(StreamMode::Debug),
    );
    assert_eq!(
        without_run_ids(&events),
        lines(vec![
            debug_task(1, "a", count_state(0, &[])),
            debug_result(1, "a", json!({"n": 1, "log": ["a"]}), json!([])),
            debug_task(2, "ask", count_state(1, &["a"])),
            debug_result(2, "ask", json!({}), json!([{"value": "q?"}])),
        ])
    );
}

type Fails = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// A node that fails with "boom" after 50 ms while `fails` holds, else
/// logs "bad".
fn bad(fails: &Fails) -> impl Fn(&Count) -> Result<CountUpdate, BoxError> + Send + Sync + 'static {
    let fails = std::sync::Arc::clone(fails);
    move |_: &Count| {
        std::thread::sleep(Duration::from_millis(50));
        match fails.load(std::sync::atomic::Ordering::SeqCst) {
            true => Err("boom".into()),
            false => Ok(CountUpdate::new().log(vec!["bad".to_owned()])),
        }
    }
}

#[test]
// langgraph 1.2.22, a (n + 1, log "a") and bad (raises
// `ValueError("boom")`) after START; `stream({"n": 0, "log": []}, cfg,
// stream_mode=["tasks", "updates"])` (ids left out):
//    ('tasks', {'name': 'a', 'input': {'n': 0, 'log': []}, 'triggers': ('branch:to:a',)})
//    ('tasks', {'name': 'bad', 'input': {'n': 0, 'log': []}, 'triggers': ('branch:to:bad',)})
//    ('updates', {'a': {'n': 1, 'log': ['a']}})
//    ('tasks', {'name': 'a', 'error': None, 'result': {'n': 1, 'log': ['a']}, 'interrupts': []})
//    ('tasks', {'name': 'bad', 'error': ValueError('boom'), 'result': {}, 'interrupts': []})
//   then raises ValueError('boom'); get_state(cfg): values {'n': 1,
//   'log': ['a']}, next ('bad',), tasks (a: result {'n': 1, 'log':
//   ['a']}, bad: error "ValueError('boom')"), interrupts ().
//   A graph of bad alone: get_state shows next ('bad',) and its error;
//   once bad succeeds, that checkpoint (read by id) still shows it.
// Our error is the node's error's text ("boom"); Python's, its repr.
fn a_failed_tasks_error_shows_in_the_snapshot_beside_its_siblings_writes() {
    let fails = Fails::new(true.into());
    let graph = StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("bad", bad(&fails))
        .add_edge(START, "a")
        .add_edge(START, "bad")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    let events: Vec<_> = block_on(
        run.stream([StreamMode::Tasks, StreamMode::Updates])
            .collect::<Vec<_>>(),
    );
    let Some(Err(GraphError::Node { node, .. })) = events.last() else {
        panic!("the run fails")
    };
    assert_eq!(node, "bad");
    let events: Vec<_> = events.into_iter().filter_map(Result::ok).collect();
    let state = json!({"n": 0, "log": []});
    let start = |name: &str| {
        (
            "tasks",
            json!({"name": name, "input": state, "triggers": [format!("branch:to:{name}")]}),
        )
    };
    assert_eq!(
        without_run_ids(&events),
        lines(vec![
            start("a"),
            start("bad"),
            ("updates", json!({"a": {"n": 1, "log": ["a"]}})),
            (
                "tasks",
                json!({"name": "a", "error": null, "result": {"n": 1, "log": ["a"]}, "interrupts": []})
            ),
            (
                "tasks",
                json!({"name": "bad", "error": "boom", "result": {}, "interrupts": []})
            ),
        ])
    );
    let now = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(
        (now.values.n, now.values.log.as_slice()),
        (1, &["a".to_owned()][..])
    );
    assert_eq!(now.next, ["bad"]);
    let tasks: Vec<_> = now
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.error.as_deref(), t.result.clone()))
        .collect();
    assert_eq!(
        tasks,
        [
            ("a", None, Some(json!({"n": 1, "log": ["a"]}))),
            ("bad", Some("boom"), None)
        ]
    );
    assert!(now.interrupts.is_empty());
}

/// A lone failing task's error stays with the checkpoint its step started
/// from, under `Sync` and under `Exit` durability, and is gone once it
/// succeeds.
#[test]
fn a_lone_failed_tasks_error_is_kept_with_its_checkpoint() {
    let saver = MemoryCheckpointer::new();
    let fails = Fails::new(true.into());
    let alone = StateGraph::<Count>::new()
        .add_node("bad", bad(&fails))
        .add_edge(START, "bad")
        .compile()
        .unwrap();
    let run = alone
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "alone");
    assert!(block_on(run).is_err());
    let now = block_on(alone.get_state(&saver, "alone")).unwrap();
    assert_eq!(now.next, ["bad"]);
    assert_eq!(now.tasks[0].error.as_deref(), Some("boom"));
    let failed_at = now.checkpoint.unwrap().id;
    fails.store(false, std::sync::atomic::Ordering::SeqCst);
    let out = block_on(alone.run(Input::Resume).on_thread(&saver, "alone")).unwrap();
    assert_eq!(out.state.log, ["bad"]);
    assert!(block_on(alone.get_state(&saver, "alone"))
        .unwrap()
        .tasks
        .is_empty());
    let then = block_on(alone.get_state_at(&saver, "alone", failed_at)).unwrap();
    assert_eq!(then.tasks[0].error.as_deref(), Some("boom"));

    // Stored only at the end (`durability="exit"`): the error is kept with
    // the checkpoint the run stores as it fails.
    fails.store(true, std::sync::atomic::Ordering::SeqCst);
    let run = alone.run(Input::Update(CountUpdate::new()));
    let run = run.on_thread(&saver, "exit").durability(Durability::Exit);
    assert!(block_on(run).is_err());
    let now = block_on(alone.get_state(&saver, "exit")).unwrap();
    assert_eq!(
        (now.next.as_slice(), now.tasks[0].error.as_deref()),
        (&["bad".to_owned()][..], Some("boom"))
    );
}

/// `inc` (n + 1, counting its calls) in a loop that never ends.
fn endless(limit: usize, calls: &Calls) -> Graph<Count> {
    let calls = calls.clone();
    StateGraph::<Count>::new()
        .add_node("inc", move |s: &Count| {
            calls.hit();
            CountUpdate::new().n(s.n + 1)
        })
        .add_edge(START, "inc")
        .add_edge("inc", "inc")
        .with_recursion_limit(limit)
        .compile()
        .unwrap()
}

#[test]
fn the_recursion_limit_runs_as_many_node_steps_as_langgraphs() {
    // langgraph 1.2.22, inc (n + 1) looping, `recursion_limit` n:
    //   invoke({"n": 0}) runs inc n times (n = 1, 2, 3), then raises
    //   GraphRecursionError("Recursion limit of n reached without hitting a
    //   stop condition. .."); every step is stored: the history is steps
    //   n .. 0 (loop) and -1 (input), the head {'n': n} with next ('inc',);
    //   the stream (values, updates, checkpoints) has each step's events,
    //   the last checkpoint step n's. Without a checkpointer, n calls too.
    //   invoke(None) on that thread then runs inc n + 2 times more before
    //   raising (LangGraph's limit counts from the step the run starts at:
    //   a run from an input spends two step numbers on its input).
    for limit in [1usize, 2, 3] {
        let calls = Calls::default();
        let graph = endless(limit, &calls);
        let saver = MemoryCheckpointer::new();
        let run = graph
            .run(Input::Update(CountUpdate::new()))
            .on_thread(&saver, "t");
        let events = block_on(run.stream(StreamMode::Checkpoints).collect::<Vec<_>>());
        let Some(Err(error)) = events.last() else {
            panic!("the run fails")
        };
        assert!(
            matches!(error, GraphError::RecursionLimit { limit: l, next } if *l == limit && next == &["inc"]),
            "{error}"
        );
        assert_eq!(calls.get(), limit);
        let steps: Vec<i64> = events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::Checkpoint { checkpoint, .. }) => Some(checkpoint.step),
                _ => None,
            })
            .collect();
        let all: Vec<i64> = (-1..=limit as i64).collect();
        assert_eq!(steps, all, "limit {limit}");
        let history = block_on(graph.state_history(&saver, "t", 100)).unwrap();
        let stored: Vec<i64> = history
            .iter()
            .rev()
            .map(|s| s.checkpoint.as_ref().unwrap().step)
            .collect();
        assert_eq!(stored, all);
        let now = block_on(graph.get_state(&saver, "t")).unwrap();
        assert_eq!(
            (now.values.n as usize, now.next.as_slice()),
            (limit, &["inc".to_owned()][..])
        );

        let again = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap_err();
        assert!(
            matches!(again, GraphError::RecursionLimit { .. }),
            "{again}"
        );
        assert_eq!(calls.get(), limit + limit + 2, "limit {limit}, resumed");

        let plain = Calls::default();
        let error =
            block_on(endless(limit, &plain).run(Input::Update(CountUpdate::new()))).unwrap_err();
        assert!(
            matches!(error, GraphError::RecursionLimit { .. }),
            "{error}"
        );
        assert_eq!(plain.get(), limit, "limit {limit}, no checkpointer");
    }
}

#[test]
fn a_conflicting_paused_step_fails_as_langgraphs_does() {
    // langgraph 1.2.22, a ({"n": 1}), b ({"n": 2}) and ask (interrupts)
    // after START, `stream(.., stream_mode=["values", "updates"])`:
    //    ('values', {'n': 0, 'log': []})
    //    ('updates', {'a': {'n': 1}})
    //    ('updates', {'__interrupt__': (Interrupt(value='q?', ..),)})
    //    ('values', {'n': 0, 'log': [], '__interrupt__': (Interrupt(value='q?', ..),)})
    //    ('updates', {'b': {'n': 2}})
    //   then raises InvalidUpdateError("At key 'n': Can receive only one
    //   value per step. .."), and so does `get_state(cfg)`.
    //   Without a checkpointer, a ({"n": 1, "log": ["a"]}) beside ask:
    //   invoke -> {'n': 1, 'log': ['a'], '__interrupt__': [Interrupt(value='q?', ..)]}
    let graph = StateGraph::<Count>::new()
        .add_node("a", |_: &Count| CountUpdate::new().n(1))
        .add_node("b", |_: &Count| {
            std::thread::sleep(Duration::from_millis(150));
            CountUpdate::new().n(2)
        })
        .add_node("ask", asks("ask", json!("q?"), Duration::from_millis(50)))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let run = graph
        .run(Input::Update(CountUpdate::new()))
        .on_thread(&saver, "t");
    let modes = [StreamMode::Values, StreamMode::Updates];
    let events = block_on(run.stream(modes).collect::<Vec<_>>());
    let Some(Err(GraphError::InvalidUpdate { nodes, error, .. })) = events.last() else {
        panic!("the run fails: {:?}", events.last())
    };
    assert_eq!(nodes, &["a", "b"]);
    assert!(error.to_string().contains("`n`"), "{error}");
    let events: Vec<_> = events.into_iter().filter_map(Result::ok).collect();
    let asked = json!([{"value": "q?"}]);
    assert_eq!(
        as_langgraph(&events),
        lines(vec![
            ("values", json!({"n": 0, "log": []})),
            ("updates", json!({"a": {"n": 1}})),
            ("updates", json!({"__interrupt__": asked})),
            ("values", json!({"n": 0, "log": [], "__interrupt__": asked})),
            ("updates", json!({"b": {"n": 2}})),
        ])
    );
    let error = block_on(graph.get_state(&saver, "t")).unwrap_err();
    assert!(matches!(error, GraphError::InvalidUpdate { .. }), "{error}");

    let graph = StateGraph::<Count>::new()
        .add_node("a", add_one)
        .add_node("ask", asks("ask", json!("q?"), Duration::ZERO))
        .add_edge(START, "a")
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let out = block_on(graph.run(Input::Update(CountUpdate::new()))).unwrap();
    assert_eq!(
        without_ids(out.to_json()),
        json!({"n": 1, "log": ["a"], "__interrupt__": [{"value": "q?"}]})
    );
    assert_eq!(out.next, ["ask"]);
}
