//! What storing a run's events in PostgreSQL costs a streamed run.
//!
//! ```text
//! cargo bench -p agent-state-server --features postgres --bench stored_events [-- TOKENS RUNS]
//! ```
//!
//! A run whose one node streams TOKENS message pieces (2,000 by default)
//! is streamed (`messages-tuple`) RUNS times (5 by default, after one
//! unmeasured), each on a new thread, from the request to the stream's
//! end: on SQLite, where a run's events live in memory only, and on
//! PostgreSQL, where each is also written to the database (on a throwaway
//! server started from the machine's binaries, or at `AGENT_STATE_PG_URL`).
//! It prints the median of each (the whole run, and from the stream's
//! first token to its last: the tokens, without the run's set-up and
//! checkpoints, which differ between the databases), and on PostgreSQL how many write
//! statements stored the events (one `NOTIFY` each, counted by listening),
//! so events per round trip.

#[path = "../../tests/support/pg.rs"]
mod pg;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_state::graph::{NodeContext, StateGraph, START};
use agent_state::{ai, AgentState, MessageChunk, Messages};
use agent_state_server::Server;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A chat whose node streams its answer piece by piece.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[reducer(messages)]
    messages: Messages,
}

fn server(tokens: usize) -> Server {
    let talk = move |_: &Chat, ctx: &NodeContext| {
        let writer = ctx.writer();
        for i in 0..tokens {
            let mut chunk = MessageChunk::ai(format!("t{i} ")).with_id("m1");
            chunk.last = i + 1 == tokens;
            writer.write_message(chunk);
        }
        ChatUpdate::new().message(ai("done").with_id("m1"))
    };
    let graph = StateGraph::<Chat>::new()
        .add_node("talk", talk)
        .add_edge(START, "talk")
        .compile()
        .expect("the chat graph");
    Server::new().graph("chat", graph)
}

/// Serves `server` on a free port until the process ends: its base URL.
async fn serve(server: Server) -> Result<String, Error> {
    let listening = server.bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listening.local_addr());
    tokio::spawn(listening.serve_until(std::future::pending()));
    Ok(base)
}

/// A run's times: from the request to the stream's end, and from its
/// first token to its last; and its frames.
struct Timed {
    total: Duration,
    tokens: Duration,
    frames: usize,
}

/// One run streamed to its end.
async fn one_run(c: &reqwest::Client, base: &str) -> Result<Timed, Error> {
    let thread: serde_json::Value = c
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await?
        .json()
        .await?;
    let id = thread["thread_id"].as_str().ok_or("no thread id")?;
    let body = json!({"assistant_id": "chat", "input": {"messages": []},
        "stream_mode": ["messages-tuple"]});
    let started = Instant::now();
    let mut r = c
        .post(format!("{base}/threads/{id}/runs/stream"))
        .json(&body)
        .send()
        .await?;
    let (mut frames, mut first, mut last) = (0, None, started);
    // The last bytes of the chunk before: a frame's end may be split.
    let mut tail = Vec::new();
    while let Some(chunk) = r.chunk().await? {
        tail.extend_from_slice(&chunk);
        frames += tail.windows(4).filter(|w| w == b"\r\n\r\n").count();
        tail.drain(..tail.len().saturating_sub(3));
        last = Instant::now();
        // From the first token: the metadata comes before the run's
        // input is stored.
        if frames >= 2 {
            first.get_or_insert(last);
        }
    }
    Ok(Timed {
        total: started.elapsed(),
        tokens: last - first.unwrap_or(last),
        frames,
    })
}

/// The median times of `runs` runs (after one unmeasured), and the
/// frames of a run.
async fn median(base: &str, runs: usize) -> Result<Timed, Error> {
    let c = reqwest::Client::new();
    let frames = one_run(&c, base).await?.frames;
    let (mut total, mut tokens) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let timed = one_run(&c, base).await?;
        total.push(timed.total);
        tokens.push(timed.tokens);
    }
    total.sort();
    tokens.sort();
    Ok(Timed {
        total: total[runs / 2],
        tokens: tokens[runs / 2],
        frames,
    })
}

/// Counts the notifications of event writes on `url`: the count so far,
/// and the client to keep while counting.
async fn count_writes(url: &str) -> Result<(Arc<AtomicUsize>, tokio_postgres::Client), Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let writes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&writes);
    tokio::spawn(async move {
        while let Some(Ok(m)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let tokio_postgres::AsyncMessage::Notification(_) = m {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    client
        .batch_execute("LISTEN agent_state_server_events")
        .await?;
    Ok((writes, client))
}

/// A fresh database on the PostgreSQL server: its connection string.
async fn fresh_database() -> Result<String, Error> {
    let admin = pg::url();
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let name = format!("bench_events_{}", std::process::id());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await?;
    Ok(format!("{admin} dbname={name}"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let tokens: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let dir = std::env::temp_dir().join(format!("bench-events-{}", std::process::id()));
    let sqlite = serve(server(tokens).database(dir.join("bench.db"))).await?;
    let memory = median(&sqlite, runs).await?;
    let url = fresh_database().await?;
    let postgres = serve(server(tokens).postgres(url.clone())).await?;
    let (writes, _listening) = count_writes(&url).await?;
    let stored = median(&postgres, runs).await?;
    let writes = writes.load(Ordering::Relaxed);
    let frames = memory.frames;
    assert_eq!(frames, stored.frames, "the same stream on both");
    let per_run = writes as f64 / (runs + 1) as f64;
    println!(
        "| {tokens} tokens, {frames} events, median of {runs} | whole run | first to last token |"
    );
    println!("| --- | --- | --- |");
    let row = |name: &str, t: &Timed| println!("| {name} | {:?} | {:?} |", t.total, t.tokens);
    row("SQLite (events in memory)", &memory);
    row("PostgreSQL (events stored)", &stored);
    let each = frames as f64 / per_run;
    println!("| PostgreSQL write statements per run | {per_run:.1} ({each:.0} events each) | |");
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
