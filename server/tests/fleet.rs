//! Several server processes (the `serve` example, built here) on one
//! PostgreSQL database: background runs go through the queue every
//! server takes from; a run whose server is killed (`kill -9`) is taken
//! over by another and resumed from its last stored step, its `attempt`
//! counted up; SIGTERM hands a server's runs over; `multitask_strategy`
//! requests sent at once to two servers leave the runs LangGraph's
//! semantics say; many runs across two servers each run once.

#![cfg(feature = "postgres")]

mod support;

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::db::{connect, fresh_pg, Db};
use support::http::{get, new_thread, post};
use support::node::Node;

/// A fresh database with its tables' database created.
async fn database() -> Db {
    let db = fresh_pg();
    db.create().await;
    db
}

fn countdown(n: u32, strategy: &str) -> Value {
    json!({"assistant_id": "countdown", "input": {"n": n}, "multitask_strategy": strategy})
}

/// Starts a background run of `body` on `base`'s thread `thread`: the
/// status, and the run (or the refusal).
async fn background(c: &Client, base: &str, thread: &str, body: Value) -> (StatusCode, Value) {
    post(c, format!("{base}/threads/{thread}/runs"), body).await
}

/// The run as `base` reads it.
async fn run(c: &Client, base: &str, thread: &str, run_id: &str) -> Value {
    get(c, format!("{base}/threads/{thread}/runs/{run_id}"))
        .await
        .1
}

/// Waits (up to `within`) until `test` holds of the run as `base` reads it.
async fn wait_run(
    c: &Client,
    base: &str,
    thread: &str,
    run_id: &str,
    within: Duration,
    test: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let now = run(c, base, thread, run_id).await;
        if test(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "run {run_id}: never as expected, last {now}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn ended(run: &Value) -> bool {
    !matches!(run["status"].as_str(), Some("pending" | "running"))
}

/// The thread's states, oldest first, as `(step, n)`.
async fn history(c: &Client, base: &str, thread: &str) -> Vec<(i64, i64)> {
    let url = format!("{base}/threads/{thread}/history");
    let (status, states) = post(c, url, json!({"limit": 1000})).await;
    assert_eq!(status, StatusCode::OK, "{states}");
    let mut steps: Vec<(i64, i64)> = states
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| {
            let step = s["metadata"]["step"].as_i64().expect("step");
            (step, s["values"]["n"].as_i64().unwrap_or(-1))
        })
        .collect();
    steps.reverse();
    steps
}

/// What an uninterrupted run of `countdown(n)` leaves in a thread's
/// history, run on `base`.
async fn reference(c: &Client, base: &str, n: u32) -> Vec<(i64, i64)> {
    let thread = uuid::Uuid::new_v4().to_string();
    new_thread(c, base, &thread).await;
    let url = format!("{base}/threads/{thread}/runs/wait");
    let (status, out) = post(c, url, countdown(n, "enqueue")).await;
    assert_eq!(status, StatusCode::OK, "{out}");
    history(c, base, &thread).await
}

/// A run's `attempt` and owner as stored.
async fn stored(db: &Db, run_id: &str) -> (i32, String) {
    let client = connect(&db.url()).await;
    let sql = "SELECT attempt, owner FROM server_runs WHERE run_id = $1";
    let row = client.query_one(sql, &[&run_id]).await.expect("the run");
    (row.get(0), row.get(1))
}

/// Starts a countdown of `n` steps in the background on a new thread of
/// `base`, and waits until it runs: the thread and the run id.
async fn running_countdown(c: &Client, base: &str, n: u32) -> (String, String) {
    let thread = uuid::Uuid::new_v4().to_string();
    new_thread(c, base, &thread).await;
    let (status, started) = background(c, base, &thread, countdown(n, "enqueue")).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    wait_run(c, base, &thread, &run_id, Duration::from_secs(10), |r| {
        r["status"] == "running"
    })
    .await;
    (thread, run_id)
}

