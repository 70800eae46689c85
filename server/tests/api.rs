//! The server as a client meets it: the real server on a free port,
//! driven over HTTP, its answers compared with what LangGraph's own server
//! (langgraph-api 0.16.7, `langgraph dev`) answered to the same calls.

mod support;

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::{frames, fresh_db, start, start_with};

const THREAD: &str = "11111111-1111-1111-1111-111111111111";
/// The official server's id for a graph named `approval`.
const APPROVAL: &str = "e234584d-b7bf-527f-9d06-ba77f8f5172d";

async fn post(c: &Client, url: String, body: Value) -> (StatusCode, Value) {
    let r = c.post(url).json(&body).send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn get(c: &Client, url: String) -> (StatusCode, Value) {
    let r = c.get(url).send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// A request written by hand, for paths an HTTP client would normalize
/// (`..`): the status line's code.
async fn raw_status(addr: std::net::SocketAddr, request_line: &str) -> u16 {
    use std::io::{Read, Write};
    let req = format!("{request_line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let answer = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.write_all(req.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out
    });
    answer.await.expect("request")[9..12]
        .parse()
        .expect("status code")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_are_the_registered_graphs_with_the_official_ids() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    assert_eq!(
        get(&c, format!("{b}/ok")).await,
        (StatusCode::OK, json!({"ok": true}))
    );
    let (status, list) = post(
        &c,
        format!("{b}/assistants/search"),
        json!({"graph_id": "approval"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list[0]["assistant_id"], APPROVAL);
    assert_eq!(list[0]["metadata"], json!({"created_by": "system"}));
    let (_, one) = get(&c, format!("{b}/assistants/{APPROVAL}")).await;
    assert_eq!(one["graph_id"], "approval");
    let (_, graph) = get(&c, format!("{b}/assistants/approval/graph")).await;
    // As the official server drew the same graph.
    assert_eq!(
        graph["edges"],
        json!([{"source": "__start__", "target": "draft"}, {"source": "draft", "target": "review"},
               {"source": "review", "target": "__end__"}])
    );
    assert_eq!(graph["nodes"][3], json!({"id": "__end__"}));
    let (status, _) = get(&c, format!("{b}/assistants/{APPROVAL}/schemas")).await;
    assert_eq!(status, StatusCode::OK);
    let unknown = "00000000-0000-0000-0000-000000000000";
    assert_eq!(
        get(&c, format!("{b}/assistants/{unknown}")).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = get(&c, format!("{b}/assistants/nope")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"], "Invalid assistant ID: must be a UUID");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_created_read_patched_searched_and_deleted() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let create = json!({"thread_id": THREAD, "metadata": {"user": "a"}});
    let (status, t) = post(&c, format!("{b}/threads"), create.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (t["status"].as_str(), &t["values"]),
        (Some("idle"), &Value::Null)
    );
    let (status, e) = post(&c, format!("{b}/threads"), create).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        e["detail"],
        format!("Thread with ID {THREAD} already exists")
    );
    let again = json!({"thread_id": THREAD, "if_exists": "do_nothing"});
    assert_eq!(
        post(&c, format!("{b}/threads"), again).await.1["metadata"]["user"],
        "a"
    );
    let r = c
        .patch(format!("{b}/threads/{THREAD}"))
        .json(&json!({"metadata": {"k": "v"}}));
    let patched: Value = r.send().await.unwrap().json().await.unwrap();
    assert_eq!(patched["metadata"], json!({"user": "a", "k": "v"}));
    let search = |q: Value| post(&c, format!("{b}/threads/search"), q);
    assert_eq!(
        search(json!({"metadata": {"k": "v"}}))
            .await
            .1
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(search(json!({"status": "busy"})).await.1, json!([]));
    let count = post(
        &c,
        format!("{b}/threads/count"),
        json!({"metadata": {"user": "a"}}),
    )
    .await;
    assert_eq!(count, (StatusCode::OK, json!(1)));
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(
        (&state["values"], &state["checkpoint"]),
        (&json!({}), &Value::Null)
    );
    let deleted = c
        .delete(format!("{b}/threads/{THREAD}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let (status, e) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(e["detail"], format!("Thread with ID {THREAD} not found"));
    assert_eq!(raw_status(server.addr, "GET /threads/..").await, 422);
    assert_eq!(raw_status(server.addr, "GET /threads/./state").await, 422);
    server.stop().await;
}

/// The event names of the official server's stream of the same graph and
/// input (its `custom` event included), and its framing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_is_framed_as_the_official_servers() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"},
                     "stream_mode": ["values", "updates", "custom"]});
    let r = c
        .post(format!("{b}/threads/{THREAD}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(h["cache-control"], "no-store");
    let at = h["content-location"].to_str().unwrap().to_owned();
    assert!(at.starts_with(&format!("/threads/{THREAD}/runs/")));
    assert_eq!(h["location"].to_str().unwrap(), format!("{at}/stream"));
    let body = r.text().await.unwrap();
    let official = include_str!("fixtures/official_stream_interrupt.sse");
    let ours = frames(&body);
    let theirs = frames(official);
    let names = |f: &[(String, Value)]| f.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    // The first event: the run's id and attempt, in the official key order.
    let run_id = at.rsplit('/').next().unwrap();
    assert!(body.starts_with(&format!(
        "event: metadata\r\ndata: {{\"run_id\":\"{run_id}\",\"attempt\":1}}\r\n\r\n"
    )));
    assert_eq!(ours[2].1, theirs[2].1, "the custom event");
    assert_eq!(ours[3].1, theirs[3].1, "the first update");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let (our_pause, their_pause) = (
        &ours[5].1["__interrupt__"][0],
        &theirs[5].1["__interrupt__"][0],
    );
    assert_eq!(keys(our_pause).len(), keys(their_pause).len());
    assert_eq!(our_pause["value"], their_pause["value"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_is_answered_with_command_resume() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(
        &c,
        format!("{b}/threads"),
        json!({"thread_id": THREAD, "metadata": {"user": "a"}}),
    )
    .await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    let (status, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        out["__interrupt__"][0]["value"],
        json!({"question": "approve?"})
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "interrupted");
    assert_eq!(
        t["metadata"],
        json!({"user": "a", "graph_id": "approval", "assistant_id": APPROVAL})
    );
    assert_eq!(
        t["interrupts"]["review"][0]["value"],
        json!({"question": "approve?"})
    );
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(state["next"], json!(["review"]));
    assert_eq!(
        state["tasks"][0]["interrupts"][0]["value"],
        json!({"question": "approve?"})
    );
    let resume = json!({"assistant_id": APPROVAL, "command": {"resume": true}});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), resume).await;
    assert_eq!(
        out,
        json!({"topic": "x", "log": ["draft:x", "review"], "approved": true})
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        (t["status"].as_str(), &t["interrupts"]),
        (Some("idle"), &json!({}))
    );
    let (_, runs) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    let statuses: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["success", "success"]);
    let run_id = runs[0]["run_id"].as_str().unwrap();
    let (status, run) = get(&c, format!("{b}/threads/{THREAD}/runs/{run_id}")).await;
    assert_eq!(
        (status, &run["kwargs"]["command"]),
        (StatusCode::OK, &json!({"resume": true}))
    );
    let (_, history) = post(
        &c,
        format!("{b}/threads/{THREAD}/history"),
        json!({"limit": 2}),
    )
    .await;
    assert_eq!(history.as_array().unwrap().len(), 2);
    assert_eq!(history[0]["values"]["approved"], true);
    let older = history[1]["checkpoint_id"].as_str().unwrap();
    let (status, at) = get(&c, format!("{b}/threads/{THREAD}/state/{older}")).await;
    assert_eq!(
        (status, &at["values"]),
        (StatusCode::OK, &history[1]["values"])
    );
    assert_eq!(at["checkpoint_id"], older);
    for unknown in ["999", "abc"] {
        let (status, _) = get(&c, format!("{b}/threads/{THREAD}/state/{unknown}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
    }
    let by_graph = json!({"metadata": {"graph_id": "approval"}});
    assert_eq!(
        post(&c, format!("{b}/threads/search"), by_graph).await.1[0]["thread_id"],
        THREAD
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_updates_go_through_the_reducers_as_a_node() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let update = json!({"values": {"log": ["by hand"]}, "as_node": "draft"});
    let (status, out) = post(&c, format!("{b}/threads/{THREAD}/state"), update).await;
    assert_eq!(status, StatusCode::OK);
    assert!(out["checkpoint"]["checkpoint_id"].is_string());
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(state["values"]["log"], json!(["draft:x", "by hand"]));
    let bad = json!({"values": {"log": ["x"]}, "as_node": "nonode"});
    assert_eq!(
        post(&c, format!("{b}/threads/{THREAD}/state"), bad).await.0,
        StatusCode::BAD_REQUEST
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_runs_use_a_thread_of_their_own() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let run = json!({"assistant_id": "approval", "input": {"topic": "z"}});
    let r = c
        .post(format!("{b}/runs/wait"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let at = r.headers()["content-location"].to_str().unwrap().to_owned();
    assert!(at.starts_with("/threads/"));
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["log"], json!(["draft:z"]));
    let r = c
        .post(format!("{b}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let at = r.headers()["content-location"].to_str().unwrap().to_owned();
    assert!(at.starts_with("/runs/"));
    let names: Vec<String> = frames(&r.text().await.unwrap())
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(names, ["metadata", "values", "values", "values"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_streams_an_error_and_marks_the_thread() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "boom"}});
    let r = c
        .post(format!("{b}/threads/{THREAD}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let events = frames(&r.text().await.unwrap());
    let (name, error) = events.last().unwrap();
    assert_eq!(name, "error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the draft failed"),
        "{error}"
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "error");
    let (_, out) = post(&c, format!("{b}/runs/wait"), run).await;
    assert!(out["__error__"]["message"].is_string(), "{out}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_before_the_stream_starts() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let stream = format!("{b}/threads/{THREAD}/runs/stream");
    let refused = |status, body| refused(&stream, status, body);
    let unknown_thread = format!("{b}/threads/22222222-1111-1111-1111-111111111111/runs/stream");
    let (status, _) = post(&c, unknown_thread, json!({"assistant_id": "approval"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let detail = refused(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"assistant_id": "nope"}),
    )
    .await;
    assert!(
        detail.contains("registered graphs: approval, chat, countdown, guarded, slow"),
        "{detail}"
    );
    let unknown = json!({"assistant_id": "00000000-0000-0000-0000-000000000000"});
    refused(StatusCode::NOT_FOUND, unknown).await;
    let bad_mode = json!({"assistant_id": "approval", "stream_mode": ["values", "bogus"]});
    assert!(refused(StatusCode::UNPROCESSABLE_ENTITY, bad_mode)
        .await
        .contains("bogus"));
    let bad_strategy = json!({"assistant_id": "approval", "multitask_strategy": "bogus"});
    refused(StatusCode::UNPROCESSABLE_ENTITY, bad_strategy).await;
    refused(StatusCode::UNPROCESSABLE_ENTITY, json!({"input": {}})).await;
    let bad_input = json!({"assistant_id": "approval", "input": {"topic": 5}});
    assert!(refused(StatusCode::UNPROCESSABLE_ENTITY, bad_input)
        .await
        .contains("topic"));
    let r = c
        .post(&stream)
        .header("content-type", "application/json")
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let big = format!("{{\"x\": \"{}\"}}", "a".repeat(3 << 20));
    let r = c
        .post(&stream)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let (status, body) = get(&c, format!("{b}/no/such/route")).await;
    assert_eq!(
        (status, body),
        (StatusCode::NOT_FOUND, json!({"detail": "Not Found"}))
    );
    server.stop().await;
}

/// Posts a run that must be refused with `status`: the answer's detail.
async fn refused(url: &str, status: StatusCode, body: Value) -> String {
    let (got, answer) = post(&Client::new(), url.to_owned(), body).await;
    assert_eq!(got, status, "{answer}");
    answer["detail"].as_str().expect("detail").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_set_private_or_input_omitted_fields() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    for field in ["token", "language"] {
        let run = json!({"assistant_id": "guarded", "input": {"topic": "t", field: "x"}});
        let (status, e) = post(&c, format!("{b}/runs/wait"), run).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(e["detail"].as_str().unwrap().contains(field), "{e}");
    }
    let run = json!({"assistant_id": "guarded", "input": {"topic": "t"}});
    let (_, out) = post(&c, format!("{b}/runs/wait"), run).await;
    assert_eq!(out["topic"], "T");
    assert!(
        out.get("token").is_none(),
        "a private field is no output: {out}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_thread_rejects_a_run_with_reject_and_queues_one_by_default() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    let first = tokio::spawn(post_owned(
        wait.clone(),
        json!({"assistant_id": "slow", "input": {"n": 1}}),
    ));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}")).await.1["status"],
        "busy"
    );
    let reject = json!({"assistant_id": "slow", "input": {"n": 1}, "multitask_strategy": "reject"});
    let (status, e) = post(&c, wait.clone(), reject).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(e["detail"]
        .as_str()
        .unwrap()
        .starts_with("Thread is already running a task"));
    // `enqueue`, the default: the run waits for the first to end.
    let queued = post(
        &c,
        wait,
        json!({"assistant_id": "slow", "input": {"n": 10}}),
    )
    .await;
    assert!(first.is_finished(), "the queued run ended before the first");
    assert_eq!(first.await.unwrap().1, json!({"n": 2}));
    assert_eq!(queued.1, json!({"n": 11}));
    server.stop().await;
}

/// Posts `body` to `path` over a connection of its own, reads the start
/// of the answer, and closes the connection: a client that leaves.
async fn read_then_leave(addr: std::net::SocketAddr, path: String, body: Value) -> String {
    use std::io::{Read, Write};
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let read = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.write_all(req.as_bytes()).expect("write");
        let mut start = vec![0; 4096];
        let n = s.read(&mut start).expect("read");
        String::from_utf8_lossy(&start[..n]).into_owned()
    });
    read.await.expect("request")
}

async fn post_owned(url: String, body: Value) -> (StatusCode, Value) {
    post(&Client::new(), url, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_threads_runs_and_assistants() {
    let db = fresh_db();
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.clone());
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let (_, before) = get(&c, format!("{b}/assistants/{APPROVAL}")).await;
    server.stop().await;
    let server = start(&db).await;
    let b = &server.base;
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "interrupted");
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}/runs"))
            .await
            .1
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        get(&c, format!("{b}/assistants/{APPROVAL}")).await.1,
        before
    );
    let resume = json!({"assistant_id": "approval", "command": {"resume": false}});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), resume).await;
    assert_eq!(out["log"], json!(["draft:x", "review"]));
    server.stop().await;
}

/// `messages-tuple`: `[chunk, metadata]` pairs as the official server sent
/// them for the same tokens of a fake chat model, the last chunk marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stream_as_the_official_servers_tuples() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "chat", "stream_mode": ["messages-tuple", "values"],
                     "input": {"messages": [{"type": "human", "content": "hi"}]}});
    let r = c
        .post(format!("{b}/threads/{THREAD}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let ours = frames(&r.text().await.unwrap());
    let theirs = frames(include_str!("fixtures/official_stream_messages.sse"));
    let names = |f: &[(String, Value)]| f.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    let chunks = |f: &[(String, Value)]| {
        f.iter()
            .filter(|e| e.0 == "messages")
            .map(|e| e.1[0].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(chunks(&ours), chunks(&theirs));
    let (our_meta, their_meta) = (&ours[2].1[1], &theirs[2].1[1]);
    for key in [
        "langgraph_node",
        "graph_id",
        "assistant_id",
        "created_by",
        "run_attempt",
    ] {
        assert_eq!(our_meta[key], their_meta[key], "{key}");
    }
    for key in [
        "langgraph_step",
        "langgraph_checkpoint_ns",
        "thread_id",
        "run_id",
    ] {
        assert!(!our_meta[key].is_null(), "{key} in {our_meta}");
    }
    assert_eq!(our_meta["thread_id"], THREAD);
    server.stop().await;
}

/// A run the process died in (left `running` in the file) is marked
/// `error` at the next start, its thread too: nothing stays busy forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_by_a_dead_process_is_marked_failed() {
    let db = fresh_db();
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.clone());
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    server.stop().await;
    // What a crash mid-run leaves behind.
    let file = rusqlite::Connection::open(&db).unwrap();
    file.execute_batch(
        "UPDATE server_runs SET status = 'running'; UPDATE server_threads SET status = 'busy';",
    )
    .unwrap();
    drop(file);
    let server = start(&db).await;
    let b = &server.base;
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}")).await.1["status"],
        "error"
    );
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}/runs")).await.1[0]["status"],
        "error"
    );
    server.stop().await;
}

