//! Runs as a client meets them: streamed (framed and shaped as LangGraph's
//! own server streams them, compared with its recorded answers), waited
//! for, stateless, in the background, interrupted and resumed, cancelled,
//! queued on a busy thread.

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, post_owned, read_then_leave, APPROVAL, THREAD};
use support::{frames, fresh_db, post_frames, start};

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

/// `messages-tuple`: `[chunk, metadata]` pairs as the official server sent
/// them for the same tokens of a fake chat model, the last chunk marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stream_as_the_official_servers_tuples() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "chat", "stream_mode": ["messages-tuple", "values"],
                     "input": {"messages": [{"type": "human", "content": "hi"}]}});
    let ours = post_frames(&c, format!("{b}/threads/{THREAD}/runs/stream"), &run).await;
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
    let events = post_frames(&c, format!("{b}/threads/{THREAD}/runs/stream"), &run).await;
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
async fn a_busy_thread_rejects_a_run_with_reject_and_queues_one_by_default() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    let first = tokio::spawn(post_owned(
        wait.clone(),
        json!({"assistant_id": "slow", "input": {"n": 1}}),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = c
        .post(format!("{at}/cancel?wait=true"))
        .send()
        .await
        .unwrap();
    // With `wait`, answered once the run stopped: 200 and `{}`, as the
    // official server answers (202 without).
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({}));
    assert_eq!(get(&c, at.clone()).await.1["status"], "interrupted");
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    let n = t["values"]["n"].as_u64().unwrap();
    assert!(t["status"] == "interrupted" && n > 0 && n < 30, "{t}");
    let again = c.post(format!("{at}/cancel")).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    // `interrupt`: the new run stops the one holding the thread.
    let (_, first) = post(&c, format!("{b}/threads/{THREAD}/runs"), long).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
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
        tokio::time::sleep(Duration::from_millis(3000)).await;
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

/// A new input on a thread paused on an interrupt runs from the start, as
/// the official server runs it (it answered `log: ["draft:x", "draft:y"]`
/// and the pause again), rather than failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_input_on_a_paused_thread_runs_from_the_start() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    let first = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, wait.clone(), first).await;
    let second = json!({"assistant_id": "approval", "input": {"topic": "y"}});
    let (_, out) = post(&c, wait.clone(), second).await;
    assert_eq!(out["log"], json!(["draft:x", "draft:y"]), "{out}");
    assert_eq!(
        out["__interrupt__"][0]["value"],
        json!({"question": "approve?"})
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "interrupted");
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let (_, out) = post(&c, wait, resume).await;
    assert_eq!(out["log"], json!(["draft:x", "draft:y", "review"]));
    server.stop().await;
}

/// Deleting a thread stops its run first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_thread_stops_its_run() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let long = json!({"assistant_id": "countdown", "input": {"n": 50}});
    let (_, run) = post(&c, format!("{b}/threads/{THREAD}/runs"), long).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let r = c
        .delete(format!("{b}/threads/{THREAD}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the run was stopped, not waited for"
    );
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}")).await.0,
        StatusCode::NOT_FOUND
    );
    let join = format!(
        "{b}/threads/{THREAD}/runs/{}/join",
        run["run_id"].as_str().unwrap()
    );
    assert_eq!(get(&c, join).await.0, StatusCode::NOT_FOUND);
    server.stop().await;
}

/// The ids of an SSE body's frames (`id:` lines).
fn ids(body: &str) -> Vec<usize> {
    body.split("\r\n")
        .filter_map(|l| l.strip_prefix("id: ")?.parse().ok())
        .collect()
}

/// A resumable stream numbers its events; a client joins a live run's
/// stream from the start, or after the `Last-Event-ID` it reconnects
/// with; a run that ended streams nothing (as the official server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_stream_is_joined_and_resumed() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.clone());
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 2}, "stream_resumable": true});
    let r = c
        .post(format!("{b}/threads/{THREAD}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    assert_eq!(ids(&body), [1, 2, 3, 4]);
    assert!(body.starts_with("event: metadata\r\ndata: {\"run_id\""));
    let long = json!({"assistant_id": "countdown", "input": {"n": 10}});
    let (_, created) = post(&c, format!("{b}/threads/{THREAD}/runs"), long).await;
    let at = format!(
        "{b}/threads/{THREAD}/runs/{}/stream",
        created["run_id"].as_str().unwrap()
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    let whole = c.get(&at).send();
    let rest = c.get(&at).header("Last-Event-ID", "3").send();
    let (whole, rest) = tokio::join!(whole, rest);
    let (whole, rest) = (
        whole.unwrap().text().await.unwrap(),
        rest.unwrap().text().await.unwrap(),
    );
    assert_eq!(
        ids(&whole),
        (1..=12).collect::<Vec<_>>(),
        "metadata and 11 values"
    );
    assert_eq!(ids(&rest), (4..=12).collect::<Vec<_>>());
    let events = frames(&whole);
    assert_eq!(
        (events[0].0.as_str(), &events[11].1),
        ("metadata", &json!({"n": 0}))
    );
    let ended = c.get(&at).send().await.unwrap();
    assert_eq!(ended.status(), StatusCode::OK);
    assert_eq!(ended.text().await.unwrap(), "");
    server.stop().await;
}
