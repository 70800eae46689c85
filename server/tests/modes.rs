//! The stream modes beyond `values` and `updates` (`debug`, `messages`,
//! `events`) and `stream_subgraphs`, compared with what the official
//! server streamed for the same graphs and inputs: the fixtures
//! `fixtures/official_mode_*.sse`, recorded from `langgraph dev` serving
//! `python/reference/modes.py` (see `fixtures/README.md`). Ids, run ids,
//! checkpoint ids and timestamps differ run to run and are normalised;
//! so are the keys only the official server writes (its version, plan,
//! host, auth and the model provider's).

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{json, Map, Value};
use support::http::{post, refused};
use support::{fresh_db, start};

/// Keys only the official server writes: its versions and deployment,
/// the request's auth and timing, the model provider's.
const OFFICIAL_ONLY: [&str; 14] = [
    "langgraph_version",
    "langgraph_api_version",
    "langgraph_plan",
    "langgraph_host",
    "langgraph_api_url",
    "langgraph_auth_user",
    "langgraph_auth_user_id",
    "langgraph_auth_permissions",
    "langgraph_request_id",
    "__request_start_time_ms__",
    "__after_seconds__",
    "user_id",
    "ls_provider",
    "lc_versions",
];

/// Keys whose values are ids or times, different in every run.
const VARYING: [&str; 9] = [
    "id",
    "run_id",
    "thread_id",
    "checkpoint_id",
    "assistant_id",
    "timestamp",
    "parent_ids",
    "langgraph_checkpoint_ns",
    "checkpoint_ns",
];

fn chat_input() -> Value {
    json!({"messages": [{"type": "human", "content": "hi"}]})
}

/// The body of a streamed run of `graph` on a new thread.
async fn stream(base: &str, graph: &str, modes: Value, input: Value, subgraphs: bool) -> String {
    let c = Client::new();
    let r = c
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await;
    let thread: Value = r.unwrap().json().await.unwrap();
    let id = thread["thread_id"].as_str().unwrap();
    let run = json!({"assistant_id": graph, "stream_mode": modes, "input": input,
                     "stream_subgraphs": subgraphs});
    let url = format!("{base}/threads/{id}/runs/stream");
    let r = c.post(url).json(&run).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.text().await.unwrap()
}

/// `value` with ids and times replaced by their key's name, the
/// official server's own keys dropped, and a message's empty fields left
/// out (the states here write a message without them).
fn normalise(value: &Value, key: Option<&str>) -> Value {
    match (value, key) {
        (Value::Null, _) => Value::Null,
        (Value::String(s), Some(k)) if s.is_empty() && VARYING.contains(&k) => json!(""),
        (_, Some(k)) if VARYING.contains(&k) => json!(format!("<{k}>")),
        (Value::Object(map), _) => {
            let message = map.contains_key("content") && map.contains_key("type");
            let kept = map.iter().filter(|(k, v)| {
                let empty = matches!(v, Value::Null)
                    || v.as_object().is_some_and(Map::is_empty)
                    || v.as_array().is_some_and(Vec::is_empty);
                let dropped = OFFICIAL_ONLY.contains(&k.as_str()) || (message && empty);
                !dropped
            });
            Value::Object(
                kept.map(|(k, v)| (k.clone(), normalise(v, Some(k))))
                    .collect(),
            )
        }
        (Value::Array(list), _) => list.iter().map(|v| normalise(v, None)).collect(),
        (other, _) => other.clone(),
    }
}

/// An SSE body's `(event, data)` pairs after the first (`metadata`),
/// normalised, a namespace's task ids as `<task>`.
fn normalised(body: &str) -> Vec<(String, Value)> {
    let frames = support::frames(body);
    assert_eq!(frames[0].0, "metadata");
    let names = |name: &str| {
        let mut parts = name.split('|');
        let mut out = parts.next().unwrap_or_default().to_owned();
        for entry in parts {
            let node = entry.split(':').next().unwrap_or_default();
            out.push_str(&format!("|{node}:<task>"));
        }
        out
    };
    frames[1..]
        .iter()
        .map(|(name, data)| (names(name), normalise(data, None)))
        .collect()
}

fn names(frames: &[(String, Value)]) -> Vec<&str> {
    frames.iter().map(|f| f.0.as_str()).collect()
}