/// `on_disconnect: "cancel"` (what `useStream` sends) stops the run when
/// its client leaves (seen at the next event or heartbeat that cannot be
/// delivered), the thread at its last stored step; by default the run
/// goes on to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stops_with_its_client_only_when_asked_to() {
    let server = start(&fresh_db()).await;
    let b = &server.base;
    for on_disconnect in ["cancel", "continue"] {
        let c = Client::new();
        let (_, t) = post(&c, format!("{b}/threads"), json!({})).await;
        let tid = t["thread_id"].as_str().unwrap().to_owned();
        let run = json!({"assistant_id": "countdown", "input": {"n": 20}, "on_disconnect": on_disconnect});
        let path = format!("/threads/{tid}/runs/stream");
        let first = read_then_leave(server.addr, path, run).await;
        assert!(first.contains("event: metadata"), "{first}");
        tokio::time::sleep(std::time::Duration::from_millis(3000)).await;
        let c = Client::new();
        let (_, runs) = get(&c, format!("{b}/threads/{tid}/runs")).await;
        let (_, state) = get(&c, format!("{b}/threads/{tid}/state")).await;
        // A run cancelled before its input was stored leaves no state.
        let n = state["values"]["n"].as_u64().unwrap_or(20);
        if on_disconnect == "cancel" {
            assert_eq!(runs[0]["status"], "interrupted");
            assert!(n > 0, "the run stopped midway");
            // Where the run stopped: `interrupted` midway, as the official
            // server shows a cancelled run's thread.
            let thread = get(&c, format!("{b}/threads/{tid}")).await.1;
            assert_ne!(thread["status"], "busy", "{thread}");
        } else {
            assert_eq!((runs[0]["status"].as_str(), n), (Some("success"), 0));
        }
    }
    server.stop().await;
}

