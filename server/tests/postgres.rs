//! Several servers on one PostgreSQL database: they serve the same
//! threads, a thread runs one run at a time across all of them, a dead
//! server's runs are taken over and a live one's are not, and many
//! clients at once share the pool. (`fleet.rs` kills real server
//! processes.)

#![cfg(feature = "postgres")]

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::db::{connect, fresh_pg};
use support::http::{get, new_thread, post, THREAD};
use support::start;

/// Creates a background run on `base`'s thread: its id.
async fn background(c: &Client, base: &str, body: Value) -> String {
    let (status, run) = post(c, format!("{base}/threads/{THREAD}/runs"), body).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    run["run_id"].as_str().expect("run id").to_owned()
}

/// Waits until the run's stored status is `status`, as `base` reads it.
async fn wait_for_status(c: &Client, base: &str, run_id: &str, status: &str) {
    for _ in 0..100 {
        let (_, run) = get(c, format!("{base}/threads/{THREAD}/runs/{run_id}")).await;
        if run["status"] == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {run_id} never reached `{status}` on {base}");
}

/// A run started on A is read, refused and joined on B; a run queued on B
/// waits for A's to end (the thread's lock holds across servers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_serve_the_same_threads() {
    let db = fresh_pg();
    let (a, b) = (start(&db).await, start(&db).await);
    let c = Client::new();
    new_thread(&c, &a.base, THREAD).await;
    let slow = json!({"assistant_id": "slow", "input": {"n": 0}});
    let run_id = background(&c, &a.base, slow).await;
    wait_for_status(&c, &b.base, &run_id, "running").await;
    let (_, thread) = get(&c, format!("{}/threads/{THREAD}", b.base)).await;
    assert_eq!(thread["status"], "busy");
    let reject = json!({"assistant_id": "slow", "input": {"n": 0}, "multitask_strategy": "reject"});
    let wait_on_b = format!("{}/threads/{THREAD}/runs/wait", b.base);
    let (status, refused) = post(&c, wait_on_b.clone(), reject).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    let join = format!("{}/threads/{THREAD}/runs/{run_id}/join", b.base);
    assert_eq!(get(&c, join).await.1, json!({"n": 1}));
    let (_, runs) = get(&c, format!("{}/threads/{THREAD}/runs", b.base)).await;
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "success");
    // Queued on B behind A's run, it waits for it: two runs at once
    // would conflict in the checkpoints and one would fail.
    let first = json!({"assistant_id": "slow", "input": {"n": 5}});
    let next = background(&c, &a.base, first).await;
    wait_for_status(&c, &b.base, &next, "running").await;
    let queued = json!({"assistant_id": "slow", "input": {"n": 10}});
    let (status, out) = post(&c, wait_on_b, queued).await;
    assert_eq!((status, out), (StatusCode::OK, json!({"n": 11})));
    let (_, first) = get(&c, format!("{}/threads/{THREAD}/runs/{next}", a.base)).await;
    assert_eq!(first["status"], "success");
    a.stop().await;
    b.stop().await;
}

