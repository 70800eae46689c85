//! Subgraphs seen from their parent: a subgraph's events in the parent's
//! stream under its namespace (LangGraph's `stream(.., subgraphs=True)`),
//! and a paused subgraph's own snapshot under its parent's task
//! (`get_state(config, subgraphs=True)`). Each test quotes what
//! langgraph 1.2.22 printed for the same graphs, written in Python with
//! `class S(TypedDict): n: int; last: str` for both parent and child (ours
//! flatten the child's state `Work` into the parent's `Desk`, whose JSON
//! is the same). LangGraph's task ids are hashes, ours the task's name:
//! both are compared as `<id>`, and interrupts by their values.

use agent_state::base::{MessagesState, MessagesStateUpdate};
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::futures::StreamExt;
use agent_state::graph::{
    BoxError, Graph, GraphState, Input, NodeContext, Resume, RunStream, StateGraph, StreamEvent,
    StreamMode, END, START,
};
use agent_state::{ai, AgentState, MessageChunk};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Work {
    n: u32,
    last: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Desk {
    #[state(flatten)]
    work: Work,
}

/// `n + 1`, `last` the node's name.
fn count(s: &Work, name: &str) -> WorkUpdate {
    WorkUpdate::new().n(s.n + 1).last(name.to_owned())
}

fn last(name: &str) -> WorkUpdate {
    WorkUpdate::new().last(name.to_owned())
}

/// c1 (writes `{"in": "c1"}` to the stream, counts) → c2.
fn child() -> Graph<Work> {
    StateGraph::<Work>::new()
        .add_node("c1", |s: &Work, ctx: &NodeContext| {
            ctx.writer().write(json!({"in": "c1"})).unwrap();
            count(s, "c1")
        })
        .add_node("c2", |_: &Work| last("c2"))
        .add_edge(START, "c1")
        .add_edge("c1", "c2")
        .add_edge("c2", END)
        .compile()
        .unwrap()
}

/// c1 (counts) → ask (interrupts, then writes `ask:<answer>`).
fn asking_child() -> Graph<Work> {
    StateGraph::<Work>::new()
        .add_node("c1", |s: &Work| count(s, "c1"))
        .add_node("ask", ask)
        .add_edge(START, "c1")
        .add_edge("c1", "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap()
}

fn ask(_: &Work, ctx: &NodeContext) -> Result<WorkUpdate, BoxError> {
    let answer: String = ctx.interrupt(json!({"q": "ok?"}))?;
    Ok(last(&format!("ask:{answer}")))
}

/// a (counts) → `child` → b.
fn around(child: Graph<Work>) -> Graph<Desk> {
    StateGraph::<Desk>::new()
        .add_node("a", |s: &Desk| Desk::lift(count(&s.work, "a")))
        .add_node("child", child)
        .add_node("b", |_: &Desk| Desk::lift(last("b")))
        .add_edge(START, "a")
        .add_edge("a", "child")
        .add_edge("child", "b")
        .add_edge("b", END)
        .compile()
        .unwrap()
}

fn start() -> Input<Desk> {
    Input::Update(DeskUpdate::new())
}

fn collect<S: GraphState>(stream: RunStream<'_, S>) -> Vec<StreamEvent<S>> {
    block_on(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|e| e.expect("the run succeeds"))
        .collect()
}

/// One event as LangGraph's `(namespace, mode, chunk)`.
type Event = (Vec<String>, String, Value);

/// Each event but the last (`End`) as LangGraph's `(namespace, mode,
/// chunk)`, ids normalised: `node:<id>` in the namespace, `<id>` for a
/// task's, interrupts by their values, `debug` without its timestamp.
fn as_langgraph<S: GraphState>(events: &[StreamEvent<S>]) -> Vec<Event> {
    assert!(matches!(events.last(), Some(StreamEvent::End(_))));
    events[..events.len() - 1]
        .iter()
        .map(|e| {
            let namespace = e
                .namespace()
                .iter()
                .map(|entry| {
                    let (node, _task) = entry.split_once(':').expect("`node:task`");
                    format!("{node}:<id>")
                })
                .collect();
            let mut payload = e.to_json();
            normalise(&mut payload);
            (namespace, e.name().to_owned(), payload)
        })
        .collect()
}

fn normalise(payload: &mut Value) {
    let Some(map) = payload.as_object_mut() else {
        return;
    };
    map.remove("timestamp");
    if map.contains_key("name") && map.contains_key("id") {
        map.insert("id".to_owned(), json!("<id>"));
    }
    for key in ["__interrupt__", "interrupts"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            for interrupt in list {
                *interrupt = json!({"value": interrupt["value"]});
            }
        }
    }
    if let Some(inner) = map.get_mut("payload") {
        normalise(inner);
    }
}

/// An expected event: `namespace` names the nodes, outermost first.
fn ev(namespace: &[&str], mode: &str, payload: Value) -> Event {
    let namespace = namespace.iter().map(|n| format!("{n}:<id>")).collect();
    (namespace, mode.to_owned(), payload)
}

/// A task starting: its `tasks` event, then its `debug` one.
fn started(namespace: &[&str], step: i64, name: &str, input: Value) -> [Event; 2] {
    let payload = json!({"id": "<id>", "name": name, "input": input, "triggers": [format!("branch:to:{name}")]});
    [
        ev(namespace, "tasks", payload.clone()),
        ev(
            namespace,
            "debug",
            json!({"step": step, "type": "task", "payload": payload}),
        ),
    ]
}

/// A task ending with `result`: its `tasks` event, then its `debug` one.
fn ended(namespace: &[&str], step: i64, name: &str, result: Value) -> [Event; 2] {
    let payload =
        json!({"id": "<id>", "name": name, "error": null, "result": result, "interrupts": []});
    [
        ev(namespace, "tasks", payload.clone()),
        ev(
            namespace,
            "debug",
            json!({"step": step, "type": "task_result", "payload": payload}),
        ),
    ]
}

fn state(n: u32, last: &str) -> Value {
    json!({"n": n, "last": last})
}

#[test]
fn a_subgraphs_events_reach_the_parents_stream_under_its_namespace_in_every_mode() {
    // langgraph 1.2.22, a → child (c1 → c2) → b, no checkpointer,
    // `stream({"n": 0, "last": ""}, stream_mode=["values", "updates",
    // "custom", "tasks", "debug"], subgraphs=True)` (timestamps left out):
    //   ((), 'values', {'n': 0, 'last': ''})
    //   ((), 'tasks', {'id': 'e610..', 'name': 'a', 'input': {'n': 0, 'last': ''}, 'triggers': ('branch:to:a',)})
    //   ((), 'debug', {'step': 1, 'type': 'task', 'payload': {'id': 'e610..', 'name': 'a', 'input': {'n': 0, 'last': ''}, 'triggers': ('branch:to:a',)}})
    //   ((), 'updates', {'a': {'n': 1, 'last': 'a'}})
    //   ((), 'tasks', {'id': 'e610..', 'name': 'a', 'error': None, 'result': {'n': 1, 'last': 'a'}, 'interrupts': []})
    //   ((), 'debug', {'step': 1, 'type': 'task_result', 'payload': {'id': 'e610..', 'name': 'a', 'error': None, 'result': {'n': 1, 'last': 'a'}, 'interrupts': []}})
    //   ((), 'values', {'n': 1, 'last': 'a'})
    //   ((), 'tasks', {'id': '85e9..', 'name': 'child', 'input': {'n': 1, 'last': 'a'}, 'triggers': ('branch:to:child',)})
    //   ((), 'debug', {'step': 2, 'type': 'task', 'payload': {'id': '85e9..', 'name': 'child', 'input': {'n': 1, 'last': 'a'}, 'triggers': ('branch:to:child',)}})
    //   (('child:85e9..',), 'values', {'n': 1, 'last': 'a'})
    //   (('child:85e9..',), 'tasks', {'id': '8861..', 'name': 'c1', 'input': {'n': 1, 'last': 'a'}, 'triggers': ('branch:to:c1',)})
    //   (('child:85e9..',), 'debug', {'step': 1, 'type': 'task', 'payload': {'id': '8861..', 'name': 'c1', 'input': {'n': 1, 'last': 'a'}, 'triggers': ('branch:to:c1',)}})
    //   (('child:85e9..',), 'custom', {'in': 'c1'})
    //   (('child:85e9..',), 'updates', {'c1': {'n': 2, 'last': 'c1'}})
    //   (('child:85e9..',), 'tasks', {'id': '8861..', 'name': 'c1', 'error': None, 'result': {'n': 2, 'last': 'c1'}, 'interrupts': []})
    //   (('child:85e9..',), 'debug', {'step': 1, 'type': 'task_result', 'payload': {'id': '8861..', 'name': 'c1', 'error': None, 'result': {'n': 2, 'last': 'c1'}, 'interrupts': []}})
    //   (('child:85e9..',), 'values', {'n': 2, 'last': 'c1'})
    //   (('child:85e9..',), 'tasks', {'id': '2054..', 'name': 'c2', 'input': {'n': 2, 'last': 'c1'}, 'triggers': ('branch:to:c2',)})
    //   (('child:85e9..',), 'debug', {'step': 2, 'type': 'task', 'payload': {'id': '2054..', 'name': 'c2', 'input': {'n': 2, 'last': 'c1'}, 'triggers': ('branch:to:c2',)}})
    //   (('child:85e9..',), 'updates', {'c2': {'last': 'c2'}})
    //   (('child:85e9..',), 'tasks', {'id': '2054..', 'name': 'c2', 'error': None, 'result': {'last': 'c2'}, 'interrupts': []})
    //   (('child:85e9..',), 'debug', {'step': 2, 'type': 'task_result', 'payload': {'id': '2054..', 'name': 'c2', 'error': None, 'result': {'last': 'c2'}, 'interrupts': []}})
    //   (('child:85e9..',), 'values', {'n': 2, 'last': 'c2'})
    //   ((), 'updates', {'child': {'n': 2, 'last': 'c2'}})
    //   ((), 'tasks', {'id': '85e9..', 'name': 'child', 'error': None, 'result': {'n': 2, 'last': 'c2'}, 'interrupts': []})
    //   ((), 'debug', {'step': 2, 'type': 'task_result', 'payload': {'id': '85e9..', 'name': 'child', 'error': None, 'result': {'n': 2, 'last': 'c2'}, 'interrupts': []}})
    //   ((), 'values', {'n': 2, 'last': 'c2'})
    //   ((), 'tasks', {'id': '766f..', 'name': 'b', 'input': {'n': 2, 'last': 'c2'}, 'triggers': ('branch:to:b',)})
    //   ((), 'debug', {'step': 3, 'type': 'task', 'payload': {'id': '766f..', 'name': 'b', 'input': {'n': 2, 'last': 'c2'}, 'triggers': ('branch:to:b',)}})
    //   ((), 'updates', {'b': {'last': 'b'}})
    //   ((), 'tasks', {'id': '766f..', 'name': 'b', 'error': None, 'result': {'last': 'b'}, 'interrupts': []})
    //   ((), 'debug', {'step': 3, 'type': 'task_result', 'payload': {'id': '766f..', 'name': 'b', 'error': None, 'result': {'last': 'b'}, 'interrupts': []}})
    //   ((), 'values', {'n': 2, 'last': 'b'})
    let modes = [
        StreamMode::Values,
        StreamMode::Updates,
        StreamMode::Custom,
        StreamMode::Tasks,
        StreamMode::Debug,
    ];
    let graph = around(child());
    let events = collect(graph.run(start()).stream(modes).subgraphs(true));
    let (root, sub): (&[&str], &[&str]) = (&[], &["child"]);
    let mut expected = vec![ev(root, "values", state(0, ""))];
    expected.extend(started(root, 1, "a", state(0, "")));
    expected.push(ev(root, "updates", json!({"a": state(1, "a")})));
    expected.extend(ended(root, 1, "a", state(1, "a")));
    expected.push(ev(root, "values", state(1, "a")));
    expected.extend(started(root, 2, "child", state(1, "a")));
    expected.push(ev(sub, "values", state(1, "a")));
    expected.extend(started(sub, 1, "c1", state(1, "a")));
    expected.push(ev(sub, "custom", json!({"in": "c1"})));
    expected.push(ev(sub, "updates", json!({"c1": state(2, "c1")})));
    expected.extend(ended(sub, 1, "c1", state(2, "c1")));
    expected.push(ev(sub, "values", state(2, "c1")));
    expected.extend(started(sub, 2, "c2", state(2, "c1")));
    expected.push(ev(sub, "updates", json!({"c2": {"last": "c2"}})));
    expected.extend(ended(sub, 2, "c2", json!({"last": "c2"})));
    expected.push(ev(sub, "values", state(2, "c2")));
    expected.push(ev(root, "updates", json!({"child": state(2, "c2")})));
    expected.extend(ended(root, 2, "child", state(2, "c2")));
    expected.push(ev(root, "values", state(2, "c2")));
    expected.extend(started(root, 3, "b", state(2, "c2")));
    expected.push(ev(root, "updates", json!({"b": {"last": "b"}})));
    expected.extend(ended(root, 3, "b", json!({"last": "b"})));
    expected.push(ev(root, "values", state(2, "b")));
    assert_eq!(as_langgraph(&events), expected);

    // The namespace names the parent's task, `node:task`: the SSE name
    // LangGraph's server gives the event.
    let custom = events.iter().find(|e| e.name() == "custom").unwrap();
    assert_eq!(custom.namespace(), ["child:child"]);
    assert_eq!(custom.sse_name(), "custom|child:child");
    let StreamEvent::Subgraph(sub) = custom else {
        panic!("a subgraph's event")
    };
    // The child's event itself, typed by the child's state.
    let Some(StreamEvent::Custom(written)) = sub.event::<Work>() else {
        panic!("the child's custom event")
    };
    assert_eq!((written.node.as_str(), written.step), ("c1", 1));
    assert!(sub.event::<Desk>().is_none());
}

#[test]
fn without_subgraphs_the_stream_is_the_parents_alone() {
    // langgraph 1.2.22, the same graph, `stream(.., stream_mode=["values",
    // "updates", "custom"])` (no `subgraphs`):
    //   ('values', {'n': 0, 'last': ''})
    //   ('updates', {'a': {'n': 1, 'last': 'a'}})
    //   ('values', {'n': 1, 'last': 'a'})
    //   ('updates', {'child': {'n': 2, 'last': 'c2'}})
    //   ('values', {'n': 2, 'last': 'c2'})
    //   ('updates', {'b': {'last': 'b'}})
    //   ('values', {'n': 2, 'last': 'b'})
    // The child's custom write is not streamed.
    let modes = [StreamMode::Values, StreamMode::Updates, StreamMode::Custom];
    let graph = around(child());
    let expected = vec![
        ev(&[], "values", state(0, "")),
        ev(&[], "updates", json!({"a": state(1, "a")})),
        ev(&[], "values", state(1, "a")),
        ev(&[], "updates", json!({"child": state(2, "c2")})),
        ev(&[], "values", state(2, "c2")),
        ev(&[], "updates", json!({"b": {"last": "b"}})),
        ev(&[], "values", state(2, "b")),
    ];
    let plain = collect(graph.run(start()).stream(modes));
    assert_eq!(as_langgraph(&plain), expected);
    let off = collect(graph.run(start()).stream(modes).subgraphs(false));
    assert_eq!(as_langgraph(&off), expected);
    assert!(plain.iter().all(|e| e.sse_name() == e.name()));
}

#[test]
fn a_subgraphs_checkpoints_stream_under_its_namespace() {
    // langgraph 1.2.22, the same graph on a thread, `stream(..,
    // stream_mode=["checkpoints", "updates"], subgraphs=True)`, each
    // checkpoint as (namespace, source, step, next):
    //   ((), input, -1, ['__start__'])
    //   ((), loop, 0, ['a'])
    //   ((), 'updates', {'a': {'n': 1, 'last': 'a'}})
    //   ((), loop, 1, ['child'])
    //   (('child:4619..',), input, -1, ['__start__'])
    //   (('child:4619..',), loop, 0, ['c1'])
    //   (('child:4619..',), 'updates', {'c1': {'n': 2, 'last': 'c1'}})
    //   (('child:4619..',), loop, 1, ['c2'])
    //   (('child:4619..',), 'updates', {'c2': {'last': 'c2'}})
    //   (('child:4619..',), loop, 2, [])
    //   ((), 'updates', {'child': {'n': 2, 'last': 'c2'}})
    //   ((), loop, 2, ['b'])
    //   ((), 'updates', {'b': {'last': 'b'}})
    //   ((), loop, 3, [])
    // (The child's checkpoints are on the parent's thread under the
    // namespace in LangGraph; ours on the child's thread `t|child/2`.)
    let graph = around(child());
    let saver = MemoryCheckpointer::new();
    let run = graph.run(start()).on_thread(&saver, "t");
    let modes = [StreamMode::Checkpoints, StreamMode::Updates];
    let events = collect(run.stream(modes).subgraphs(true));
    let seen: Vec<Event> = as_langgraph(&events)
        .into_iter()
        .map(|(namespace, mode, payload)| match mode.as_str() {
            "checkpoints" => {
                let brief = json!([payload["source"], payload["step"], payload["next"]]);
                (namespace, mode, brief)
            }
            _ => (namespace, mode, payload),
        })
        .collect();
    let (root, sub): (&[&str], &[&str]) = (&[], &["child"]);
    let checkpoint =
        |ns, source, step, next: &[&str]| ev(ns, "checkpoints", json!([source, step, next]));
    assert_eq!(
        seen,
        [
            checkpoint(root, "input", -1, &["__start__"]),
            checkpoint(root, "loop", 0, &["a"]),
            ev(root, "updates", json!({"a": state(1, "a")})),
            checkpoint(root, "loop", 1, &["child"]),
            checkpoint(sub, "input", -1, &["__start__"]),
            checkpoint(sub, "loop", 0, &["c1"]),
            ev(sub, "updates", json!({"c1": state(2, "c1")})),
            checkpoint(sub, "loop", 1, &["c2"]),
            ev(sub, "updates", json!({"c2": {"last": "c2"}})),
            checkpoint(sub, "loop", 2, &[]),
            ev(root, "updates", json!({"child": state(2, "c2")})),
            checkpoint(root, "loop", 2, &["b"]),
            ev(root, "updates", json!({"b": {"last": "b"}})),
            checkpoint(root, "loop", 3, &[]),
        ]
    );
    let Some(StreamEvent::Subgraph(sub)) = events
        .iter()
        .find(|e| e.name() == "checkpoints" && !e.namespace().is_empty())
    else {
        panic!("the child's checkpoints stream")
    };
    let Some(StreamEvent::Checkpoint { checkpoint, .. }) = sub.event::<Work>() else {
        panic!("a checkpoint of the child")
    };
    assert_eq!(checkpoint.thread_id, "t|child/2");
}

#[test]
fn a_paused_subgraph_streams_its_interrupt_then_the_parents_and_resumes_under_its_namespace() {
    // langgraph 1.2.22, a → child (c1 → ask, which interrupts) → b on a
    // thread, `stream(.., stream_mode=["values", "updates"],
    // subgraphs=True)`:
    //   ((), 'values', {'n': 0, 'last': ''})
    //   ((), 'updates', {'a': {'n': 1, 'last': 'a'}})
    //   ((), 'values', {'n': 1, 'last': 'a'})
    //   (('child:b75b..',), 'values', {'n': 1, 'last': 'a'})
    //   (('child:b75b..',), 'updates', {'c1': {'n': 2, 'last': 'c1'}})
    //   (('child:b75b..',), 'values', {'n': 2, 'last': 'c1'})
    //   (('child:b75b..',), 'updates', {'__interrupt__': (Interrupt(value={'q': 'ok?'}, id='b5d1..'),)})
    //   (('child:b75b..',), 'values', {'n': 2, 'last': 'c1', '__interrupt__': (Interrupt(value={'q': 'ok?'}, id='b5d1..'),)})
    //   ((), 'updates', {'__interrupt__': (Interrupt(value={'q': 'ok?'}, id='b5d1..'),)})
    //   ((), 'values', {'n': 1, 'last': 'a', '__interrupt__': (Interrupt(value={'q': 'ok?'}, id='b5d1..'),)})
    //  then `stream(Command(resume="yes"), ..)`:
    //   ((), 'values', {'n': 1, 'last': 'a'})
    //   (('child:b75b..',), 'values', {'n': 2, 'last': 'c1'})
    //   (('child:b75b..',), 'updates', {'ask': {'last': 'ask:yes'}})
    //   (('child:b75b..',), 'values', {'n': 2, 'last': 'ask:yes'})
    //   ((), 'updates', {'child': {'n': 2, 'last': 'ask:yes'}})
    //   ((), 'values', {'n': 2, 'last': 'ask:yes'})
    //   ((), 'updates', {'b': {'last': 'b'}})
    //   ((), 'values', {'n': 2, 'last': 'b'})
    // The interrupt has one id wherever it shows.
    let graph = around(asking_child());
    let saver = MemoryCheckpointer::new();
    let modes = [StreamMode::Values, StreamMode::Updates];
    let run = graph.run(start()).on_thread(&saver, "t");
    let events = collect(run.stream(modes).subgraphs(true));
    let (root, sub): (&[&str], &[&str]) = (&[], &["child"]);
    let asked = json!([{"value": {"q": "ok?"}}]);
    let paused = |mut s: Value| {
        s["__interrupt__"] = asked.clone();
        s
    };
    assert_eq!(
        as_langgraph(&events),
        [
            ev(root, "values", state(0, "")),
            ev(root, "updates", json!({"a": state(1, "a")})),
            ev(root, "values", state(1, "a")),
            ev(sub, "values", state(1, "a")),
            ev(sub, "updates", json!({"c1": state(2, "c1")})),
            ev(sub, "values", state(2, "c1")),
            ev(sub, "updates", json!({"__interrupt__": asked})),
            ev(sub, "values", paused(state(2, "c1"))),
            ev(root, "updates", json!({"__interrupt__": asked})),
            ev(root, "values", paused(state(1, "a"))),
        ]
    );
    let mut ids: Vec<String> = events
        .iter()
        .filter(|e| e.name() == "updates")
        .filter_map(|e| Some(e.to_json()["__interrupt__"][0]["id"].as_str()?.to_owned()))
        .collect();
    let Some(StreamEvent::End(out)) = events.last() else {
        panic!("the stream ends with End")
    };
    ids.extend(out.interrupts.iter().map(|i| i.id.clone()));
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| *id == ids[0]), "one id: {ids:?}");

    // Resumed by that id.
    let resume = Input::ResumeWith(Resume::new().answer(&ids[0], "yes"));
    let run = graph.run(resume).on_thread(&saver, "t");
    let events = collect(run.stream(modes).subgraphs(true));
    assert_eq!(
        as_langgraph(&events),
        [
            ev(root, "values", state(1, "a")),
            ev(sub, "values", state(2, "c1")),
            ev(sub, "updates", json!({"ask": {"last": "ask:yes"}})),
            ev(sub, "values", state(2, "ask:yes")),
            ev(root, "updates", json!({"child": state(2, "ask:yes")})),
            ev(root, "values", state(2, "ask:yes")),
            ev(root, "updates", json!({"b": {"last": "b"}})),
            ev(root, "values", state(2, "b")),
        ]
    );
}

