//! Custom auth as a client meets it: the real server on a free port with
//! an authenticate hook (bearer tokens of two users) and authorize hooks
//! that scope threads to their owner, refuse deletes, and give each user
//! a Store namespace of their own; driven over HTTP. One user cannot
//! read, list, change, run on, resume, join, cancel or copy another's
//! threads: each is answered as the official server answers a thread
//! that does not exist (404), or left out.

mod support;

use agent_state_server::auth::{Action, Credentials, Identity, On, Refusal, Resource, Verdict};
use agent_state_server::{Server, ServerError};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use support::http::{get, post};
use support::{fresh_db, start_with, Running};

/// A client that sends `token` as its bearer token.
fn client(token: &str) -> Client {
    let mut headers = HeaderMap::new();
    let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("header");
    headers.insert(AUTHORIZATION, value);
    Client::builder()
        .default_headers(headers)
        .build()
        .expect("client")
}

/// Who a token is: `alice`, `bob`, or `root` (who may delete).
async fn who(req: Credentials) -> Result<Identity, Refusal> {
    match req.bearer() {
        Some("token-alice") => Ok(Identity::new("alice")),
        Some("token-bob") => Ok(Identity::new("bob")),
        Some("token-root") => Ok(Identity::new("root").permission("threads:delete")),
        Some(_) => Err(Refusal::unauthorized("Invalid token")),
        None => Err(Refusal::unauthorized("Missing bearer token")),
    }
}

/// The server with the hooks: threads scoped to their owner, a thread's
/// delete only with the permission (a 403 otherwise) and only of one's
/// own, each user's Store under their name.
fn guarded(server: Server) -> Server {
    server
        .authenticate(who)
        .authorize(On::resource(Resource::Threads), |ctx, _| {
            Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
        })
        .authorize(
            On::only(Resource::Threads, Action::Delete),
            |ctx, _| match ctx.user.can("threads:delete") {
                true => Ok(Verdict::Filter(json!({"owner": ctx.user.identity}))),
                false => Ok(Verdict::Deny),
            },
        )
        .authorize(On::resource(Resource::Store), |ctx, value| {
            let ns = value["namespace"].as_array().cloned().unwrap_or_default();
            let mut mine = vec![json!(ctx.user.identity)];
            mine.extend(ns);
            value["namespace"] = Value::Array(mine);
            Ok(Verdict::Allow)
        })
}

