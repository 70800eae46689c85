//! The Store's endpoints as a client meets them: the real server on a free
//! port, driven over HTTP in the shapes the official server (langgraph-api
//! 0.16.7) answers — `204` for a put or delete, `200 null` for a missing
//! item, `{"items"}` and `{"namespaces"}` — and every refusal a 422 that
//! names what is wrong, with nothing written.

mod support;

use agent_state::store::{IndexConfig, MemoryStore};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post};
use support::{fresh_db, start, start_with};

async fn put(c: &Client, base: &str, body: Value) -> (StatusCode, Value) {
    let r = c
        .put(format!("{base}/store/items"))
        .json(&body)
        .send()
        .await
        .expect("put");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn delete(c: &Client, base: &str, body: Value) -> StatusCode {
    let r = c
        .delete(format!("{base}/store/items"))
        .json(&body)
        .send()
        .await
        .expect("delete");
    r.status()
}

async fn namespaces(c: &Client, base: &str, body: Value) -> Value {
    let (status, answer) = post(c, format!("{base}/store/namespaces"), body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["namespaces"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_put_read_searched_listed_and_deleted() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let item = json!({"namespace": ["users", "u1"], "key": "profile", "value": {"work": "geology", "level": 3}});
    assert_eq!(put(&c, b, item).await.0, StatusCode::NO_CONTENT);
    let (status, got) = get(
        &c,
        format!("{b}/store/items?namespace=users.u1&key=profile"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["namespace"], json!(["users", "u1"]));
    assert_eq!(got["value"], json!({"work": "geology", "level": 3}));
    assert!(
        got["created_at"].as_str().unwrap().ends_with("+00:00"),
        "{got}"
    );
    assert_eq!(
        got.as_object().unwrap().len(),
        5,
        "no score on a get: {got}"
    );
    let (status, none) = get(&c, format!("{b}/store/items?namespace=users.u1&key=nope")).await;
    assert_eq!((status, none), (StatusCode::OK, Value::Null));

    let other = json!({"namespace": ["users", "u2"], "key": "profile", "value": {"level": 1}});
    put(&c, b, other).await;
    let body = json!({"namespace_prefix": ["users"], "filter": {"level": {"$gte": 2}}});
    let (status, found) = post(&c, format!("{b}/store/items/search"), body).await;
    assert_eq!(status, StatusCode::OK);
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{found}");
    assert_eq!(items[0]["key"], "profile");
    assert_eq!(items[0]["score"], Value::Null);
    assert_eq!(
        namespaces(&c, b, json!({})).await,
        json!([["users", "u1"], ["users", "u2"]])
    );
    assert_eq!(
        namespaces(&c, b, json!({"max_depth": 1})).await,
        json!([["users"]])
    );
    assert_eq!(
        namespaces(&c, b, json!({"suffix": ["u2"]})).await,
        json!([["users", "u2"]])
    );

    let gone = json!({"namespace": ["users", "u1"], "key": "profile"});
    assert_eq!(delete(&c, b, gone).await, StatusCode::NO_CONTENT);
    let (_, none) = get(
        &c,
        format!("{b}/store/items?namespace=users.u1&key=profile"),
    )
    .await;
    assert_eq!(none, Value::Null);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_naming_it_and_writes_nothing() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    // The statuses the official server answers (what it stores, an empty
    // key, a NUL, a negative TTL, is refused here).
    let (invalid, bad) = (StatusCode::UNPROCESSABLE_ENTITY, StatusCode::BAD_REQUEST);
    let cases = [
        (
            json!({"namespace": [], "key": "k", "value": {}}),
            bad,
            "cannot be empty",
        ),
        (
            json!({"namespace": ["a.b"], "key": "k", "value": {}}),
            invalid,
            "period",
        ),
        (
            json!({"namespace": ["langgraph"], "key": "k", "value": {}}),
            bad,
            "reserved",
        ),
        (
            json!({"namespace": ["a", ""], "key": "k", "value": {}}),
            invalid,
            "empty",
        ),
        (
            json!({"namespace": ["a"], "key": "", "value": {}}),
            invalid,
            "invalid key",
        ),
        (
            json!({"namespace": ["a"], "key": "k", "value": [1]}),
            invalid,
            "value: expected an object",
        ),
        (
            json!({"namespace": ["a"], "key": "k", "value": {}, "ttl": -1}),
            invalid,
            "TTL",
        ),
        (
            json!({"namespace": ["a"], "key": "k", "value": {"t": "nul\u{0}"}}),
            invalid,
            "`t`",
        ),
    ];
    for (body, want, says) in cases {
        let (status, answer) = put(&c, b, body.clone()).await;
        assert_eq!(status, want, "{body}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{body}: {detail}");
    }
    let bad_filter = json!({"namespace_prefix": ["a"], "filter": {"n": {"$near": 1}}});
    let (status, answer) = post(&c, format!("{b}/store/items/search"), bad_filter).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        answer["detail"].as_str().unwrap().contains("$near"),
        "{answer}"
    );
    // The official server's answer to a get without a key.
    let (status, answer) = get(&c, format!("{b}/store/items?namespace=a")).await;
    assert_eq!(
        (status, answer),
        (StatusCode::BAD_REQUEST, json!({"error": "Key is required"}))
    );
    let (status, _) = get(&c, format!("{b}/store/items?namespace=a..b&key=k")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(namespaces(&c, b, json!({})).await, json!([]));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_an_index_ranks_a_query_and_honours_index_false() {
    // How often each of three words occurs: a fixed embedding.
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        let count = |t: &str, w: &str| t.matches(w).count() as f32;
        texts
            .iter()
            .map(|t| vec![count(t, "rust"), count(t, "tea"), count(t, "sea")])
            .collect()
    };
    let index = IndexConfig::new(3, embed).fields(["text"]);
    let db = fresh_db();
    let server = start_with(&db, |s| s.store(MemoryStore::new().with_index(index))).await;
    let (c, b) = (Client::new(), server.base.as_str());
    for (key, text) in [("a", "green tea"), ("b", "rust rust"), ("c", "the sea")] {
        let body = json!({"namespace": ["notes"], "key": key, "value": {"text": text}});
        put(&c, b, body).await;
    }
    let hidden =
        json!({"namespace": ["notes"], "key": "d", "value": {"text": "rust"}, "index": false});
    put(&c, b, hidden).await;
    let body = json!({"namespace_prefix": ["notes"], "query": "rust", "limit": 4});
    let (_, found) = post(&c, format!("{b}/store/items/search"), body).await;
    let keys: Vec<&str> = found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys[0], "b", "{found}");
    assert!(
        (found["items"][0]["score"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{found}"
    );
    // Not embedded: found after the scored items, without a score.
    assert_eq!(keys.last(), Some(&"d"), "{found}");
    assert_eq!(found["items"][3]["score"], Value::Null);
    server.stop().await;
}

/// A user's note: `remember` reads what the store holds for the user, then
/// writes this run's note there.
#[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
pub struct Remember {
    pub user: String,
    pub note: String,
    pub before: String,
}

async fn remember(
    s: std::sync::Arc<Remember>,
    ctx: agent_state::graph::NodeContext,
) -> Result<RememberUpdate, agent_state::graph::BoxError> {
    use agent_state::store::StoreExt;
    let store = ctx.store().ok_or("the server gives every run its store")?;
    let before = store.get(["users", s.user.as_str()], "note").await?;
    let before = before.map_or(String::new(), |i| i.value["text"].to_string());
    store
        .put(["users", s.user.as_str()], "note", json!({"text": s.note}))
        .await?;
    Ok(RememberUpdate::new().before(before))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_reach_the_store_the_server_serves() {
    use agent_state::graph::{StateGraph, START};
    let graph = StateGraph::<Remember>::new()
        .add_node("remember", remember)
        .add_edge(START, "remember")
        .compile()
        .expect("remember graph");
    let server = start_with(&fresh_db(), |s| s.graph("remember", graph)).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let run =
        |note: &str| json!({"assistant_id": "remember", "input": {"user": "ann", "note": note}});
    let (status, out) = post(&c, format!("{b}/runs/wait"), run("likes tea")).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    let (_, item) = get(&c, format!("{b}/store/items?namespace=users.ann&key=note")).await;
    assert_eq!(item["value"], json!({"text": "likes tea"}));
    // Another thread's run sees what the first wrote.
    let (_, out) = post(&c, format!("{b}/runs/wait"), run("likes rust")).await;
    assert_eq!(out["before"], "\"likes tea\"", "{out}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_outlive_a_restart_in_the_servers_database() {
    // The database's own store (SQLite file or PostgreSQL, as the
    // environment picks): a restarted server still has what was put.
    let db = fresh_db();
    let server = start(&db).await;
    let c = Client::new();
    let item =
        json!({"namespace": ["users", "ann"], "key": "note", "value": {"text": "tea"}, "ttl": 60});
    assert_eq!(put(&c, &server.base, item).await.0, StatusCode::NO_CONTENT);
    server.stop().await;
    let server = start(&db).await;
    let b = server.base.as_str();
    let (_, got) = get(&c, format!("{b}/store/items?namespace=users.ann&key=note")).await;
    assert_eq!(got["value"], json!({"text": "tea"}), "{got}");
    assert_eq!(
        namespaces(&c, b, json!({})).await,
        json!([["users", "ann"]])
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_of_true_is_refused() {
    // `index` is `false` or a list of paths, as the official schema says.
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let body = json!({"namespace": ["a"], "key": "k", "value": {}, "index": true});
    let (status, answer) = put(&c, b, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap().contains("`index`"),
        "{answer}"
    );
    assert_eq!(namespaces(&c, b, json!({})).await, json!([]));
    server.stop().await;
}