#[test]
fn get_state_with_subgraphs_shows_a_paused_subgraphs_own_snapshot() {
    // langgraph 1.2.22, the graph above paused in `ask`,
    // `get_state(config, subgraphs=True)`:
    //   values {'n': 1, 'last': 'a'} next ('child',) interrupts [{'q': 'ok?'}] step 1
    //     task child interrupts [{'q': 'ok?'}] result None error None state: a StateSnapshot
    //       values {'n': 2, 'last': 'c1'} next ('ask',) interrupts [{'q': 'ok?'}] step 1
    //         task ask interrupts [{'q': 'ok?'}] result None error None state None
    //  `get_state(config)`: the same, the child's task's state its config
    //  ({'configurable': {'thread_id': 't', 'checkpoint_ns': 'child:b75b..'}});
    //  once resumed and finished, `get_state(config, subgraphs=True)`:
    //   values {'n': 2, 'last': 'b'} next () interrupts [] step 3 (no task)
    let graph = around(asking_child());
    let saver = MemoryCheckpointer::new();
    block_on(graph.run(start()).on_thread(&saver, "t")).unwrap();

    let snapshot = block_on(graph.get_state_with_subgraphs(&saver, "t")).unwrap();
    assert_eq!(
        (snapshot.values.work.n, snapshot.next.clone()),
        (1, vec!["child".to_owned()])
    );
    assert_eq!(snapshot.checkpoint.as_ref().unwrap().step, 1);
    let [task] = &snapshot.tasks[..] else {
        panic!("one task: {:?}", snapshot.tasks)
    };
    assert_eq!(
        (task.name.as_str(), &task.result, &task.error),
        ("child", &None, &None)
    );
    let inside = task.state.as_deref().expect("the child's snapshot");
    assert_eq!(inside.values, state(2, "c1"));
    assert_eq!(inside.next, ["ask"]);
    assert_eq!(inside.checkpoint.as_ref().unwrap().step, 1);
    let [asking] = &inside.tasks[..] else {
        panic!("one task: {:?}", inside.tasks)
    };
    assert_eq!((asking.name.as_str(), &asking.state), ("ask", &None));
    // One interrupt, under one id: the one the parent is resumed by.
    let value = json!({"q": "ok?"});
    for interrupts in [
        &snapshot.interrupts,
        &task.interrupts,
        &inside.interrupts,
        &asking.interrupts,
    ] {
        assert_eq!(interrupts.len(), 1);
        assert_eq!(
            (&interrupts[0].id, &interrupts[0].value),
            (&snapshot.interrupts[0].id, &value)
        );
    }

    // Without subgraphs, the same snapshot with no child's in it.
    let plain = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(plain.tasks[0].state, None);
    let mut without = snapshot.clone();
    without.tasks[0].state = None;
    assert_eq!(plain, without);

    let resume = Input::ResumeWith(Resume::new().answer(&snapshot.interrupts[0].id, "yes"));
    block_on(graph.run(resume).on_thread(&saver, "t")).unwrap();
    let done = block_on(graph.get_state_with_subgraphs(&saver, "t")).unwrap();
    assert_eq!(
        done.values.work,
        Work {
            n: 2,
            last: "b".to_owned()
        }
    );
    assert!(done.next.is_empty() && done.tasks.is_empty() && done.interrupts.is_empty());
    assert_eq!(done.checkpoint.as_ref().unwrap().step, 3);
}

