//! The run and thread routes the SDKs call beyond the basics: a state at a
//! checkpoint by `POST`, a fork by `update_state` at a checkpoint, a
//! resume of several interrupts by id, stateless background runs and
//! batches, cancelling several runs, and a thread's join stream; each
//! answered as LangGraph's own server (langgraph-api 0.16.7 under
//! `langgraph dev`) answered the same calls, on SQLite or PostgreSQL
//! (`AGENT_STATE_SERVER_BACKEND`).

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, refused, THREAD};
use support::{fresh_db, start};

const UNKNOWN: &str = "00000000-0000-0000-0000-000000000000";

/// A thread paused on the approval graph's review: its checkpoint ids,
/// newest first.
async fn paused_approval(c: &Client, b: &str) -> Vec<String> {
    post(c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let (_, all) = post(c, format!("{b}/threads/{THREAD}/history"), json!({})).await;
    let ids = all.as_array().expect("history").iter();
    ids.map(|s| s["checkpoint_id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_is_read_at_a_checkpoint_by_post() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let ids = paused_approval(&c, b).await;
    let url = format!("{b}/threads/{THREAD}/state/checkpoint");
    let at = |id: &str| json!({"checkpoint": {"checkpoint_id": id, "checkpoint_ns": ""}});
    let (status, older) = post(&c, url.clone(), at(&ids[1])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(older["checkpoint_id"], ids[1]);
    assert_eq!(older["values"]["log"], json!([]));
    assert_eq!(older["next"], json!(["draft"]));
    // As the GET of the same checkpoint answers it.
    let (_, same) = get(&c, format!("{b}/threads/{THREAD}/state/{}", ids[1])).await;
    assert_eq!(older, same);
    let with_subgraphs = json!({"checkpoint": {"checkpoint_id": ids[1]}, "subgraphs": true});
    assert_eq!(post(&c, url.clone(), with_subgraphs).await.1, older);
    // A checkpoint that names no id: the latest state.
    let (_, latest) = post(&c, url.clone(), json!({"checkpoint": {}})).await;
    assert_eq!(latest["checkpoint_id"], ids[0]);
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, json!({})).await;
    assert!(detail.starts_with("checkpoint: required"), "{detail}");
    let bad = json!({"checkpoint": 5});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("checkpoint: `5`"), "{detail}");
    let bad = json!({"checkpoint": {"checkpoint_id": 5}});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("checkpoint.checkpoint_id"), "{detail}");
    refused(&url, StatusCode::NOT_FOUND, at("12345678")).await;
    let unknown = format!("{b}/threads/{UNKNOWN}/state/checkpoint");
    refused(&unknown, StatusCode::NOT_FOUND, at(&ids[1])).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_at_a_checkpoint_forks_and_history_reads_one_checkpoint() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let ids = paused_approval(&c, b).await;
    let first = ids.last().expect("the input's checkpoint").clone();
    let url = format!("{b}/threads/{THREAD}/state");
    let fork = json!({"values": {"topic": "forked"}, "checkpoint_id": first});
    let (status, written) = post(&c, url.clone(), fork).await;
    assert_eq!(status, StatusCode::OK, "{written}");
    let (_, now) = get(&c, url.clone()).await;
    assert_eq!(now["checkpoint_id"], written["checkpoint_id"]);
    assert_eq!(now["parent_checkpoint"]["checkpoint_id"], first);
    assert_eq!(now["values"]["topic"], "forked");
    assert_eq!(now["values"]["log"], json!([]));
    // The SDKs' `checkpoint=`: the same fork, from a checkpoint config.
    let fork = json!({"values": {"topic": "again"}, "checkpoint": {"checkpoint_id": first}});
    let (_, again) = post(&c, url.clone(), fork).await;
    let (_, now) = get(&c, url.clone()).await;
    assert_eq!(now["checkpoint_id"], again["checkpoint_id"]);
    assert_eq!(now["parent_checkpoint"]["checkpoint_id"], first);
    let unknown = json!({"values": {"topic": "t"}, "checkpoint_id": "99999999"});
    refused(&url, StatusCode::NOT_FOUND, unknown).await;
    let bad = json!({"values": {"topic": "t"}, "checkpoint_id": 7});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("checkpoint_id"), "{detail}");
    // A history from a checkpoint is that checkpoint's state alone, as
    // LangGraph's checkpointers list a config that names one.
    let history = format!("{b}/threads/{THREAD}/history");
    let (_, one) = post(
        &c,
        history,
        json!({"checkpoint": {"checkpoint_id": ids[1]}}),
    )
    .await;
    assert_eq!(one.as_array().map(Vec::len), Some(1));
    assert_eq!(one[0]["checkpoint_id"], ids[1]);
    server.stop().await;
}

