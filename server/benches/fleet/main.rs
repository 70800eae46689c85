//! The fleet benchmark of `bash benches/fleet.sh`: 1, 2 and 4 server
//! processes (the `serve` example) on one throwaway PostgreSQL database,
//! driven over HTTP; and the cost of a failover.
//!
//! ```text
//! cargo bench -p agent-state-server --features postgres --bench fleet -- \
//!     --serve target/release/examples/serve [--servers 1,2,4] [--runs 400] \
//!     [--clients 32] [--samples 30] [--failovers 3] [--lease-ms 2000]
//! ```
//!
//! * time to first event: a run streamed (`POST /threads/{id}/runs/stream`,
//!   graph `nest`, one client at a time, each to the next server), from
//!   the request to its first `values` event; median and p95;
//! * runs/s: `--runs` background runs (`POST /threads/{id}/runs`, each on
//!   a thread of its own, sent round-robin to the servers by `--clients`
//!   clients at once, each joining its run) through the queue every
//!   server takes from;
//! * failover: a background `countdown` runs on server A; `kill -9` A;
//!   the time until server B streams the run's first event (its
//!   `metadata`, attempt 2), with B's lease `--lease-ms`.

#[path = "../../../tests/support/pg.rs"]
mod pg;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The benchmark's settings, from the command line.
struct Args {
    serve: String,
    servers: Vec<usize>,
    runs: usize,
    clients: usize,
    samples: usize,
    failovers: usize,
    lease_ms: u64,
}

fn args() -> Result<Args, Error> {
    let all: Vec<String> = std::env::args().collect();
    let get = |name: &str| {
        all.iter()
            .position(|a| a == name)
            .and_then(|i| all.get(i + 1))
    };
    let number = |name: &str, default: usize| -> Result<usize, Error> {
        get(name).map_or(Ok(default), |v| {
            Ok(v.parse().map_err(|_| format!("{name}: {v}"))?)
        })
    };
    let servers = get("--servers").map_or("1,2,4", String::as_str);
    Ok(Args {
        serve: get("--serve").cloned().ok_or("--serve PATH is required")?,
        servers: servers
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()?,
        runs: number("--runs", 400)?,
        clients: number("--clients", 32)?,
        samples: number("--samples", 30)?,
        failovers: number("--failovers", 3)?,
        lease_ms: number("--lease-ms", 2000)? as u64,
    })
}