/// Starts a countdown in the background on `a`, then `b` next to it;
/// waits until the run stored a few steps: the thread and the run id.
async fn run_on_first(c: &Client, a: &Node, db: &Db, n: u32) -> (String, String, Node) {
    let (thread, run_id) = running_countdown(c, &a.base, n).await;
    let b = Node::start(db, &["--lease-ms", "1000"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while history(c, &a.base, &thread).await.len() < 4 {
        assert!(Instant::now() < deadline, "the run stored no steps");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    (thread, run_id, b)
}

/// The ids and frames of a stream's body (`event`, `data`, `id` lines).
fn numbered(body: &str) -> Vec<(u64, String, Value)> {
    let frames = body.split("\r\n\r\n").filter(|f| f.starts_with("event: "));
    let frame = |f: &str| {
        let line = |p: &str| {
            f.split("\r\n")
                .find_map(|l| l.strip_prefix(p).map(str::to_owned))
        };
        let id = line("id: ").and_then(|i| i.parse().ok()).expect("an id");
        let data = serde_json::from_str(&line("data: ").expect("data")).expect("JSON");
        (id, line("event: ").expect("event"), data)
    };
    frames.map(frame).collect()
}

/// How far apart two attempts' ids start: the server's `ATTEMPT_IDS`.
const ATTEMPT_IDS: u64 = 1 << 32;

/// Every event once: the first attempt's ids 1, 2, .. with no gap and no
/// repeat, a later attempt's on from `(attempt - 1) * ATTEMPT_IDS`, each
/// one at most once.
fn each_once(frames: &[(u64, String, Value)]) {
    let mut last = 0;
    for (id, event, data) in frames {
        let attempt = data["attempt"].as_u64().filter(|_| event == "metadata");
        let expected = match attempt {
            Some(n) if n > 1 => ((n - 1) * ATTEMPT_IDS + 1).max(last + 1),
            _ => last + 1,
        };
        assert_eq!(*id, expected, "every event once: {frames:?}");
        last = *id;
    }
}

/// `kill -9` of the server running a background run: another takes it
/// over once its lease expires and resumes it from its last stored step
/// (`attempt` 2, announced in its stream), and the thread ends as an
/// uninterrupted run leaves it (no step done twice). A client following
/// the run's stream on the other server all along gets every event once,
/// the first attempt's then the second's, to the run's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_servers_run_is_taken_over_and_resumed() {
    let (c, db) = (Client::new(), database().await);
    let mut a = Node::start(&db, &["--lease-ms", "1000"]).await;
    let (thread, run_id, b) = run_on_first(&c, &a, &db, 15).await;
    let url = format!("{}/threads/{thread}/runs/{run_id}/stream", b.base);
    let follow = c.get(url).send().await.expect("join");
    let follower = tokio::spawn(async move { follow.text().await.expect("body") });
    let before = history(&c, &b.base, &thread).await;
    a.kill();
    let taken = Instant::now();
    // Claimed again: its attempt counted up, an owner again.
    while stored(&db, &run_id).await.0 != 2 || stored(&db, &run_id).await.1.is_empty() {
        assert!(taken.elapsed() < Duration::from_secs(8), "never taken over");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = wait_run(
        &c,
        &b.base,
        &thread,
        &run_id,
        Duration::from_secs(10),
        ended,
    )
    .await;
    assert_eq!(done["status"], "success", "{done}");
    assert!(taken.elapsed() < Duration::from_secs(8));
    let frames = numbered(&follower.await.expect("follower"));
    each_once(&frames);
    let metas: Vec<&Value> = frames
        .iter()
        .filter(|f| f.1 == "metadata")
        .map(|f| &f.2)
        .collect();
    let attempt = |n: u32| json!({"run_id": run_id, "attempt": n});
    assert_eq!(metas, [&attempt(1), &attempt(2)]);
    let last = frames
        .iter()
        .rev()
        .find(|f| f.1 == "values")
        .expect("values");
    assert_eq!(last.2["n"], 0, "the stream runs to the run's end");
    let after = history(&c, &b.base, &thread).await;
    assert!(
        after.starts_with(&before[..before.len() - 1]),
        "{before:?} {after:?}"
    );
    assert_eq!(after, reference(&c, &b.base, 15).await);
}

/// Reads a join stream until its connection breaks (its server killed):
/// the whole frames it got.
async fn read_until_cut(mut response: reqwest::Response) -> String {
    let mut body = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    match body.rfind("\r\n\r\n") {
        Some(end) => body[..end + 4].to_owned(),
        None => String::new(),
    }
}

/// A client following the run on the server that is killed, reconnecting
/// to the other with the last id it got (`Last-Event-ID`, as the SDKs do):
/// it gets the rest of the run, the new attempt included, and nothing it
/// had, whatever the dead server sent before storing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_a_killed_server_reconnects_to_another() {
    let (c, db) = (Client::new(), database().await);
    let mut a = Node::start(&db, &["--lease-ms", "1000"]).await;
    let (thread, run_id, b) = run_on_first(&c, &a, &db, 15).await;
    let path = format!("/threads/{thread}/runs/{run_id}/stream");
    let on_a = c.get(format!("{}{path}", a.base)).send().await;
    let reader = tokio::spawn(read_until_cut(on_a.expect("join on a")));
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.kill();
    let before = numbered(&reader.await.expect("reader"));
    let last = before.last().expect("events before the kill").0;
    let again = c.get(format!("{}{path}", b.base));
    let again = again.header("Last-Event-ID", last.to_string()).send().await;
    let after = numbered(&again.expect("reconnect").text().await.expect("body"));
    let all: Vec<_> = before.into_iter().chain(after).collect();
    each_once(&all);
    let attempts: Vec<&Value> = all
        .iter()
        .filter(|f| f.1 == "metadata")
        .map(|f| &f.2["attempt"])
        .collect();
    assert_eq!(attempts, [&json!(1), &json!(2)], "{all:?}");
    let end = all.iter().rev().find(|f| f.1 == "values").expect("values");
    assert_eq!(end.2["n"], 0, "the stream runs to the run's end");
}

/// SIGTERM: the server takes no more runs, lets its run go on for the
/// grace period, then hands it over (no attempt counted) and exits 0;
/// the other server resumes it to the same end, and a client following
/// it there gets every event once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_a_run_over() {
    let (c, db) = (Client::new(), database().await);
    let args = ["--lease-ms", "1000", "--grace-ms", "300"];
    let mut a = Node::start(&db, &args).await;
    let (thread, run_id, b) = run_on_first(&c, &a, &db, 15).await;
    let url = format!("{}/threads/{thread}/runs/{run_id}/stream", b.base);
    let follow = c.get(url).send().await.expect("join");
    let follower = tokio::spawn(async move { follow.text().await.expect("body") });
    let exit = a.terminate(Duration::from_secs(8)).await;
    assert!(exit.success(), "{exit:?}");
    let done = wait_run(
        &c,
        &b.base,
        &thread,
        &run_id,
        Duration::from_secs(10),
        ended,
    )
    .await;
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(stored(&db, &run_id).await.0, 1);
    // Followed from B across the handover: every event once, numbered on
    // (a handover is no new attempt).
    let frames = numbered(&follower.await.expect("follower"));
    each_once(&frames);
    assert!(frames.iter().all(|f| f.0 < ATTEMPT_IDS), "{frames:?}");
    let last = frames
        .iter()
        .rev()
        .find(|f| f.1 == "values")
        .expect("values");
    assert_eq!(last.2["n"], 0, "the stream runs to the run's end");
    assert_eq!(
        history(&c, &b.base, &thread).await,
        reference(&c, &b.base, 15).await
    );
}

/// SIGTERM with time enough: the run finishes on its own server, which
/// then exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_short_run_finish() {
    let (c, db) = (Client::new(), database().await);
    let mut a = Node::start(&db, &["--grace-ms", "10000"]).await;
    let thread = uuid::Uuid::new_v4().to_string();
    new_thread(&c, &a.base, &thread).await;
    let (_, started) = background(&c, &a.base, &thread, countdown(4, "enqueue")).await;
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    wait_run(
        &c,
        &a.base,
        &thread,
        &run_id,
        Duration::from_secs(10),
        |r| r["status"] == "running",
    )
    .await;
    let owner = stored(&db, &run_id).await.1;
    assert!(a.terminate(Duration::from_secs(10)).await.success());
    // Read from a server started after: the one that stopped finished it.
    let b = Node::start(&db, &[]).await;
    let done = run(&c, &b.base, &thread, &run_id).await;
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(stored(&db, &run_id).await, (1, owner));
}

