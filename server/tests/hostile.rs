//! Hostile input over real sockets: bodies of the wrong shape, ids that
//! are not UTF-8, malformed framing, oversized and never-ending bodies,
//! clients that never read, and many idle connections. Each is answered
//! with a clear 4xx naming the field or the case (or the connection is
//! closed), nothing is half-applied, and the server goes on serving.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, THREAD};
use support::{fresh_db, start, start_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The read (and write) timeout the tests' servers run with: short, so a
/// test that waits on it stays fast.
const TIMEOUT: Duration = Duration::from_millis(500);

/// Sends `request` on a connection of its own and reads until the server
/// closes it or `wait` passes: what came back, as text.
async fn exchange(addr: SocketAddr, request: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The `{"detail"}` of an answer read off a raw connection.
fn detail(answer: &str) -> String {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    body["detail"].as_str().unwrap_or_default().to_owned()
}

/// `method path` with `body` (raw text): status and detail.
async fn send(c: &Client, method: &str, url: String, body: &str) -> (StatusCode, String) {
    let method = method.parse().expect("method");
    let r = c
        .request(method, url)
        .header("content-type", "application/json");
    let r = r.body(body.to_owned()).send().await.expect("request");
    let status = r.status();
    let answer: Value = r.json().await.unwrap_or(Value::Null);
    (status, answer["detail"].as_str().unwrap_or("").to_owned())
}

/// Bodies with a documented field of the wrong type or out of range:
/// method, path (`THREAD` stands for the test's thread), body, and what
/// the refusal's detail says.
const WRONG_SHAPES: &[(&str, &str, &str, &str)] = &[
    (
        "POST",
        "/threads",
        "[]",
        "expected a JSON object, found an array",
    ),
    (
        "POST",
        "/threads",
        "null",
        "expected a JSON object, found null",
    ),
    (
        "POST",
        "/threads",
        r#"{"metadata": 5}"#,
        "metadata: expected an object",
    ),
    (
        "PATCH",
        "/threads/THREAD",
        r#"{"metadata": []}"#,
        "metadata:",
    ),
    (
        "POST",
        "/threads/search",
        r#"{"limit": 0}"#,
        "limit: expected an integer from 1 to 1000",
    ),
    (
        "POST",
        "/threads/search",
        r#"{"limit": 1000000000000}"#,
        "limit:",
    ),
    ("POST", "/threads/search", r#"{"offset": -1}"#, "offset:"),
    (
        "POST",
        "/threads/search",
        r#"{"status": "bogus"}"#,
        "status: expected one of",
    ),
    ("POST", "/threads/count", r#"{"values": 1}"#, "values:"),
    (
        "POST",
        "/threads/THREAD/history",
        r#"{"limit": -1}"#,
        "limit:",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "config": "x"}"#,
        "config: expected an object",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "config": {"recursion_limit": 0}}"#,
        "config.recursion_limit",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "config": {"tags": "x"}}"#,
        "config.tags",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "on_completion": "x"}"#,
        "on_completion: expected one of",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "if_not_exists": "x"}"#,
        "if_not_exists:",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": "countdown", "context": 1}"#,
        "context:",
    ),
    (
        "POST",
        "/threads/THREAD/runs/wait",
        r#"{"assistant_id": 5}"#,
        "assistant_id: expected a string",
    ),
    (
        "POST",
        "/runs/wait",
        r#"{"assistant_id": "countdown", "after_seconds": "x"}"#,
        "after_seconds:",
    ),
    (
        "POST",
        "/runs/wait",
        r#"{"assistant_id": "countdown", "feedback_keys": "x"}"#,
        "feedback_keys:",
    ),
    (
        "PUT",
        "/store/items",
        r#"{"namespace": "a", "key": "k", "value": {}}"#,
        "namespace: expected a list of strings",
    ),
    (
        "POST",
        "/store/namespaces",
        r#"{"max_depth": -1}"#,
        "max_depth: ",
    ),
];