/// A server process, killed when dropped.
struct Node {
    child: Child,
    base: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh database on the throwaway server: its connection string.
async fn database(n: usize) -> Result<String, Error> {
    let name = format!("fleet_bench_{}_{n}", std::process::id());
    let (client, connection) = tokio_postgres::connect(pg::url(), tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await?;
    Ok(format!("{} dbname={name}", pg::url()))
}

async fn start(args: &Args, url: &str, extra: &[&str]) -> Result<Node, Error> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new(&args.serve)
        .args(["--port", &port.to_string(), "--postgres", url])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let node = Node {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let c = Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.get(format!("{}/ok", node.base)).send().await.is_err() {
        if Instant::now() > deadline {
            return Err(format!("the server on {port} never came up").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(node)
}

async fn new_thread(c: &Client, base: &str) -> Result<String, Error> {
    let thread: Value = c
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await?
        .json()
        .await?;
    Ok(thread["thread_id"]
        .as_str()
        .ok_or("no thread id")?
        .to_owned())
}

/// One streamed run of `nest`: the time to its first `values` event.
async fn first_event(c: &Client, base: &str) -> Result<Duration, Error> {
    let thread = new_thread(c, base).await?;
    let body = json!({"assistant_id": "nest", "input": {"n": 1}, "stream_mode": ["values"]});
    let sent = Instant::now();
    let mut response = c
        .post(format!("{base}/threads/{thread}/runs/stream"))
        .json(&body)
        .send()
        .await?;
    let mut seen = String::new();
    let mut first = None;
    while let Some(chunk) = response.chunk().await? {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if first.is_none() && seen.contains("event: values") {
            first = Some(sent.elapsed());
        }
    }
    if seen.contains("event: error") {
        return Err(format!("a run failed: {seen}").into());
    }
    first.ok_or_else(|| "no values event".into())
}

/// One background run of `nest`, joined: checked to have ended well.
async fn background(c: &Client, base: &str) -> Result<(), Error> {
    let thread = new_thread(c, base).await?;
    let body = json!({"assistant_id": "nest", "input": {"n": 1}});
    let run: Value = c
        .post(format!("{base}/threads/{thread}/runs"))
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    let run_id = run["run_id"].as_str().ok_or("no run id")?;
    let url = format!("{base}/threads/{thread}/runs/{run_id}/join");
    let out: Value = c.get(url).send().await?.json().await?;
    match out["n"].as_u64() {
        Some(20) => Ok(()),
        _ => Err(format!("a run ended with {out}").into()),
    }
}

/// Runs/s of `runs` background runs, `clients` at once, round-robin.
async fn throughput(args: &Args, nodes: &[Node]) -> Result<f64, Error> {
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.clients {
        let (bases, next, runs) = (bases.clone(), next.clone(), args.runs);
        tasks.push(tokio::spawn(async move {
            let c = Client::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= runs {
                    return Ok::<(), Error>(());
                }
                background(&c, &bases[i % bases.len()]).await?;
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(args.runs as f64 / started.elapsed().as_secs_f64())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1000.0
}

/// One row: time to first event (median, p95, ms) and runs/s.
async fn measure(args: &Args, servers: usize) -> Result<(f64, f64, f64), Error> {
    let url = database(servers).await?;
    let mut nodes = Vec::new();
    for _ in 0..servers {
        nodes.push(start(args, &url, &[]).await?);
    }
    let c = Client::new();
    for node in &nodes {
        first_event(&c, &node.base).await?; // warm up
    }
    let mut times = Vec::new();
    for i in 0..args.samples {
        times.push(first_event(&c, &nodes[i % servers].base).await?);
    }
    times.sort();
    let rate = throughput(args, &nodes).await?;
    Ok((percentile(&times, 0.5), percentile(&times, 0.95), rate))
}

/// Follows a run's join stream on `base` until the run's second attempt
/// announces itself (its `metadata` event with `"attempt":2`): the instant
/// it arrived. The stream replays the first attempt's events first, so the
/// whole stream is read, not only its first chunk.
async fn second_attempt(c: Client, url: String) -> Result<Instant, Error> {
    let mut response = c.get(&url).send().await?.error_for_status()?;
    let mut seen = String::new();
    while let Some(chunk) = response.chunk().await? {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains("\"attempt\":2") {
            return Ok(Instant::now());
        }
    }
    Err(format!("the join stream ended without a second attempt: {seen}").into())
}

/// One failover: the time from `kill -9` of the server running a
/// background run to the first event of the run on the other, as a client
/// joined to the run on the other server sees it.
async fn failover(args: &Args, n: usize) -> Result<Duration, Error> {
    let url = database(100 + n).await?;
    let lease = args.lease_ms.to_string();
    let mut a = start(args, &url, &["--lease-ms", &lease]).await?;
    let c = Client::new();
    let thread = new_thread(&c, &a.base).await?;
    let body = json!({"assistant_id": "countdown", "input": {"n": 100}});
    let run: Value = c
        .post(format!("{}/threads/{thread}/runs", a.base))
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    let run_id = run["run_id"].as_str().ok_or("no run id")?.to_owned();
    let b = start(args, &url, &["--lease-ms", &lease]).await?;
    let stream = format!("{}/threads/{thread}/runs/{run_id}/stream", b.base);
    let follower = tokio::spawn(second_attempt(c.clone(), stream));
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.child.kill()?;
    let killed = Instant::now();
    match tokio::time::timeout(Duration::from_secs(60), follower).await {
        Ok(seen) => Ok(seen??.duration_since(killed)),
        Err(_) => Err("the run was never taken over".into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = args()?;
    println!("| servers | first event, median (ms) | first event, p95 (ms) | runs/s |");
    println!("|---|---|---|---|");
    for &servers in &args.servers {
        let (median, p95, rate) = measure(&args, servers).await?;
        println!("| {servers} | {median:.1} | {p95:.1} | {rate:.1} |");
    }
    let mut costs = Vec::new();
    for n in 0..args.failovers {
        costs.push(failover(&args, n).await?.as_secs_f64());
    }
    let shown: Vec<String> = costs.iter().map(|s| format!("{s:.2}")).collect();
    println!(
        "\nfailover (kill -9 to the run's first event on another server, lease {} ms): {} s",
        args.lease_ms,
        shown.join(", ")
    );
    Ok(())
}