/// Two runs of one thread sent at once, one to each server, under
/// `strategy`, while `busy` (a countdown) runs on the thread if given:
/// the threads' runs once all ended.
async fn race(
    c: &Client,
    a: &Node,
    b: &Node,
    strategy: &str,
    busy: bool,
) -> Vec<(StatusCode, Value)> {
    let thread = uuid::Uuid::new_v4().to_string();
    new_thread(c, &a.base, &thread).await;
    if busy {
        let (_, first) = background(c, &a.base, &thread, countdown(30, "enqueue")).await;
        let id = first["run_id"].as_str().expect("run id").to_owned();
        wait_run(c, &a.base, &thread, &id, Duration::from_secs(10), |r| {
            r["status"] == "running"
        })
        .await;
    }
    let (one, two) = tokio::join!(
        background(c, &a.base, &thread, countdown(3, strategy)),
        background(c, &b.base, &thread, countdown(3, strategy)),
    );
    let mut answers = vec![one, two];
    answers.sort_by_key(|(status, _)| *status);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, runs) = get(c, format!("{}/threads/{thread}/runs?limit=10", b.base)).await;
        let runs = runs.as_array().cloned().unwrap_or_default();
        if runs.iter().all(ended) {
            let mut statuses: Vec<(StatusCode, Value)> = runs
                .into_iter()
                .map(|r| (StatusCode::OK, r["status"].clone()))
                .collect();
            statuses.sort_by_key(|(_, s)| s.to_string());
            return [answers, statuses].concat();
        }
        assert!(Instant::now() < deadline, "the runs never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn statuses(answers: &[(StatusCode, Value)]) -> Vec<String> {
    answers
        .iter()
        .skip(2)
        .map(|(_, s)| s.as_str().unwrap_or("?").to_owned())
        .collect()
}

