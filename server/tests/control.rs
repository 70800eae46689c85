//! Run control as a client meets it: `command.update` and `command.goto`,
//! `interrupt_before` / `interrupt_after`, runs from a checkpoint and
//! `durability`, each with its refusals (a 422 or 404 naming what is
//! wrong, nothing stored), on the real server over HTTP.

mod support;

use agent_state::graph::{Sent, StateGraph, START};
use agent_state::AgentState;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, refused, THREAD};
use support::{frames, fresh_db, post_frames, start, start_with};

/// A thread of the approval graph, paused at `review` (after `draft`).
async fn paused_approval(c: &Client, b: &str) {
    post(c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    let (_, out) = post(c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    assert_eq!(out["log"], json!(["draft:x"]), "{out}");
}

/// The thread's states, newest first: `(step, source, values)`.
async fn history(c: &Client, b: &str) -> Vec<(i64, String, Value)> {
    let url = format!("{b}/threads/{THREAD}/history");
    let (_, states) = post(c, url, json!({"limit": 100})).await;
    let states = states.as_array().expect("a list").clone();
    states
        .into_iter()
        .map(|s| {
            let meta = &s["metadata"];
            let source = meta["source"].as_str().unwrap_or_default().to_owned();
            (
                meta["step"].as_i64().unwrap_or(-9),
                source,
                s["values"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_goto_runs_the_named_node_and_refuses_an_unknown_one() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    paused_approval(&c, b).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    // An unknown node is refused before anything is stored.
    let before = history(&c, b).await;
    let bad = json!({"assistant_id": "approval", "command": {"goto": "nope"}});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(
        detail.contains("command.goto") && detail.contains("`nope`"),
        "{detail}"
    );
    let send =
        json!({"assistant_id": "approval", "command": {"goto": {"node": "draft", "input": {}}}});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, send).await;
    assert!(detail.contains("Send"), "{detail}");
    assert_eq!(history(&c, b).await, before);
    // `draft` runs again (with the update written first), then `review`
    // pauses again.
    let goto = json!({"assistant_id": "approval",
                      "command": {"goto": ["draft"], "update": {"topic": "y"}}});
    let (status, out) = post(&c, runs, goto).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(out["log"], json!(["draft:x", "draft:y"]), "{out}");
    assert_eq!(
        out["__interrupt__"][0]["value"],
        json!({"question": "approve?"})
    );
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(state["next"], json!(["review"]));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_update_is_written_and_the_thread_goes_on() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    paused_approval(&c, b).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    let wrong = json!({"assistant_id": "approval", "command": {"update": {"topic": 5}}});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, wrong).await;
    assert!(
        detail.contains("command.update") && detail.contains("topic"),
        "{detail}"
    );
    let both =
        json!({"assistant_id": "approval", "command": {"update": {"topic": "y"}, "resume": true}});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, both).await;
    assert!(detail.contains("resume"), "{detail}");
    // The update is a step of its own; `review` is asked again.
    let update = json!({"assistant_id": "approval", "command": {"update": {"topic": "y"}}});
    let (_, out) = post(&c, runs.clone(), update).await;
    assert_eq!(
        (&out["topic"], &out["log"]),
        (&json!("y"), &json!(["draft:x"])),
        "{out}"
    );
    assert_eq!(history(&c, b).await[0].1, "update");
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let (_, out) = post(&c, runs, resume).await;
    assert_eq!(
        out,
        json!({"topic": "y", "log": ["draft:x", "review"], "approved": true})
    );
    server.stop().await;
}

/// The official server's stream of the same run with `interrupt_before:
/// ["review"]`, frame for frame but the run id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_before_pauses_as_the_official_server_streams_it() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"},
                     "interrupt_before": ["review"], "stream_mode": ["values", "updates"]});
    let ours = post_frames(&c, format!("{b}/threads/{THREAD}/runs/stream"), &run).await;
    let theirs = frames(include_str!(
        "fixtures/official_stream_interrupt_before.sse"
    ));
    assert_eq!(ours.len(), theirs.len());
    // Our values hold every field (`approved` included, its default).
    let mut ours_rest: Vec<(String, Value)> = ours[1..].to_vec();
    for (_, data) in &mut ours_rest {
        if let Some(map) = data.as_object_mut() {
            map.remove("approved");
        }
    }
    assert_eq!(ours_rest, theirs[1..]);
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        (&t["status"], &t["interrupts"]),
        (&json!("interrupted"), &json!({}))
    );
    // A run with no input goes on: `review` asks its question.
    let go_on = json!({"assistant_id": "approval", "input": null});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), go_on).await;
    assert_eq!(
        out["__interrupt__"][0]["value"],
        json!({"question": "approve?"})
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_after_and_every_node_and_their_refusals() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    for (field, value) in [
        ("interrupt_before", json!(["nope"])),
        ("interrupt_after", json!(5)),
    ] {
        let mut bad = json!({"assistant_id": "approval", "input": {"topic": "x"}});
        bad[field] = value;
        let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
        assert!(detail.starts_with(field), "{detail}");
    }
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["values"], Value::Null, "a refused run stores nothing");
    let after =
        json!({"assistant_id": "approval", "input": {"topic": "x"}, "interrupt_after": ["draft"]});
    let (_, out) = post(&c, runs.clone(), after).await;
    assert_eq!(
        out,
        json!({"topic": "x", "log": ["draft:x"], "approved": false})
    );
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(
        (&state["next"], &state["interrupts"]),
        (&json!(["review"]), &json!([]))
    );
    // `"*"`: before every node, so before `draft` on a new input.
    let every =
        json!({"assistant_id": "approval", "input": {"topic": "z"}, "interrupt_before": "*"});
    let (_, out) = post(&c, format!("{b}/runs/wait"), every).await;
    assert_eq!(out["log"], json!([]), "{out}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_from_a_checkpoint_forks_the_thread_there() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    paused_approval(&c, b).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    post(&c, runs.clone(), resume).await;
    let url = format!("{b}/threads/{THREAD}/history");
    let (_, states) = post(&c, url, json!({"limit": 100})).await;
    let first = states.as_array().unwrap().last().unwrap()["checkpoint_id"].clone();
    // From the thread's first checkpoint, with a new input.
    let fork = json!({"assistant_id": "approval", "checkpoint": {"checkpoint_id": first},
                      "input": {"topic": "q"}});
    let (_, out) = post(&c, runs.clone(), fork).await;
    assert_eq!(out["log"], json!(["draft:q"]), "{out}");
    let steps = history(&c, b).await;
    assert!(steps.iter().any(|s| s.1 == "fork"), "{steps:?}");
    assert!(
        steps.iter().any(|s| s.2["approved"] == json!(true)),
        "the old steps stay"
    );
    let unknown = json!({"assistant_id": "approval", "checkpoint_id": "999"});
    let detail = refused(&runs, StatusCode::NOT_FOUND, unknown).await;
    assert!(detail.contains("Checkpoint 999"), "{detail}");
    let bad = json!({"assistant_id": "approval", "checkpoint_id": "nope"});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("checkpoint_id"), "{detail}");
    assert_eq!(history(&c, b).await, steps, "refusals store nothing");
    // A thread that does not exist yet has no checkpoint: nothing is
    // created for the run.
    let other = "22222222-2222-2222-2222-222222222222";
    let create =
        json!({"assistant_id": "approval", "checkpoint_id": "1", "if_not_exists": "create"});
    let url = format!("{b}/threads/{other}/runs/wait");
    refused(&url, StatusCode::NOT_FOUND, create.clone()).await;
    assert_eq!(
        get(&c, format!("{b}/threads/{other}")).await.0,
        StatusCode::NOT_FOUND
    );
    refused(&format!("{b}/runs/wait"), StatusCode::NOT_FOUND, create).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durability_exit_stores_the_run_once() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    let bad = json!({"assistant_id": "countdown", "input": {"n": 3}, "durability": "bogus"});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("durability"), "{detail}");
    let sync = json!({"assistant_id": "countdown", "input": {"n": 3}, "durability": "sync"});
    post(&c, runs.clone(), sync).await;
    let stored = history(&c, b).await.len();
    let exit = json!({"assistant_id": "countdown", "input": {"n": 3}, "durability": "exit"});
    let (_, out) = post(&c, runs, exit).await;
    assert_eq!(out, json!({"n": 0}));
    let more = history(&c, b).await.len() - stored;
    assert!(
        more < 3,
        "{more} checkpoints for a run stored once at its end"
    );
    server.stop().await;
}