/// A server that starts takes over the run a dead server left `running`
/// (no lease: its server is gone) and runs it again, its attempt 2, and
/// leaves a live server's running run alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_servers_run_is_taken_over_and_a_live_ones_left_alone() {
    let db = fresh_pg();
    let a = start(&db).await;
    let c = Client::new();
    new_thread(&c, &a.base, THREAD).await;
    let slow = json!({"assistant_id": "slow", "input": {"n": 0}});
    let live = background(&c, &a.base, slow).await;
    wait_for_status(&c, &a.base, &live, "running").await;
    let orphan_thread = "22222222-2222-2222-2222-222222222222";
    new_thread(&c, &a.base, orphan_thread).await;
    let orphan = "33333333-3333-3333-3333-333333333333";
    // What a server killed mid-run leaves: its run `running` with a lease
    // no one renews, its thread `busy`.
    let admin = connect(&db.url()).await;
    admin
        .batch_execute(&format!(
            "INSERT INTO server_runs (run_id, thread_id, assistant_id, metadata, status, kwargs,
             multitask_strategy, created_at, updated_at, owner, body)
             SELECT '{orphan}', '{orphan_thread}', assistant_id, metadata, 'running', kwargs,
             multitask_strategy, created_at, updated_at, 'a-dead-server', body
             FROM server_runs WHERE run_id = '{live}';
             UPDATE server_threads SET status = 'busy' WHERE thread_id = '{orphan_thread}';"
        ))
        .await
        .expect("a dead server's run");
    let b = start(&db).await;
    let at = |thread: &str, run: &str| format!("{}/threads/{thread}/runs/{run}", b.base);
    let joined = get(&c, format!("{}/join", at(orphan_thread, orphan)))
        .await
        .1;
    assert_eq!(joined, json!({"n": 1}));
    assert_eq!(
        get(&c, at(orphan_thread, orphan)).await.1["status"],
        "success"
    );
    let sql = "SELECT attempt FROM server_runs WHERE run_id = $1";
    let attempt: i32 = admin.query_one(sql, &[&orphan]).await.expect("run").get(0);
    assert_eq!(attempt, 2);
    assert_eq!(
        get(&c, format!("{}/join", at(THREAD, &live))).await.1,
        json!({"n": 1})
    );
    let attempt: i32 = admin.query_one(sql, &[&live]).await.expect("run").get(0);
    assert_eq!(attempt, 1, "a live server's run is never taken over");
    a.stop().await;
    b.stop().await;
}

/// A run a dead server left with no request stored (a server of a
/// version before the queue) cannot be resumed: the server that takes it
/// over fails it, and a join waiting on it ends with the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_on_a_run_whose_server_died_ends_with_an_error() {
    let db = fresh_pg();
    let b = start(&db).await;
    let c = Client::new();
    new_thread(&c, &b.base, THREAD).await;
    let orphan = "44444444-4444-4444-4444-444444444444";
    connect(&db.url())
        .await
        .batch_execute(&format!(
            "INSERT INTO server_runs VALUES ('{orphan}', '{THREAD}',
             'e234584d-b7bf-527f-9d06-ba77f8f5172d', '{{}}', 'running', '{{}}', 'enqueue',
             '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00', 'a-dead-server');
             UPDATE server_threads SET status = 'busy' WHERE thread_id = '{THREAD}';"
        ))
        .await
        .expect("a run of a server that is gone");
    let at = format!("{}/threads/{THREAD}/runs/{orphan}", b.base);
    let joined = tokio::time::timeout(Duration::from_secs(20), get(&c, format!("{at}/join")));
    let (_, out) = joined.await.expect("the join ends");
    assert_eq!(out["__error__"]["error"], "ServerDied", "{out}");
    assert_eq!(get(&c, at).await.1["status"], "error");
    let (_, thread) = get(&c, format!("{}/threads/{THREAD}", b.base)).await;
    assert_eq!(thread["status"], "error");
    b.stop().await;
}