/// `reject`, `enqueue`, `interrupt` and `rollback` runs sent at once to
/// two servers: reject, one runs and the other is 409; enqueue, both run
/// in turn; interrupt, the running run and the earlier of the two stop
/// and the later runs; rollback, the same but the stopped runs are
/// deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_strategies_across_servers() {
    let (c, db) = (Client::new(), database().await);
    let (a, b) = (Node::start(&db, &[]).await, Node::start(&db, &[]).await);
    let (reject, enqueue, interrupt, rollback) = tokio::join!(
        race(&c, &a, &b, "reject", false),
        race(&c, &a, &b, "enqueue", false),
        race(&c, &a, &b, "interrupt", true),
        race(&c, &a, &b, "rollback", true),
    );
    assert_eq!(
        (reject[0].0, reject[1].0),
        (StatusCode::OK, StatusCode::CONFLICT),
        "{reject:?}"
    );
    assert_eq!(statuses(&reject), ["success"]);
    assert_eq!(statuses(&enqueue), ["success", "success"]);
    assert_eq!(
        statuses(&interrupt),
        ["interrupted", "interrupted", "success"]
    );
    assert_eq!(statuses(&rollback), ["success"]);
    for answers in [&enqueue, &interrupt, &rollback] {
        assert_eq!(
            (answers[0].0, answers[1].0),
            (StatusCode::OK, StatusCode::OK)
        );
    }
}

/// Many background runs sent to two servers, each at most 3 at once:
/// every one runs exactly once (its thread's history is an
/// uninterrupted run's), and both servers take from the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_runs_across_two_servers_run_once() {
    let (c, db) = (Client::new(), database().await);
    let args = ["--max-runs", "3"];
    let (a, b) = (Node::start(&db, &args).await, Node::start(&db, &args).await);
    let mut runs = Vec::new();
    for i in 0..24 {
        let node = if i % 2 == 0 { &a } else { &b };
        let thread = uuid::Uuid::new_v4().to_string();
        new_thread(&c, &node.base, &thread).await;
        let (status, run) = background(&c, &node.base, &thread, countdown(2, "enqueue")).await;
        assert_eq!(status, StatusCode::OK, "{run}");
        runs.push((thread, run["run_id"].as_str().expect("run id").to_owned()));
    }
    let expected = reference(&c, &a.base, 2).await;
    let mut owners = std::collections::BTreeSet::new();
    for (thread, run_id) in &runs {
        let done = wait_run(&c, &b.base, thread, run_id, Duration::from_secs(30), ended).await;
        assert_eq!(done["status"], "success", "{done}");
        assert_eq!(history(&c, &a.base, thread).await, expected);
        let (attempt, owner) = stored(&db, run_id).await;
        assert_eq!(attempt, 1);
        owners.insert(owner);
    }
    assert_eq!(owners.len(), 2, "both servers ran some");
}