#[test]
fn a_subgraph_not_started_shows_an_empty_snapshot() {
    // langgraph 1.2.22, the graph above with `interrupt_before=["child"]`,
    // `get_state(config, subgraphs=True)`: the child's task's state is a
    // snapshot with values {}, next (), no metadata (no checkpoint).
    // Ours: the child's default state (every field has a default).
    let graph = StateGraph::<Desk>::new()
        .add_node("a", |s: &Desk| Desk::lift(count(&s.work, "a")))
        .add_node("child", asking_child())
        .add_edge(START, "a")
        .add_edge("a", "child")
        .interrupt_before(["child"])
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    block_on(graph.run(start()).on_thread(&saver, "t")).unwrap();
    let snapshot = block_on(graph.get_state_with_subgraphs(&saver, "t")).unwrap();
    assert_eq!(snapshot.next, ["child"]);
    let inside = snapshot.tasks[0]
        .state
        .as_deref()
        .expect("the child's snapshot");
    assert_eq!(inside.values, state(0, ""));
    assert!(inside.next.is_empty() && inside.tasks.is_empty() && inside.checkpoint.is_none());
}

/// `Desk` over `Work` over `Work` again: the child's part of the state.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Middle {
    #[state(flatten)]
    work: Work,
}

/// a → child (c1 → grand (ask, which interrupts)), the child a mapped
/// part of the root, the grandchild over the child's flattened part.
fn nested_graph() -> Graph<Desk> {
    let grand = StateGraph::<Work>::new()
        .add_node(
            "ask",
            |_: &Work, ctx: &NodeContext| -> Result<WorkUpdate, BoxError> {
                let answer: String = ctx.interrupt(json!({"q": "deep?"}))?;
                Ok(last(&format!("ask:{answer}")))
            },
        )
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    let child = StateGraph::<Middle>::new()
        .add_node("c1", |s: &Middle| Middle::lift(count(&s.work, "c1")))
        .add_node("grand", grand)
        .add_edge(START, "c1")
        .add_edge("c1", "grand")
        .compile()
        .unwrap();
    StateGraph::<Desk>::new()
        .add_node("a", |s: &Desk| Desk::lift(count(&s.work, "a")))
        .add_node(
            "child",
            child.mapped(
                |d: &Desk| Middle {
                    work: d.work.clone(),
                },
                |m: &Middle| Desk::lift(WorkUpdate::new().n(m.work.n).last(m.work.last.clone())),
            ),
        )
        .add_edge(START, "a")
        .add_edge("a", "child")
        .compile()
        .unwrap()
}