/// Bodies whose documented fields have the wrong type or are out of
/// range: a 422 naming the field, before anything is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_of_the_wrong_shape_are_refused_by_name() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    for (method, path, body, expected) in WRONG_SHAPES {
        let path = path.replace("THREAD", THREAD);
        let (status, detail) = send(&c, method, format!("{b}{path}"), body).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{method} {path} {body}: {detail}"
        );
        assert!(
            detail.contains(expected),
            "{method} {path} {body}: {detail}"
        );
        assert!(
            !detail.contains("usize") && !detail.contains("struct"),
            "{detail}"
        );
    }
    for query in ["limit=-1", "offset=-5", "limit=x"] {
        let (status, e) = get(&c, format!("{b}/threads/{THREAD}/runs?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {e}");
        assert!(
            e["detail"].as_str().unwrap_or("").contains(&query[..4]),
            "{e}"
        );
    }
    // Nothing half-applied: no thread or run came of the refusals.
    let (_, threads) = post(&c, format!("{b}/threads/search"), json!({})).await;
    assert_eq!(threads.as_array().map(Vec::len), Some(1), "{threads}");
    let (_, runs) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    assert_eq!(runs, json!([]));
    server.stop().await;
}

/// JSON that is not JSON (deep nesting, `1e400`, `NaN`, a lone
/// surrogate, gzip) is a 422; duplicate keys keep the last, as the
/// official server's parser does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_refused() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let (c, b) = (Client::new(), &server.base);
    let deep = "[".repeat(10_000);
    let bad = [
        deep.as_str(),
        r#"{"metadata": {"x": 1e400}}"#,
        r#"{"metadata": {"x": NaN}}"#,
        r#"{"metadata": {"x": "\ud800"}}"#,
        "not json",
    ];
    for body in bad {
        let (status, detail) = send(&c, "POST", format!("{b}/threads"), body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body:.40}");
        assert_eq!(detail, "Invalid JSON in request body");
    }
    let twice =
        format!(r#"{{"thread_id": "{THREAD}", "metadata": {{"a": 1}}, "metadata": {{"a": 2}}}}"#);
    let (status, _) = send(&c, "POST", format!("{b}/threads"), &twice).await;
    assert_eq!(status, StatusCode::OK);
    let (_, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(thread["metadata"]["a"], 2);
    server.stop().await;
}

/// A path id whose escapes are not UTF-8 is the official server's 422
/// for an id that is no UUID, in JSON (axum's own answer is plain text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_that_are_not_utf8_are_a_422_naming_the_id() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let cases = [
        ("GET /threads/%FF", "Invalid thread ID: must be a UUID"),
        (
            "DELETE /threads/%C3%28",
            "Invalid thread ID: must be a UUID",
        ),
        (
            &*format!("GET /threads/{THREAD}/runs/%FF"),
            "Invalid run ID: must be a UUID",
        ),
        ("GET /threads/%00", "Invalid thread ID: must be a UUID"),
    ];
    for (line, expected) in cases {
        let request = format!("{line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer = exchange(server.addr, request.as_bytes(), Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 422"), "{line}: {answer}");
        assert_eq!(detail(&answer), expected, "{line}");
    }
    server.stop().await;
}