/// A run queued behind a busy thread is cancelled through either server
/// before any server claims it (interrupted, or deleted with
/// `action=rollback`), and never runs; the busy run is cancelled through
/// the server not running it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_and_running_runs_are_cancelled_from_any_server() {
    let (c, db) = (Client::new(), database().await);
    let (a, b) = (Node::start(&db, &[]).await, Node::start(&db, &[]).await);
    let thread = uuid::Uuid::new_v4().to_string();
    new_thread(&c, &a.base, &thread).await;
    let id = |run: &Value| run["run_id"].as_str().expect("run id").to_owned();
    let busy = id(&background(&c, &a.base, &thread, countdown(30, "enqueue"))
        .await
        .1);
    wait_run(&c, &a.base, &thread, &busy, Duration::from_secs(10), |r| {
        r["status"] == "running"
    })
    .await;
    let queued = id(&background(&c, &a.base, &thread, countdown(2, "enqueue"))
        .await
        .1);
    let dropped = id(&background(&c, &a.base, &thread, countdown(2, "enqueue"))
        .await
        .1);
    let cancel = |run: &str, query: &str| {
        let url = format!("{}/threads/{thread}/runs/{run}/cancel{query}", b.base);
        c.post(url).send()
    };
    assert_eq!(
        cancel(&queued, "").await.expect("cancel").status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        run(&c, &a.base, &thread, &queued).await["status"],
        "interrupted"
    );
    let rolled = cancel(&dropped, "?action=rollback").await.expect("cancel");
    assert_eq!(rolled.status(), StatusCode::ACCEPTED);
    let (status, _) = get(&c, format!("{}/threads/{thread}/runs/{dropped}", a.base)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let stopped = cancel(&busy, "?wait=true").await.expect("cancel");
    assert_eq!(stopped.status(), StatusCode::OK);
    assert_eq!(
        run(&c, &b.base, &thread, &busy).await["status"],
        "interrupted"
    );
    // The queued run never ran: the thread stays where the busy run left it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        run(&c, &b.base, &thread, &queued).await["status"],
        "interrupted"
    );
    let (_, state) = get(&c, format!("{}/threads/{thread}/state", b.base)).await;
    assert!(
        state["values"]["n"].as_i64().is_some_and(|n| n > 2),
        "{state}"
    );
}

/// A server that lost a run it was running (its lease expired while it
/// was cut off, and another server took the run: here its owner is
/// changed under it) stops running it at its next heartbeat and leaves
/// its record alone; the run then resumes elsewhere to the same end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stops_a_run_it_no_longer_holds() {
    let (c, db) = (Client::new(), database().await);
    let a = Node::start(&db, &["--lease-ms", "1000"]).await;
    let (thread, run_id, b) = run_on_first(&c, &a, &db, 15).await;
    let client = connect(&db.url()).await;
    // Held by 'elsewhere' for an hour: nobody takes it meanwhile.
    let steal = "UPDATE server_runs SET owner = 'elsewhere', lease_until = lease_until + 3600000
                 WHERE run_id = $1";
    client
        .execute(steal, &[&run_id])
        .await
        .expect("change the owner");
    // Within a heartbeat (a fifth of the lease) A stops stepping.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let stopped = history(&c, &b.base, &thread).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        history(&c, &b.base, &thread).await,
        stopped,
        "A still runs it"
    );
    assert_eq!(
        stored(&db, &run_id).await.1,
        "elsewhere",
        "A left its record"
    );
    // Its lease runs out: the servers take it over and finish it.
    let expire = "UPDATE server_runs SET lease_until = 0 WHERE run_id = $1";
    client
        .execute(expire, &[&run_id])
        .await
        .expect("expire the lease");
    let done = wait_run(
        &c,
        &b.base,
        &thread,
        &run_id,
        Duration::from_secs(15),
        ended,
    )
    .await;
    assert_eq!(done["status"], "success", "{done}");
    assert_eq!(
        history(&c, &b.base, &thread).await,
        reference(&c, &b.base, 15).await
    );
}