fn official(name: &str) -> Vec<(String, Value)> {
    let path = format!(
        "{}/tests/fixtures/official_mode_{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    normalised(&std::fs::read_to_string(path).expect("fixture"))
}

/// `debug`: LangGraph's checkpoint / task / task_result envelopes, the
/// checkpoints with the run's keys in their config and again as
/// `checkpoint` / `parent_checkpoint`, the tasks with the run's metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_streams_the_official_servers_envelopes() {
    let server = start(&fresh_db()).await;
    let body = stream(
        &server.base,
        "pair",
        json!(["debug"]),
        json!({"topic": "x"}),
        false,
    )
    .await;
    let (mut ours, theirs) = (normalised(&body), official("debug"));
    assert_eq!(names(&ours), names(&theirs));
    // The input checkpoint: ours holds every field, its defaults too.
    let input = &mut ours[0].1["payload"]["values"];
    assert_eq!(input["topic"], "");
    input.as_object_mut().unwrap().remove("topic");
    for (i, (our, their)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(our.1, their.1, "debug event {i}");
    }
    assert_eq!(ours[2].1["payload"]["metadata"]["graph_id"], "pair");
    server.stop().await;
}

/// `messages`: a message's metadata once, then the message so far at
/// each piece, as whole LangChain messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stream_each_message_as_it_builds_up() {
    let server = start(&fresh_db()).await;
    let modes = json!(["messages", "values"]);
    let body = stream(&server.base, "chat", modes, chat_input(), false).await;
    let raw = support::frames(&body);
    let (ours, theirs) = (normalised(&body), official("messages_values"));
    assert_eq!(names(&ours), names(&theirs));
    let partials = |f: &[(String, Value)]| {
        f.iter()
            .filter(|e| e.0 == "messages/partial")
            .map(|e| e.1.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(partials(&ours), partials(&theirs));
    let last = raw.iter().rfind(|e| e.0 == "messages/partial").unwrap();
    let whole = json!([{"content": "hello there friend", "additional_kwargs": {},
        "response_metadata": {}, "type": "ai", "name": null, "id": "m1", "tool_calls": [],
        "invalid_tool_calls": [], "usage_metadata": null}]);
    assert_eq!(last.1, whole, "every field LangChain writes");
    let (our_meta, their_meta) = (&ours[1].1["m1"]["metadata"], &theirs[1].1["m1"]["metadata"]);
    for key in [
        "langgraph_node",
        "langgraph_step",
        "graph_id",
        "created_by",
        "run_attempt",
    ] {
        assert_eq!(our_meta[key], their_meta[key], "{key}");
    }
    assert_eq!(raw[2].1["m1"]["metadata"]["run_id"], raw[0].1["run_id"]);
    server.stop().await;
}

/// `messages`: a message a node returns whole (no piece of it streamed)
/// comes once, complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_returned_whole_streams_complete() {
    let server = start(&fresh_db()).await;
    let body = stream(
        &server.base,
        "reply",
        json!(["messages"]),
        chat_input(),
        false,
    )
    .await;
    let (ours, theirs) = (normalised(&body), official("messages_complete"));
    assert_eq!(names(&ours), ["messages/metadata", "messages/complete"]);
    assert_eq!(names(&ours), names(&theirs));
    assert_eq!(ours[1], theirs[1]);
    assert_eq!(support::frames(&body)[2].1[0]["content"], "done");
    server.stop().await;
}

/// With `messages-tuple` beside `messages`, the official server streams
/// the tuples alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_message_modes_stream_the_tuples_alone() {
    let server = start(&fresh_db()).await;
    let modes = json!(["messages", "values", "messages-tuple"]);
    let body = stream(&server.base, "chat", modes, chat_input(), false).await;
    let (ours, theirs) = (normalised(&body), official("several"));
    assert_eq!(names(&ours), names(&theirs));
    for (our, their) in ours.iter().zip(&theirs).filter(|e| e.0 .0 == "messages") {
        assert_eq!(our.1[0], their.1[0], "the chunk");
    }
    server.stop().await;
}