/// `get_state_with_subgraphs` of the paused nested run: each level's
/// values, next, step and interrupt (the id `id` at every level).
fn assert_nested_snapshots(graph: &Graph<Desk>, saver: &MemoryCheckpointer, id: &Value) {
    let snapshot = block_on(graph.get_state_with_subgraphs(saver, "t")).unwrap();
    let child_state = snapshot.tasks[0]
        .state
        .as_deref()
        .expect("the child's snapshot");
    assert_eq!(
        (&child_state.values, &child_state.next[..]),
        (&state(2, "c1"), &["grand".to_owned()][..])
    );
    assert_eq!(child_state.checkpoint.as_ref().unwrap().step, 1);
    let grand_state = child_state.tasks[0]
        .state
        .as_deref()
        .expect("the grandchild's snapshot");
    assert_eq!(
        (&grand_state.values, &grand_state.next[..]),
        (&state(2, "c1"), &["ask".to_owned()][..])
    );
    assert_eq!(grand_state.checkpoint.as_ref().unwrap().step, 0);
    assert_eq!(grand_state.tasks[0].state, None);
    for level in [
        &snapshot.interrupts,
        &child_state.interrupts,
        &grand_state.interrupts,
    ] {
        assert_eq!(json!(level[0].id), *id);
    }
}

