//! The thread-centric protocol (`POST /threads/{id}/commands`, `POST
//! /threads/{id}/stream/events`) replayed against our server scenario by
//! scenario as `threadproto/reference/record.py` recorded it from the
//! official server, and compared (see `threadproto/compare.rs` for what
//! is normalised and the declared differences).

#[path = "threadproto/client.rs"]
mod client;
#[path = "threadproto/compare.rs"]
mod compare;
#[path = "threadproto/graphs.rs"]
mod graphs;
mod support;

use std::time::Duration;

use agent_state_server::Server;
use client::Proto;
use compare::assert_same;
use serde_json::{json, Value};
use support::{fresh_db, Db};
use tokio::sync::oneshot;

/// A server of the reference graphs, stopped when dropped.
struct Served {
    base: String,
    _stop: oneshot::Sender<()>,
}

async fn serve(db: &Db) -> Served {
    serve_with(db, |s| s).await
}

/// A server of the reference graphs and what `more` adds.
async fn serve_with(db: &Db, more: impl FnOnce(Server) -> Server) -> Served {
    db.create().await;
    let server = more(graphs::reference(db.configure(Server::new())));
    let listening = server.bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listening.local_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(listening.serve_until(async {
        let _ = stopped.await;
    }));
    Served { base, _stop: stop }
}

const LINGER: Duration = Duration::from_millis(300);

