//! Storage that stays bounded: a thread run 200 times keeping its last
//! checkpoints, pending writes collected (a paused run still resumes),
//! threads' TTLs swept, `POST /threads/prune` as the official server
//! (langgraph-api 0.16.7, `langgraph dev`) answered the same calls, and a
//! database made before the TTL table still opening. Counts are read from
//! the tables themselves (the SQLite file, or the PostgreSQL database).

mod support;

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use agent_state_server::{ThreadTtl, TtlStrategy};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, new_thread, post};
use support::{fresh_db, start, start_with, Db};

const ZERO: &str = "00000000-0000-0000-0000-000000000000";

/// `SELECT count(*) ..` (one `$1`: the thread) on the test's database.
async fn count(db: &Db, sql: &str, thread: &str) -> i64 {
    match db {
        Db::File(path) => {
            let conn = rusqlite::Connection::open(path).expect("open the file");
            conn.query_row(sql, [thread], |r| r.get(0)).expect(sql)
        }
        #[cfg(feature = "postgres")]
        Db::Postgres { .. } => {
            let client = support::db::connect(&db.url()).await;
            client.query_one(sql, &[&thread]).await.expect(sql).get(0)
        }
    }
}

async fn checkpoints(db: &Db, thread: &str) -> i64 {
    let sql = "SELECT count(*) FROM agent_state_checkpoints WHERE thread_id = $1";
    count(db, sql, thread).await
}

/// Pending writes of a checkpoint whose step landed (it has a child).
async fn stale_writes(db: &Db, thread: &str) -> i64 {
    let sql = "SELECT count(*) FROM agent_state_pending p WHERE p.thread_id = $1 AND EXISTS
        (SELECT 1 FROM agent_state_checkpoints c
         WHERE c.thread_id = p.thread_id AND c.parent_id = p.checkpoint_id)";
    count(db, sql, thread).await
}

async fn writes(db: &Db, thread: &str) -> i64 {
    let sql = "SELECT count(*) FROM agent_state_pending WHERE thread_id = $1";
    count(db, sql, thread).await
}

fn keep(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).expect("above 0")
}

async fn patch(c: &Client, url: String, body: Value) -> (StatusCode, Value) {
    let r = c.patch(url).json(&body).send().await.expect("request");
    (r.status(), r.json().await.unwrap_or(Value::Null))
}

async fn run_wait(c: &Client, b: &str, thread: &str, body: Value) -> Value {
    let (status, out) = post(c, format!("{b}/threads/{thread}/runs/wait"), body).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    out
}

/// 200 runs on one thread with `keep_checkpoints(4)`: never more than 4
/// checkpoints, no write of a landed step, and the state still whole
/// (every run's log entries there); a thread of a server keeping all has them
/// all, its landed steps' writes collected too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_run_200_times_keeps_its_last_checkpoints() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.keep_checkpoints(keep(4))).await;
    let (c, b) = (Client::new(), &server.base);
    let thread = "22222222-2222-2222-2222-222222222222";
    new_thread(&c, b, thread).await;
    let mut most = 0;
    for n in 0..200 {
        let topic = format!("t{n}");
        let input = json!({"assistant_id": "pair", "input": {"topic": topic}});
        let out = run_wait(&c, b, thread, input).await;
        assert_eq!(out["log"].as_array().map(Vec::len), Some(2 * (n + 1)));
        most = most.max(checkpoints(&db, thread).await);
    }
    assert!(most <= 4, "at most 4 checkpoints, saw {most}");
    assert_eq!(checkpoints(&db, thread).await, 4);
    assert_eq!(stale_writes(&db, thread).await, 0);
    let (_, history) = post(
        &c,
        format!("{b}/threads/{thread}/history"),
        json!({"limit": 100}),
    )
    .await;
    let history = history.as_array().expect("a list");
    assert_eq!(history.len(), 4);
    assert_eq!(
        history[0]["values"]["log"].as_array().map(Vec::len),
        Some(400)
    );
    assert!(history[3]["parent_config"].is_null(), "{}", history[3]);
    let (status, state) = get(&c, format!("{b}/threads/{thread}/state")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["values"]["log"][398], "first:t199");
    assert_eq!(state["values"]["log"][0], "first:t0");
    server.stop().await;
}

