//! What a user adds beside the graphs: routes of their own served on the
//! same listener (`Server::routes`), and a state with immutable fields,
//! which a new thread's first input sets and no later input changes.

mod support;

use agent_state::graph::{StateGraph, START};
use agent_state::AgentState;
use axum::routing::get;
use reqwest::Client;
use serde_json::json;
use support::http::{get as get_json, post};
use support::{fresh_db, start_with};

/// A note whose subject is set once, when the thread starts.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Note {
    #[reducer(immutable)]
    pub subject: String,
    #[reducer(immutable)]
    #[state(default = 3)]
    pub limit: u32,
    pub text: String,
    #[state(private)]
    pub secret: String,
}

fn note_graph() -> agent_state::graph::Graph<Note> {
    StateGraph::<Note>::new()
        .add_node("write", |s: &Note| {
            NoteUpdate::new().text(format!("{} ({}): {}", s.subject, s.limit, s.text))
        })
        .add_edge(START, "write")
        .compile()
        .expect("note graph")
}

#[tokio::test]
async fn routes_of_a_users_own_are_served_beside_the_api() {
    let db = fresh_db();
    let page = axum::Router::new().route("/hello", get(|| async { "hello" }));
    let server = start_with(&db, |s| s.routes(page)).await;
    let answer = reqwest::get(format!("{}/hello", server.base))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "hello");
    let (status, ok) = get_json(&Client::new(), format!("{}/ok", server.base)).await;
    assert_eq!((status.as_u16(), ok), (200, json!({"ok": true})));
    let (status, missing) = get_json(&Client::new(), format!("{}/nope", server.base)).await;
    assert_eq!(
        (status.as_u16(), missing),
        (404, json!({"detail": "Not Found"}))
    );
    server.stop().await;
}

#[tokio::test]
async fn a_first_input_sets_immutable_fields_and_no_later_one_does() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.graph("note", note_graph())).await;
    let c = Client::new();
    let (_, thread) = post(&c, format!("{}/threads", server.base), json!({})).await;
    let wait = format!(
        "{}/threads/{}/runs/wait",
        server.base,
        thread["thread_id"].as_str().unwrap()
    );
    let input = json!({"subject": "tea", "text": "green"});
    let (status, out) = post(
        &c,
        wait.clone(),
        json!({"assistant_id": "note", "input": input}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["text"], "tea (3): green");

    // Set once: a later input naming it fails the run, the state kept.
    let input = json!({"subject": "coffee", "text": "black"});
    let (_, out) = post(
        &c,
        wait.clone(),
        json!({"assistant_id": "note", "input": input}),
    )
    .await;
    assert_eq!(out["__error__"]["error"], "ThreadExists", "{out}");
    let (_, out) = post(
        &c,
        wait.clone(),
        json!({"assistant_id": "note", "input": {"text": "oolong"}}),
    )
    .await;
    assert_eq!(out["text"], "tea (3): oolong");
    server.stop().await;
}

#[tokio::test]
async fn a_first_input_is_refused_whole_naming_the_bad_field() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.graph("note", note_graph())).await;
    let c = Client::new();
    let url = format!("{}/runs/wait", server.base);
    for (input, field) in [
        (json!({"subject": "tea", "limit": "three"}), "limit"),
        (json!({"subject": "tea", "secret": "x"}), "secret"),
        (json!({"subject": "tea", "colour": 1}), "colour"),
    ] {
        let (status, answer) = post(
            &c,
            url.clone(),
            json!({"assistant_id": "note", "input": input}),
        )
        .await;
        assert_eq!(status, 422, "{answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(field), "{detail}");
    }
    server.stop().await;
}
