//! What the server refuses, before anything runs: bad ids, unknown
//! threads and assistants, bad modes and inputs, fields a client may not
//! set, oversized bodies, slow clients.

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::json;
use support::http::{get, post, raw_status, refused, stall, THREAD};
use support::{fresh_db, start, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_before_the_stream_starts() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let stream = format!("{b}/threads/{THREAD}/runs/stream");
    let refused = |status, body| refused(&stream, status, body);
    assert_eq!(raw_status(server.addr, "GET /threads/..").await, 422);
    assert_eq!(raw_status(server.addr, "GET /threads/./state").await, 422);
    let unknown_thread = format!("{b}/threads/22222222-1111-1111-1111-111111111111/runs/stream");
    let (status, _) = post(&c, unknown_thread, json!({"assistant_id": "approval"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let detail = refused(
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"assistant_id": "nope"}),
    )
    .await;
    assert!(
        detail.contains(
            "registered graphs: approval, ask, chat, countdown, deep, guarded, nest, pair, reply, slow"
        ),
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

/// A thread that ran one graph holds that graph's typed state: a run of
/// another graph on it is refused before it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_runs_one_graph() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    post(
        &c,
        wait.clone(),
        json!({"assistant_id": "countdown", "input": {"n": 1}}),
    )
    .await;
    let other = json!({"assistant_id": "approval", "input": {"topic": "y"}});
    let detail = refused(&wait, StatusCode::CONFLICT, other).await;
    assert!(
        detail.contains("`countdown`") && detail.contains("`approval`"),
        "{detail}"
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        (t["status"].as_str(), &t["values"]),
        (Some("idle"), &json!({"n": 0}))
    );
    server.stop().await;
}
