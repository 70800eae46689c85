//! Assistants and threads as a client meets them: the real server on a free
//! port, driven over HTTP, its answers compared with what LangGraph's own
//! server (langgraph-api 0.16.7, `langgraph dev`) answered to the same calls.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, APPROVAL, THREAD};
use support::{fresh_db, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_are_the_registered_graphs_with_the_official_ids() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    assert_eq!(
        get(&c, format!("{b}/ok")).await,
        (StatusCode::OK, json!({"ok": true}))
    );
    let (status, list) = post(
        &c,
        format!("{b}/assistants/search"),
        json!({"graph_id": "approval"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list[0]["assistant_id"], APPROVAL);
    assert_eq!(list[0]["metadata"], json!({"created_by": "system"}));
    let (_, one) = get(&c, format!("{b}/assistants/{APPROVAL}")).await;
    assert_eq!(one["graph_id"], "approval");
    let (_, graph) = get(&c, format!("{b}/assistants/approval/graph")).await;
    // As the official server drew the same graph.
    assert_eq!(
        graph["edges"],
        json!([{"source": "__start__", "target": "draft"}, {"source": "draft", "target": "review"},
               {"source": "review", "target": "__end__"}])
    );
    assert_eq!(graph["nodes"][3], json!({"id": "__end__"}));
    let (status, none) = get(&c, format!("{b}/assistants/{APPROVAL}/schemas")).await;
    assert_eq!(
        (status, &none["input_schema"]),
        (StatusCode::OK, &Value::Null)
    );
    // A state's schemas honour its fields' visibility.
    let (_, schemas) = get(&c, format!("{b}/assistants/guarded/schemas")).await;
    let keys = |s: &str| {
        let props = schemas[s]["properties"].as_object().expect("properties");
        props.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(keys("input_schema"), ["topic"]);
    assert_eq!(keys("output_schema"), ["language", "topic"]);
    assert_eq!(keys("state_schema"), ["language", "token", "topic"]);
    let unknown = "00000000-0000-0000-0000-000000000000";
    assert_eq!(
        get(&c, format!("{b}/assistants/{unknown}")).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, body) = get(&c, format!("{b}/assistants/nope")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"], "Invalid assistant ID: must be a UUID");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_created_read_patched_searched_and_deleted() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let create = json!({"thread_id": THREAD, "metadata": {"user": "a"}});
    let (status, t) = post(&c, format!("{b}/threads"), create.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (t["status"].as_str(), &t["values"]),
        (Some("idle"), &Value::Null)
    );
    let (status, e) = post(&c, format!("{b}/threads"), create).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        e["detail"],
        format!("Thread with ID {THREAD} already exists")
    );
    let again = json!({"thread_id": THREAD, "if_exists": "do_nothing"});
    assert_eq!(
        post(&c, format!("{b}/threads"), again).await.1["metadata"]["user"],
        "a"
    );
    let r = c
        .patch(format!("{b}/threads/{THREAD}"))
        .json(&json!({"metadata": {"k": "v"}}));
    let patched: Value = r.send().await.unwrap().json().await.unwrap();
    assert_eq!(patched["metadata"], json!({"user": "a", "k": "v"}));
    let search = |q: Value| post(&c, format!("{b}/threads/search"), q);
    assert_eq!(
        search(json!({"metadata": {"k": "v"}}))
            .await
            .1
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(search(json!({"status": "busy"})).await.1, json!([]));
    let count = post(
        &c,
        format!("{b}/threads/count"),
        json!({"metadata": {"user": "a"}}),
    )
    .await;
    assert_eq!(count, (StatusCode::OK, json!(1)));
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(
        (&state["values"], &state["checkpoint"]),
        (&json!({}), &Value::Null)
    );
    let deleted = c
        .delete(format!("{b}/threads/{THREAD}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let (status, e) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(e["detail"], format!("Thread with ID {THREAD} not found"));
    server.stop().await;
}

/// After an interrupt and its answer: the thread's two runs, its history
/// newest first, any past state by its checkpoint, and the thread found
/// by the `graph_id` its first run stamped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threads_runs_history_and_past_states_are_read() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), resume).await;
    let (_, runs) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    let statuses: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["success", "success"]);
    let run_id = runs[0]["run_id"].as_str().unwrap();
    let (status, run) = get(&c, format!("{b}/threads/{THREAD}/runs/{run_id}")).await;
    assert_eq!(
        (status, &run["kwargs"]["command"]),
        (StatusCode::OK, &json!({"resume": true}))
    );
    let (_, history) = post(
        &c,
        format!("{b}/threads/{THREAD}/history"),
        json!({"limit": 2}),
    )
    .await;
    assert_eq!(history.as_array().unwrap().len(), 2);
    assert_eq!(history[0]["values"]["approved"], true);
    let older = history[1]["checkpoint_id"].as_str().unwrap();
    let (status, at) = get(&c, format!("{b}/threads/{THREAD}/state/{older}")).await;
    assert_eq!(
        (status, &at["values"]),
        (StatusCode::OK, &history[1]["values"])
    );
    assert_eq!(at["checkpoint_id"], older);
    for unknown in ["999", "abc"] {
        let (status, _) = get(&c, format!("{b}/threads/{THREAD}/state/{unknown}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
    }
    let by_graph = json!({"metadata": {"graph_id": "approval"}});
    assert_eq!(
        post(&c, format!("{b}/threads/search"), by_graph).await.1[0]["thread_id"],
        THREAD
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_updates_go_through_the_reducers_as_a_node() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let update = json!({"values": {"log": ["by hand"]}, "as_node": "draft"});
    let (status, out) = post(&c, format!("{b}/threads/{THREAD}/state"), update).await;
    assert_eq!(status, StatusCode::OK);
    assert!(out["checkpoint"]["checkpoint_id"].is_string());
    let (_, state) = get(&c, format!("{b}/threads/{THREAD}/state")).await;
    assert_eq!(state["values"]["log"], json!(["draft:x", "by hand"]));
    let bad = json!({"values": {"log": ["x"]}, "as_node": "nonode"});
    assert_eq!(
        post(&c, format!("{b}/threads/{THREAD}/state"), bad).await.0,
        StatusCode::BAD_REQUEST
    );
    server.stop().await;
}

/// `GET /threads/{id}/history?limit=&before=` (the official server serves
/// it beside the `POST` the SDKs send) lists what the `POST` lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_by_get_lists_what_the_post_lists() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 3}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let history = format!("{b}/threads/{THREAD}/history");
    let (_, posted) = post(&c, history.clone(), json!({"limit": 2})).await;
    let (status, got) = get(&c, format!("{history}?limit=2")).await;
    assert_eq!((status, &got), (StatusCode::OK, &posted));
    let below = &posted[1]["checkpoint"]["checkpoint_id"];
    let before = json!({"limit": 3, "before": {"checkpoint_id": below}});
    let (_, posted) = post(&c, history.clone(), before).await;
    let below = below.as_str().unwrap();
    let (_, got) = get(&c, format!("{history}?limit=3&before={below}")).await;
    assert_eq!(got, posted);
    assert_eq!(got.as_array().unwrap().len(), 3);
    let (status, refused) = get(&c, format!("{history}?limit=many")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        refused["detail"].as_str().unwrap().starts_with("limit"),
        "{refused}"
    );
    server.stop().await;
}