/// The ids of the interrupts the thread is paused on, by the side asked.
async fn twin_interrupts(c: &Client, b: &str) -> Vec<(String, String)> {
    let (_, state) = get(c, format!("{b}/threads/{THREAD}/state")).await;
    let interrupts = state["interrupts"].as_array().expect("interrupts").iter();
    interrupts
        .map(|i| {
            let side = i["value"]["ask"].as_str().expect("side").to_owned();
            (side, i["id"].as_str().expect("id").to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_interrupts_are_resumed_by_their_ids() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    let start = json!({"assistant_id": "twin", "input": {"answers": []}});
    let (_, paused) = post(&c, wait.clone(), start).await;
    assert_eq!(paused["__interrupt__"].as_array().map(Vec::len), Some(2));
    let pending = twin_interrupts(&c, b).await;
    assert_eq!(pending.len(), 2);
    // One value for two interrupts: the run fails, the thread still waits.
    let single = json!({"assistant_id": "twin", "command": {"resume": "x"}});
    let (_, failed) = post(&c, wait.clone(), single).await;
    assert_eq!(failed["__error__"]["error"], "AmbiguousResume", "{failed}");
    let said = failed["__error__"]["message"].as_str().unwrap();
    assert!(
        said.contains("command.resume") && !said.contains("Resume::"),
        "{said}"
    );
    assert_eq!(twin_interrupts(&c, b).await, pending);
    // A map answering one of them: that one goes on, the other waits.
    let left = &pending.iter().find(|(s, _)| s == "left").expect("left").1;
    let partial = json!({"assistant_id": "twin", "command": {"resume": {left.as_str(): "L"}}});
    let (_, half) = post(&c, wait.clone(), partial.clone()).await;
    assert_eq!(half["answers"], json!(["left:L"]));
    // The same map again (a retry): its id is answered, so it answers
    // nothing; it is not the other interrupt's value.
    let (_, stale) = post(&c, wait.clone(), partial).await;
    assert_eq!(stale["__error__"]["error"], "UnknownInterrupt", "{stale}");
    let rest = twin_interrupts(&c, b).await;
    assert_eq!(
        rest.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["right"]
    );
    let right = json!({"assistant_id": "twin", "command": {"resume": {rest[0].1.as_str(): "R"}}});
    let (_, done) = post(&c, wait.clone(), right).await;
    assert_eq!(done, json!({"answers": ["left:L", "right:R"]}));
    let (_, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(thread["status"], "idle");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_interrupts_answered_at_once_and_a_map_that_is_no_ids_is_a_value() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    let start = json!({"assistant_id": "twin", "input": {"answers": []}});
    post(&c, wait.clone(), start).await;
    let both: serde_json::Map<String, Value> = twin_interrupts(&c, b)
        .await
        .into_iter()
        .map(|(side, id)| (id, json!(side.to_uppercase())))
        .collect();
    let resume = json!({"assistant_id": "twin", "command": {"resume": both}});
    let (_, done) = post(&c, wait.clone(), resume).await;
    assert_eq!(done, json!({"answers": ["left:LEFT", "right:RIGHT"]}));
    // On a graph paused on one interrupt, a map whose keys are no ids of
    // it is the value itself (the node reads it as JSON).
    let other = "22222222-2222-2222-2222-222222222222";
    post(&c, format!("{b}/threads"), json!({"thread_id": other})).await;
    let wait = format!("{b}/threads/{other}/runs/wait");
    post(
        &c,
        wait.clone(),
        json!({"assistant_id": "twin", "input": {}}),
    )
    .await;
    let (_, state) = get(&c, format!("{b}/threads/{other}/state")).await;
    let left = state["interrupts"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let first = json!({"assistant_id": "twin", "command": {"resume": {left: "a"}}});
    post(&c, wait.clone(), first).await;
    let value = json!({"assistant_id": "twin", "command": {"resume": {"k": 1}}});
    let (_, done) = post(&c, wait, value).await;
    let answers = done["answers"].as_array().expect("answers");
    assert_eq!(answers.len(), 2, "{done}");
    assert!(answers
        .iter()
        .any(|a| a.as_str().is_some_and(|a| a.ends_with(":{\"k\":1}"))));
    server.stop().await;
}

/// The threads the server holds.
async fn thread_count(c: &Client, b: &str) -> u64 {
    let (_, n) = post(c, format!("{b}/threads/count"), json!({})).await;
    n.as_u64().expect("a count")
}

/// `GET url` until it answers `status` (a run's thread goes once the run
/// ended, a moment after its join answered).
async fn eventually(c: &Client, url: String, status: StatusCode) {
    for _ in 0..100 {
        if get(c, url.clone()).await.0 == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never answered {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_background_run_has_a_thread_for_its_life() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let body = json!({"assistant_id": "countdown", "input": {"n": 2}});
    let r = c
        .post(format!("{b}/runs"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let at = r.headers()["content-location"].to_str().unwrap().to_owned();
    let run: Value = r.json().await.unwrap();
    assert_eq!(at, format!("/runs/{}", run["run_id"].as_str().unwrap()));
    assert_eq!(
        (run["status"].as_str(), &run["kwargs"]["temporary"]),
        (Some("pending"), &json!(true))
    );
    let (thread, id) = (
        run["thread_id"].as_str().unwrap(),
        run["run_id"].as_str().unwrap(),
    );
    let (_, out) = get(&c, format!("{b}/threads/{thread}/runs/{id}/join")).await;
    assert_eq!(out, json!({"n": 0}));
    eventually(&c, format!("{b}/threads/{thread}"), StatusCode::NOT_FOUND).await;
    // `keep`: the thread stays, with the run's metadata and state.
    let body = json!({"assistant_id": "countdown", "input": {"n": 1}, "on_completion": "keep", "metadata": {"a": 1}});
    let (_, run) = post(&c, format!("{b}/runs"), body).await;
    assert_eq!(run["kwargs"]["temporary"], false);
    let (thread, id) = (
        run["thread_id"].as_str().unwrap(),
        run["run_id"].as_str().unwrap(),
    );
    get(&c, format!("{b}/threads/{thread}/runs/{id}/join")).await;
    let (status, kept) = get(&c, format!("{b}/threads/{thread}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&kept["values"], &kept["metadata"]["a"]),
        (&json!({"n": 0}), &json!(1))
    );
    let url = format!("{b}/runs");
    let bad = json!({"assistant_id": "countdown", "on_completion": "never"});
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("on_completion"), "{detail}");
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, json!({"input": {}})).await;
    assert!(detail.contains("assistant_id"), "{detail}");
    // `on_completion` on a streamed stateless run too.
    let body = json!({"assistant_id": "countdown", "input": {"n": 1}, "on_completion": "keep"});
    let before = thread_count(&c, b).await;
    post(&c, format!("{b}/runs/wait"), body).await;
    assert_eq!(thread_count(&c, b).await, before + 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_starts_every_run_or_none() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let url = format!("{b}/runs/batch");
    let one = json!({"assistant_id": "countdown", "input": {"n": 1}, "on_completion": "keep"});
    let (status, runs) = post(&c, url.clone(), json!([one, one])).await;
    assert_eq!(status, StatusCode::OK, "{runs}");
    let runs = runs.as_array().expect("a list").clone();
    assert_eq!(runs.len(), 2);
    assert_ne!(runs[0]["thread_id"], runs[1]["thread_id"]);
    for run in &runs {
        let (t, r) = (
            run["thread_id"].as_str().unwrap(),
            run["run_id"].as_str().unwrap(),
        );
        let (_, out) = get(&c, format!("{b}/threads/{t}/runs/{r}/join")).await;
        assert_eq!(out, json!({"n": 0}));
    }
    let before = thread_count(&c, b).await;
    let bad = json!([one, {"assistant_id": "countdown", "stream_mode": "nope"}]);
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("[1]: "), "{detail}");
    let unknown = json!([one, {"assistant_id": "nope"}]);
    refused(&url, StatusCode::UNPROCESSABLE_ENTITY, unknown).await;
    assert_eq!(thread_count(&c, b).await, before, "nothing started");
    let typed = json!([one, {"assistant_id": "countdown", "config": {"recursion_limit": 0}}]);
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    assert!(
        detail.starts_with("[1].config.recursion_limit: "),
        "{detail}"
    );
    let single = format!("{b}/runs");
    let typed = json!({"assistant_id": "countdown", "config": "x"});
    let detail = refused(&single, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    assert!(detail.starts_with("config: "), "{detail}");
    assert_eq!(thread_count(&c, b).await, before, "nothing started");
    let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, json!([])).await;
    assert!(detail.contains("empty"), "{detail}");
    refused(&url, StatusCode::UNPROCESSABLE_ENTITY, one).await;
    server.stop().await;
}

/// A run's status, once it is no longer pending or running.
async fn settled(c: &Client, b: &str, thread: &str, run: &str) -> String {
    for _ in 0..100 {
        let (_, r) = get(c, format!("{b}/threads/{thread}/runs/{run}")).await;
        let status = r["status"].as_str().unwrap_or("gone").to_owned();
        if status != "pending" && status != "running" {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run} never settled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_runs_are_cancelled_at_once() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let long = json!({"assistant_id": "countdown", "input": {"n": 50}});
    let runs = format!("{b}/threads/{THREAD}/runs");
    let (_, first) = post(&c, runs.clone(), long.clone()).await;
    let (_, second) = post(&c, runs.clone(), long.clone()).await;
    let ids = [first["run_id"].clone(), second["run_id"].clone()];
    let url = format!("{b}/runs/cancel");
    let body = json!({"thread_id": THREAD, "run_ids": ids});
    let r = c.post(url.clone()).json(&body).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    for id in &ids {
        let status = settled(&c, b, THREAD, id.as_str().unwrap()).await;
        assert_eq!(status, "interrupted");
    }
    // They ended: nothing is left to cancel.
    let detail = refused(&url, StatusCode::NOT_FOUND, body).await;
    assert!(detail.starts_with("No matching runs"), "{detail}");
    let none = json!({"thread_id": THREAD, "run_ids": [UNKNOWN]});
    assert_eq!(
        refused(&url, StatusCode::NOT_FOUND, none).await,
        "No runs found to cancel."
    );
    let elsewhere = json!({"thread_id": UNKNOWN, "run_ids": ids});
    refused(&url, StatusCode::NOT_FOUND, elsewhere).await;
    // By status, with `rollback`: the run is deleted.
    let (_, third) = post(&c, runs.clone(), long).await;
    let r = c
        .post(format!("{url}?action=rollback"))
        .json(&json!({"status": "all"}));
    assert_eq!(r.send().await.unwrap().status(), StatusCode::NO_CONTENT);
    let gone = settled(&c, b, THREAD, third["run_id"].as_str().unwrap()).await;
    assert_eq!(gone, "gone");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_several_runs_names_what_is_wrong() {
    let server = start(&fresh_db()).await;
    let url = format!("{}/runs/cancel", server.base);
    let cases = [
        (json!({}), "thread_id"),
        (json!({"thread_id": THREAD}), "run_ids"),
        (json!({"thread_id": THREAD, "run_ids": "x"}), "run_ids"),
        (
            json!({"thread_id": "nope", "run_ids": []}),
            "Invalid thread ID",
        ),
        (
            json!({"thread_id": THREAD, "run_ids": ["nope"]}),
            "Invalid run ID",
        ),
        (json!({"status": "bogus"}), "status: `bogus`"),
        (json!({"status": "all", "thread_id": THREAD}), "status: "),
    ];
    for (body, starts) in cases {
        let detail = refused(&url, StatusCode::UNPROCESSABLE_ENTITY, body.clone()).await;
        assert!(detail.starts_with(starts), "{body}: {detail}");
    }
    let bogus = format!("{url}?action=bogus");
    let detail = refused(
        &bogus,
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"status": "all"}),
    )
    .await;
    assert!(detail.starts_with("action"), "{detail}");
    refused(&url, StatusCode::NOT_FOUND, json!({"status": "pending"})).await;
    server.stop().await;
}

/// A thread's join stream, read as it comes.
struct Joined {
    response: reqwest::Response,
    text: String,
}

impl Joined {
    async fn open(c: &Client, url: String, last: Option<&str>) -> Joined {
        let mut request = c.get(url);
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last);
        }
        let response = request.send().await.expect("the stream opens");
        assert_eq!(response.status(), StatusCode::OK);
        Joined {
            response,
            text: String::new(),
        }
    }

    /// The `(event, data, id)` of the frames read until `n` runs ended.
    async fn until_done(&mut self, n: usize) -> Vec<(String, Value, String)> {
        self.read_until(|frames| {
            frames
                .iter()
                .filter(|f| f.1["status"] == "run_done")
                .count()
                >= n
        })
        .await
    }

    /// The `(event, data, id)` of the first `n` frames (at least).
    async fn until(&mut self, n: usize) -> Vec<(String, Value, String)> {
        self.read_until(|frames| frames.len() >= n).await
    }

    async fn read_until(
        &mut self,
        enough: impl Fn(&[(String, Value, String)]) -> bool,
    ) -> Vec<(String, Value, String)> {
        loop {
            let frames = parse(&self.text);
            if enough(&frames) {
                return frames;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(15), self.response.chunk());
            let chunk = chunk
                .await
                .expect("an event in time")
                .expect("the stream reads");
            let chunk = chunk.expect("the stream is still open");
            self.text
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }
}

fn parse(text: &str) -> Vec<(String, Value, String)> {
    text.split("\r\n\r\n")
        .filter(|f| f.starts_with("event: "))
        .map(|f| {
            let line = |p: &str| {
                f.split("\r\n")
                    .find_map(|l| l.strip_prefix(p))
                    .unwrap_or_default()
                    .to_owned()
            };
            let data = serde_json::from_str(&line("data: ")).expect("JSON data");
            (line("event: "), data, line("id: "))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_stream_follows_its_runs_one_after_the_other() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let stream = format!("{b}/threads/{THREAD}/stream");
    let mut joined = Joined::open(&c, stream.clone(), None).await;
    let mut lifecycle = Joined::open(&c, format!("{stream}?stream_modes=lifecycle"), None).await;
    let runs = format!("{b}/threads/{THREAD}/runs");
    let (_, first) = post(
        &c,
        runs.clone(),
        json!({"assistant_id": "countdown", "input": {"n": 1}}),
    )
    .await;
    let updates =
        json!({"assistant_id": "countdown", "input": {"n": 2}, "stream_mode": ["updates"]});
    let (_, second) = post(&c, runs.clone(), updates).await;
    let frames = joined.until_done(2).await;
    let names: Vec<&str> = frames.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "metadata", "values", "values", "metadata", "metadata", "updates", "updates",
            "metadata"
        ]
    );
    assert_eq!(frames[0].1["run_id"], first["run_id"]);
    assert_eq!(
        frames[3].1,
        json!({"status": "run_done", "run_id": first["run_id"]})
    );
    assert_eq!(
        frames[7].1,
        json!({"status": "run_done", "run_id": second["run_id"]})
    );
    // Ids as the official server's (`<ms>-<n>`), growing.
    let order = |id: &str| {
        let (ms, n) = id.split_once('-').expect("ms-n");
        (ms.parse::<u64>().unwrap(), n.parse::<u64>().unwrap())
    };
    let ids: Vec<_> = frames.iter().map(|f| order(&f.2)).collect();
    assert!(ids.windows(2).all(|w| w[0] <= w[1]), "{ids:?}");
    let starts_and_ends = lifecycle.until_done(2).await;
    let kinds: Vec<bool> = starts_and_ends
        .iter()
        .map(|f| f.1["status"] == "run_done")
        .collect();
    assert_eq!(kinds, [false, true, false, true]);
    assert!(starts_and_ends.iter().all(|f| f.0 == "metadata"));
    // A run in progress when a client joins is streamed from its start.
    let (_, third) = post(
        &c,
        runs.clone(),
        json!({"assistant_id": "countdown", "input": {"n": 3}}),
    )
    .await;
    let mut late = Joined::open(&c, stream.clone(), None).await;
    let frames = late.until_done(1).await;
    assert_eq!(frames[0].1["run_id"], third["run_id"]);
    assert_eq!(
        frames.last().map(|f| &f.1["run_id"]),
        Some(&third["run_id"])
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_stream_refuses_what_it_cannot_read() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let (status, _) = get(&c, format!("{b}/threads/{UNKNOWN}/stream")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&c, format!("{b}/threads/nope/stream")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, body) = get(
        &c,
        format!("{b}/threads/{THREAD}/stream?stream_modes=values"),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body["detail"].as_str().unwrap().starts_with("stream_modes"),
        "{body}"
    );
    let r = c
        .get(format!("{b}/threads/{THREAD}/stream"))
        .header("Last-Event-ID", "-1");
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Last-Event-ID"),
        "{body}"
    );
    server.stop().await;
}

/// On PostgreSQL, a thread's join stream on server B follows the runs
/// server A runs (found in the runs table, their events read from the
/// stored log), and a client that reconnects with the last id it got is
/// given the events after it, also once the run ended.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_stream_on_b_follows_runs_on_a() {
    let db = support::db::fresh_pg();
    let (a, b) = (start(&db).await, start(&db).await);
    let c = Client::new();
    post(
        &c,
        format!("{}/threads", a.base),
        json!({"thread_id": THREAD}),
    )
    .await;
    let stream = format!("{}/threads/{THREAD}/stream", b.base);
    let mut joined = Joined::open(&c, stream.clone(), None).await;
    let wait = format!("{}/threads/{THREAD}/runs/wait", a.base);
    let run = json!({"assistant_id": "countdown", "input": {"n": 2}});
    post(&c, wait.clone(), run.clone()).await;
    post(&c, wait, run).await;
    let frames = joined.until_done(2).await;
    let names: Vec<&str> = frames.iter().map(|f| f.0.as_str()).collect();
    let one_run = ["metadata", "values", "values", "values", "metadata"];
    assert_eq!(names, [one_run, one_run].concat());
    assert_eq!(frames[2].1, json!({"n": 1}));
    // A reconnect after the first run's second event: the rest of both.
    let mut again = Joined::open(&c, stream, Some(&frames[1].2)).await;
    let rest = again.until_done(2).await;
    let ids = |f: &[(String, Value, String)]| f.iter().map(|f| f.2.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&rest), ids(&frames[2..]));
    drop((joined, again));
    a.stop().await;
    b.stop().await;
}

/// A subgraph's interrupt is answered by the id the thread shows for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraphs_interrupt_is_resumed_by_its_id() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let wait = format!("{b}/threads/{THREAD}/runs/wait");
    post(
        &c,
        wait.clone(),
        json!({"assistant_id": "ask", "input": {}}),
    )
    .await;
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    let id = state["interrupts"][0]["id"]
        .as_str()
        .expect("an interrupt")
        .to_owned();
    let resume = json!({"assistant_id": "ask", "command": {"resume": {id: "because"}}});
    let (_, done) = post(&c, wait, resume).await;
    assert_eq!(done["answer"], "because", "{done}");
    server.stop().await;
}

/// On SQLite too, a client that leaves a thread's stream mid-run and
/// reconnects with the last id it got is given the rest of the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_stream_resumes_a_live_run_after_its_last_event_id() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let stream = format!("{b}/threads/{THREAD}/stream");
    let mut first = Joined::open(&c, stream.clone(), None).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 6}});
    post(&c, format!("{b}/threads/{THREAD}/runs"), run).await;
    let seen = first.until(3).await;
    drop(first);
    let mut again = Joined::open(&c, stream, Some(&seen[2].2)).await;
    let rest = again.until_done(1).await;
    let values: Vec<&Value> = rest
        .iter()
        .filter(|f| f.0 == "values")
        .map(|f| &f.1["n"])
        .collect();
    // `n` 6 and 5 were seen before: 4 down to 0 are the rest.
    assert_eq!(values, [4, 3, 2, 1, 0]);
    assert_eq!(
        rest.last().map(|f| f.1["status"].clone()),
        Some(json!("run_done"))
    );
    drop(again);
    server.stop().await;
}
