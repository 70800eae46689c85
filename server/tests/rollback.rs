//! What takes runs and threads apart, as the official server answers it:
//! the `rollback` strategy and cancel action (the run and the steps it
//! stored deleted), run delete, thread copy and history's filters.

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, refused, THREAD};
use support::{fresh_db, start};

/// The values of the thread's states, newest first.
async fn values(c: &Client, b: &str, thread: &str) -> Vec<Value> {
    let url = format!("{b}/threads/{thread}/history");
    let (_, states) = post(c, url, json!({"limit": 100})).await;
    let states = states.as_array().expect("a list").clone();
    states.into_iter().map(|s| s["values"].clone()).collect()
}

/// The checkpoint ids of the thread's states, newest first.
async fn checkpoint_ids(c: &Client, b: &str, thread: &str) -> Vec<String> {
    let url = format!("{b}/threads/{thread}/history");
    let (_, states) = post(c, url, json!({"limit": 100})).await;
    let states = states.as_array().expect("a list").clone();
    let id = |s: &Value| s["checkpoint"]["checkpoint_id"].as_str().map(str::to_owned);
    states.iter().map(|s| id(s).expect("an id")).collect()
}

/// Starts a long countdown in the background: its run's URL.
async fn long_run(c: &Client, b: &str) -> String {
    let long = json!({"assistant_id": "countdown", "input": {"n": 30}});
    let (_, run) = post(c, format!("{b}/threads/{THREAD}/runs"), long).await;
    let run_id = run["run_id"].as_str().expect("run id");
    tokio::time::sleep(Duration::from_millis(450)).await;
    format!("{b}/threads/{THREAD}/runs/{run_id}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_run_deletes_the_run_it_replaces_and_its_steps() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    post(
        &c,
        runs.clone(),
        json!({"assistant_id": "countdown", "input": {"n": 1}}),
    )
    .await;
    let before = values(&c, b, THREAD).await;
    let kept_ids = checkpoint_ids(&c, b, THREAD).await;
    let first = long_run(&c, b).await;
    let mut dropped_ids = checkpoint_ids(&c, b, THREAD).await;
    dropped_ids.truncate(dropped_ids.len() - kept_ids.len());
    assert!(!dropped_ids.is_empty(), "the long run stored steps");
    let rollback =
        json!({"assistant_id": "countdown", "input": {"n": 1}, "multitask_strategy": "rollback"});
    let (_, out) = post(&c, runs, rollback).await;
    assert_eq!(out, json!({"n": 0}));
    assert_eq!(get(&c, first.clone()).await.0, StatusCode::NOT_FOUND);
    let (_, joined) = get(&c, format!("{first}/join")).await;
    assert_eq!(joined["__error__"]["message"], "404: Run not found");
    // The first run's steps are gone: the second run's follow the ones
    // before it (none of the first run's values between 2 and 29).
    let after = values(&c, b, THREAD).await;
    assert_eq!(after[after.len() - before.len()..], before[..]);
    assert!(
        after.iter().all(|v| v["n"].as_u64() <= Some(1)),
        "{after:?}"
    );
    // Taken off in place: the steps before keep their ids, and the
    // rolled-back run's ids are not given to the new run's steps.
    let after_ids = checkpoint_ids(&c, b, THREAD).await;
    assert_eq!(after_ids[after_ids.len() - kept_ids.len()..], kept_ids[..]);
    assert!(
        after_ids.iter().all(|id| !dropped_ids.contains(id)),
        "{after_ids:?} reuses one of {dropped_ids:?}"
    );
    let (_, listed) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(2));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_with_rollback_returns_the_thread_to_before_the_run() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let first = long_run(&c, b).await;
    let dropped_ids = checkpoint_ids(&c, b, THREAD).await;
    let bad = c
        .post(format!("{first}/cancel?action=undo"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = c
        .post(format!("{first}/cancel?action=rollback&wait=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({}));
    assert_eq!(get(&c, first.clone()).await.0, StatusCode::NOT_FOUND);
    // The thread had no step before the run: it has none now.
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        (&t["status"], &t["values"]),
        (&json!("idle"), &Value::Null),
        "{t}"
    );
    assert_eq!(values(&c, b, THREAD).await, Vec::<Value>::new());
    let again = c
        .post(format!("{first}/cancel?action=rollback"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    // The thread starts again past the ids the rolled-back run had.
    let run = json!({"assistant_id": "countdown", "input": {"n": 1}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let ids = checkpoint_ids(&c, b, THREAD).await;
    assert!(!ids.is_empty() && !dropped_ids.is_empty());
    assert!(
        ids.iter().all(|id| !dropped_ids.contains(id)),
        "{ids:?} reuses one of {dropped_ids:?}"
    );
    server.stop().await;
}

/// A queued run rolled back wrote nothing: the run holding the thread
/// goes on, its steps kept; a thread paused before a rolled-back run is
/// paused again where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_takes_off_only_what_the_run_wrote() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let holding = long_run(&c, b).await;
    let queued =
        json!({"assistant_id": "countdown", "input": {"n": 1}, "multitask_strategy": "enqueue"});
    let (_, queued) = post(&c, format!("{b}/threads/{THREAD}/runs"), queued).await;
    let queued = format!(
        "{b}/threads/{THREAD}/runs/{}",
        queued["run_id"].as_str().unwrap()
    );
    let r = c
        .post(format!("{queued}/cancel?action=rollback"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert_eq!(get(&c, format!("{holding}/join")).await.1, json!({"n": 0}));
    assert_eq!(get(&c, queued).await.0, StatusCode::NOT_FOUND);
    let all = values(&c, b, THREAD).await;
    assert_eq!(
        all.len(),
        32,
        "the input's two steps and thirty ticks: {all:?}"
    );
    // Paused at a breakpoint, then a run rolled back: paused again there.
    let other = "33333333-3333-3333-3333-333333333333";
    post(&c, format!("{b}/threads"), json!({"thread_id": other})).await;
    let pause = json!({"assistant_id": "slow", "input": {"n": 1}, "interrupt_before": ["sleepy"]});
    post(&c, format!("{b}/threads/{other}/runs/wait"), pause).await;
    let (_, paused) = get(&c, format!("{b}/threads/{other}/state")).await;
    let go_on = json!({"assistant_id": "slow", "input": null});
    let (_, run) = post(&c, format!("{b}/threads/{other}/runs"), go_on).await;
    let run = format!(
        "{b}/threads/{other}/runs/{}",
        run["run_id"].as_str().unwrap()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = c
        .post(format!("{run}/cancel?action=rollback&wait=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "the run was still in its slow node"
    );
    let (_, t) = get(&c, format!("{b}/threads/{other}")).await;
    assert_eq!(t["status"], "interrupted");
    let (_, state) = get(&c, format!("{b}/threads/{other}/state")).await;
    assert_eq!(
        (&state["values"], &state["next"]),
        (&paused["values"], &json!(["sleepy"]))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_deleted_by_id() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 1}});
    let (_, done) = post(&c, format!("{b}/threads/{THREAD}/runs"), run).await;
    let at = format!(
        "{b}/threads/{THREAD}/runs/{}",
        done["run_id"].as_str().unwrap()
    );
    get(&c, format!("{at}/join")).await;
    let r = c.delete(&at).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(get(&c, at.clone()).await.0, StatusCode::NOT_FOUND);
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        t["values"],
        json!({"n": 0}),
        "the thread keeps what the run stored"
    );
    let again = c.delete(&at).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        again.json::<Value>().await.unwrap()["detail"],
        "Run not found"
    );
    let bad = c
        .delete(format!("{b}/threads/{THREAD}/runs/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // A run that has not ended is stopped, then deleted.
    let running = long_run(&c, b).await;
    let r = c.delete(&running).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(get(&c, running).await.0, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_has_the_threads_history_and_goes_its_own_way() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let meta = json!({"user": "u1"});
    post(
        &c,
        format!("{b}/threads"),
        json!({"thread_id": THREAD, "metadata": meta}),
    )
    .await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let (status, copy) = post(&c, format!("{b}/threads/{THREAD}/copy"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let id = copy["thread_id"].as_str().unwrap().to_owned();
    assert_ne!(id, THREAD);
    assert_eq!(copy["metadata"]["user"], "u1");
    assert_eq!(copy["status"], "interrupted");
    assert_eq!(values(&c, b, &id).await, values(&c, b, THREAD).await);
    // The copy answers its interrupt; the original is still paused.
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let (_, out) = post(&c, format!("{b}/threads/{id}/runs/wait"), resume).await;
    assert_eq!(out["approved"], true, "{out}");
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "interrupted");
    let unknown = "00000000-0000-0000-0000-000000000000";
    let url = format!("{b}/threads/{unknown}/copy");
    refused(&url, StatusCode::NOT_FOUND, json!({})).await;
    let url = format!("{b}/threads/nope/copy");
    refused(&url, StatusCode::UNPROCESSABLE_ENTITY, json!({})).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_filters_by_checkpoint_and_metadata() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let url = format!("{b}/threads/{THREAD}/history");
    let (_, all) = post(&c, url.clone(), json!({})).await;
    let ids: Vec<Value> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["checkpoint_id"].clone())
        .collect();
    let ask = |body: Value| post(&c, url.clone(), body);
    // `before` as the SDKs send it (a config) and as a bare checkpoint.
    let (_, below) = ask(json!({"before": {"configurable": {"checkpoint_id": ids[0]}}})).await;
    assert_eq!(below.as_array().unwrap().len(), ids.len() - 1);
    assert_eq!(below[0]["checkpoint_id"], ids[1]);
    let (_, from) = ask(json!({"checkpoint": {"checkpoint_id": ids[1]}})).await;
    assert_eq!(from[0]["checkpoint_id"], ids[1]);
    let (_, loops) = ask(json!({"metadata": {"source": "loop"}, "limit": 1})).await;
    assert_eq!(loops.as_array().unwrap().len(), 1);
    assert_eq!(loops[0]["metadata"]["source"], "loop");
    let (_, inputs) = ask(json!({"metadata": {"step": -1}})).await;
    assert_eq!(inputs.as_array().unwrap().len(), 1);
    let (_, none) = ask(json!({"before": {"checkpoint_id": "not-ours"}})).await;
    assert_eq!(none, json!([]));
    let detail = refused(
        &url,
        StatusCode::UNPROCESSABLE_ENTITY,
        json!({"before": "1"}),
    )
    .await;
    assert!(detail.starts_with("before"), "{detail}");
    server.stop().await;
}
