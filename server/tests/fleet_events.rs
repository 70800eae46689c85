//! A run's events across servers on one PostgreSQL database: a client on
//! server B joins a run streaming on server A and gets its events live; a
//! client that leaves A mid-run and reconnects to B with `Last-Event-ID`
//! gets the rest, nothing missed and nothing twice; a join after the run
//! ended replays it; the stored events go with their thread, their run,
//! and once the TTL after the run's end passed.

#![cfg(feature = "postgres")]

mod support;

use std::time::{Duration, Instant};

use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};
use support::db::{connect, fresh_pg, Db};
use support::http::{new_thread, post, THREAD};
use support::{start, start_with, Running};

/// A stream's frames as they arrive.
struct Sse {
    response: Response,
    buffer: Vec<u8>,
}

impl Sse {
    fn new(response: Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        Sse {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next whole frame (heartbeats skipped), `None` at the end.
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let frame: Vec<u8> = self.buffer.drain(..at + 4).collect();
                let frame = String::from_utf8(frame).expect("UTF-8 frames");
                if frame.starts_with(':') {
                    continue;
                }
                return Some(frame);
            }
            let chunk = self.response.chunk().await.expect("the stream reads")?;
            self.buffer.extend_from_slice(&chunk);
        }
    }

    /// Every frame left, each with when it came.
    async fn rest(mut self) -> Vec<(String, Instant)> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next().await {
            frames.push((frame, Instant::now()));
        }
        frames
    }
}

/// A frame's `id:`.
fn id_of(frame: &str) -> usize {
    frame
        .split("\r\n")
        .find_map(|l| l.strip_prefix("id: "))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("a frame without an id: {frame:?}"))
}

fn ids(frames: &[String]) -> Vec<usize> {
    frames.iter().map(|f| id_of(f)).collect()
}

fn texts(frames: Vec<(String, Instant)>) -> Vec<String> {
    frames.into_iter().map(|(f, _)| f).collect()
}

/// A resumable count down from 10 on `base`'s thread: a step every
/// 100 ms, 12 events (metadata, then 11 `values`).
async fn count_down(c: &Client, base: &str) -> Sse {
    let body = json!({"assistant_id": "countdown", "input": {"n": 10}, "stream_resumable": true});
    let url = format!("{base}/threads/{THREAD}/runs/stream");
    Sse::new(c.post(url).json(&body).send().await.expect("run"))
}

/// The run id a stream's first frame (`metadata`) names.
fn run_id_of(metadata: &str) -> String {
    let data = metadata.split("\r\n").nth(1).expect("data line");
    let data: Value = serde_json::from_str(data.trim_start_matches("data: ")).expect("JSON");
    data["run_id"].as_str().expect("run id").to_owned()
}

/// `GET` the run's stream on `base`, after `last` when given.
async fn join(c: &Client, base: &str, run_id: &str, last: Option<&str>) -> Sse {
    let url = format!("{base}/threads/{THREAD}/runs/{run_id}/stream");
    let request = c.get(url);
    let request = match last {
        Some(last) => request.header("Last-Event-ID", last),
        None => request,
    };
    Sse::new(request.send().await.expect("join"))
}

async fn two_servers(db: &Db) -> (Running, Running, Client) {
    let (a, b) = (start(db).await, start(db).await);
    let c = Client::new();
    new_thread(&c, &a.base, THREAD).await;
    (a, b, c)
}

/// Rows of `table` for `run_id`.
async fn stored(db: &Db, table: &str, run_id: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table} WHERE run_id = $1");
    let client = connect(&db.url()).await;
    let row = client.query_one(&sql, &[&run_id]).await.expect("count");
    row.get(0)
}

/// A run streaming on A, joined on B while it runs: B's client gets the
/// same frames as A's, ids and all, in order, and gets them live (event 8
/// of 12, sent some 600 ms into the 1 s run, reaches B before A's stream
/// ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_streaming_on_a_is_joined_live_on_b() {
    let db = fresh_pg();
    let (a, b, c) = two_servers(&db).await;
    let mut on_a = count_down(&c, &a.base).await;
    let first = on_a.next().await.expect("metadata");
    let run_id = run_id_of(&first);
    tokio::time::sleep(Duration::from_millis(250)).await;
    let on_b = join(&c, &b.base, &run_id, None).await;
    let (rest_a, on_b) = tokio::join!(on_a.rest(), on_b.rest());
    let a_ended = rest_a.last().expect("A's last frame").1;
    let eighth = on_b.iter().find(|(f, _)| id_of(f) == 8).expect("event 8").1;
    assert!(eighth < a_ended, "B got event 8 only once A's stream ended");
    let mut whole_a = vec![first];
    whole_a.extend(texts(rest_a));
    assert_eq!(ids(&whole_a), (1..=12).collect::<Vec<_>>());
    assert_eq!(texts(on_b), whole_a, "B's frames are A's");
    a.stop().await;
    b.stop().await;
}

