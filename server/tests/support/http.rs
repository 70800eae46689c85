//! Requests as the tests send them: JSON in and out, and by hand on a
//! raw connection where an HTTP client would tidy the request up.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::Value;

pub const THREAD: &str = "11111111-1111-1111-1111-111111111111";

/// The official server's id for a graph named `approval`.
pub const APPROVAL: &str = "e234584d-b7bf-527f-9d06-ba77f8f5172d";

pub async fn post(c: &Client, url: String, body: Value) -> (StatusCode, Value) {
    let r = c.post(url).json(&body).send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// `POST /threads` on `base` with the caller's id `id`.
pub async fn new_thread(c: &Client, base: &str, id: &str) -> (StatusCode, Value) {
    post(
        c,
        format!("{base}/threads"),
        serde_json::json!({"thread_id": id}),
    )
    .await
}

pub async fn get(c: &Client, url: String) -> (StatusCode, Value) {
    let r = c.get(url).send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// A request written by hand, for paths an HTTP client would normalize
/// (`..`): the status line's code.
pub async fn raw_status(addr: SocketAddr, request_line: &str) -> u16 {
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

/// Posts a run that must be refused with `status`: the answer's detail.
pub async fn refused(url: &str, status: StatusCode, body: Value) -> String {
    let (got, answer) = post(&Client::new(), url.to_owned(), body).await;
    assert_eq!(got, status, "{answer}");
    answer["detail"].as_str().expect("detail").to_owned()
}

/// Posts `body` to `path` over a connection of its own, reads the start
/// of the answer, and closes the connection: a client that leaves.
pub async fn read_then_leave(addr: SocketAddr, path: String, body: Value) -> String {
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

pub async fn post_owned(url: String, body: Value) -> (StatusCode, Value) {
    post(&Client::new(), url, body).await
}

/// What a client that sends `request` and then nothing more gets within
/// five seconds, and how long it took.
pub async fn stall(addr: SocketAddr, request: &'static str) -> (String, Duration) {
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