/// `events` for a graph of two nodes: the graph's start, each node's
/// start, stream and end, the graph's end, as the official server sends
/// them (the graph's own `on_chain_stream` is not sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_two_nodes_are_the_official_sequence() {
    let server = start(&fresh_db()).await;
    let body = stream(
        &server.base,
        "pair",
        json!(["events"]),
        json!({"topic": "x"}),
        false,
    )
    .await;
    let (ours, theirs) = (normalised(&body), official("events_pair"));
    assert_eq!(ours, theirs);
    let raw = support::frames(&body);
    let (graph, node) = (&raw[1].1, &raw[2].1);
    assert_eq!(
        graph["run_id"], raw[0].1["run_id"],
        "the graph's run is the run"
    );
    assert_eq!(node["parent_ids"], json!([graph["run_id"]]));
    assert_eq!(
        node["metadata"]["langgraph_path"],
        json!(["__pregel_pull", "first"])
    );
    server.stop().await;
}

/// `events` for a node that streams a chat model's pieces: the model's
/// start, a stream event per piece and its end, inside the node's. We
/// differ: the model is named `chat_model` and its input is not known.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_a_streaming_node_carry_its_chat_models_pieces() {
    let server = start(&fresh_db()).await;
    let body = stream(&server.base, "chat", json!(["events"]), chat_input(), false).await;
    let (mut ours, mut theirs) = (normalised(&body), official("events_chat"));
    for (_, event) in ours.iter_mut().chain(theirs.iter_mut()) {
        if event["event"]
            .as_str()
            .unwrap()
            .starts_with("on_chat_model")
        {
            event["name"] = json!("<model>");
            event["data"].as_object_mut().unwrap().remove("input");
        }
    }
    assert_eq!(ours, theirs);
    let raw = support::frames(&body);
    let (node, model) = (&raw[2].1, &raw[3].1);
    assert_eq!(model["event"], "on_chat_model_start");
    assert_eq!(
        model["parent_ids"],
        json!([raw[1].1["run_id"], node["run_id"]])
    );
    server.stop().await;
}

/// `events` reach into a subgraph (its chain around its node's events)
/// whether or not the client asked for subgraphs, as `astream_events`
/// does; `events` are never namespaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_into_a_subgraph() {
    let server = start(&fresh_db()).await;
    let theirs = official("events_nest");
    for subgraphs in [true, false] {
        let body = stream(
            &server.base,
            "nest",
            json!(["events"]),
            json!({"n": 1}),
            subgraphs,
        )
        .await;
        assert_eq!(normalised(&body), theirs, "stream_subgraphs: {subgraphs}");
    }
    server.stop().await;
}

/// `events` of a run that pauses on an interrupt (the paused node has no
/// end) and of its resume (its input the `Command`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_a_pause_and_its_resume() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let (_, thread) = post(&c, format!("{b}/threads"), json!({})).await;
    let url = format!(
        "{b}/threads/{}/runs/stream",
        thread["thread_id"].as_str().unwrap()
    );
    let modes = json!(["events", "updates"]);
    let first = json!({"assistant_id": "approval", "input": {"topic": "x"}, "stream_mode": modes});
    let then =
        json!({"assistant_id": "approval", "command": {"resume": true}, "stream_mode": modes});
    for (run, recorded) in [(first, "events_approval"), (then, "events_approval_resume")] {
        let body = c
            .post(&url)
            .json(&run)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let mut ours = normalised(&body);
        // Our states hold every field, `approved`'s default too.
        for (_, e) in &mut ours {
            for key in ["input", "output"] {
                let at = e.pointer_mut(&format!("/data/{key}"));
                if let Some(Value::Object(state)) = at {
                    if state.get("approved") == Some(&json!(false)) {
                        state.remove("approved");
                    }
                }
            }
        }
        assert_eq!(ours, official(recorded), "{recorded}");
    }
    server.stop().await;
}

/// `stream_subgraphs`: a subgraph's events under `mode|node:task`, in
/// the order the official server sends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_subgraphs_namespaces_a_subgraphs_events() {
    let server = start(&fresh_db()).await;
    let modes = json!(["values", "updates"]);
    let body = stream(&server.base, "nest", modes.clone(), json!({"n": 1}), true).await;
    assert_eq!(normalised(&body), official("subgraphs"));
    assert!(body.contains("event: updates|child:child\r\n"), "{body}");
    let alone = stream(&server.base, "nest", modes, json!({"n": 1}), false).await;
    let alone = normalised(&alone);
    assert!(alone.iter().all(|e| !e.0.contains('|')), "{alone:?}");
    assert_eq!(
        names(&alone),
        ["values", "updates", "values", "updates", "values"]
    );
    server.stop().await;
}