/// `config.recursion_limit` bounds one run (the graph's own limit is
/// 10,000): the run fails with LangGraph's error name; a run without one
/// runs on; a limit below 1 is refused before anything is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_recursion_limit_bounds_that_run() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let stream = format!("{b}/threads/{THREAD}/runs/stream");
    let bounded = json!({"assistant_id": "countdown", "input": {"n": 10},
        "config": {"recursion_limit": 3}});
    let events = post_frames(&c, stream.clone(), &bounded).await;
    let (name, error) = events.last().expect("events");
    assert_eq!(name, "error", "{events:?}");
    assert_eq!(error["error"], "GraphRecursionError", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("limit of 3"),
        "{error}"
    );
    let bad = json!({"assistant_id": "countdown", "input": {"n": 1},
        "config": {"recursion_limit": 0}});
    let detail = refused(&stream, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
    assert!(detail.starts_with("config.recursion_limit"), "{detail}");
    let free = json!({"assistant_id": "countdown", "input": {"n": 10}});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), free).await;
    assert_eq!(out, json!({"n": 0}));
    server.stop().await;
}

/// Work handed out by `Send`s: `plan` reads the state, `work` takes a
/// `Send`'s input.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Fan {
    #[reducer(append)]
    pub done: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_goto_sends_work_to_a_node_that_takes_a_send() {
    let fan = StateGraph::<Fan>::new()
        .add_node("plan", |_: &Fan| FanUpdate::new())
        .add_node("work", |Sent(job): Sent<String>| {
            FanUpdate::new().done(vec![job])
        })
        .add_edge(START, "plan")
        .compile()
        .expect("fan graph");
    let server = start_with(&fresh_db(), |s| s.graph("fan", fan)).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    let to_plan =
        json!({"assistant_id": "fan", "command": {"goto": {"node": "plan", "input": "x"}}});
    let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, to_plan).await;
    assert!(
        detail.contains("`plan` reads the state") && detail.contains("work"),
        "{detail}"
    );
    let sends = json!([{"node": "work", "input": "a"}, {"node": "work", "input": "b"}]);
    let two = json!({"assistant_id": "fan", "command": {"goto": sends}});
    let (status, out) = post(&c, runs.clone(), two).await;
    assert_eq!((status, out), (StatusCode::OK, json!({"done": ["a", "b"]})));
    // An input the node cannot read fails the run; the thread stays
    // readable, and takes the next run.
    let wrong = json!({"assistant_id": "fan", "command": {"goto": {"node": "work", "input": 5}}});
    let (_, out) = post(&c, runs.clone(), wrong).await;
    assert!(out.get("__error__").is_some(), "{out}");
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}/state")).await.0,
        StatusCode::OK
    );
    let again = json!({"assistant_id": "fan", "command": {"goto": {"node": "work", "input": "c"}}});
    let (_, out) = post(&c, runs, again).await;
    assert_eq!(out, json!({"done": ["a", "b", "c"]}));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_with_update_or_goto_is_refused_and_the_pause_kept() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    paused_approval(&c, b).await;
    let runs = format!("{b}/threads/{THREAD}/runs/wait");
    let before = history(&c, b).await;
    for command in [
        json!({"resume": true, "update": {"topic": "y"}}),
        json!({"resume": true, "goto": "draft"}),
        json!({"resume": false, "update": {"topic": "y"}, "goto": ["draft"]}),
    ] {
        let body = json!({"assistant_id": "approval", "command": command});
        let detail = refused(&runs, StatusCode::UNPROCESSABLE_ENTITY, body).await;
        assert!(
            detail.starts_with("command:") && detail.contains("resume"),
            "{detail}"
        );
    }
    // Nothing was stored: the thread still waits for its answer, which a
    // run of `resume` alone gives.
    assert_eq!(history(&c, b).await, before);
    let (_, thread) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(thread["status"], "interrupted", "{thread}");
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let (status, out) = post(&c, runs, resume).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(out["approved"], json!(true), "{out}");
    server.stop().await;
}