/// The connection a server listens to the others on is cut (a database
/// restart, a terminated backend): runs go on (the queue's poll finds
/// them), and the heartbeat opens it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listening_connection_is_opened_again() {
    let db = fresh_pg();
    let server = start(&db).await;
    let c = Client::new();
    new_thread(&c, &server.base, THREAD).await;
    let admin = connect(&db.url()).await;
    let listeners = "SELECT pid FROM pg_stat_activity
        WHERE application_name = 'agent-state-server-listen' AND datname = current_database()";
    let cut = format!("SELECT pg_terminate_backend(pid) FROM ({listeners}) l");
    let cut = admin
        .query(&cut, &[])
        .await
        .expect("terminate the listener");
    assert_eq!(cut.len(), 1, "one connection listens");
    let run = json!({"assistant_id": "guarded", "input": {"topic": "t1"}});
    let run_id = background(&c, &server.base, run).await;
    let join = format!("{}/threads/{THREAD}/runs/{run_id}/join", server.base);
    assert_eq!(get(&c, join).await.1["topic"], "T1");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while admin.query(listeners, &[]).await.expect("listeners").len() != 1 {
        assert!(std::time::Instant::now() < deadline, "never listened again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
}

/// While the database refuses connections and the server's were cut, a
/// run is refused whole (500, nothing stored); once it accepts them
/// again, runs run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_while_the_database_is_unreachable_is_refused_whole() {
    let db = fresh_pg();
    let server = start(&db).await;
    let c = Client::new();
    new_thread(&c, &server.base, THREAD).await;
    let support::Db::Postgres { admin, name } = &db else {
        unreachable!("a PostgreSQL database")
    };
    let admin = connect(admin).await;
    let set = |allow: bool| format!("ALTER DATABASE {name} ALLOW_CONNECTIONS {allow}");
    admin
        .batch_execute(&set(false))
        .await
        .expect("refuse new connections");
    let cut =
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'");
    admin
        .batch_execute(&cut)
        .await
        .expect("cut the server's connections");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let run = json!({"assistant_id": "guarded", "input": {"topic": "x"}});
    let wait = format!("{}/threads/{THREAD}/runs/wait", server.base);
    let (status, out) = post(&c, wait.clone(), run.clone()).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{out}");
    assert_eq!(out, json!({"detail": "Internal server error"}));
    admin
        .batch_execute(&set(true))
        .await
        .expect("accept connections");
    let (_, runs) = get(&c, format!("{}/threads/{THREAD}/runs", server.base)).await;
    assert_eq!(runs, json!([]));
    let (status, out) = post(&c, wait, run).await;
    assert_eq!(
        (status, &out["topic"]),
        (StatusCode::OK, &json!("X")),
        "{out}"
    );
    server.stop().await;
}

/// A request that finds every pooled connection taken for longer than
/// the pool's wait is answered 503 saying the database is busy; the one
/// holding the connection is answered once it is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_waits_too_long_for_a_connection_is_a_503() {
    let db = fresh_pg();
    let one = |s: agent_state_server::Server| s.pool_size(1).pool_wait(Duration::from_millis(300));
    let server = support::start_with(&db, one).await;
    let c = Client::new();
    let thread = format!("{}/threads/{THREAD}", server.base);
    new_thread(&c, &server.base, THREAD).await;
    // Another session holds the table: the pool's one connection waits
    // on it with the first request.
    let admin = connect(&db.url()).await;
    let lock = "BEGIN; LOCK TABLE server_threads IN ACCESS EXCLUSIVE MODE";
    admin.batch_execute(lock).await.expect("lock the table");
    let url = thread.clone();
    let first = tokio::spawn(async move { get(&Client::new(), url).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, body) = get(&c, thread).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let detail = body["detail"].as_str().expect("detail");
    assert!(detail.starts_with("The database is busy"), "{detail}");
    admin.batch_execute("COMMIT").await.expect("unlock");
    let (status, body) = first.await.expect("the first request");
    assert_eq!(
        (status, &body["thread_id"]),
        (StatusCode::OK, &json!(THREAD))
    );
    server.stop().await;
}

