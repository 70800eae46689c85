//! Searches as the official server answers them: assistants and threads
//! filtered, sorted, `select`ed and counted, and each bad filter a 422
//! naming it.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{post, refused};
use support::{fresh_db, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_search_by_name_sorted_selected_and_counted() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let search = format!("{b}/assistants/search");
    let (_, found) = post(&c, search.clone(), json!({"name": "CHA"})).await;
    assert_eq!(found.as_array().map(Vec::len), Some(1));
    assert_eq!(found[0]["graph_id"], "chat");
    let sorted = json!({"sort_by": "graph_id", "sort_order": "asc", "select": ["graph_id"]});
    let (_, list) = post(&c, search.clone(), sorted).await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    let all = [
        "approval",
        "ask",
        "chat",
        "countdown",
        "deep",
        "guarded",
        "nest",
        "pair",
        "reply",
        "slow",
    ];
    assert_eq!(names, all);
    assert_eq!(
        list[0],
        json!({"graph_id": "approval"}),
        "only the selected keys"
    );
    let (_, n) = post(
        &c,
        format!("{b}/assistants/count"),
        json!({"graph_id": "chat"}),
    )
    .await;
    assert_eq!(n, json!(1));
    for bad in [
        json!({"sort_by": "bogus"}),
        json!({"sort_order": "up"}),
        json!({"select": ["x"]}),
    ] {
        let field = bad.as_object().unwrap().keys().next().unwrap().clone();
        let detail = refused(&search, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
        assert!(detail.starts_with(&field), "{detail}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_search_by_ids_and_values_sorted_and_selected() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), &server.base);
    let mut ids = Vec::new();
    for n in [1, 2] {
        let (_, t) = post(&c, format!("{b}/threads"), json!({})).await;
        let id = t["thread_id"].as_str().unwrap().to_owned();
        let run =
            json!({"assistant_id": "countdown", "input": {"n": n}, "interrupt_before": ["tick"]});
        post(&c, format!("{b}/threads/{id}/runs/wait"), run).await;
        ids.push(id);
    }
    let search = format!("{b}/threads/search");
    let (_, found) = post(&c, search.clone(), json!({"values": {"n": 2}})).await;
    let found: Vec<&Value> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["thread_id"])
        .collect();
    assert_eq!(found, [&json!(ids[1])]);
    let both = json!({"ids": ids, "sort_by": "created_at", "sort_order": "asc", "select": ["thread_id", "status"]});
    let (_, list) = post(&c, search.clone(), both).await;
    assert_eq!(
        list,
        json!([{"thread_id": ids[0], "status": "interrupted"}, {"thread_id": ids[1], "status": "interrupted"}])
    );
    let (_, n) = post(
        &c,
        format!("{b}/threads/count"),
        json!({"values": {"n": 1}}),
    )
    .await;
    assert_eq!(n, json!(1));
    let bad = [
        json!({"sort_by": "bogus"}),
        json!({"sort_order": "up"}),
        json!({"select": ["x"]}),
        json!({"extract": {"a": "values.n"}}),
    ];
    for bad in bad {
        let field = bad.as_object().unwrap().keys().next().unwrap().clone();
        let detail = refused(&search, StatusCode::UNPROCESSABLE_ENTITY, bad).await;
        assert!(detail.starts_with(&field), "{detail}");
    }
    server.stop().await;
}