/// A paused run's writes survive the collection after it (and a server
/// keeping 2 checkpoints): the thread resumes, and once it ran on its
/// writes are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_thread_resumes_after_collection() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.keep_checkpoints(keep(2))).await;
    let (c, b) = (Client::new(), &server.base);
    let thread = "33333333-3333-3333-3333-333333333333";
    new_thread(&c, b, thread).await;
    let out = run_wait(
        &c,
        b,
        thread,
        json!({"assistant_id": "approval", "input": {"topic": "x"}}),
    )
    .await;
    assert!(out["__interrupt__"].is_array(), "{out}");
    assert!(checkpoints(&db, thread).await <= 2);
    assert!(writes(&db, thread).await > 0, "the interrupt's writes stay");
    assert_eq!(stale_writes(&db, thread).await, 0);
    let resume = json!({"assistant_id": "approval", "command": {"resume": true}});
    let out = run_wait(&c, b, thread, resume).await;
    assert_eq!(out["approved"], true, "{out}");
    assert_eq!(out["log"], json!(["draft:x", "review"]));
    assert_eq!(stale_writes(&db, thread).await, 0);
    assert!(checkpoints(&db, thread).await <= 2);
    server.stop().await;
}

/// Polls `GET /threads/{id}` until it answers `status` (10 s at most).
async fn until_status(c: &Client, b: &str, thread: &str, status: StatusCode) {
    let start = Instant::now();
    loop {
        let (now, _) = get(c, format!("{b}/threads/{thread}")).await;
        if now == status {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{thread} stays {now}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// TTLs in minutes, so short ones here (0.005 min = 0.3 s) and a sweep
/// every 100 ms: a `delete` thread goes with its runs and checkpoints, a
/// `keep_latest` one stays with one checkpoint, a long one stays whole;
/// `?include=ttl` shows a TTL, and a run starts it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_threads_are_swept() {
    let db = fresh_db();
    let server = start_with(&db, |s| s.ttl_sweep_interval(Duration::from_millis(100))).await;
    let (c, b) = (Client::new(), &server.base);
    let [gone, latest, stays] = [
        "44444444-4444-4444-4444-444444444444",
        "55555555-5555-5555-5555-555555555555",
        "66666666-6666-6666-6666-666666666666",
    ];
    let body = |id: &str, strategy: &str, ttl: f64| json!({"thread_id": id, "ttl": {"strategy": strategy, "ttl": ttl}});
    post(&c, format!("{b}/threads"), body(stays, "delete", 60.0)).await;
    let (_, shown) = get(&c, format!("{b}/threads/{stays}?include=ttl")).await;
    assert_eq!(shown["ttl"]["strategy"], "delete");
    assert_eq!(shown["ttl"]["ttl_minutes"], 60.0);
    let first = shown["ttl"]["expires_at"]
        .as_str()
        .expect("a time")
        .to_owned();
    let (_, plain) = get(&c, format!("{b}/threads/{stays}")).await;
    assert!(plain.get("ttl").is_none(), "only with ?include=ttl");
    let input = json!({"assistant_id": "guarded", "input": {"topic": "x"}});
    tokio::time::sleep(Duration::from_millis(20)).await;
    run_wait(&c, b, stays, input.clone()).await;
    let (_, shown) = get(&c, format!("{b}/threads/{stays}?include=ttl")).await;
    assert!(
        shown["ttl"]["expires_at"].as_str().expect("a time") > first.as_str(),
        "a run starts it again"
    );

    for (id, strategy) in [(gone, "delete"), (latest, "keep_latest")] {
        post(&c, format!("{b}/threads"), body(id, strategy, 60.0)).await;
        for _ in 0..3 {
            run_wait(&c, b, id, input.clone()).await;
        }
        // Shortened by a PATCH, as a client may.
        let (status, _) = patch(
            &c,
            format!("{b}/threads/{id}"),
            json!({"ttl": {"strategy": strategy, "ttl": 0.005}}),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    assert!(checkpoints(&db, latest).await > 1);
    until_status(&c, b, gone, StatusCode::NOT_FOUND).await;
    assert_eq!(checkpoints(&db, gone).await, 0);
    let runs = "SELECT count(*) FROM server_runs WHERE thread_id = $1";
    assert_eq!(count(&db, runs, gone).await, 0);
    let start = Instant::now();
    while checkpoints(&db, latest).await > 1 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "keep_latest never swept"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, state) = get(&c, format!("{b}/threads/{latest}/state")).await;
    assert_eq!(
        (status, &state["values"]["topic"]),
        (StatusCode::OK, &json!("X"))
    );
    assert_eq!(
        get(&c, format!("{b}/threads/{stays}")).await.0,
        StatusCode::OK
    );
    assert!(checkpoints(&db, stays).await > 1);
    server.stop().await;
}

/// A server's default TTL reaches threads created without one, by
/// `POST /threads` or by a run; a bad `ttl` is a 422 naming the field,
/// and no thread is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_ttl_and_bad_ttls() {
    let db = fresh_db();
    let ttl = ThreadTtl {
        strategy: TtlStrategy::Delete,
        minutes: 0.005,
    };
    let server = start_with(&db, |s| {
        s.thread_ttl(ttl)
            .ttl_sweep_interval(Duration::from_millis(100))
    })
    .await;
    let (c, b) = (Client::new(), &server.base);
    let refusals = [
        (json!(5), "ttl: 5 is not of type \"object\""),
        (
            json!({"strategy": "bogus", "ttl": 5}),
            "ttl.strategy: \"bogus\" is not one of",
        ),
        (
            json!({"ttl": "x"}),
            "ttl.ttl: \"x\" is not of type \"number\"",
        ),
        (
            json!({"ttl": -1}),
            "ttl.ttl: -1 is not a number of minutes above 0",
        ),
    ];
    for (bad, says) in refusals {
        let (status, out) = post(
            &c,
            format!("{b}/threads"),
            json!({"thread_id": ZERO, "ttl": bad}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert!(
            out["detail"].as_str().unwrap_or("").starts_with(says),
            "{bad}: {out}"
        );
        assert_eq!(
            get(&c, format!("{b}/threads/{ZERO}")).await.0,
            StatusCode::NOT_FOUND
        );
    }
    let made = "77777777-7777-7777-7777-777777777777";
    new_thread(&c, b, made).await;
    let by_run = "88888888-8888-8888-8888-888888888888";
    let input =
        json!({"assistant_id": "guarded", "input": {"topic": "x"}, "if_not_exists": "create"});
    run_wait(&c, b, by_run, input).await;
    until_status(&c, b, made, StatusCode::NOT_FOUND).await;
    until_status(&c, b, by_run, StatusCode::NOT_FOUND).await;
    assert_eq!(checkpoints(&db, by_run).await, 0);
    server.stop().await;
}

/// `POST /threads/prune` answers as the official server answered
/// (recorded from langgraph-api 0.16.7): `{"pruned_count": n}`, unknown
/// ids skipped, a 422 for a missing or mistyped field or an id that is
/// not a UUID; `keep_latest` (which the official in-memory server
/// refuses) keeps each thread with its latest checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_answers_as_the_official_server() {
    let db = fresh_db();
    let server = start(&db).await;
    let (c, b) = (Client::new(), &server.base);
    let url = format!("{b}/threads/prune");
    let [one, two] = [
        "99999999-9999-9999-9999-999999999999",
        "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    ];
    let refusals = [
        (json!({}), "\"thread_ids\" is a required property"),
        (
            json!({"thread_ids": "x"}),
            "thread_ids: \"x\" is not of type \"array\"",
        ),
        (
            json!({"thread_ids": [1]}),
            "thread_ids[0]: 1 is not of type \"string\"",
        ),
        (
            json!({"thread_ids": ["nope"]}),
            "Invalid thread ID: must be a UUID",
        ),
        (
            json!({"thread_ids": [one], "strategy": "bad"}),
            "strategy: \"bad\" is not one of \"delete\" or \"keep_latest\"",
        ),
    ];
    for (body, detail) in refusals {
        assert_eq!(
            post(&c, url.clone(), body.clone()).await,
            (StatusCode::UNPROCESSABLE_ENTITY, json!({"detail": detail})),
            "{body}"
        );
    }
    let none = (StatusCode::OK, json!({"pruned_count": 0}));
    assert_eq!(post(&c, url.clone(), json!({"thread_ids": []})).await, none);
    assert_eq!(
        post(&c, url.clone(), json!({"thread_ids": [ZERO]})).await,
        none
    );

    let input = json!({"assistant_id": "guarded", "input": {"topic": "x"}});
    for id in [one, two] {
        new_thread(&c, b, id).await;
        for _ in 0..3 {
            run_wait(&c, b, id, input.clone()).await;
        }
    }
    let latest = json!({"thread_ids": [two], "strategy": "keep_latest"});
    assert_eq!(
        post(&c, url.clone(), latest).await,
        (StatusCode::OK, json!({"pruned_count": 1}))
    );
    assert_eq!(checkpoints(&db, two).await, 1);
    let (_, history) = post(&c, format!("{b}/threads/{two}/history"), json!({})).await;
    assert_eq!(history.as_array().map(Vec::len), Some(1));
    assert_eq!(history[0]["values"]["topic"], "X");
    run_wait(&c, b, two, input).await;

    let twice = json!({"thread_ids": [one, one, ZERO]});
    assert_eq!(
        post(&c, url.clone(), twice).await,
        (StatusCode::OK, json!({"pruned_count": 1}))
    );
    assert_eq!(
        get(&c, format!("{b}/threads/{one}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(checkpoints(&db, one).await, 0);
    assert_eq!(
        get(&c, format!("{b}/threads/{two}")).await.0,
        StatusCode::OK
    );
    server.stop().await;
}

/// Deleting a thread (here by `POST /threads/prune`, as by `DELETE` and
/// the sweep) deletes its subgraphs' threads too (`{thread}|..`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_thread_takes_its_subgraphs_threads() {
    let db = fresh_db();
    let server = start(&db).await;
    let (c, b) = (Client::new(), &server.base);
    let thread = "cccccccc-cccc-cccc-cccc-cccccccccccc";
    new_thread(&c, b, thread).await;
    for _ in 0..2 {
        run_wait(
            &c,
            b,
            thread,
            json!({"assistant_id": "nest", "input": {"n": 1}}),
        )
        .await;
    }
    let children = "SELECT count(*) FROM agent_state_checkpoints WHERE thread_id LIKE $1";
    let pattern = format!("{thread}|%");
    assert!(
        count(&db, children, &pattern).await > 0,
        "the subgraph ran on a thread of its own"
    );
    let prune = json!({"thread_ids": [thread]});
    let (status, _) = post(&c, format!("{b}/threads/prune"), prune).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(count(&db, children, &pattern).await, 0);
    assert_eq!(checkpoints(&db, thread).await, 0);
    server.stop().await;
}

/// A database made before the TTL table (as main's server made it) opens
/// and gains the table: its threads are there, and take a TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_the_ttl_table_still_opens() {
    let db = fresh_db();
    let server = start(&db).await;
    let (c, b) = (Client::new(), &server.base);
    let thread = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb";
    new_thread(&c, b, thread).await;
    server.stop().await;
    let drop = "DROP TABLE server_thread_ttl";
    match &db {
        Db::File(path) => {
            let conn = rusqlite::Connection::open(path).expect("open the file");
            conn.execute_batch(drop).expect(drop);
        }
        #[cfg(feature = "postgres")]
        Db::Postgres { .. } => {
            support::db::connect(&db.url())
                .await
                .batch_execute(drop)
                .await
                .expect(drop);
        }
    }
    let server = start(&db).await;
    let b = &server.base;
    assert_eq!(
        get(&c, format!("{b}/threads/{thread}")).await.0,
        StatusCode::OK
    );
    let ttl = json!({"ttl": {"strategy": "keep_latest", "ttl": 30}});
    assert_eq!(
        patch(&c, format!("{b}/threads/{thread}"), ttl).await.0,
        StatusCode::OK
    );
    let (_, shown) = get(&c, format!("{b}/threads/{thread}?include=ttl")).await;
    assert_eq!(shown["ttl"]["strategy"], "keep_latest");
    server.stop().await;
}