/// A client reads 4 events on A, leaves, and reconnects to B with
/// `Last-Event-ID: 4`: the two parts make the uninterrupted stream, no
/// gap and no repeat. Once the run ended, B replays it all to a client
/// naming `-1` (as `useStream` does), or after any id; without one, a
/// join of an ended run streams nothing (as the official server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaves_a_and_resumes_on_b_missing_nothing() {
    let db = fresh_pg();
    let (a, b, c) = two_servers(&db).await;
    let mut on_a = count_down(&c, &a.base).await;
    let mut part = Vec::new();
    while part.len() < 4 {
        part.push(on_a.next().await.expect("a frame"));
    }
    let run_id = run_id_of(&part[0]);
    // The whole stream, read by another client from the start.
    let whole = tokio::spawn({
        let (c, base, run_id) = (c.clone(), a.base.clone(), run_id.clone());
        async move { texts(join(&c, &base, &run_id, Some("0")).await.rest().await) }
    });
    drop(on_a);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let rest = join(&c, &b.base, &run_id, Some("4")).await.rest().await;
    part.extend(texts(rest));
    let whole = whole.await.expect("the whole stream");
    assert_eq!(ids(&whole), (1..=12).collect::<Vec<_>>());
    assert_eq!(part, whole, "A's part then B's is the whole stream");
    let replay = join(&c, &b.base, &run_id, Some("-1")).await.rest().await;
    assert_eq!(texts(replay), whole);
    let tail = join(&c, &b.base, &run_id, Some("10")).await.rest().await;
    assert_eq!(texts(tail), whole[10..]);
    assert!(join(&c, &b.base, &run_id, None)
        .await
        .rest()
        .await
        .is_empty());
    a.stop().await;
    b.stop().await;
}

/// A background run on A (no client streams it) joined on B from the
/// start, mid-run and after: the same frames each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_is_joined_on_another_server() {
    let db = fresh_pg();
    let (a, b, c) = two_servers(&db).await;
    let body = json!({"assistant_id": "countdown", "input": {"n": 3}});
    let (status, run) = post(&c, format!("{}/threads/{THREAD}/runs", a.base), body).await;
    assert_eq!(status, StatusCode::OK, "{run}");
    let run_id = run["run_id"].as_str().expect("run id");
    let live = join(&c, &b.base, run_id, None).await.rest().await;
    let live = texts(live);
    assert_eq!(ids(&live), (1..=5).collect::<Vec<_>>());
    assert!(live[0].starts_with("event: metadata\r\n"));
    assert!(live[4].contains("data: {\"n\":0}"));
    let after = join(&c, &b.base, run_id, Some("0")).await.rest().await;
    assert_eq!(texts(after), live);
    a.stop().await;
    b.stop().await;
}

