//! Load on a fleet: 1,000 clients streaming runs at once from two server
//! processes on one PostgreSQL server with its default `max_connections`
//! (100). Each server reaches the database through bounded pools, so the
//! streams wait their turn for a connection instead of failing. Alone in
//! its test binary, so no other test's servers share the database server.

#![cfg(feature = "postgres")]

mod support;

use reqwest::Client;
use serde_json::json;
use support::db::{connect, fresh_pg};
use support::node::Node;

/// How many clients stream at once, across the two servers.
const STREAMS: usize = 1_000;

/// One client's streamed run of a one-step countdown on a thread of its
/// own: `Ok` when it answered 200 and its stream ended on the final
/// values with no `error` event.
async fn one_stream(c: Client, base: String, i: usize) -> Result<(), String> {
    let body = json!({"assistant_id": "countdown", "input": {"n": 1}});
    let sent = c.post(format!("{base}/runs/stream")).json(&body).send();
    let r = sent.await.map_err(|e| format!("stream {i}: {e}"))?;
    let status = r.status();
    let text = r.text().await.map_err(|e| format!("stream {i}: {e}"))?;
    let frames = support::frames(&text);
    let last = frames.iter().rev().find(|(event, _)| event == "values");
    let failed = frames.iter().any(|(event, _)| event == "error");
    match (status.as_u16(), failed, last.map(|(_, v)| &v["n"])) {
        (200, false, Some(n)) if *n == 0 => Ok(()),
        _ => Err(format!("stream {i}: {status}: {text}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_streams_across_two_servers_all_end_well() {
    let db = fresh_pg();
    db.create().await;
    let admin = connect(&db.url()).await;
    let row = admin.query_one("SHOW max_connections", &[]).await;
    let max: String = row.expect("max_connections").get(0);
    assert_eq!(max, "100", "the database server's default");
    drop(admin);
    let (a, b) = (Node::start(&db, &[]).await, Node::start(&db, &[]).await);
    let c = Client::new();
    let streams: Vec<_> = (0..STREAMS)
        .map(|i| {
            let base = if i % 2 == 0 { &a.base } else { &b.base };
            tokio::spawn(one_stream(c.clone(), base.clone(), i))
        })
        .collect();
    let mut failures = Vec::new();
    for stream in streams {
        if let Err(e) = stream.await.expect("client task") {
            failures.push(e);
        }
    }
    let shown: Vec<&String> = failures.iter().take(3).collect();
    assert!(
        failures.is_empty(),
        "{} failed, e.g. {shown:?}",
        failures.len()
    );
}
