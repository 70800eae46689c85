//! Assistants as the official server keeps them: created, changed (each
//! change a version), set back to a version, listed by version, deleted;
//! searched and counted with the graphs' own; used by runs (their config,
//! context and metadata under the run's); kept across a restart, in a
//! database made before they existed too; scoped by custom auth.

mod support;

use agent_state_server::auth::{Credentials, Identity, On, Refusal, Resource, Verdict};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post, APPROVAL, THREAD};
use support::{fresh_db, start, start_with, Db};

/// A client-chosen assistant id.
const MINE: &str = "22222222-2222-2222-2222-222222222222";

async fn send(
    c: &Client,
    method: reqwest::Method,
    url: String,
    body: Value,
) -> (StatusCode, Value) {
    let r = c
        .request(method, url)
        .json(&body)
        .send()
        .await
        .expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn patch(c: &Client, url: String, body: Value) -> (StatusCode, Value) {
    send(c, reqwest::Method::PATCH, url, body).await
}

async fn delete(c: &Client, url: String) -> StatusCode {
    c.delete(url).send().await.expect("request").status()
}

/// A search of the graphs' own assistants.
fn system() -> Value {
    json!({"metadata": {"created_by": "system"}})
}

/// Creates assistant `MINE` of graph `approval`.
async fn create_mine(c: &Client, b: &str) -> Value {
    let body = json!({"assistant_id": MINE, "graph_id": "approval", "name": "mine",
        "description": "d", "config": {"configurable": {"model": "x"}}, "metadata": {"team": "a"}});
    let (status, made) = post(c, format!("{b}/assistants"), body).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    made
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assistant_is_created_as_the_official_server_makes_it() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let made = create_mine(&c, b).await;
    assert_eq!(made["assistant_id"], MINE);
    assert_eq!(made["config"], json!({"configurable": {"model": "x"}}));
    assert_eq!(
        made["context"],
        json!({"model": "x"}),
        "context mirrors configurable"
    );
    assert_eq!(
        (made["version"].clone(), made["name"].clone()),
        (json!(1), json!("mine"))
    );
    assert_eq!(made["created_at"], made["updated_at"]);
    assert_eq!(get(&c, format!("{b}/assistants/{MINE}")).await.1, made);
    let (_, plain) = post(
        &c,
        format!("{b}/assistants"),
        json!({"graph_id": "countdown", "context": {"k": 1}}),
    )
    .await;
    assert_eq!(plain["name"], "Untitled");
    assert_eq!(plain["config"], json!({"configurable": {"k": 1}}));
    assert_eq!(
        (plain["metadata"].clone(), plain["description"].clone()),
        (json!({}), Value::Null)
    );
    let again = json!({"assistant_id": MINE, "graph_id": "countdown", "if_exists": "do_nothing"});
    assert_eq!(
        post(&c, format!("{b}/assistants"), again).await,
        (StatusCode::OK, made)
    );
    let dup = post(
        &c,
        format!("{b}/assistants"),
        json!({"assistant_id": MINE, "graph_id": "approval"}),
    )
    .await;
    assert_eq!(
        dup,
        (
            StatusCode::CONFLICT,
            json!({"detail": format!("Assistant {MINE} already exists")})
        )
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_create_is_refused_naming_what_is_wrong_and_stores_nothing() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let url = format!("{b}/assistants");
    let (status, body) = post(&c, url.clone(), json!({"graph_id": "nope"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Graph 'nope' not found"),
        "{body}"
    );
    let cases = [
        (json!({}), StatusCode::UNPROCESSABLE_ENTITY, "graph_id"),
        (
            json!({"graph_id": "approval", "assistant_id": "abc"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid assistant ID",
        ),
        (
            json!({"graph_id": "approval", "metadata": 5}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "metadata",
        ),
        (
            json!({"graph_id": "approval", "config": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "config",
        ),
        (
            json!({"graph_id": "approval", "name": 5}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "name",
        ),
        (
            json!({"graph_id": "approval", "if_exists": "zap"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "if_exists",
        ),
        (
            json!({"graph_id": 7}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "graph_id",
        ),
        (
            json!({"graph_id": "approval", "config": {"configurable": {"a": 1}}, "context": {"b": 2}}),
            StatusCode::BAD_REQUEST,
            "configurable and context",
        ),
    ];
    for (body, status, names) in cases {
        let (got, answer) = post(&c, url.clone(), body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        assert!(
            answer["detail"].as_str().unwrap().contains(names),
            "{body}: {answer}"
        );
    }
    let (_, n) = post(&c, format!("{b}/assistants/count"), json!({})).await;
    let (_, own) = post(&c, format!("{b}/assistants/count"), system()).await;
    assert_eq!(n, own, "only the graphs' own");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_is_a_new_version_and_latest_goes_back_to_one() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let made = create_mine(&c, b).await;
    let one = format!("{b}/assistants/{MINE}");
    let (status, v2) = patch(
        &c,
        one.clone(),
        json!({"metadata": {"x": 1}, "name": "renamed"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v2}");
    assert_eq!(
        (v2["version"].clone(), v2["name"].clone()),
        (json!(2), json!("renamed"))
    );
    assert_eq!(
        v2["metadata"],
        json!({"team": "a", "x": 1}),
        "metadata merged"
    );
    assert_eq!(
        (v2["created_at"].clone(), v2["config"].clone()),
        (made["created_at"].clone(), made["config"].clone())
    );
    let (_, v3) = patch(&c, one.clone(), json!({"context": {"k": "v"}})).await;
    assert_eq!(
        (v3["version"].clone(), v3["config"].clone()),
        (json!(3), json!({"configurable": {"k": "v"}}))
    );
    let (_, versions) = post(&c, format!("{one}/versions"), json!({})).await;
    let numbers: Vec<i64> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [3, 2, 1]);
    assert!(
        versions[0].get("updated_at").is_none(),
        "a version has no updated_at"
    );
    let (_, some) = post(
        &c,
        format!("{one}/versions"),
        json!({"metadata": {"x": 1}, "limit": 1}),
    )
    .await;
    assert_eq!(some.as_array().map(Vec::len), Some(1));
    assert_eq!(some[0]["version"], 3);
    let (status, back) = post(&c, format!("{one}/latest"), json!({"version": 1})).await;
    assert_eq!(status, StatusCode::OK, "{back}");
    assert_eq!(
        (
            back["version"].clone(),
            back["name"].clone(),
            back["metadata"].clone()
        ),
        (json!(1), json!("mine"), json!({"team": "a"}))
    );
    assert_eq!(get(&c, one.clone()).await.1, back);
    let (_, v4) = patch(&c, one.clone(), json!({"description": "e"})).await;
    assert_eq!(v4["version"], 4, "numbered past every version");
    let (status, body) = post(&c, format!("{one}/latest"), json!({"version": 9})).await;
    assert_eq!(
        (status, body["detail"].clone()),
        (
            StatusCode::NOT_FOUND,
            json!(format!("Version 9 not found for assistant {MINE}"))
        )
    );
    let (status, body) = post(&c, format!("{one}/latest"), json!({"version": "x"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        body["detail"].as_str().unwrap().starts_with("version"),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_change_is_refused_and_changes_nothing() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let made = create_mine(&c, b).await;
    let one = format!("{b}/assistants/{MINE}");
    let unknown = "33333333-3333-3333-3333-333333333333";
    let cases = [
        (
            one.clone(),
            json!({"graph_id": "nope"}),
            StatusCode::NOT_FOUND,
        ),
        (
            one.clone(),
            json!({"name": 5}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            one.clone(),
            json!({"metadata": [1]}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            format!("{b}/assistants/{unknown}"),
            json!({"name": "x"}),
            StatusCode::NOT_FOUND,
        ),
        (
            format!("{b}/assistants/xyz"),
            json!({"name": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (url, body, status) in cases {
        let (got, answer) = patch(&c, url, body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        assert!(answer["detail"].is_string(), "{answer}");
    }
    assert_eq!(get(&c, one.clone()).await.1, made, "unchanged");
    let (status, _) = post(&c, format!("{b}/assistants/{unknown}/versions"), json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = post(&c, format!("{one}/versions"), json!({"limit": "x"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_count_find_created_assistants_beside_the_graphs_own() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    create_mine(&c, b).await;
    let search = format!("{b}/assistants/search");
    let (_, found) = post(&c, search.clone(), json!({"graph_id": "approval"})).await;
    let ids: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["assistant_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [MINE, APPROVAL], "newest first");
    let (_, found) = post(
        &c,
        search.clone(),
        json!({"metadata": {"team": "a"}, "select": ["name"]}),
    )
    .await;
    assert_eq!(found, json!([{"name": "mine"}]));
    let (_, own) = post(
        &c,
        search.clone(),
        json!({"metadata": {"created_by": "system"}, "limit": 100}),
    )
    .await;
    let (_, all) = post(&c, format!("{b}/assistants/count"), json!({})).await;
    let own = own.as_array().map_or(0, Vec::len);
    assert_eq!(
        (own > 1, json!(own + 1)),
        (true, all),
        "the graphs' own and mine"
    );
    let by_name =
        json!({"sort_by": "name", "sort_order": "asc", "graph_id": "approval", "select": ["name"]});
    assert_eq!(
        post(&c, search.clone(), by_name).await.1,
        json!([{"name": "approval"}, {"name": "mine"}])
    );
    let (_, n) = post(
        &c,
        format!("{b}/assistants/count"),
        json!({"graph_id": "approval"}),
    )
    .await;
    assert_eq!(n, json!(2));
    let (status, _) = post(&c, search, json!({"graph_id": "nope"})).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an unknown graph, as the official server"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_uses_its_assistants_config_context_and_metadata_under_its_own() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let body = json!({"assistant_id": MINE, "graph_id": "countdown", "context": {"model": "m", "shared": "a"}, "metadata": {"team": "t"}});
    assert_eq!(
        post(&c, format!("{b}/assistants"), body).await.0,
        StatusCode::OK
    );
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": MINE, "input": {"n": 2}, "context": {"shared": "run", "own": 1}, "metadata": {"m": 1}});
    let (status, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    assert_eq!((status, out), (StatusCode::OK, json!({"n": 0})));
    let (_, runs) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    let r = &runs[0];
    assert_eq!(r["assistant_id"], MINE);
    let configurable = &r["kwargs"]["config"]["configurable"];
    assert_eq!(
        (
            configurable["model"].clone(),
            configurable["shared"].clone(),
            configurable["own"].clone()
        ),
        (json!("m"), json!("run"), json!(1))
    );
    assert_eq!(
        r["kwargs"]["context"],
        json!({"model": "m", "shared": "run", "own": 1})
    );
    assert_eq!(
        (r["metadata"]["team"].clone(), r["metadata"]["m"].clone()),
        (json!("t"), json!(1))
    );
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(
        (
            t["metadata"]["assistant_id"].clone(),
            t["metadata"]["graph_id"].clone()
        ),
        (json!(MINE), json!("countdown"))
    );
    assert_eq!(
        delete(&c, format!("{b}/assistants/{MINE}")).await,
        StatusCode::NO_CONTENT
    );
    let again = json!({"assistant_id": MINE, "input": {"n": 1}});
    let (status, body) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), again).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "Thread or assistant not found."})
        )
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_assistant_and_its_threads() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    create_mine(&c, b).await;
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": MINE, "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    assert_eq!(
        delete(&c, format!("{b}/assistants/xyz")).await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let unknown = "33333333-3333-3333-3333-333333333333";
    assert_eq!(
        delete(&c, format!("{b}/assistants/{unknown}")).await,
        StatusCode::NOT_FOUND
    );
    let url = format!("{b}/assistants/{MINE}?delete_threads=true");
    assert_eq!(delete(&c, url.clone()).await, StatusCode::NO_CONTENT);
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&c, format!("{b}/assistants/{MINE}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(delete(&c, url).await, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graphs_own_assistant_may_be_changed_or_deleted_and_comes_back_at_a_restart() {
    let db = support::fresh_file();
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.clone());
    let one = format!("{b}/assistants/{APPROVAL}");
    let (_, v2) = patch(&c, one.clone(), json!({"metadata": {"s": 1}})).await;
    assert_eq!(
        (v2["version"].clone(), v2["metadata"].clone()),
        (json!(2), json!({"created_by": "system", "s": 1}))
    );
    assert_eq!(delete(&c, one.clone()).await, StatusCode::NO_CONTENT);
    let (status, _) = post(
        &c,
        format!("{b}/runs/wait"),
        json!({"assistant_id": "approval", "input": {"topic": "x"}}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "runs by the graph's name name its assistant"
    );
    server.stop().await;
    let server = start(&db).await;
    let (_, back) = get(&c, format!("{}/assistants/{APPROVAL}", server.base)).await;
    assert_eq!(
        (back["version"].clone(), back["metadata"].clone()),
        (json!(1), json!({"created_by": "system"}))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_created_assistants_and_their_versions() {
    restart_keeps(support::fresh_file()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_created_assistants_and_their_versions_on_postgres() {
    restart_keeps(support::db::fresh_pg()).await;
}

async fn restart_keeps(db: Db) {
    let server = start(&db).await;
    let c = Client::new();
    create_mine(&c, &server.base).await;
    let (_, v2) = patch(
        &c,
        format!("{}/assistants/{MINE}", server.base),
        json!({"name": "two"}),
    )
    .await;
    server.stop().await;
    let server = start(&db).await;
    let b = &server.base;
    assert_eq!(get(&c, format!("{b}/assistants/{MINE}")).await.1, v2);
    let (_, versions) = post(&c, format!("{b}/assistants/{MINE}/versions"), json!({})).await;
    assert_eq!(versions.as_array().map(Vec::len), Some(2));
    server.stop().await;
}

/// Several servers on one PostgreSQL database share the assistants.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_postgres_database_share_assistants() {
    let db = support::db::fresh_pg();
    let (one, two) = (start(&db).await, start(&db).await);
    let c = Client::new();
    create_mine(&c, &one.base).await;
    let (_, seen) = get(&c, format!("{}/assistants/{MINE}", two.base)).await;
    assert_eq!(seen["name"], "mine");
    let (_, v2) = patch(
        &c,
        format!("{}/assistants/{MINE}", two.base),
        json!({"name": "two"}),
    )
    .await;
    assert_eq!(
        get(&c, format!("{}/assistants/{MINE}", one.base)).await.1,
        v2
    );
    one.stop().await;
    two.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_made_before_assistants_could_change_still_opens() {
    let db = support::fresh_file();
    let path = db.path().clone();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE server_assistants (assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at TEXT NOT NULL);
         INSERT INTO server_assistants VALUES ('e234584d-b7bf-527f-9d06-ba77f8f5172d', 'approval', '2020-01-01T00:00:00.000000+00:00');",
    )
    .unwrap();
    drop(conn);
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let (_, a) = get(&c, format!("{b}/assistants/{APPROVAL}")).await;
    assert_eq!(a["created_at"], "2020-01-01T00:00:00.000000+00:00", "{a}");
    assert_eq!(
        (
            a["name"].clone(),
            a["metadata"].clone(),
            a["version"].clone()
        ),
        (json!("approval"), json!({"created_by": "system"}), json!(1))
    );
    let (_, versions) = post(&c, format!("{b}/assistants/{APPROVAL}/versions"), json!({})).await;
    assert_eq!(versions.as_array().map(Vec::len), Some(1), "{versions}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subgraphs_are_listed_by_namespace() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    let (status, nest) = get(&c, format!("{b}/assistants/nest/subgraphs")).await;
    assert_eq!(
        (status, keys(&nest)),
        (StatusCode::OK, vec!["child".to_owned()])
    );
    assert_eq!(nest["child"]["config_schema"], json!({}));
    let (_, deep) = get(&c, format!("{b}/assistants/deep/subgraphs")).await;
    assert_eq!(keys(&deep), ["mid"]);
    let (_, all) = get(&c, format!("{b}/assistants/deep/subgraphs?recurse=true")).await;
    assert_eq!(keys(&all), ["mid", "mid|child"]);
    let (_, under) = get(&c, format!("{b}/assistants/deep/subgraphs/mid%7Cchild")).await;
    assert_eq!(keys(&under), ["mid|child"]);
    assert_eq!(
        get(&c, format!("{b}/assistants/nest/subgraphs/zzz"))
            .await
            .1,
        json!({})
    );
    assert_eq!(
        get(&c, format!("{b}/assistants/countdown/subgraphs"))
            .await
            .1,
        json!({})
    );
    let unknown = "33333333-3333-3333-3333-333333333333";
    assert_eq!(
        get(&c, format!("{b}/assistants/{unknown}/subgraphs"))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    server.stop().await;
}

fn client(token: &str) -> Client {
    let mut headers = HeaderMap::new();
    let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("header");
    headers.insert(AUTHORIZATION, value);
    Client::builder()
        .default_headers(headers)
        .build()
        .expect("client")
}

async fn who(req: Credentials) -> Result<Identity, Refusal> {
    match req.bearer() {
        Some(token) => Ok(Identity::new(token.trim_start_matches("token-"))),
        None => Err(Refusal::unauthorized("Missing bearer token")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_filter_assistants_are_stamped_and_others_are_not_found() {
    let s = start_with(&fresh_db(), |server| {
        server
            .authenticate(who)
            .authorize(On::resource(Resource::Assistants), |ctx, _| {
                Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
            })
    })
    .await;
    let (alice, bob, b) = (client("token-alice"), client("token-bob"), s.base.as_str());
    let made = create_mine(&alice, b).await;
    assert_eq!(made["metadata"], json!({"team": "a", "owner": "alice"}));
    let one = format!("{b}/assistants/{MINE}");
    assert_eq!(get(&bob, one.clone()).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        patch(&bob, one.clone(), json!({"name": "x"})).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(delete(&bob, one.clone()).await, StatusCode::NOT_FOUND);
    let taken = json!({"assistant_id": MINE, "graph_id": "approval", "if_exists": "do_nothing"});
    assert_eq!(
        post(&bob, format!("{b}/assistants"), taken).await.0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        post(&bob, format!("{b}/assistants/search"), json!({}))
            .await
            .1,
        json!([])
    );
    let (_, mine) = post(&alice, format!("{b}/assistants/search"), json!({})).await;
    assert_eq!(
        mine.as_array().map(Vec::len),
        Some(1),
        "the graphs' own are not hers"
    );
    assert_eq!(
        post(&alice, format!("{b}/assistants/count"), json!({}))
            .await
            .1,
        json!(1)
    );
    let run = json!({"assistant_id": MINE, "input": {"topic": "x"}});
    let (status, body) = post(&bob, format!("{b}/runs/wait"), run.clone()).await;
    let missing = json!({"detail": "Thread or assistant not found."});
    assert_eq!((status, body), (StatusCode::NOT_FOUND, missing));
    assert_eq!(
        post(&alice, format!("{b}/runs/wait"), run).await.0,
        StatusCode::OK
    );
    let graphs_own = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    let (status, _) = post(&bob, format!("{b}/runs/wait"), graphs_own).await;
    assert_eq!(status, StatusCode::OK, "the graphs' own are everyone's");
    assert_eq!(
        patch(&alice, one.clone(), json!({"name": "x"})).await.0,
        StatusCode::OK
    );
    assert_eq!(delete(&alice, one).await, StatusCode::NO_CONTENT);
    s.stop().await;
}

/// An assistant's `config` is checked as a run's is: one no run could
/// use is refused when it is created or changed, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assistants_config_is_checked_as_a_runs() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    for bad in [json!(0), json!(-3), json!("abc"), json!(1.5)] {
        let body = json!({"assistant_id": MINE, "graph_id": "approval",
            "config": {"recursion_limit": bad}});
        let (status, refused) = post(&c, format!("{b}/assistants"), body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.starts_with("config.recursion_limit: "), "{detail}");
    }
    assert_eq!(
        get(&c, format!("{b}/assistants/{MINE}")).await.0,
        StatusCode::NOT_FOUND
    );
    create_mine(&c, b).await;
    let change = json!({"config": {"tags": "not a list"}});
    let (status, _) = patch(&c, format!("{b}/assistants/{MINE}"), change).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    server.stop().await;
}

/// Every way to run an assistant checks it as a `read`: a batch item, an
/// AG-UI run, a thread protocol `run.start`; another user's is not found
/// and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anothers_assistant_runs_through_no_route() {
    let s = start_with(&fresh_db(), |server| {
        server
            .authenticate(who)
            .authorize(On::resource(Resource::Assistants), |ctx, _| {
                Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
            })
    })
    .await;
    let (alice, bob, b) = (client("token-alice"), client("token-bob"), s.base.as_str());
    create_mine(&alice, b).await;
    let run = json!({"assistant_id": MINE, "input": {"topic": "x"}});
    let graphs_own = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    let batch = json!([graphs_own, run]);
    let (status, _) = post(&bob, format!("{b}/runs/batch"), batch).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a batch with her assistant");
    let agui = json!({"threadId": THREAD, "runId": "r1", "messages": [], "tools": [],
        "context": [], "state": {}, "forwardedProps": {}});
    for path in [MINE.to_owned(), MINE.replace('2', "%32")] {
        let (status, _) = post(&bob, format!("{b}/ag-ui/{path}"), agui.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "AG-UI on /ag-ui/{path}");
    }
    let start = json!({"id": 1, "method": "run.start", "params": run});
    let (status, _) = post(&bob, format!("{b}/threads/{THREAD}/commands"), start).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "run.start of her assistant");
    let (_, count) = post(&alice, format!("{b}/threads/count"), json!({})).await;
    assert_eq!(count, json!(0), "no thread was made for bob's runs");
    s.stop().await;
}

/// What a node of a run sees of its configuration.
#[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
struct Seen {
    model: String,
    assistant: String,
}

fn seen_graph() -> agent_state::graph::Graph<Seen> {
    use agent_state::graph::{NodeContext, StateGraph, START};
    use agent_state_server::RunConfig;
    StateGraph::<Seen>::new()
        .add_node("look", |_: &Seen, ctx: &NodeContext| {
            let config = ctx.context::<RunConfig>().expect("a run config");
            let text = |m: &serde_json::Map<String, Value>, k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_owned()
            };
            SeenUpdate::new()
                .model(text(&config.context, "model"))
                .assistant(text(&config.configurable, "assistant_id"))
        })
        .add_edge(START, "look")
        .compile()
        .expect("seen graph")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_nodes_see_its_assistants_context_under_the_runs_own() {
    let s = start_with(&fresh_db(), |server| server.graph("seen", seen_graph())).await;
    let (c, b) = (Client::new(), s.base.as_str());
    let body = json!({"assistant_id": MINE, "graph_id": "seen", "context": {"model": "big"}});
    assert_eq!(
        post(&c, format!("{b}/assistants"), body).await.0,
        StatusCode::OK
    );
    let run = |body: Value| post(&c, format!("{b}/runs/wait"), body);
    let (_, out) = run(json!({"assistant_id": MINE, "input": {}})).await;
    assert_eq!(out, json!({"model": "big", "assistant": MINE}));
    let (_, out) =
        run(json!({"assistant_id": MINE, "input": {}, "context": {"model": "small"}})).await;
    assert_eq!(out["model"], "small", "the run's own wins");
    let own =
        json!({"assistant_id": MINE, "input": {}, "config": {"configurable": {"model": "mid"}}});
    assert_eq!(
        run(own).await.1["model"],
        "mid",
        "a run's configurable is its context"
    );
    let (_, out) = run(json!({"assistant_id": "seen", "input": {}})).await;
    assert_eq!(out["model"], "none", "the graph's own has no context");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_assistant_stops_its_runs() {
    let server = start(&fresh_db()).await;
    let (c, b) = (Client::new(), server.base.as_str());
    let made = json!({"assistant_id": MINE, "graph_id": "countdown"});
    assert_eq!(
        post(&c, format!("{b}/assistants"), made).await.0,
        StatusCode::OK
    );
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let long = json!({"assistant_id": MINE, "input": {"n": 30}});
    let (_, run) = post(&c, format!("{b}/threads/{THREAD}/runs"), long).await;
    let at = format!(
        "{b}/threads/{THREAD}/runs/{}",
        run["run_id"].as_str().unwrap()
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        delete(&c, format!("{b}/assistants/{MINE}")).await,
        StatusCode::NO_CONTENT
    );
    get(&c, format!("{at}/join")).await;
    assert_eq!(get(&c, at).await.1["status"], "interrupted");
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert!(t["values"]["n"].as_u64().unwrap() > 0, "{t}");
    server.stop().await;
}