/// Framing: a declared length over the limit of a client that waits
/// for a `100 Continue` is refused at once (none sent, nothing read);
/// one that never comes is cut off at the read timeout; a bad chunk size is a 400 in words; a
/// chunked body that never ends is cut off at the read timeout; headers
/// and URLs too large are refused by hyper; a smuggled second request
/// behind `Transfer-Encoding` + `Content-Length` is never answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_framing_is_refused() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let addr = server.addr;
    let wait = Duration::from_secs(5);
    let head = "POST /threads HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n";
    let started = Instant::now();
    let huge = format!("{head}content-length: 99999999999\r\nexpect: 100-continue\r\n\r\n");
    let answer = exchange(addr, huge.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    let silent = format!("{head}content-length: 99999999999\r\n\r\n{{}}");
    let answer = exchange(addr, silent.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let bad_chunk = format!("{head}transfer-encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n");
    let answer = exchange(addr, bad_chunk.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(detail(&answer).contains("malformed"), "{answer}");
    let endless = format!("{head}transfer-encoding: chunked\r\n\r\n2\r\n{{}}\r\n");
    let answer = exchange(addr, endless.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let smuggle = format!(
        "{head}content-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
    );
    let answer = exchange(addr, smuggle.as_bytes(), wait).await;
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
    let big_header = format!(
        "GET /ok HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let answer = exchange(addr, big_header.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.80}");
    let many: String = (0..10_000).map(|i| format!("x-h{i}: v\r\n")).collect();
    let many = format!("GET /ok HTTP/1.1\r\nHost: x\r\n{many}\r\n");
    let answer = exchange(addr, many.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.80}");
    let long_url = format!(
        "GET /threads/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(100_000)
    );
    let answer = exchange(addr, long_url.as_bytes(), wait).await;
    assert!(answer.starts_with("HTTP/1.1 414"), "{answer:.80}");
    let h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    let started = Instant::now();
    let answer = exchange(addr, h2, wait).await;
    assert!(!answer.contains(" 200 "), "{answer}");
    assert!(started.elapsed() < wait, "an HTTP/2 preface hung");
    assert_eq!(
        get(&Client::new(), format!("{}/ok", server.base)).await.0,
        200
    );
    server.stop().await;
}

/// HTTP/1.0 and pipelined requests are served, each answered in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_and_pipelined_requests_are_served() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let wait = Duration::from_secs(5);
    let answer = exchange(server.addr, b"GET /ok HTTP/1.0\r\n\r\n", wait).await;
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    let mut pipelined = "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20);
    pipelined.push_str("GET /info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let answer = exchange(server.addr, pipelined.as_bytes(), wait).await;
    assert_eq!(answer.matches("HTTP/1.1 200 OK").count(), 21, "{answer}");
    assert!(
        answer.ends_with("}"),
        "the last answer is /info's: {answer}"
    );
    server.stop().await;
}

/// A client that streams a run and never reads: the server stops
/// writing to it after the timeout and closes the connection, and the
/// run goes on to its end without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_a_stream_is_disconnected() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    // Large states in every mode: far more than the sockets buffer.
    let topic = "t".repeat(1 << 20);
    let modes = ["values", "updates", "debug", "checkpoints", "tasks"];
    let body = json!({"assistant_id": "approval", "input": {"topic": topic}, "stream_mode": modes});
    let body = body.to_string();
    let request = format!(
        "POST /threads/{THREAD}/runs/stream HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer");
    let mut s = socket.connect(server.addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    // The run pauses at `review` without the client having read a byte.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
        if thread["status"] == "interrupted" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run waited on its client: {}",
            thread["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(TIMEOUT * 3).await;
    // What the kernel had buffered, then the end: the server let go.
    let mut sink = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut sink)).await;
    assert!(
        read.is_ok(),
        "the connection was still open after {} bytes",
        sink.len()
    );
    assert!(sink.len() < 3 * body.len(), "read {} bytes", sink.len());
    server.stop().await;
}

/// 2,000 idle connections (each cut after the read timeout) do not stop
/// a client from being served at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_stop_a_client() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(Duration::from_secs(5))).await;
    let mut idle = Vec::new();
    for _ in 0..2000 {
        idle.push(TcpStream::connect(server.addr).await.expect("connect"));
    }
    let started = Instant::now();
    let (status, _) = get(&Client::new(), format!("{}/ok", server.base)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(idle);
    server.stop().await;
}

/// Strings holding NUL (which PostgreSQL's `jsonb` and `text` refuse) in
/// metadata, a key, a run's input and a state update: stored and read
/// back, or refused naming the field, never a 500, nothing half-applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_characters_are_stored_or_refused_by_name() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let (c, b) = (Client::new(), &server.base);
    let bodies = [
        (
            "POST",
            "/threads".to_owned(),
            json!({"thread_id": THREAD, "metadata": {"a": "x\u{0}y"}}),
        ),
        (
            "PATCH",
            format!("/threads/{THREAD}"),
            json!({"metadata": {"k\u{0}": 1}}),
        ),
        (
            "POST",
            format!("/threads/{THREAD}/runs/wait"),
            json!({"assistant_id": "approval", "input": {"topic": "t\u{0}"}}),
        ),
        (
            "POST",
            format!("/threads/{THREAD}/runs/wait"),
            json!({"assistant_id": "approval", "metadata": {"m": "\u{0}"}, "command": {"resume": true}}),
        ),
        (
            "POST",
            format!("/threads/{THREAD}/state"),
            json!({"values": {"topic": "u\u{0}"}}),
        ),
        (
            "POST",
            "/threads/search".to_owned(),
            json!({"metadata": {"a": "x\u{0}y"}}),
        ),
    ];
    for (method, path, body) in bodies {
        let (status, detail) = send(&c, method, format!("{b}{path}"), &body.to_string()).await;
        // On PostgreSQL a state holding NUL is refused by the
        // checkpointer, naming the key (a 400, or the run's error).
        let named = detail.contains("U+0000") && detail.contains("topic");
        assert!(
            status.is_success() || (status == StatusCode::BAD_REQUEST && named),
            "{method} {path}: {status} {detail}"
        );
    }
    let (status, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    server.stop().await;
}

/// 1,000 runs sent to one thread at once: each is accepted, they run
/// one at a time, and the thread shows `busy` while any runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_runs_on_one_thread_run_in_turn() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run =
        json!({"assistant_id": "countdown", "input": {"n": 1}, "multitask_strategy": "enqueue"});
    let url = format!("{b}/threads/{THREAD}/runs");
    let posts = (0..1000).map(|_| post(&c, url.clone(), run.clone()));
    let answers = agent_state::futures::future::join_all(posts).await;
    assert!(
        answers.iter().all(|(s, _)| *s == StatusCode::OK),
        "{answers:?}"
    );
    // Between two runs the thread is busy, never idle with runs to go.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(130)).await;
        let (_, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
        assert_eq!(thread["status"], "busy");
    }
    server.stop().await;
}

/// A `Last-Event-ID` that is no number replays a live run's stream from
/// the start (as `-1` does); one beyond any id replays nothing, however
/// long (no overflow, no panic).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_event_ids_of_any_kind_are_read_safely() {
    let server = start_with(&fresh_db(), |s| s.read_timeout(TIMEOUT)).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 3}, "stream_resumable": true});
    let (_, started) = post(&c, format!("{b}/threads/{THREAD}/runs"), run).await;
    let join = format!(
        "{b}/threads/{THREAD}/runs/{}/stream",
        started["run_id"].as_str().unwrap()
    );
    let huge = "9".repeat(5000);
    let cases = [
        ("garbage", true),
        ("-1", true),
        ("99999999999999999999", false),
        (&*huge, false),
    ];
    let streams = cases.map(|(id, _)| c.get(&join).header("last-event-id", id).send());
    let streams = agent_state::futures::future::join_all(streams).await;
    for ((id, replayed), r) in cases.iter().zip(streams) {
        let r = r.expect("request");
        assert_eq!(r.status(), StatusCode::OK, "{id:.20}");
        let body = r.text().await.expect("body");
        assert_eq!(
            body.contains("event: metadata"),
            *replayed,
            "{id:.20}: {body}"
        );
    }
    server.stop().await;
}