/// A background run (run by either server: the queue's) is cancelled
/// through B, and a run of the `interrupt` strategy sent to B stops it
/// wherever it runs, then runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_one_server_is_cancelled_and_interrupted_through_another() {
    let db = fresh_pg();
    let (a, b) = (start(&db).await, start(&db).await);
    let c = Client::new();
    new_thread(&c, &a.base, THREAD).await;
    let long = json!({"assistant_id": "countdown", "input": {"n": 30}});
    let run_id = background(&c, &a.base, long.clone()).await;
    wait_for_status(&c, &b.base, &run_id, "running").await;
    // Once it stored a step (a claimed run is `running` before it wrote).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while c
        .get(format!("{}/threads/{THREAD}/state", b.base))
        .send()
        .await
        .expect("state")
        .json::<Value>()
        .await
        .expect("json")["values"]["n"]
        .is_null()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the run stored nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run_on_b = format!("{}/threads/{THREAD}/runs/{run_id}", b.base);
    let cancel = c.post(format!("{run_on_b}/cancel?wait=true")).send().await;
    let cancel = cancel.expect("cancel");
    assert_eq!(cancel.status(), StatusCode::OK);
    assert_eq!(cancel.json::<Value>().await.expect("json"), json!({}));
    assert_eq!(get(&c, run_on_b).await.1["status"], "interrupted");
    let (_, thread) = get(&c, format!("{}/threads/{THREAD}", b.base)).await;
    assert!(
        thread["values"]["n"].as_u64().is_some_and(|n| n > 0),
        "{thread}"
    );
    let second = background(&c, &a.base, long).await;
    wait_for_status(&c, &b.base, &second, "running").await;
    let interrupt =
        json!({"assistant_id": "countdown", "input": {"n": 1}, "multitask_strategy": "interrupt"});
    let wait_on_b = format!("{}/threads/{THREAD}/runs/wait", b.base);
    let ran = tokio::time::timeout(Duration::from_secs(2), post(&c, wait_on_b, interrupt));
    assert_eq!(ran.await.expect("not queued behind 3 s").1, json!({"n": 0}));
    let second = format!("{}/threads/{THREAD}/runs/{second}", a.base);
    assert_eq!(get(&c, second).await.1["status"], "interrupted");
    a.stop().await;
    b.stop().await;
}

/// Every connection of the server cut at once (what a database restart
/// does): the pool, the lock session and the checkpoints' connection are
/// opened again, and the next run runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_outlives_its_connections() {
    let db = fresh_pg();
    let server = start(&db).await;
    let c = Client::new();
    new_thread(&c, &server.base, THREAD).await;
    let wait = format!("{}/threads/{THREAD}/runs/wait", server.base);
    let run = |topic: &str| json!({"assistant_id": "guarded", "input": {"topic": topic}});
    assert_eq!(post(&c, wait.clone(), run("a")).await.0, StatusCode::OK);
    let support::Db::Postgres { admin, name } = &db else {
        unreachable!("a PostgreSQL database")
    };
    let cut =
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'");
    connect(admin)
        .await
        .batch_execute(&cut)
        .await
        .expect("cut every connection");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, out) = post(&c, wait, run("b")).await;
    assert_eq!(
        (status, &out["topic"]),
        (StatusCode::OK, &json!("B")),
        "{out}"
    );
    let (_, history) = post(
        &c,
        format!("{}/threads/{THREAD}/history", server.base),
        json!({}),
    )
    .await;
    assert!(
        history.as_array().is_some_and(|h| h.len() >= 4),
        "{history}"
    );
    server.stop().await;
}

/// One client's request: a thread of its own, then a run waited for.
async fn create_and_run(base: String, i: usize) -> Result<(), String> {
    let c = Client::new();
    let (status, thread) = post(&c, format!("{base}/threads"), json!({})).await;
    if status != StatusCode::OK {
        return Err(format!("client {i}: create thread: {status} {thread}"));
    }
    let id = thread["thread_id"].as_str().unwrap_or_default();
    let run = json!({"assistant_id": "guarded", "input": {"topic": format!("t{i}")}});
    let (status, out) = post(&c, format!("{base}/threads/{id}/runs/wait"), run).await;
    match (status, &out["topic"]) {
        (StatusCode::OK, Value::String(t)) if *t == format!("T{i}") => Ok(()),
        _ => Err(format!("client {i}: runs/wait: {status} {out}")),
    }
}

/// 200 clients at once, each creating a thread and waiting for a run,
/// all succeed through the test servers' pool of 4 connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_clients_at_once_all_succeed() {
    let db = fresh_pg();
    let server = start(&db).await;
    let clients: Vec<_> = (0..200)
        .map(|i| tokio::spawn(create_and_run(server.base.clone(), i)))
        .collect();
    let mut failures = Vec::new();
    for client in clients {
        if let Err(e) = client.await.expect("client task") {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
    let (_, count) = post(
        &Client::new(),
        format!("{}/threads/count", server.base),
        json!({}),
    )
    .await;
    assert_eq!(count, json!(200));
    server.stop().await;
}