#[test]
fn nested_subgraphs_stream_one_namespace_entry_per_level() {
    // langgraph 1.2.22, a → child (c1 → grand (ask, which interrupts)) on a
    // thread, `stream(.., stream_mode=["updates"], subgraphs=True)`:
    //   ((), 'updates', {'a': {'n': 1, 'last': 'a'}})
    //   (('child:6198..',), 'updates', {'c1': {'n': 2, 'last': 'c1'}})
    //   (('child:6198..', 'grand:b2ae..'), 'updates', {'__interrupt__': (Interrupt(value={'q': 'deep?'}, id='c32f..'),)})
    //   (('child:6198..',), 'updates', {'__interrupt__': (Interrupt(value={'q': 'deep?'}, id='c32f..'),)})
    //   ((), 'updates', {'__interrupt__': (Interrupt(value={'q': 'deep?'}, id='c32f..'),)})
    //  `get_state(config, subgraphs=True)`:
    //   values {'n': 1, 'last': 'a'} next ('child',) interrupts [{'q': 'deep?'}] step 1
    //     task child interrupts [{'q': 'deep?'}] state: a StateSnapshot
    //       values {'n': 2, 'last': 'c1'} next ('grand',) interrupts [{'q': 'deep?'}] step 1
    //         task grand interrupts [{'q': 'deep?'}] state: a StateSnapshot
    //           values {'n': 2, 'last': 'c1'} next ('ask',) interrupts [{'q': 'deep?'}] step 0
    //             task ask interrupts [{'q': 'deep?'}] state None
    //  the interrupt's id the same at every level ('c32f..'); then
    //  `stream(Command(resume="yes"), ..)`:
    //   (('child:6198..', 'grand:b2ae..'), 'updates', {'ask': {'last': 'ask:yes'}})
    //   (('child:6198..',), 'updates', {'grand': {'n': 2, 'last': 'ask:yes'}})
    //   ((), 'updates', {'child': {'n': 2, 'last': 'ask:yes'}})
    let graph = nested_graph();
    let saver = MemoryCheckpointer::new();
    let run = graph.run(start()).on_thread(&saver, "t");
    let events = collect(run.stream(StreamMode::Updates).subgraphs(true));
    let asked = json!({"__interrupt__": [{"value": {"q": "deep?"}}]});
    let (root, sub, deep): (&[&str], &[&str], &[&str]) = (&[], &["child"], &["child", "grand"]);
    assert_eq!(
        as_langgraph(&events),
        [
            ev(root, "updates", json!({"a": state(1, "a")})),
            ev(sub, "updates", json!({"c1": state(2, "c1")})),
            ev(deep, "updates", asked.clone()),
            ev(sub, "updates", asked.clone()),
            ev(root, "updates", asked.clone()),
        ]
    );
    assert_eq!(events[2].namespace(), ["child:child", "grand:grand"]);
    assert_eq!(events[2].sse_name(), "updates|child:child|grand:grand");
    let ids: Vec<Value> = events[2..5]
        .iter()
        .map(|e| e.to_json()["__interrupt__"][0]["id"].clone())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one id: {ids:?}");
    let StreamEvent::Subgraph(innermost) = &events[2] else {
        panic!("a subgraph's event")
    };
    assert!(matches!(
        innermost.event::<Work>(),
        Some(StreamEvent::Interrupt { .. })
    ));

    assert_nested_snapshots(&graph, &saver, &ids[0]);

    let resume = Input::ResumeWith(Resume::new().answer(ids[0].as_str().unwrap(), "yes"));
    let run = graph.run(resume).on_thread(&saver, "t");
    let events = collect(run.stream(StreamMode::Updates).subgraphs(true));
    assert_eq!(
        as_langgraph(&events),
        [
            ev(deep, "updates", json!({"ask": {"last": "ask:yes"}})),
            // The grandchild's writes, not its whole state (LangGraph's
            // `{'n': 2, 'last': 'ask:yes'}`): a subgraph over a part
            // writes what its nodes wrote (PORTING.md's parity rows).
            ev(sub, "updates", json!({"grand": {"last": "ask:yes"}})),
            ev(root, "updates", json!({"child": state(2, "ask:yes")})),
        ]
    );
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

fn says(text: &str, id: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::new().message(ai(text).with_id(id))
}

#[test]
fn a_message_a_subgraph_returns_streams_once_under_its_namespace() {
    // langgraph 1.2.22, MessagesState graphs: a (returns AIMessage "from
    // a", id m0) → child (c1 returns "from child", id m1) → b ("from b",
    // m2), `stream(.., stream_mode=["messages"], subgraphs=True)`, each as
    // (namespace, id, langgraph_node, langgraph_step):
    //   ((), m0, a, 1)
    //   (('child:9112..',), m1, c1, 1)
    //   ((), m2, b, 3)
    //  without `subgraphs`, the child's message comes from its node in the
    //  parent, once:
    //   ((), m0, a, 1)
    //   ((), m1, child, 2)
    //   ((), m2, b, 3)
    let child = StateGraph::<MessagesState>::new()
        .add_node("c1", |_: &MessagesState| says("from child", "m1"))
        .add_edge(START, "c1")
        .compile()
        .unwrap();
    let graph = StateGraph::<Chat>::new()
        .add_node("a", |_: &Chat| Chat::lift(says("from a", "m0")))
        .add_node("child", child)
        .add_node("b", |_: &Chat| Chat::lift(says("from b", "m2")))
        .add_edge(START, "a")
        .add_edge("a", "child")
        .add_edge("child", "b")
        .compile()
        .unwrap();
    let shown = |subgraphs: bool| -> Vec<Value> {
        let input = Input::Update(ChatUpdate::new());
        let stream = graph
            .run(input)
            .stream(StreamMode::Messages)
            .subgraphs(subgraphs);
        as_langgraph(&collect(stream))
            .into_iter()
            .map(|(namespace, mode, payload)| {
                assert_eq!(mode, "messages");
                let meta = &payload[1];
                json!([
                    namespace,
                    payload[0]["id"],
                    meta["langgraph_node"],
                    meta["langgraph_step"]
                ])
            })
            .collect()
    };
    let none: [&str; 0] = [];
    assert_eq!(
        shown(true),
        [
            json!([none, "m0", "a", 1]),
            json!([["child:<id>"], "m1", "c1", 1]),
            json!([none, "m2", "b", 3]),
        ]
    );
    assert_eq!(
        shown(false),
        [
            json!([none, "m0", "a", 1]),
            json!([none, "m1", "child", 2]),
            json!([none, "m2", "b", 3]),
        ]
    );
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Total {
    total: u32,
}

#[test]
fn a_mapped_subgraph_streams_under_its_node() {
    // langgraph 1.2.22, a node `wrap` whose function runs a compiled child
    // (`child.invoke({"n": p["total"], "last": ""})`, c1 counting), then
    // returns {"total": out["n"]}; `stream({"total": 1},
    // stream_mode=["updates", "values"], subgraphs=True)`:
    //   ((), 'values', {'total': 1})
    //   (('wrap:1b59..',), 'values', {'n': 1, 'last': ''})
    //   (('wrap:1b59..',), 'updates', {'c1': {'n': 2, 'last': 'c1'}})
    //   (('wrap:1b59..',), 'values', {'n': 2, 'last': 'c1'})
    //   ((), 'updates', {'wrap': {'total': 2}})
    //   ((), 'values', {'total': 2})
    let child = StateGraph::<Work>::new()
        .add_node("c1", |s: &Work| count(s, "c1"))
        .add_edge(START, "c1")
        .compile()
        .unwrap();
    let graph = StateGraph::<Total>::new()
        .add_node(
            "wrap",
            child.mapped(
                |p: &Total| Work {
                    n: p.total,
                    last: String::new(),
                },
                |c: &Work| TotalUpdate::new().total(c.n),
            ),
        )
        .add_edge(START, "wrap")
        .compile()
        .unwrap();
    let input = Input::Update(TotalUpdate::new().total(1));
    let stream = graph
        .run(input)
        .stream([StreamMode::Updates, StreamMode::Values]);
    let (root, sub): (&[&str], &[&str]) = (&[], &["wrap"]);
    assert_eq!(
        as_langgraph(&collect(stream.subgraphs(true))),
        [
            ev(root, "values", json!({"total": 1})),
            ev(sub, "values", state(1, "")),
            ev(sub, "updates", json!({"c1": state(2, "c1")})),
            ev(sub, "values", state(2, "c1")),
            ev(root, "updates", json!({"wrap": {"total": 2}})),
            ev(root, "values", json!({"total": 2})),
        ]
    );
}

#[test]
fn a_slow_consumer_holds_a_subgraphs_node_back() {
    // The parent's buffer bounds its subgraphs' events too: a child's node
    // sending many runs at most a buffer's worth ahead of the consumer,
    // and dropping the parent's stream stops it.
    let written = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&written);
    let child = StateGraph::<Work>::new()
        .add_node("chatty", move |_: Arc<Work>, ctx: NodeContext| {
            let count = Arc::clone(&count);
            async move {
                for i in 0..1000 {
                    ctx.writer().send(i).await?;
                    count.fetch_add(1, Ordering::SeqCst);
                }
                Ok::<_, BoxError>(WorkUpdate::new().n(1))
            }
        })
        .add_edge(START, "chatty")
        .compile()
        .unwrap();
    let graph = StateGraph::<Desk>::new()
        .add_node("child", child)
        .add_edge(START, "child")
        .compile()
        .unwrap();
    let mut stream = graph
        .run(start())
        .stream(StreamMode::Custom)
        .buffer(4)
        .subgraphs(true);
    for taken in 1..=50 {
        let event = block_on(stream.next()).unwrap().unwrap();
        assert_eq!(
            (event.sse_name(), event.to_json()),
            ("custom|child:child".into(), json!(taken - 1))
        );
        let ahead = written.load(Ordering::SeqCst) - taken;
        assert!(ahead <= 5, "{ahead} events ahead after {taken} taken");
    }
    drop(stream);
    assert!(
        written.load(Ordering::SeqCst) < 60,
        "dropping the stream stopped the child's node"
    );
}

#[test]
fn a_subgraphs_streamed_tokens_stream_under_its_namespace_or_not_at_all() {
    // langgraph 1.2.22, MessagesState graphs: child (c1 calls a fake chat
    // model streaming AIMessage("he llo", id="m1") in three chunks and
    // returns it); `stream(.., stream_mode=["messages"], subgraphs=True)`,
    // each as (namespace, class, content, id, langgraph_node, step):
    //   (('child:b899..',), AIMessageChunk, 'he', m1, c1, 1)
    //   (('child:b899..',), AIMessageChunk, ' ', m1, c1, 1)
    //   (('child:b899..',), AIMessageChunk, 'llo', m1, c1, 1)   (chunk_position 'last')
    //  (the message c1 returns, and the parent's node returns, not again);
    //  without `subgraphs`, no token, the message from the parent's node:
    //   ((), AIMessage, 'he llo', m1, child, 1)
    let child = StateGraph::<MessagesState>::new()
        .add_node("c1", |_: &MessagesState, ctx: &NodeContext| {
            let writer = ctx.writer();
            for piece in ["he", " ", "llo"] {
                writer.write_message(MessageChunk::ai(piece).with_id("m1"));
            }
            says("he llo", "m1")
        })
        .add_edge(START, "c1")
        .compile()
        .unwrap();
    let graph = StateGraph::<Chat>::new()
        .add_node("child", child)
        .add_edge(START, "child")
        .compile()
        .unwrap();
    let shown = |subgraphs: bool| -> Vec<Value> {
        let input = Input::Update(ChatUpdate::new());
        let stream = graph
            .run(input)
            .stream(StreamMode::Messages)
            .subgraphs(subgraphs);
        as_langgraph(&collect(stream))
            .into_iter()
            .map(|(namespace, _, payload)| {
                let (message, meta) = (&payload[0], &payload[1]);
                json!([
                    namespace,
                    message["type"],
                    message["content"],
                    message["id"],
                    meta["langgraph_node"],
                    meta["langgraph_step"]
                ])
            })
            .collect()
    };
    let chunk = |piece: &str| json!([["child:<id>"], "AIMessageChunk", piece, "m1", "c1", 1]);
    assert_eq!(shown(true), [chunk("he"), chunk(" "), chunk("llo")]);
    let none: [&str; 0] = [];
    assert_eq!(
        shown(false),
        [json!([none, "ai", "he llo", "m1", "child", 1])]
    );
}