async fn send(c: &Client, method: Method, url: String, body: Option<Value>) -> (StatusCode, Value) {
    let mut req = c.request(method, url);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let r = req.send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

/// A thread of alice's that paused on an interrupt, and its run.
async fn alices_thread(s: &Running) -> (String, String) {
    let alice = client("token-alice");
    let (status, thread) = post(&alice, format!("{}/threads", s.base), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    let id = thread["thread_id"].as_str().expect("id").to_owned();
    assert_eq!(thread["metadata"]["owner"], "alice");
    let run = json!({"assistant_id": "approval", "input": {"topic": "t"}});
    let url = format!("{}/threads/{id}/runs", s.base);
    let (status, run) = post(&alice, url, run).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    let run_id = run["run_id"].as_str().expect("run id").to_owned();
    let join = format!("{}/threads/{id}/runs/{run_id}/join", s.base);
    assert_eq!(get(&alice, join).await.0, StatusCode::OK);
    (id, run_id)
}

#[tokio::test]
async fn no_or_a_bad_token_is_401_on_every_route_family_and_ok_is_open() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let b = &s.base;
    let t = support::http::THREAD;
    let routes = [
        (Method::POST, format!("{b}/threads"), Some(json!({}))),
        (Method::POST, format!("{b}/threads/search"), Some(json!({}))),
        (Method::GET, format!("{b}/threads/{t}"), None),
        (Method::GET, format!("{b}/threads/{t}/runs"), None),
        (
            Method::POST,
            format!("{b}/runs/wait"),
            Some(json!({"assistant_id": "pair"})),
        ),
        (
            Method::POST,
            format!("{b}/assistants/search"),
            Some(json!({})),
        ),
        (
            Method::PUT,
            format!("{b}/store/items"),
            Some(json!({"namespace": ["n"], "key": "k", "value": {}})),
        ),
    ];
    for (method, url, body) in routes {
        let (status, answer) =
            send(&Client::new(), method.clone(), url.clone(), body.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {url}: {answer}");
        assert_eq!(answer, json!({"detail": "Missing bearer token"}));
        let (status, answer) = send(&client("forged"), method, url, body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer, json!({"detail": "Invalid token"}));
    }
    assert_eq!(
        get(&Client::new(), format!("{b}/ok")).await,
        (StatusCode::OK, json!({"ok": true}))
    );
    assert_eq!(
        get(&Client::new(), format!("{b}/info")).await.0,
        StatusCode::OK
    );
    s.stop().await;
}

#[tokio::test]
async fn one_user_cannot_reach_anothers_thread() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (id, run_id) = alices_thread(&s).await;
    let bob = client("token-bob");
    let (b, t, r) = (&s.base, format!("{}/threads/{id}", s.base), &run_id);
    let gone = json!({"detail": format!("Thread with ID {id} not found")});
    let no_run = json!({"detail": "Thread or assistant not found."});
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let cases = [
        (Method::GET, t.clone(), None, &gone),
        (
            Method::PATCH,
            t.clone(),
            Some(json!({"metadata": {"x": 1}})),
            &gone,
        ),
        (Method::GET, format!("{t}/state"), None, &gone),
        (
            Method::POST,
            format!("{t}/state"),
            Some(json!({"values": {"topic": "b"}})),
            &gone,
        ),
        (Method::POST, format!("{t}/history"), Some(json!({})), &gone),
        (Method::POST, format!("{t}/copy"), None, &gone),
        (Method::GET, format!("{t}/runs"), None, &gone),
        (Method::GET, format!("{t}/runs/{r}"), None, &gone),
        (Method::GET, format!("{t}/runs/{r}/join"), None, &gone),
        (Method::GET, format!("{t}/runs/{r}/stream"), None, &gone),
        (Method::POST, format!("{t}/runs/{r}/cancel"), None, &gone),
        (
            Method::POST,
            format!("{t}/runs/wait"),
            Some(resume.clone()),
            &no_run,
        ),
        (
            Method::POST,
            format!("{t}/runs/stream"),
            Some(resume.clone()),
            &no_run,
        ),
        (
            Method::POST,
            format!("{t}/runs"),
            Some(resume.clone()),
            &no_run,
        ),
    ];
    for (method, url, body, answer) in cases {
        let got = send(&bob, method.clone(), url.clone(), body).await;
        assert_eq!(
            got,
            (StatusCode::NOT_FOUND, answer.clone()),
            "{method} {url}"
        );
    }
    let root = client("token-root");
    let (status, _) = send(&root, Method::DELETE, t.clone(), None).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "root is not alice: her thread is not theirs"
    );
    let taken = post(
        &bob,
        format!("{b}/threads"),
        json!({"thread_id": id, "if_exists": "do_nothing"}),
    )
    .await;
    assert_eq!(taken.0, StatusCode::CONFLICT, "{}", taken.1);
    // Alice still has it all, paused where she left it.
    let alice = client("token-alice");
    let (status, thread) = get(&alice, t.clone()).await;
    assert_eq!(
        (status, thread["status"].clone()),
        (StatusCode::OK, json!("interrupted"))
    );
    let (status, done) = post(&alice, format!("{t}/runs/wait"), resume).await;
    assert_eq!(
        (status, done["approved"].clone()),
        (StatusCode::OK, json!(true)),
        "{done}"
    );
    s.stop().await;
}