/// `POST /threads/{id}/runs` answers the run's record at once; `join`
/// waits for its output, and answers the thread's values once it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_is_joined() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 3}});
    let r = c
        .post(format!("{b}/threads/{THREAD}/runs"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let at = r.headers()["content-location"].to_str().unwrap().to_owned();
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["status"], "pending");
    assert_eq!(
        at,
        format!(
            "/threads/{THREAD}/runs/{}",
            created["run_id"].as_str().unwrap()
        )
    );
    let (status, out) = get(&c, format!("{b}{at}/join")).await;
    assert_eq!((status, out), (StatusCode::OK, json!({"n": 0})));
    assert_eq!(get(&c, format!("{b}{at}")).await.1["status"], "success");
    assert_eq!(get(&c, format!("{b}{at}/join")).await.1, json!({"n": 0}));
    let unknown = format!("{b}/threads/{THREAD}/runs/00000000-0000-0000-0000-000000000000/join");
    assert!(get(&c, unknown).await.1["__error__"].is_object());
    server.stop().await;
}

/// A cancelled run stops at its next event, the thread where it stopped;
/// a run of the `interrupt` strategy stops the one holding the thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_cancelled_and_interrupted() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let long = json!({"assistant_id": "countdown", "input": {"n": 30}});
    let (_, run) = post(&c, format!("{b}/threads/{THREAD}/runs"), long.clone()).await;
    let at = format!(
        "{b}/threads/{THREAD}/runs/{}",
        run["run_id"].as_str().unwrap()
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let r = c
        .post(format!("{at}/cancel?wait=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert_eq!(get(&c, at.clone()).await.1["status"], "interrupted");
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    let n = t["values"]["n"].as_u64().unwrap();
    assert!(t["status"] == "interrupted" && n > 0 && n < 30, "{t}");
    let again = c.post(format!("{at}/cancel")).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    // `interrupt`: the new run stops the one holding the thread.
    let (_, first) = post(&c, format!("{b}/threads/{THREAD}/runs"), long).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let short =
        json!({"assistant_id": "countdown", "input": {"n": 2}, "multitask_strategy": "interrupt"});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), short).await;
    assert_eq!(out, json!({"n": 0}));
    let first = format!(
        "{b}/threads/{THREAD}/runs/{}",
        first["run_id"].as_str().unwrap()
    );
    assert_eq!(get(&c, first).await.1["status"], "interrupted");
    server.stop().await;
}

/// What a client that sends `request` and then nothing more gets within
/// five seconds, and how long it took.
async fn stall(addr: std::net::SocketAddr, request: &'static str) -> (String, Duration) {
    use std::io::{Read, Write};
    let answer = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let started = Instant::now();
        s.write_all(request.as_bytes()).expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        (
            String::from_utf8_lossy(&out).into_owned(),
            started.elapsed(),
        )
    });
    answer.await.expect("request")
}

/// Half-sent headers are cut off, a body shorter than its
/// `Content-Length` is answered 408: a slow client holds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_cut_off() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.read_timeout(Duration::from_millis(500))).await;
    let (answer, took) = stall(server.addr, "GET /ok HTTP/1.1\r\nHost: x\r\n").await;
    assert!(
        took < Duration::from_secs(3),
        "closed after {took:?}: {answer}"
    );
    assert!(!answer.contains("200 OK"), "{answer}");
    let short = "POST /threads HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{}";
    let (answer, took) = stall(server.addr, short).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    server.stop().await;
}
