//! The AG-UI endpoint (`POST /ag-ui/{assistant_id}`) as a browser meets
//! it: the real server on a free port, driven over HTTP; the `assistant`
//! graph is the `serve` example's agent around a local model.

mod support;

#[path = "../examples/support/assistant.rs"]
mod assistant;

use agent_state_server::auth::{Credentials, Identity, On, Refusal, Resource, Verdict};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::get;
use support::{fresh_db, start_with, Running};

async fn server() -> Running {
    start_with(&fresh_db(), |s| {
        s.graph("assistant", assistant::graph().expect("assistant graph"))
    })
    .await
}

/// `POST /ag-ui/{graph}`: the status, and the events (or the refusal).
async fn run(c: &Client, s: &Running, graph: &str, body: Value) -> (StatusCode, Vec<Value>) {
    let r = c
        .post(format!("{}/ag-ui/{graph}", s.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    if status != StatusCode::OK {
        return (status, vec![r.json().await.unwrap()]);
    }
    let kind = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let text = r.text().await.unwrap();
    let events = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("an event is JSON"))
        .collect();
    (status, events)
}

fn input(thread: &str, run: &str, messages: Value) -> Value {
    json!({"threadId": thread, "runId": run, "state": {}, "messages": messages,
           "tools": [], "context": [], "forwardedProps": {}})
}

fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn text(events: &[Value]) -> String {
    of(events, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect()
}

/// The server's thread for an AG-UI thread id that is no UUID.
async fn thread_of(c: &Client, s: &Running, agui_id: &str) -> Value {
    let (_, found) = support::http::post(
        c,
        format!("{}/threads/search", s.base),
        json!({"metadata": {"agui_thread_id": agui_id}}),
    )
    .await;
    found[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streams_its_steps_and_text_in_order_on_a_server_thread() {
    let s = server().await;
    let c = Client::new();
    let body = input("chat-1", "run-1", json!([user("m1", "hello there")]));
    let (status, events) = run(&c, &s, "assistant", body).await;
    assert_eq!(status, StatusCode::OK);
    let words = ["TEXT_MESSAGE_CONTENT"; 4];
    let mut expected = vec!["RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED"];
    expected.extend(["TEXT_MESSAGE_START"].iter().chain(&words));
    expected.extend([
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]);
    assert_eq!(types(&events), expected);
    assert_eq!(events[0]["threadId"], "chat-1");
    assert_eq!(events[0]["runId"], "run-1");
    assert_eq!(events[2]["stepName"], "model");
    assert_eq!(text(&events), "You said: hello there");
    // One message id from start to end, the one the snapshot and the
    // thread keep.
    let id = &events[3]["messageId"];
    assert!(events[3..9].iter().all(|e| &e["messageId"] == id));
    let snapshot = &of(&events, "MESSAGES_SNAPSHOT")[0]["messages"];
    assert_eq!(
        snapshot[0],
        json!({"id": "m1", "role": "user", "content": "hello there"})
    );
    assert_eq!(snapshot[1]["id"], *id);
    assert!(events.iter().all(|e| e["timestamp"].is_u64()));
    let finished = events.last().unwrap();
    assert_eq!(
        (&finished["threadId"], &finished["runId"]),
        (&json!("chat-1"), &json!("run-1"))
    );
    assert!(finished.get("outcome").is_none());

    let thread = thread_of(&c, &s, "chat-1").await;
    let id_there = thread["thread_id"].as_str().unwrap();
    let (_, state) = get(&c, format!("{}/threads/{id_there}/state", s.base)).await;
    assert_eq!(
        state["values"]["messages"][1]["content"],
        "You said: hello there"
    );
    assert_eq!(thread["status"], "idle");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uuid_thread_id_is_the_servers_and_known_messages_are_not_sent_again() {
    let s = server().await;
    let c = Client::new();
    let thread = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let (_, first) = run(
        &c,
        &s,
        "assistant",
        input(thread, "r1", json!([user("a", "one")])),
    )
    .await;
    let mut history = of(&first, "MESSAGES_SNAPSHOT")[0]["messages"].clone();
    history.as_array_mut().unwrap().push(user("b", "two"));
    let (_, second) = run(&c, &s, "assistant", input(thread, "r2", history)).await;
    assert_eq!(text(&second), "You said: two");
    let (_, state) = get(&c, format!("{}/threads/{thread}/state", s.base)).await;
    let texts: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "You said: one", "two", "You said: two"]);
    s.stop().await;
}

fn confirm_tool() -> Value {
    json!([{"name": "confirm_payment", "description": "Asks the user to confirm a payment",
            "parameters": {"type": "object", "properties": {"request": {"type": "string"}}}}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_tool_is_handed_back_and_its_result_continues_the_run() {
    let s = server().await;
    let c = Client::new();
    let mut body = input(
        "pay",
        "r1",
        json!([user("m1", "please confirm_payment of 5 EUR")]),
    );
    body["tools"] = confirm_tool();
    let (_, events) = run(&c, &s, "assistant", body.clone()).await;
    let start = of(&events, "TOOL_CALL_START")[0];
    assert_eq!(start["toolCallName"], "confirm_payment");
    let call = start["toolCallId"].as_str().unwrap();
    let args: String = of(&events, "TOOL_CALL_ARGS")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    let args: Value = serde_json::from_str(&args).unwrap();
    assert_eq!(args, json!({"request": "please confirm_payment of 5 EUR"}));
    assert_eq!(of(&events, "TOOL_CALL_END")[0]["toolCallId"], call);
    assert!(of(&events, "TOOL_CALL_RESULT").is_empty());
    let outcome = &events.last().unwrap()["outcome"];
    assert_eq!(
        *outcome,
        json!({"type": "success", "pendingToolCallIds": [call]})
    );

    // The browser ran it: the next run carries its answer.
    let mut history = of(&events, "MESSAGES_SNAPSHOT")[0]["messages"].clone();
    let answer = json!({"id": "t1", "role": "tool", "toolCallId": call, "content": "confirmed"});
    history.as_array_mut().unwrap().push(answer);
    body["messages"] = history;
    body["runId"] = json!("r2");
    let (_, events) = run(&c, &s, "assistant", body).await;
    assert_eq!(text(&events), "The tool said: confirmed");
    let snapshot = &of(&events, "MESSAGES_SNAPSHOT")[0]["messages"];
    let roles: Vec<&str> = snapshot
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(snapshot[1]["toolCalls"][0]["id"], call);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_tool_runs_on_the_server_and_its_result_is_sent() {
    let s = server().await;
    let c = Client::new();
    let body = input(
        "count",
        "r1",
        json!([user("m1", "count words: one two three")]),
    );
    let (_, events) = run(&c, &s, "assistant", body).await;
    let steps: Vec<&Value> = of(&events, "STEP_STARTED")
        .iter()
        .map(|e| &e["stepName"])
        .collect();
    assert_eq!(steps, ["model", "tools", "model"]);
    let result = of(&events, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["content"], "3");
    assert_eq!(
        result["toolCallId"],
        of(&events, "TOOL_CALL_START")[0]["toolCallId"]
    );
    assert_eq!(text(&events), "The tool said: 3");
    assert!(events.last().unwrap().get("outcome").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_run_and_a_resume_entry_answers_it() {
    let s = server().await;
    let c = Client::new();
    let mut body = input("approve", "r1", json!([]));
    body["state"] = json!({"topic": "launch"});
    let (_, events) = run(&c, &s, "approval", body).await;
    let custom = of(&events, "CUSTOM")[0];
    assert_eq!(custom["name"], "on_interrupt");
    assert_eq!(custom["value"], r#"{"question":"approve?"}"#);
    let outcome = &events.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    let interrupt = &outcome["interrupts"][0];
    assert_eq!(
        interrupt["metadata"]["value"],
        json!({"question": "approve?"})
    );
    assert_eq!(interrupt["reason"], "interrupt");
    let snapshot = &of(&events, "STATE_SNAPSHOT").last().unwrap()["snapshot"];
    assert_eq!(snapshot["log"], json!(["draft:launch"]));

    let mut body = input("approve", "r2", json!([]));
    let entry = json!({"interruptId": interrupt["id"], "status": "resolved", "payload": true});
    body["resume"] = json!([entry]);
    let (_, events) = run(&c, &s, "approval", body).await;
    let snapshot = &of(&events, "STATE_SNAPSHOT").last().unwrap()["snapshot"];
    assert_eq!(snapshot["approved"], true);
    assert_eq!(snapshot["log"], json!(["draft:launch", "review"]));
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
    assert!(events.last().unwrap().get("outcome").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_props_command_resume_answers_as_ag_ui_langgraph_sends_it() {
    let s = server().await;
    let c = Client::new();
    let mut body = input("fp", "r1", json!([]));
    body["state"] = json!({"topic": "x"});
    run(&c, &s, "approval", body).await;
    let mut body = input("fp", "r2", json!([]));
    body["forwardedProps"] = json!({"command": {"resume": false}});
    let (_, events) = run(&c, &s, "approval", body).await;
    let snapshot = &of(&events, "STATE_SNAPSHOT").last().unwrap()["snapshot"];
    assert_eq!(snapshot["log"], json!(["draft:x", "review"]));
    assert_eq!(snapshot["approved"], false);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_ends_with_run_error_and_its_steps_closed() {
    let s = server().await;
    let c = Client::new();
    let mut body = input("boom", "r1", json!([]));
    body["state"] = json!({"topic": "boom"});
    let (_, events) = run(&c, &s, "approval", body).await;
    let kinds = types(&events);
    assert_eq!(kinds[kinds.len() - 2..], ["STEP_FINISHED", "RUN_ERROR"]);
    let error = events.last().unwrap();
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the draft failed"),
        "{error}"
    );
    assert!(!kinds.contains(&"RUN_FINISHED"));
    s.stop().await;
}

/// The 422's `detail` for `body`.
async fn refused(c: &Client, s: &Running, graph: &str, body: Value) -> Value {
    let (status, answer) = run(c, s, graph, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer:?}");
    answer[0]["detail"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_422_naming_each_field_and_nothing_runs() {
    let s = server().await;
    let c = Client::new();
    let body = json!({"runId": "r", "messages": []});
    let detail = refused(&c, &s, "assistant", body).await;
    let missing = json!({"type": "missing", "loc": ["body", "threadId"], "msg": "Field required"});
    assert_eq!(detail, json!([missing]));

    let messages = json!([{"id": "1", "role": "robot", "content": "x"},
        {"role": "user", "content": "x"},
        {"id": "3", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}]);
    let mut body = input("bad", "r", messages);
    body["tools"] = json!([{"name": "t"}]);
    body["state"] = json!([1]);
    let detail = refused(&c, &s, "assistant", body).await;
    let locs: Vec<&Value> = detail
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["loc"])
        .collect();
    assert_eq!(
        locs,
        [
            &json!(["body", "state"]),
            &json!(["body", "messages", 0]),
            &json!(["body", "messages", 1, "user", "id"]),
            &json!(["body", "messages", 2, "assistant", "toolCalls", 0]),
            &json!(["body", "tools", 0, "description"]),
        ]
    );
    assert_eq!(detail[1]["type"], "union_tag_invalid");
    assert!(detail[1]["msg"].as_str().unwrap().contains("'robot'"));
    assert_eq!(detail[0]["type"], "dict_type");
    let detail = refused(&c, &s, "assistant", json!([1])).await;
    assert_eq!(detail[0]["type"], "model_attributes_type");
    // Nothing was stored for the refused thread.
    let found = support::http::post(
        &c,
        format!("{}/threads/search", s.base),
        json!({"metadata": {"agui_thread_id": "bad"}}),
    )
    .await;
    assert_eq!(found, (StatusCode::OK, json!([])));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_needs_a_paused_thread_and_names_its_interrupt() {
    let s = server().await;
    let c = Client::new();
    let entry = |id: &str| json!({"interruptId": id, "status": "resolved", "payload": true});
    let mut body = input("idle", "r1", json!([]));
    body["resume"] = json!([entry("i")]);
    let detail = refused(&c, &s, "approval", body).await;
    assert_eq!(detail[0]["loc"], json!(["body", "resume"]));
    assert!(detail[0]["msg"].as_str().unwrap().contains("not paused"));

    let mut body = input("paused", "r1", json!([]));
    body["state"] = json!({"topic": "x"});
    run(&c, &s, "approval", body).await;
    let mut body = input("paused", "r2", json!([]));
    body["resume"] = json!([entry("elsewhere/1/0")]);
    let detail = refused(&c, &s, "approval", body.clone()).await;
    assert!(detail[0]["msg"]
        .as_str()
        .unwrap()
        .contains("`elsewhere/1/0`"));
    body["resume"] = json!([entry("a"), entry("b")]);
    let detail = refused(&c, &s, "approval", body).await;
    assert_eq!(detail[0]["loc"], json!(["body", "resume", 1]));

    // Refused by the graph's input type: no thread is left behind.
    let body = input("typed", "r", json!([user("m", "hi")]));
    let (status, answer) = run(&c, &s, "approval", body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer[0]["detail"]
        .as_str()
        .unwrap()
        .contains("unknown field `messages`"));
    let found = support::http::post(
        &c,
        format!("{}/threads/search", s.base),
        json!({"metadata": {"agui_thread_id": "typed"}}),
    )
    .await;
    assert_eq!(found, (StatusCode::OK, json!([])));

    // A thread of another graph: 409, as for any run.
    let (status, _) = run(&c, &s, "approval", input("paused", "r3", json!([]))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = run(&c, &s, "assistant", input("paused", "r4", json!([]))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer:?}");

    let (status, answer) = run(&c, &s, "nope", input("x", "r", json!([]))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer[0]["detail"]
        .as_str()
        .unwrap()
        .starts_with("Invalid assistant: 'nope'"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_of_every_role_reach_the_thread_as_the_graphs() {
    let s = server().await;
    let c = Client::new();
    let thread = "6a2f41a3-c54c-4c9e-9a51-d2f1a1b0e001";
    let parts = json!([{"type": "text", "text": "what is on "},
        {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png", "mimeType": "image/png"}}]);
    let call = json!({"id": "c0", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":1}"}});
    let messages = json!([
        {"id": "s", "role": "system", "content": "be brief"},
        {"id": "d", "role": "developer", "content": "no emoji"},
        {"id": "a", "role": "assistant", "content": "", "toolCalls": [call]},
        {"id": "t", "role": "tool", "toolCallId": "c0", "content": "found"},
        {"id": "r", "role": "reasoning", "content": "thinking"},
        {"id": "u", "role": "user", "content": parts},
    ]);
    let (status, events) = run(&c, &s, "assistant", input(thread, "r1", messages)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text(&events), "You said: what is on ");
    let (_, state) = get(&c, format!("{}/threads/{thread}/state", s.base)).await;
    let stored = &state["values"]["messages"];
    let kinds: Vec<&str> = stored
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["system", "system", "ai", "tool", "human", "ai"]);
    assert_eq!(stored[2]["tool_calls"][0]["args"], json!({"q": 1}));
    assert_eq!(stored[3]["tool_call_id"], "c0");
    let image =
        json!({"type": "image", "url": "https://example.com/a.png", "mime_type": "image/png"});
    assert_eq!(stored[4]["content"][1], image);
    // And back: the snapshot has AG-UI's shapes.
    let snapshot = &of(&events, "MESSAGES_SNAPSHOT")[0]["messages"];
    assert_eq!(snapshot[2]["toolCalls"][0], call);
    assert_eq!(
        snapshot[3],
        json!({"id": "t", "role": "tool", "toolCallId": "c0", "content": "found"})
    );
    s.stop().await;
}

/// A client that sends `Authorization: Bearer {token}`.
fn as_user(token: &str) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    headers.insert(reqwest::header::AUTHORIZATION, value);
    Client::builder().default_headers(headers).build().unwrap()
}

async fn who(req: Credentials) -> Result<Identity, Refusal> {
    match req.bearer() {
        Some(token @ ("alice" | "bob")) => Ok(Identity::new(token)),
        _ => Err(Refusal::unauthorized("Missing or invalid bearer token")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_a_users_ag_ui_threads_are_theirs_alone() {
    let s = start_with(&fresh_db(), |s| {
        s.graph("assistant", assistant::graph().unwrap())
            .authenticate(who)
            .authorize(On::resource(Resource::Threads), |ctx, _| {
                Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
            })
    })
    .await;
    let (alice, bob) = (as_user("alice"), as_user("bob"));
    let body = input("diary", "r1", json!([user("m1", "my secret")]));
    let (status, events) = run(&alice, &s, "assistant", body.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text(&events), "You said: my secret");
    // Bob names the same thread: it is not his to run or read.
    let (status, answer) = run(&bob, &s, "assistant", body.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer:?}");
    let (status, _) = run(&Client::new(), &s, "assistant", body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Alice's thread carries her stamp, and her search finds it.
    let thread = thread_of(&alice, &s, "diary").await;
    assert_eq!(thread["metadata"]["owner"], "alice");
    let (_, none) = support::http::post(
        &bob,
        format!("{}/threads/search", s.base),
        json!({"metadata": {"agui_thread_id": "diary"}}),
    )
    .await;
    assert_eq!(none, json!([]));
    s.stop().await;
}