#[tokio::test]
async fn lists_and_counts_hold_only_the_callers_threads() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (alice, bob) = (client("token-alice"), client("token-bob"));
    let b = &s.base;
    for c in [&alice, &alice, &bob] {
        assert_eq!(
            post(c, format!("{b}/threads"), json!({"metadata": {"k": 1}}))
                .await
                .0,
            StatusCode::OK
        );
    }
    // A thread a run creates is the caller's too.
    let fresh = "22222222-2222-2222-2222-222222222222";
    let run = json!({"assistant_id": "pair", "input": {"topic": "x"}, "if_not_exists": "create"});
    let (status, _) = post(&bob, format!("{b}/threads/{fresh}/runs/wait"), run).await;
    assert_eq!(status, StatusCode::OK);
    for (c, n, owner) in [(&alice, 2, "alice"), (&bob, 2, "bob")] {
        let (_, found) = post(c, format!("{b}/threads/search"), json!({"limit": 100})).await;
        let owners: Vec<&Value> = found
            .as_array()
            .expect("list")
            .iter()
            .map(|t| &t["metadata"]["owner"])
            .collect();
        assert_eq!(owners, vec![&json!(owner); n], "{found}");
        assert_eq!(
            post(c, format!("{b}/threads/count"), json!({})).await.1,
            json!(n)
        );
        // Asking for another owner finds nothing.
        let other = json!({"metadata": {"owner": if owner == "alice" { "bob" } else { "alice" }}});
        assert_eq!(
            post(c, format!("{b}/threads/count"), other).await.1,
            json!(0)
        );
    }
    let (status, thread) = get(&bob, format!("{b}/threads/{fresh}")).await;
    assert_eq!(
        (status, &thread["metadata"]["owner"]),
        (StatusCode::OK, &json!("bob"))
    );
    assert_eq!(
        get(&alice, format!("{b}/threads/{fresh}")).await.0,
        StatusCode::NOT_FOUND
    );
    s.stop().await;
}

#[tokio::test]
async fn a_refusing_hook_is_403_and_a_bad_filter_500() {
    let db = fresh_db();
    let s = start_with(&db, |server| {
        guarded(server)
            .authorize(On::only(Resource::Assistants, Action::Search), |_, _| {
                Err(Refusal::forbidden("assistants are not listed here"))
            })
            .authorize(On::only(Resource::Threads, Action::Search), |_, _| {
                Ok(Verdict::Filter(json!({"$or": [{"owner": "x"}]})))
            })
    })
    .await;
    let (alice, root) = (client("token-alice"), client("token-root"));
    let b = &s.base;
    let (status, thread) = post(&root, format!("{b}/threads"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let url = format!("{b}/threads/{}", thread["thread_id"].as_str().expect("id"));
    let denied = send(&alice, Method::DELETE, url.clone(), None).await;
    assert_eq!(
        denied,
        (StatusCode::FORBIDDEN, json!({"detail": "Forbidden"}))
    );
    assert_eq!(
        send(&root, Method::DELETE, url.clone(), None).await.0,
        StatusCode::NO_CONTENT
    );
    let refused = post(&alice, format!("{b}/assistants/search"), json!({})).await;
    assert_eq!(
        refused,
        (
            StatusCode::FORBIDDEN,
            json!({"detail": "assistants are not listed here"})
        )
    );
    let (status, bad) = post(&alice, format!("{b}/threads/search"), json!({})).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        bad["detail"]
            .as_str()
            .expect("detail")
            .contains("$or operator must be a list of at least 2"),
        "{bad}"
    );
    s.stop().await;
}

#[tokio::test]
async fn assistants_outside_the_filter_are_not_found_or_listed() {
    let db = fresh_db();
    let s = start_with(&db, |server| {
        server
            .authenticate(who)
            .authorize(On::resource(Resource::Assistants), |ctx, _| {
                Ok(Verdict::Filter(json!({"created_by": ctx.user.identity})))
            })
    })
    .await;
    let alice = client("token-alice");
    let b = &s.base;
    assert_eq!(
        post(&alice, format!("{b}/assistants/search"), json!({})).await,
        (StatusCode::OK, json!([]))
    );
    assert_eq!(
        post(&alice, format!("{b}/assistants/count"), json!({})).await,
        (StatusCode::OK, json!(0))
    );
    let (status, one) = get(&alice, format!("{b}/assistants/pair")).await;
    assert_eq!(
        (status, one),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "Assistant pair not found"})
        )
    );
    s.stop().await;
}