/// A subgraph that pauses streams its interrupt under its namespace as
/// the official server writes interrupts, then the parent's; its resume
/// goes on inside the subgraph. Its state's private field is in no
/// `values` event (the fixtures have no such field).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_subgraph_streams_its_interrupt_then_resumes() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let (_, thread) = post(&c, format!("{b}/threads"), json!({})).await;
    let tid = thread["thread_id"].as_str().unwrap();
    let url = format!("{b}/threads/{tid}/runs/stream");
    let modes = json!(["values", "updates"]);
    let first = json!({"assistant_id": "ask", "input": {"answer": ""}, "stream_mode": modes,
                       "stream_subgraphs": true});
    let then = json!({"assistant_id": "ask", "command": {"resume": "because"},
                      "stream_mode": modes, "stream_subgraphs": true});
    for (run, recorded) in [(first, "subgraph_pause"), (then, "subgraph_resume")] {
        let r = c.post(&url).json(&run).send().await.unwrap();
        let body = r.text().await.unwrap();
        assert_eq!(normalised(&body), official(recorded), "{recorded}");
        let raw = support::frames(&body);
        let ids: Vec<&Value> = raw
            .iter()
            .filter_map(|f| f.1.pointer("/__interrupt__/0/id"))
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] == w[1]),
            "one id, the one a resume answers: {ids:?}"
        );
    }
    server.stop().await;
}

/// `debug`, `tasks` and `messages-tuple` of a subgraph, namespaced: the
/// official order of events, and the tasks as it sends them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraphs_debug_and_tasks_stream_under_its_namespace() {
    let server = start(&fresh_db()).await;
    let modes = json!(["debug", "messages-tuple", "tasks"]);
    let body = stream(&server.base, "nest", modes, json!({"n": 1}), true).await;
    let (ours, theirs) = (normalised(&body), official("subgraphs_debug"));
    assert_eq!(names(&ours), names(&theirs));
    let tasks = |f: &[(String, Value)]| {
        f.iter()
            .filter(|e| e.0.starts_with("tasks"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(tasks(&ours), tasks(&theirs));
    server.stop().await;
}

/// A subgraph's namespaced events replay under their names to a client
/// that joins a live run's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_stream_replays_namespaced_events() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let (_, thread) = post(&c, format!("{b}/threads"), json!({})).await;
    let id = thread["thread_id"].as_str().unwrap();
    let run = json!({"assistant_id": "nest", "input": {"n": 1}, "stream_mode": ["updates"],
                     "stream_subgraphs": true});
    let (_, created) = post(&c, format!("{b}/threads/{id}/runs"), run).await;
    let run_id = created["run_id"].as_str().unwrap();
    let at = format!("{b}/threads/{id}/runs/{run_id}/stream");
    let joined = c.get(at).send().await.unwrap().text().await.unwrap();
    let joined = normalised(&joined);
    assert_eq!(
        names(&joined),
        ["updates|child:<task>", "updates", "updates"]
    );
    assert_eq!(joined[0].1, json!({"inc": {"n": 2}}));
    server.stop().await;
}

/// A mode that is none, or a `stream_subgraphs` that is no boolean, is
/// refused before the run starts, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_modes_and_subgraph_flags_are_refused() {
    let server = start(&fresh_db()).await;
    let url = format!("{}/runs/stream", server.base);
    let bad = json!({"assistant_id": "pair", "input": {"topic": "x"}, "stream_mode": ["events", "tokens"]});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(
        detail.contains("stream_mode") && detail.contains("tokens"),
        "{detail}"
    );
    let bad = json!({"assistant_id": "pair", "input": {"topic": "x"}, "stream_subgraphs": "yes"});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.contains("stream_subgraphs"), "{detail}");
    let (_, runs) = support::http::post(
        &Client::new(),
        format!("{}/threads/search", server.base),
        json!({}),
    )
    .await;
    assert_eq!(runs, json!([]), "nothing was stored");
    server.stop().await;
}