/// A finished run's events are kept for late joiners, then go: with the
/// run (`DELETE .../runs/{id}`), with the thread, and by age once the
/// TTL after the run's end passed (then a join streams nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_events_go_with_their_run_their_thread_and_their_age() {
    let db = fresh_pg();
    let ttl = |s: agent_state_server::Server| s.stream_ttl(Duration::from_secs(1));
    let (a, b) = (start_with(&db, ttl).await, start_with(&db, ttl).await);
    let c = Client::new();
    new_thread(&c, &a.base, THREAD).await;
    let ran = |c: Client, base: String| async move {
        let mut sse = count_down(&c, &base).await;
        let run_id = run_id_of(&sse.next().await.expect("metadata"));
        sse.rest().await;
        run_id
    };
    let first = ran(c.clone(), a.base.clone()).await;
    assert_eq!(stored(&db, "server_run_events", &first).await, 12);
    let url = format!("{}/threads/{THREAD}/runs/{first}", b.base);
    let deleted = c.delete(url).send().await.expect("delete run");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(stored(&db, "server_run_events", &first).await, 0);
    assert_eq!(stored(&db, "server_run_streams", &first).await, 0);
    let second = ran(c.clone(), a.base.clone()).await;
    assert_eq!(stored(&db, "server_run_events", &second).await, 12);
    let deleted = c.delete(format!("{}/threads/{THREAD}", b.base));
    assert!(deleted.send().await.expect("delete").status().is_success());
    assert_eq!(stored(&db, "server_run_events", &second).await, 0);
    new_thread(&c, &a.base, THREAD).await;
    let third = ran(c.clone(), a.base.clone()).await;
    let replay = join(&c, &b.base, &third, Some("0")).await.rest().await;
    assert_eq!(replay.len(), 12, "kept for a late joiner");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(stored(&db, "server_run_events", &third).await, 0);
    assert_eq!(stored(&db, "server_run_streams", &third).await, 0);
    let gone = join(&c, &b.base, &third, Some("0")).await.rest().await;
    assert!(gone.is_empty(), "an expired stream replays nothing");
    a.stop().await;
    b.stop().await;
}

/// A run whose server died mid-run (its events stored, its end never
/// written): a client joined on B gets what was stored, and its stream
/// ends once B fails the dead server's run, instead of waiting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_of_a_dead_servers_run_ends_when_the_run_is_failed() {
    let db = fresh_pg();
    let b = start(&db).await;
    let c = Client::new();
    new_thread(&c, &b.base, THREAD).await;
    let done = json!({"assistant_id": "countdown", "input": {"n": 0}});
    let (_, run) = post(&c, format!("{}/threads/{THREAD}/runs/wait", b.base), done).await;
    assert_eq!(run, json!({"n": 0}));
    let orphan = "44444444-4444-4444-4444-444444444444";
    // What a server killed mid-run leaves: its run `running`, two events
    // stored, no end, no session holding its owner lock.
    connect(&db.url())
        .await
        .batch_execute(&format!(
            "INSERT INTO server_runs SELECT '{orphan}', thread_id, assistant_id, metadata,
             'running', kwargs, multitask_strategy, created_at, updated_at, 'a-dead-server'
             FROM server_runs LIMIT 1;
             INSERT INTO server_run_streams VALUES ('{orphan}', '{THREAD}', 2, false, now());
             INSERT INTO server_run_events VALUES ('{orphan}', 1, 'metadata', '{{}}'),
             ('{orphan}', 2, 'values', '{{\"n\":5}}');"
        ))
        .await
        .expect("a dead server's run");
    let started = Instant::now();
    let frames = texts(join(&c, &b.base, orphan, None).await.rest().await);
    assert_eq!(ids(&frames), [1, 2]);
    assert!(frames[1].contains("data: {\"n\":5}"));
    // The sweep for dead servers' runs comes every 5 s; then one more
    // look (a second) and the stream ends.
    assert!(started.elapsed() < Duration::from_secs(10));
    let (_, run) =
        support::http::get(&c, format!("{}/threads/{THREAD}/runs/{orphan}", b.base)).await;
    assert_eq!(run["status"], "error");
    b.stop().await;
}

/// Joins that cannot be: an unknown run is 404, an unknown thread 404, a
/// thread id that is no UUID 422; a `Last-Event-ID` past the end of an
/// ended run streams nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_that_cannot_be_are_refused() {
    let db = fresh_pg();
    let (a, b, c) = two_servers(&db).await;
    let unknown = "55555555-5555-5555-5555-555555555555";
    let url = |thread: &str, run: &str| format!("{}/threads/{thread}/runs/{run}/stream", b.base);
    let status = |u: String| {
        let c = c.clone();
        async move { c.get(u).send().await.expect("join").status() }
    };
    assert_eq!(status(url(THREAD, unknown)).await, StatusCode::NOT_FOUND);
    assert_eq!(status(url(unknown, unknown)).await, StatusCode::NOT_FOUND);
    assert_eq!(
        status(url("nope", unknown)).await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let mut sse = count_down(&c, &a.base).await;
    let run_id = run_id_of(&sse.next().await.expect("metadata"));
    sse.rest().await;
    let past = join(&c, &b.base, &run_id, Some("99")).await.rest().await;
    assert!(past.is_empty());
    a.stop().await;
    b.stop().await;
}