/// A run whose server lost it between two heartbeats (its owner changed
/// under it, as when its lease lapsed and another server took it) and
/// that ends before the next one: its end is not recorded, neither the
/// run's status, the thread's, nor its stream's end, so it never writes
/// over what the run's new owner records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_run_does_not_record_its_end() {
    let (c, db) = (Client::new(), database().await);
    // A heartbeat every 12 s: none comes while the run lasts.
    let a = Node::start(&db, &["--lease-ms", "60000"]).await;
    let (thread, run_id) = running_countdown(&c, &a.base, 4).await;
    let client = connect(&db.url()).await;
    let steal = "UPDATE server_runs SET owner = 'elsewhere' WHERE run_id = $1";
    client.execute(steal, &[&run_id]).await.expect("steal");
    // The run steps to its end (n = 0) on A all the same.
    let deadline = Instant::now() + Duration::from_secs(10);
    while history(&c, &a.base, &thread).await.last().map(|h| h.1) != Some(0) {
        assert!(Instant::now() < deadline, "the run never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        run(&c, &a.base, &thread, &run_id).await["status"],
        "running"
    );
    let (_, t) = get(&c, format!("{}/threads/{thread}", a.base)).await;
    assert_eq!(t["status"], "busy", "{t}");
    // Nor its stream's end: followers wait for the run's owner.
    let ended = "SELECT ended FROM server_run_streams WHERE run_id = $1";
    let rows = client.query(ended, &[&run_id]).await.expect("the stream");
    assert!(
        rows.iter().all(|r| !r.get::<_, bool>(0)),
        "the end was stored"
    );
}

/// Reads a thread-protocol stream until a root `lifecycle` event ends a
/// run (`completed`, `failed`, `interrupted`): its envelopes.
async fn until_run_ends(mut response: reqwest::Response) -> Vec<Value> {
    let mut body = String::new();
    let ended = |e: &Value| {
        e["method"] == "lifecycle"
            && e["params"]["namespace"] == json!([])
            && e["params"]["data"]["event"] != "running"
    };
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(15), response.chunk()).await;
        let chunk = chunk.expect("an event in time").expect("the stream");
        body.push_str(&String::from_utf8_lossy(
            &chunk.expect("the stream went on"),
        ));
        let envelopes: Vec<Value> = body
            .split("\r\n")
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("JSON"))
            .collect();
        if envelopes.iter().any(ended) {
            return envelopes;
        }
    }
}

/// The thread protocol across servers: a client subscribed to a thread's
/// events on one server sees the run it starts through `run.start` on
/// another, from its `running` to its `completed`, its values included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_stream_on_one_server_follows_a_run_started_on_another() {
    let (c, db) = (Client::new(), database().await);
    let (a, b) = (Node::start(&db, &[]).await, Node::start(&db, &[]).await);
    let thread = uuid::Uuid::new_v4().to_string();
    let channels = json!({"channels": ["values", "lifecycle"]});
    let url = format!("{}/threads/{thread}/stream/events", b.base);
    let subscribed = c.post(url).json(&channels).send().await.expect("subscribe");
    let reader = tokio::spawn(until_run_ends(subscribed));
    let start = json!({"id": 1, "method": "run.start",
        "params": {"assistant_id": "countdown", "input": {"n": 2}}});
    let (status, answer) = post(&c, format!("{}/threads/{thread}/commands", a.base), start).await;
    assert_eq!(
        (status, &answer["type"]),
        (StatusCode::OK, &json!("success")),
        "{answer}"
    );
    let envelopes = reader.await.expect("reader");
    let root = |e: &&Value| e["method"] == "lifecycle" && e["params"]["namespace"] == json!([]);
    let lifecycle: Vec<&Value> = envelopes
        .iter()
        .filter(root)
        .map(|e| &e["params"]["data"]["event"])
        .collect();
    assert_eq!(
        lifecycle,
        [&json!("running"), &json!("completed")],
        "{envelopes:?}"
    );
    let mut values = envelopes.iter().filter(|e| e["method"] == "values");
    let last = values.next_back().expect("values");
    assert_eq!(last["params"]["data"]["n"], 0, "{envelopes:?}");
    let seqs: Vec<u64> = envelopes
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}
