//! The stream modes beyond `values` and `updates`, compared with what the
//! official server streamed for the same graphs and inputs (recorded in
//! `fixtures/official_mode_*.sse` from `python/reference/modes.py`).

mod support;

use reqwest::Client;
use serde_json::{json, Value};
use support::{fresh_db, start};

/// The body of a run of `graph` on a new thread.
async fn stream(base: &str, graph: &str, modes: Value, input: Value, subgraphs: bool) -> String {
    let c = Client::new();
    let thread: Value = c
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = thread["thread_id"].as_str().unwrap();
    let run = json!({"assistant_id": graph, "stream_mode": modes, "input": input, "stream_subgraphs": subgraphs});
    let r = c
        .post(format!("{base}/threads/{id}/runs/stream"))
        .json(&run)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn dump() {
    let server = start(&fresh_db()).await;
    let b = &server.base;
    let chat = json!({"messages": [{"type": "human", "content": "hi"}]});
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ours");
    std::fs::create_dir_all(&out).unwrap();
    for (name, graph, modes, input, sub) in [
        (
            "debug",
            "pair",
            json!(["debug"]),
            json!({"topic": "x"}),
            false,
        ),
        ("messages", "chat", json!(["messages"]), chat.clone(), false),
        (
            "events_pair",
            "pair",
            json!(["events"]),
            json!({"topic": "x"}),
            false,
        ),
        (
            "events_chat",
            "chat",
            json!(["events"]),
            chat.clone(),
            false,
        ),
        (
            "subgraphs",
            "nest",
            json!(["values", "updates"]),
            json!({"n": 1}),
            true,
        ),
        (
            "subgraphs_debug",
            "nest",
            json!(["debug", "messages-tuple", "tasks"]),
            json!({"n": 1}),
            true,
        ),
        (
            "several",
            "chat",
            json!(["messages", "values", "messages-tuple"]),
            chat.clone(),
            false,
        ),
        (
            "messages_values",
            "chat",
            json!(["messages", "values"]),
            chat.clone(),
            false,
        ),
        (
            "events_nest",
            "nest",
            json!(["events"]),
            json!({"n": 1}),
            true,
        ),
    ] {
        let body = stream(b, graph, modes, input, sub).await;
        std::fs::write(out.join(format!("{name}.sse")), body).unwrap();
    }
    server.stop().await;
}