fn chat_input() -> Value {
    json!({"messages": [{"type": "human", "content": "hi there", "id": "m-1"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_start_streams_values_messages_and_lifecycle_and_resumes_after_since() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let s = p
        .stream(json!({"channels": ["values", "updates", "messages", "lifecycle"]}))
        .await;
    let start = json!({"id": 1, "method": "run.start", "params": {"assistant_id": "chat", "input": chat_input()}});
    p.command(start).await;
    s.wait_terminal(1).await;
    let all = s.frames();
    p.finish(s, LINGER).await;
    // The run is an ordinary run of the thread.
    let runs: Vec<Value> =
        p.c.get(format!("{}/threads/{}/runs", p.base, p.thread))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let kept: Vec<Value> = runs
        .iter()
        .map(|r| json!({"status": r["status"], "assistant_id": r["assistant_id"]}))
        .collect();
    p.steps.push(json!({"kind": "get", "path": format!("/threads/{}/runs", p.thread), "status": 200, "body": kept}));
    // A reconnect after seq 5 gets exactly the events after it.
    let s = p
        .stream(json!({"channels": ["values", "messages", "lifecycle"], "since": 5}))
        .await;
    s.wait_terminal(1).await;
    let after: Vec<&Value> = all
        .iter()
        .filter(|f| f["data"]["seq"].as_u64().unwrap() > 5)
        .collect();
    assert_eq!(s.frames().iter().collect::<Vec<_>>(), after);
    p.finish(s, LINGER).await;
    // `Last-Event-ID` is not how this stream resumes: it replays all.
    let s = p
        .stream_headers(
            json!({"channels": ["lifecycle"]}),
            &[("Last-Event-ID", "5")],
        )
        .await;
    s.wait_terminal(1).await;
    p.finish(s, LINGER).await;
    assert_same("chat", &p.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_channel_alone_streams_content_blocks() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let s = p.stream(json!({"channels": ["messages"]})).await;
    let start = json!({"id": 7, "method": "run.start", "params": {"assistant_id": "chat", "input": chat_input()}});
    p.command(start).await;
    s.wait(|f| {
        f.iter()
            .any(|f| f["data"]["params"]["data"]["event"] == "message-finish")
    })
    .await;
    p.finish(s, LINGER).await;
    assert_same("messages_only", &p.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_is_asked_on_input_and_answered_with_input_respond() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let channels = json!({"channels": ["values", "updates", "lifecycle", "input", "custom"]});
    let s = p.stream(channels.clone()).await;
    let start = json!({"id": 1, "method": "run.start", "params": {"assistant_id": "approval", "input": {"topic": "cats"}}});
    p.command(start).await;
    s.wait_terminal(1).await;
    let asked = s
        .frames()
        .iter()
        .find(|f| f["event"] == "input.requested")
        .map(|f| f["data"]["params"]["data"]["interrupt_id"].clone());
    let iid = asked.expect("an input.requested event");
    p.finish(s, LINGER).await;
    let respond = |id: u64, iid: &Value| json!({"id": id, "method": "input.respond", "params": {"interrupt_id": iid, "response": true}});
    p.command(respond(2, &json!("not-an-interrupt"))).await;
    let s = p.stream(channels).await;
    p.command(respond(3, &iid)).await;
    s.wait_terminal(2).await;
    p.finish(s, LINGER).await;
    p.command(respond(4, &iid)).await;
    assert_same("approval", &p.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_has_its_namespace_and_namespace_filters_pick_it_or_the_root() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let channels = ["values", "updates", "lifecycle"];
    let s = p.stream(json!({"channels": channels})).await;
    p.command(json!({"id": 1, "method": "run.start", "params": {"assistant_id": "nest", "input": {"n": 1}}})).await;
    s.wait_terminal(1).await;
    p.finish(s, LINGER).await;
    let s = p
        .stream(json!({"channels": channels, "namespaces": [["child"]]}))
        .await;
    s.wait(|f| f.len() >= 4).await;
    p.finish(s, LINGER).await;
    let s = p
        .stream(json!({"channels": channels, "namespaces": [[]], "depth": 0}))
        .await;
    s.wait_terminal(1).await;
    p.finish(s, LINGER).await;
    assert_same("nest", &p.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_cancel_is_no_command_and_a_cancelled_run_ends_interrupted() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let s = p.stream(json!({"channels": ["lifecycle", "values"]})).await;
    let start = json!({"id": 1, "method": "run.start", "params": {"assistant_id": "countdown", "input": {"n": 10}}});
    let run_id = p.command(start).await["result"]["run_id"].clone();
    s.wait(|f| f.len() >= 3).await;
    p.command(json!({"id": 2, "method": "run.cancel", "params": {"run_id": run_id}}))
        .await;
    let path = format!(
        "/threads/{}/runs/{}/cancel",
        p.thread,
        run_id.as_str().unwrap()
    );
    let r = p.c.post(format!("{}{path}", p.base)).send().await.unwrap();
    p.steps
        .push(json!({"kind": "rest", "path": path, "status": r.status().as_u16()}));
    s.wait_terminal(1).await;
    p.finish(s, LINGER).await;
    let runs: Vec<Value> =
        p.c.get(format!("{}/threads/{}/runs", p.base, p.thread))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let kept: Vec<Value> = runs
        .iter()
        .map(|r| json!({"status": r["status"]}))
        .collect();
    p.steps.push(json!({"kind": "get", "path": format!("/threads/{}/runs", p.thread), "status": 200, "body": kept}));
    assert_same("cancel", &p.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_commands_and_streams_are_refused_as_the_official_server_does() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    p.command_raw("{not json").await;
    for body in [
        json!({"method": "run.start"}),
        json!({"id": "1", "method": "run.start"}),
        json!({"id": 1}),
        json!([1, 2]),
    ] {
        p.command(body).await;
    }
    let commands = [
        json!({"id": 3, "method": "run.stop"}),
        json!({"id": 4, "method": "run.start", "params": {}}),
        json!({"id": 5, "method": "run.start", "params": {"assistant_id": ""}}),
        json!({"id": 6, "method": "run.start", "params": {"assistant_id": "nope", "input": {}}}),
        json!({"id": 7, "method": "run.start", "params": {"assistant_id": "chat", "config": {"configurable": {"checkpoint_id": "abc"}}}}),
        json!({"id": 8, "method": "run.start", "params": {"assistant_id": "chat", "config": {"configurable": {"checkpoint_id": 5}}}}),
        json!({"id": 9, "method": "input.respond", "params": {}}),
        json!({"id": 10, "method": "input.respond", "params": {"interrupt_id": "x", "namespace": "a"}}),
        json!({"id": 11, "method": "input.respond", "params": {"responses": []}}),
        json!({"id": 12, "method": "input.respond", "params": {"responses": [1]}}),
        json!({"id": 13, "method": "input.respond", "params": {"responses": [{}]}}),
        json!({"id": 14, "method": "input.respond", "params": {"interrupt_id": "x", "response": 1}}),
        json!({"id": 15, "method": "agent.getTree"}),
        json!({"id": 16, "method": "subscription.subscribe", "params": {"channels": ["values"]}}),
        json!({"id": 17, "method": "subscription.subscribe", "params": {"channels": []}}),
        json!({"id": 18, "method": "subscription.unsubscribe", "params": {}}),
    ];
    for c in commands {
        p.command(c).await;
    }
    let s = p.stream_raw("{nope").await;
    p.finish(s, Duration::ZERO).await;
    for body in [
        json!({}),
        json!({"channels": []}),
        json!({"channels": "values"}),
        json!({"channels": ["values", "debug", 3]}),
    ] {
        let s = p.stream(body).await;
        p.finish(s, Duration::ZERO).await;
    }
    assert_same("errors", &p.steps);
}

/// The envelopes of a stream of everything on `p`'s thread, until
/// `ends` root terminal events came.
async fn everything(p: &Proto, ends: usize) -> Vec<Value> {
    let all = [
        "values",
        "messages",
        "lifecycle",
        "input",
        "updates",
        "custom",
    ];
    let s = p.stream(json!({"channels": all})).await;
    s.wait_terminal(ends).await;
    s.frames().into_iter().map(|f| f["data"].clone()).collect()
}

fn lifecycles(events: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e["method"] == "lifecycle") {
        out.push(e["params"]["data"]["event"].as_str().unwrap().to_owned());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_ends_failed_with_its_error() {
    let server = serve_with(&fresh_db(), |s| s.graph("fail", graphs::fail())).await;
    let mut p = Proto::new(&server.base);
    let start = json!({"id": 1, "method": "run.start", "params": {"assistant_id": "fail", "input": {"n": 1}}});
    assert_eq!(p.command(start).await["type"], "success");
    let events = everything(&p, 1).await;
    let last = events.last().unwrap();
    assert_eq!(lifecycles(&events), ["running", "failed"]);
    assert_eq!(last["params"]["data"]["graph_name"], "fail");
    assert!(
        last["params"]["data"]["error"]
            .as_str()
            .unwrap()
            .contains("boom"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_runs_follow_each_other_on_the_thread_and_both_are_listed() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    for id in [1, 2] {
        let start = json!({"id": id, "method": "run.start", "params": {"assistant_id": "countdown", "input": {"n": 2}}});
        assert_eq!(p.command(start).await["type"], "success");
    }
    let events = everything(&p, 2).await;
    assert_eq!(
        lifecycles(&events),
        ["running", "completed", "running", "completed"]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let url = format!("{}/threads/{}/runs", p.base, p.thread);
    let runs: Vec<Value> = p.c.get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["status"] == "success"), "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_start_with_input_on_an_interrupted_thread_resumes_it() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    let start = |id: u64, input: Value| json!({"id": id, "method": "run.start", "params": {"assistant_id": "approval", "input": input}});
    p.command(start(1, json!({"topic": "dogs"}))).await;
    everything(&p, 1).await;
    p.command(start(2, json!(true))).await;
    let events = everything(&p, 2).await;
    assert_eq!(
        lifecycles(&events),
        ["running", "interrupted", "running", "completed"]
    );
    let last_values = events
        .iter()
        .rev()
        .find(|e| e["method"] == "values")
        .unwrap();
    let state = &last_values["params"]["data"];
    assert_eq!(state["approved"], true);
    assert_eq!(state["log"], json!(["draft:dogs", "review"]));
}

/// A batch `input.respond` answers every interrupt it names in one run
/// (the official server sends one `{interrupt_id: response}` resume);
/// one id the thread is not paused on refuses the whole batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_input_respond_answers_several_interrupts_in_one_run() {
    let twin = || support::twin::graph().expect("twin graph");
    let server = serve_with(&fresh_db(), |s| s.graph("twin", twin())).await;
    let mut p = Proto::new(&server.base);
    let start =
        json!({"id": 1, "method": "run.start", "params": {"assistant_id": "twin", "input": {}}});
    p.command(start).await;
    let asked: Vec<Value> = everything(&p, 1)
        .await
        .into_iter()
        .filter(|e| e["method"] == "input.requested")
        .map(|e| e["params"]["data"]["interrupt_id"].clone())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let entry = |iid: &Value, said: &str| json!({"interrupt_id": iid, "response": said});
    let batch = |id: u64, responses: Value| json!({"id": id, "method": "input.respond", "params": {"responses": responses}});
    let stray = json!([entry(&asked[0], "yes"), entry(&json!("nope"), "no")]);
    let answer = p.command(batch(2, stray)).await;
    assert_eq!(answer["error"], "no_such_interrupt", "{answer}");
    let both = json!([entry(&asked[0], "yes"), entry(&asked[1], "no")]);
    let mut moved = batch(2, both.clone());
    moved["params"]["goto"] = json!("left");
    assert_eq!(p.command(moved).await["error"], "unsupported");
    let answer = p.command(batch(3, both)).await;
    assert!(answer.get("error").is_none(), "{answer}");
    let events = everything(&p, 2).await;
    assert_eq!(
        lifecycles(&events),
        ["running", "interrupted", "running", "completed"]
    );
    let url = format!("{}/threads/{}/state", p.base, p.thread);
    let state: Value = p.c.get(url).send().await.unwrap().json().await.unwrap();
    let mut answers: Vec<&str> = state["values"]["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    answers.sort_unstable();
    assert_eq!(answers.len(), 2, "{state}");
    assert!(
        answers
            .iter()
            .all(|a| a.ends_with(":yes") || a.ends_with(":no")),
        "{state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_of_our_own_store_nothing() {
    let server = serve(&fresh_db()).await;
    let mut p = Proto::new(&server.base);
    // Answers for a thread that has no interrupted run.
    let two = json!([{"interrupt_id": "a", "response": 1}, {"interrupt_id": "b", "response": 2}]);
    let answer = p
        .command(json!({"id": 1, "method": "input.respond", "params": {"responses": two}}))
        .await;
    assert_eq!(answer["error"], "no_such_run", "{answer}");
    // A thread id that is no UUID, and an unknown assistant: no thread.
    p.thread = "not-a-uuid".to_owned();
    let start = json!({"id": 2, "method": "run.start", "params": {"assistant_id": "chat", "input": chat_input()}});
    let answer = p.command(start).await;
    assert_eq!(answer["error"], "unknown_error");
    assert_eq!(answer["message"], "422: Invalid thread ID: must be a UUID");
    p.thread = uuid::Uuid::new_v4().to_string();
    let start = json!({"id": 3, "method": "run.start", "params": {"assistant_id": "nope"}});
    assert_eq!(p.command(start).await["error"], "unknown_error");
    let r =
        p.c.get(format!("{}/threads/{}", p.base, p.thread))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 404);
    // A checkpoint the thread does not have: refused, no thread either.
    let config = json!({"configurable": {"checkpoint_id": "1f0a0000-0000-6000-8000-000000000000"}});
    let start = json!({"id": 5, "method": "run.start", "params": {"assistant_id": "countdown", "input": {"n": 1}, "config": config}});
    let answer = p.command(start).await;
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("422: checkpoint_id"),
        "{answer}"
    );
    let r =
        p.c.get(format!("{}/threads/{}", p.base, p.thread))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 404);
    // A bad tracer is named.
    let tracer = json!({"id": 4, "method": "run.start", "params": {"assistant_id": "chat", "langsmith_tracer": {"x": 1}}});
    let answer = p.command(tracer).await;
    assert_eq!(
        answer["message"],
        "langsmith_tracer has unsupported fields: ['x']."
    );
}

/// A client sending `token` as its bearer token.
fn bearer(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = format!("Bearer {token}").parse().unwrap();
    headers.insert(reqwest::header::AUTHORIZATION, value);
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// With custom auth, the protocol's routes are a thread's: another
/// user's thread is answered as one that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_one_user_cannot_start_or_watch_anothers_thread() {
    use agent_state_server::auth::{Credentials, Identity, On, Refusal, Resource, Verdict};
    let who = |req: Credentials| async move {
        match req.bearer() {
            Some(token) => Ok(Identity::new(token)),
            None => Err(Refusal::unauthorized("Missing bearer token")),
        }
    };
    let scoped = move |s: Server| {
        s.authenticate(who)
            .authorize(On::resource(Resource::Threads), |ctx, _| {
                Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
            })
    };
    let server = serve_with(&fresh_db(), scoped).await;
    let mut p = Proto::new(&server.base);
    p.c = bearer("alice");
    let made =
        p.c.post(format!("{}/threads", p.base))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
    p.thread = made.json::<Value>().await.unwrap()["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = json!({"id": 1, "method": "run.start", "params": {"assistant_id": "nest", "input": {"n": 1}}});
    assert_eq!(p.command(start.clone()).await["type"], "success");
    assert_eq!(
        everything(&p, 1).await.last().unwrap()["params"]["data"]["event"],
        "completed"
    );
    p.c = bearer("bob");
    let url = |what: &str| format!("{}/threads/{}/{what}", p.base, p.thread);
    let r = p.c.post(url("commands")).json(&start).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r =
        p.c.post(url("stream/events"))
            .json(&json!({"channels": ["values"]}))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 404);
    let r = reqwest::Client::new()
        .post(url("commands"))
        .json(&start)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A new thread is not made outside the caller's scope: it is
    // created (and stamped) with `POST /threads` first.
    let fresh = uuid::Uuid::new_v4().to_string();
    let r =
        p.c.post(format!("{}/threads/{fresh}/commands", p.base))
            .json(&start)
            .send()
            .await
            .unwrap();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(
        answer["message"],
        format!("404: Thread with ID {fresh} not found")
    );
    let r =
        p.c.get(format!("{}/threads/{fresh}", p.base))
            .send()
            .await
            .unwrap();
    assert_eq!(r.status(), 404);
}