/// A run cancelled, or its thread deleted, while its client streams: the
/// stream ends only once the run's end is recorded, so a client that
/// then asks for the run (as the SDK does, to know whether to reconnect)
/// never finds it still running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ends_after_its_run_is_recorded_ended() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    for delete in [false, true] {
        let thread = uuid_like(delete);
        post(&c, format!("{b}/threads"), json!({"thread_id": thread})).await;
        let run = json!({"assistant_id": "countdown", "input": {"n": 30}, "stream_mode": "values"});
        let url = format!("{b}/threads/{thread}/runs/stream");
        let mut r = c.post(url).json(&run).send().await.expect("stream");
        let first = r.chunk().await.expect("chunk").expect("a first event");
        let meta = String::from_utf8_lossy(&first).into_owned();
        let run_id = meta.split("\"run_id\":\"").nth(1).expect("run id")[..36].to_owned();
        let stop = match delete {
            true => c.delete(format!("{b}/threads/{thread}")),
            false => c.post(format!("{b}/threads/{thread}/runs/{run_id}/cancel")),
        };
        assert!(stop.send().await.expect("stop").status().is_success());
        while r.chunk().await.expect("chunk").is_some() {}
        let (status, run) = get(&c, format!("{b}/threads/{thread}/runs/{run_id}")).await;
        match delete {
            true => assert_eq!(status, StatusCode::NOT_FOUND, "{run}"),
            false => assert_eq!(run["status"], "interrupted", "{run}"),
        }
    }
    server.stop().await;
}

/// A thread id of its own for each case of a test.
fn uuid_like(second: bool) -> &'static str {
    match second {
        false => "22222222-2222-2222-2222-222222222222",
        true => "33333333-3333-3333-3333-333333333333",
    }
}
