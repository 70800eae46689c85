//! LangGraph's behaviour, case by case, where our runtime once differed:
//! what a stream and a run show when a node interrupts, whole messages a
//! node returns in `messages` mode, a run continuing after
//! `update_state(.., as_node)`, and the step numbers a run reports. Each
//! test quotes what langgraph 1.2.22 printed for the same graph.

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::futures::StreamExt;
use agent_state::graph::Command;
use agent_state::graph::{
    BoxError, Graph, GraphState, Input, NodeContext, Resume, RunStream, StateGraph, StreamEvent,
    StreamMode, END, START,
};
use agent_state::{ai, human, AgentState, MessageChunk, Messages};
use serde_json::{json, Value};

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

/// a → b (interrupts) → c, as in the Python script quoted below.
fn a_b_c() -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", |s: &Count| {
            CountUpdate::new().n(s.n + 1).log(vec!["a".to_owned()])
        })
        .add_context_node("b", ask)
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
    fn asking(
        question: &'static str,
    ) -> impl Fn(&Count, &NodeContext) -> Result<CountUpdate, BoxError> {
        move |_, ctx| {
            let answer: String = ctx.interrupt(question)?;
            Ok(CountUpdate::new().log(vec![answer]))
        }
    }
    let graph = StateGraph::<Count>::new()
        .add_context_node("p", asking("p?"))
        .add_context_node("q", asking("q?"))
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
        .add_node("a", |s: &Count| {
            CountUpdate::new().n(s.n + 1).log(vec!["a".to_owned()])
        })
        .add_node("b", |_: &Count| {
            CountUpdate::new().log(vec!["b".to_owned()])
        })
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

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[reducer(messages)]
    messages: Messages,
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

fn chat_graph() -> Graph<Chat> {
    let nodes: [(&str, fn(&Chat) -> ChatUpdate); 4] = [
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
        .add_context_node("streamed", streamed)
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
    // (LangGraph numbers the first node's step 1, we 0: see
    // `on_step_reports_the_steps_the_thread_stores`.)
    let graph = chat_graph();
    let saver = MemoryCheckpointer::new();
    let input = Input::Update(ChatUpdate::new().message(human("hi").with_id("in1")));
    let run = graph.run(input).on_thread(&saver, "m");
    let events = collect(run.stream(StreamMode::Messages));
    let StreamEvent::End(out) = events.last().unwrap() else {
        panic!("the stream ends with End")
    };
    let no_id = out.state.messages[4].id.clone().unwrap();
    let got: Vec<Value> = events
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
        .collect();
    assert_eq!(
        got,
        [
            json!(["AIMessageChunk", "hello", "m1", "streamed", 0]),
            json!(["AIMessageChunk", " ", "m1", "streamed", 0]),
            json!(["AIMessageChunk", "there", "m1", "streamed", 0]),
            json!(["ai", "returned", "r1", "plain", 1]),
            json!(["human", "h", "h1", "plain", 1]),
            json!(["ai", "no id", no_id, "noid", 3]),
            json!(["ai", "via command", "c1", "cmd", 5]),
        ]
    );
    // The returned message is handed out whole as well.
    let whole = events.iter().find_map(|e| match e {
        StreamEvent::Message(m) if m.node == "plain" => m.message.clone(),
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