#[tokio::test]
async fn each_user_has_a_store_namespace_of_their_own() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (alice, bob) = (client("token-alice"), client("token-bob"));
    let b = &s.base;
    let item = json!({"namespace": ["notes"], "key": "k", "value": {"text": "alice's"}});
    assert_eq!(
        send(&alice, Method::PUT, format!("{b}/store/items"), Some(item))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    let get_url = format!("{b}/store/items?namespace=notes&key=k");
    let (status, mine) = get(&alice, get_url.clone()).await;
    assert_eq!(
        (status, &mine["value"]),
        (StatusCode::OK, &json!({"text": "alice's"}))
    );
    assert_eq!(mine["namespace"], json!(["alice", "notes"]));
    assert_eq!(get(&bob, get_url).await, (StatusCode::OK, Value::Null));
    let search = json!({"namespace_prefix": ["notes"]});
    let (_, found) = post(&bob, format!("{b}/store/items/search"), search.clone()).await;
    assert_eq!(found, json!({"items": []}));
    let (_, found) = post(&alice, format!("{b}/store/items/search"), search).await;
    assert_eq!(found["items"].as_array().map(Vec::len), Some(1), "{found}");
    let (_, spaces) = post(&bob, format!("{b}/store/namespaces"), json!({})).await;
    assert_eq!(spaces, json!({"namespaces": []}));
    let (_, spaces) = post(&alice, format!("{b}/store/namespaces"), json!({})).await;
    assert_eq!(spaces, json!({"namespaces": [["alice", "notes"]]}));
    // Bob's delete of "his" notes/k leaves alice's item.
    let gone = json!({"namespace": ["notes"], "key": "k"});
    assert_eq!(
        send(&bob, Method::DELETE, format!("{b}/store/items"), Some(gone))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    let (_, still) = get(&alice, format!("{b}/store/items?namespace=notes&key=k")).await;
    assert_eq!(still["key"], "k");
    s.stop().await;
}

#[tokio::test]
async fn authorize_without_authenticate_does_not_start() {
    let db = fresh_db();
    let server = db
        .configure(Server::new())
        .authorize(On::all(), |_, _| Ok(Verdict::Allow));
    match server.bind("127.0.0.1:0").await {
        Err(ServerError::Auth(why)) => assert!(why.contains("authenticate"), "{why}"),
        other => panic!("expected ServerError::Auth, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_bodies_behind_the_hooks_are_refused_as_without_them() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let alice = client("token-alice");
    let b = &s.base;
    let big = format!(
        "{{\"metadata\": {{\"x\": \"{}\"}}}}",
        "a".repeat(3 * 1024 * 1024)
    );
    let r = alice
        .post(format!("{b}/threads"))
        .body(big)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let r = alice
        .post(format!("{b}/threads"))
        .body("{not json")
        .send()
        .await
        .expect("post");
    let (status, answer) = (r.status(), r.json::<Value>().await.expect("json"));
    assert_eq!(
        (status, answer),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"detail": "Invalid JSON in request body"})
        )
    );
    let bad = json!({"metadata": "not an object"});
    assert_eq!(
        post(&alice, format!("{b}/threads"), bad).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        post(&alice, format!("{b}/threads/count"), json!({}))
            .await
            .1,
        json!(0)
    );
    s.stop().await;
}

/// A directory of its own for the users' files.
fn users_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agent-state-auth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_database_per_user_keeps_each_users_threads_in_their_file() {
    let (db, dir) = (fresh_db(), users_dir("per-user"));
    let per_user =
        |d: std::path::PathBuf| move |s: Server| s.authenticate(who).database_per_user(d);
    let s = start_with(&db, per_user(dir.clone())).await;
    let (alice, bob) = (client("token-alice"), client("token-bob"));
    let b = &s.base;
    let (_, thread) = post(&alice, format!("{b}/threads"), json!({})).await;
    let id = thread["thread_id"].as_str().expect("id").to_owned();
    let run = json!({"assistant_id": "pair", "input": {"topic": "x"}});
    let (status, out) = post(&alice, format!("{b}/threads/{id}/runs/wait"), run).await;
    assert_eq!(
        (status, &out["log"]),
        (StatusCode::OK, &json!(["first:x", "second"])),
        "{out}"
    );
    assert_eq!(
        get(&bob, format!("{b}/threads/{id}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        post(&bob, format!("{b}/threads/search"), json!({})).await.1,
        json!([])
    );
    let item = json!({"namespace": ["notes"], "key": "k", "value": {"v": 1}});
    assert_eq!(
        send(&alice, Method::PUT, format!("{b}/store/items"), Some(item))
            .await
            .0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        get(&bob, format!("{b}/store/items?namespace=notes&key=k"))
            .await
            .1,
        Value::Null
    );
    assert_eq!(
        get(&Client::new(), format!("{b}/threads/{id}")).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert!(dir.join("alice.db").is_file() && dir.join("bob.db").is_file());
    s.stop().await;
    // A new server on the same directory finds alice's thread in her file.
    let s = start_with(&db, per_user(dir.clone())).await;
    let (status, again) = get(&alice, format!("{}/threads/{id}", s.base)).await;
    assert_eq!(
        (status, &again["values"]["log"]),
        (StatusCode::OK, &json!(["first:x", "second"]))
    );
    let found = post(
        &alice,
        format!("{}/store/items/search", s.base),
        json!({"namespace_prefix": ["notes"]}),
    )
    .await;
    assert_eq!(found.1["items"][0]["value"], json!({"v": 1}));
    s.stop().await;
}

#[tokio::test]
async fn a_database_per_user_needs_an_authenticate_hook() {
    let db = fresh_db();
    let server = db
        .configure(Server::new())
        .database_per_user(users_dir("no-hook"));
    match server.bind("127.0.0.1:0").await {
        Err(ServerError::Auth(why)) => assert!(why.contains("authenticate"), "{why}"),
        other => panic!("expected ServerError::Auth, got {other:?}"),
    }
}

/// `POST /threads/prune` is a delete of each thread it names: refused
/// without the permission; with it, a list naming another's thread prunes
/// nothing (404, as the official server answers), one's own are pruned.
#[tokio::test]
async fn prune_reaches_only_the_callers_threads() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (alices, _) = alices_thread(&s).await;
    let (alice, root) = (client("token-alice"), client("token-root"));
    let prune = format!("{}/threads/prune", s.base);
    let (status, body) = post(&alice, prune.clone(), json!({"thread_ids": [alices]})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, own) = post(&root, format!("{}/threads", s.base), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{own}");
    let own = own["thread_id"].as_str().expect("id").to_owned();
    let (status, body) = post(&root, prune.clone(), json!({"thread_ids": [own, alices]})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let detail = "At least one thread not found or not authorized";
    assert_eq!(body, json!({"detail": detail}));
    let (status, _) = get(&root, format!("{}/threads/{own}", s.base)).await;
    assert_eq!(status, StatusCode::OK, "a refused prune prunes nothing");
    let (status, _) = get(&alice, format!("{}/threads/{alices}", s.base)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = post(&root, prune, json!({"thread_ids": [own]})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"pruned_count": 1})));
    s.stop().await;
}

/// A run is joined through its own thread only: bob naming alice's
/// running run under his own thread gets no output and no events of it.
#[tokio::test]
async fn a_run_is_joined_only_through_its_own_thread() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (alice, bob) = (client("token-alice"), client("token-bob"));
    let (_, hers) = post(&alice, format!("{}/threads", s.base), json!({})).await;
    let hers = hers["thread_id"].as_str().expect("id").to_owned();
    let run = json!({"assistant_id": "slow", "input": {"n": 41}});
    let (status, started) = post(&alice, format!("{}/threads/{hers}/runs", s.base), run).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    let (_, his) = post(&bob, format!("{}/threads", s.base), json!({})).await;
    let his = his["thread_id"].as_str().expect("id").to_owned();
    let at = format!("{}/threads/{his}/runs/{run_id}", s.base);
    let (status, joined) = get(&bob, format!("{at}/join")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(joined["__error__"]["error"], "NotFound", "{joined}");
    let (status, _) = get(&bob, format!("{at}/stream")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, out) = get(
        &alice,
        format!("{}/threads/{hers}/runs/{run_id}/join", s.base),
    )
    .await;
    assert_eq!((status, &out["n"]), (StatusCode::OK, &json!(42)), "{out}");
    s.stop().await;
}

#[tokio::test]
async fn batches_cancels_and_join_streams_keep_to_the_callers_threads() {
    let db = fresh_db();
    let s = start_with(&db, guarded).await;
    let (alice, bob, b) = (client("token-alice"), client("token-bob"), &s.base);
    // A batch's threads are stamped with the caller's filter.
    let one = json!({"assistant_id": "countdown", "input": {"n": 1}, "on_completion": "keep"});
    let (status, runs) = post(&alice, format!("{b}/runs/batch"), json!([one])).await;
    assert_eq!(status, StatusCode::OK, "{runs}");
    let (thread, run) = (
        runs[0]["thread_id"].as_str().unwrap(),
        runs[0]["run_id"].as_str().unwrap(),
    );
    get(&alice, format!("{b}/threads/{thread}/runs/{run}/join")).await;
    let (status, kept) = get(&alice, format!("{b}/threads/{thread}")).await;
    assert_eq!(
        (status, &kept["metadata"]["owner"]),
        (StatusCode::OK, &json!("alice"))
    );
    assert_eq!(
        get(&bob, format!("{b}/threads/{thread}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&bob, format!("{b}/threads/{thread}/stream")).await.0,
        StatusCode::NOT_FOUND
    );
    // Another user's runs are none of theirs to cancel, by id or status.
    let (_, hers) = post(&alice, format!("{b}/threads"), json!({})).await;
    let hers = hers["thread_id"].as_str().expect("id").to_owned();
    let slow = json!({"assistant_id": "slow", "input": {"n": 1}});
    let (_, started) = post(&alice, format!("{b}/threads/{hers}/runs"), slow).await;
    let run_id = started["run_id"].clone();
    let cancel = format!("{b}/runs/cancel");
    let by_id = json!({"thread_id": hers, "run_ids": [run_id]});
    let (status, _) = send(&bob, Method::POST, cancel.clone(), Some(by_id.clone())).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let all = Some(json!({"status": "all"}));
    let (status, _) = send(&bob, Method::POST, cancel.clone(), all).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(&alice, Method::POST, cancel, Some(by_id)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    s.stop().await;
}

/// Deleting an assistant with `delete_threads=true` deletes only threads
/// the caller may delete: none without the threads' `delete` (a 403,
/// nothing deleted), and only their own with it.
#[tokio::test]
async fn an_assistants_delete_takes_only_the_callers_threads() {
    let s = start_with(&fresh_db(), guarded).await;
    let (thread, _) = alices_thread(&s).await;
    let approval = support::http::APPROVAL;
    let url = format!("{}/assistants/{approval}?delete_threads=true", s.base);
    let (bob, root) = (client("token-bob"), client("token-root"));
    let (status, _) = send(&bob, Method::DELETE, url.clone(), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let one = format!("{}/assistants/{approval}", s.base);
    assert_eq!(get(&bob, one).await.0, StatusCode::OK, "not deleted");
    let (status, _) = send(&root, Method::DELETE, url, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let alice = client("token-alice");
    let hers = format!("{}/threads/{thread}", s.base);
    assert_eq!(get(&alice, hers).await.0, StatusCode::OK, "hers is kept");
    s.stop().await;
}

/// `POST /threads/{id}/state/checkpoint` (the SDKs' `get_state(thread,
/// checkpoint=..)`) is a read of the thread, as `GET .../state` is.
#[tokio::test]
async fn a_state_at_a_checkpoint_is_a_read() {
    let s = start_with(&fresh_db(), |server| {
        guarded(server).authorize(On::only(Resource::Threads, Action::Update), |_, _| {
            Ok(Verdict::Deny)
        })
    })
    .await;
    let (thread, _) = alices_thread(&s).await;
    let alice = client("token-alice");
    let body = json!({"checkpoint": {}});
    let url = format!("{}/threads/{thread}/state/checkpoint", s.base);
    let (status, state) = post(&alice, url, body).await;
    assert_eq!(status, StatusCode::OK, "{state}");
    s.stop().await;
}
