//! The load client of `benches/server_side_by_side.sh`: drives any server
//! of LangGraph's Agent Server API (ours or the official one) the same way
//! over plain HTTP, and measures it.
//!
//! ```text
//! cargo bench -p agent-state-server --bench agent_server_load -- \
//!     run --url http://127.0.0.1:2024 --pid PID --label NAME --out FILE \
//!     [--db-pid PID] \
//!     [--graph debate] [--input JSON] [--expect KEY=VALUE] \
//!     [--warmup 3] [--samples 20] [--clients 1,16] [--seconds 10]
//! cargo bench -p agent-state-server --bench agent_server_load -- \
//!     table FILE...
//! ```
//!
//! A run is what a client such as `useStream` does: create a thread, then
//! `POST /threads/{id}/runs/stream` with the `values`, `messages-tuple`
//! and `custom` modes, read to the end. Every run is checked: no `error`
//! event, the same count of each event as the first run, and the last
//! `values` holding `--expect`. `run` writes one JSON object to `--out`;
//! `table` prints the Markdown table of several, each beside the first.
//!
//! The client runs on one thread (a current-thread runtime), and reports
//! the CPU time it used, so a reader can tell whether it or the server was
//! the limit; and the time the server's threads waited for a CPU while
//! runnable, which on a shared machine is the others' share.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod args;
mod proc_stat;
mod sse;
mod table;

use args::Args;

type Error = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage: agent_server_load run --url URL --pid PID --label NAME \
    --out FILE [flags] | table FILE..";

/// What one streamed run gave.
struct RunOutcome {
    /// From sending the request to the first `values` or `messages` event.
    first_event: Duration,
    /// Events by name.
    counts: BTreeMap<String, usize>,
}

fn main() -> Result<(), Error> {
    let argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match argv.first().map(String::as_str) {
        Some("run") => {
            let args = Args::parse(&argv[1..])?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(measure(args))
        }
        Some("table") => table::print(&argv[1..]),
        _ => Err(USAGE.into()),
    }
}

/// Creates a thread and streams one run on it to the end.
async fn one_run(client: &reqwest::Client, args: &Args) -> Result<RunOutcome, Error> {
    let thread = post(client, &format!("{}/threads", args.url), &json!({})).await?;
    let thread: Value = serde_json::from_slice(&thread.bytes().await?)?;
    let id = thread["thread_id"].as_str().ok_or("no thread_id")?;
    let body = json!({
        "assistant_id": args.graph,
        "input": args.input,
        "stream_mode": ["values", "messages-tuple", "custom"],
    });
    let started = Instant::now();
    let url = format!("{}/threads/{id}/runs/stream", args.url);
    let mut response = post(client, &url, &body).await?;
    let mut reader = sse::Reader::default();
    let mut first_event = None;
    while let Some(bytes) = response.chunk().await? {
        reader.push(&bytes);
        if first_event.is_none() && reader.seen_content() {
            first_event = Some(started.elapsed());
        }
    }
    let (counts, last_values) = reader.finish()?;
    check_final(args, last_values.as_deref())?;
    let first_event = first_event.ok_or("no values or messages event")?;
    Ok(RunOutcome {
        first_event,
        counts,
    })
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> Result<reqwest::Response, Error> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body)?)
        .send()
        .await?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(format!("POST {url}: {status}: {text}").into());
    }
    Ok(response)
}

/// The last `values` event holds each `--expect KEY=VALUE`.
fn check_final(args: &Args, last_values: Option<&str>) -> Result<(), Error> {
    let values: Value = serde_json::from_str(last_values.ok_or("no values event")?)?;
    for (key, want) in &args.expect {
        let got = match &values[key] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if &got != want {
            return Err(format!("the last values have {key} = {got}, not {want}").into());
        }
    }
    Ok(())
}

/// Every run must stream the same events as the warm-up's first run.
fn check(expected: &BTreeMap<String, usize>, outcome: &RunOutcome) -> Result<(), Error> {
    if *expected != outcome.counts {
        let got = &outcome.counts;
        return Err(format!("a run streamed {got:?}, the first {expected:?}").into());
    }
    Ok(())
}

/// The whole measurement: warm-up, time to the first event (runs one
/// after the other), then runs per second with each client count, the
/// server's memory sampled throughout.
async fn measure(args: Args) -> Result<(), Error> {
    let args = Arc::new(args);
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()?;
    let memory = proc_stat::Sampler::start(args.pid);
    let db_memory = args.db_pid.map(proc_stat::Sampler::start);
    let cpu_before = proc_stat::self_cpu()?;
    let wall = Instant::now();
    let expected = one_run(&client, &args).await?.counts;
    for _ in 1..args.warmup {
        check(&expected, &one_run(&client, &args).await?)?;
    }
    let idle = proc_stat::tree_rss(args.pid)?;
    let first = first_events(&client, &args, &expected).await?;
    let mut throughput = Vec::new();
    for &clients in &args.clients {
        throughput.push(throughput_with(&client, &args, &expected, clients).await?);
    }
    let peak = memory.stop().await;
    let db_peak = match db_memory {
        Some(sampler) => Some(mib(sampler.stop().await)),
        None => None,
    };
    let report = json!({
        "label": args.label,
        "first_event_ms": first,
        "throughput": throughput,
        "rss_idle_mib": mib(idle),
        "rss_peak_mib": mib(peak),
        "hwm_mib": mib(proc_stat::hwm(args.pid)?),
        "db_rss_peak_mib": db_peak,
        "client_cpu_s": proc_stat::self_cpu()? - cpu_before,
        "wall_s": wall.elapsed().as_secs_f64(),
        "events_per_run": expected,
    });
    std::fs::write(&args.out, serde_json::to_string_pretty(&report)?)?;
    eprintln!("{report}");
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Median, 90th percentile and least of `--samples` runs' first events,
/// in ms.
async fn first_events(
    client: &reqwest::Client,
    args: &Args,
    expected: &BTreeMap<String, usize>,
) -> Result<Value, Error> {
    let mut ms = Vec::with_capacity(args.samples);
    for _ in 0..args.samples.max(1) {
        let outcome = one_run(client, args).await?;
        check(expected, &outcome)?;
        ms.push(outcome.first_event.as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    Ok(json!({"median": at(0.5), "p90": at(0.9), "min": ms[0], "samples": ms.len()}))
}

/// `clients` loops, each running one run after another until `--seconds`
/// have passed; a run under way then is finished and counted, and the
/// time is taken when the last one ends.
async fn throughput_with(
    client: &reqwest::Client,
    args: &Arc<Args>,
    expected: &BTreeMap<String, usize>,
    clients: usize,
) -> Result<Value, Error> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let server_before = proc_stat::tree_cpu(args.pid)?;
    let sched_before = proc_stat::tree_sched(args.pid);
    let db_before = args.db_pid.map(proc_stat::tree_cpu).transpose()?;
    let cpu_before = proc_stat::self_cpu()?;
    let started = Instant::now();
    let mut loops = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (client, args, expected) = (client.clone(), Arc::clone(args), expected.clone());
        loops.spawn(async move {
            let mut runs = 0usize;
            while Instant::now() < deadline {
                check(&expected, &one_run(&client, &args).await?)?;
                runs += 1;
            }
            Ok::<_, Error>(runs)
        });
    }
    let mut runs = 0;
    while let Some(done) = loops.join_next().await {
        runs += done??;
    }
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu = proc_stat::tree_cpu(args.pid)? - server_before;
    let sched = proc_stat::tree_sched(args.pid);
    let (ran, waited) = (sched.0 - sched_before.0, sched.1 - sched_before.1);
    let db_cpu = match (args.db_pid, db_before) {
        (Some(pid), Some(before)) => {
            Some((proc_stat::tree_cpu(pid)? - before) * 1e3 / runs.max(1) as f64)
        }
        _ => None,
    };
    Ok(json!({
        "clients": clients,
        "runs": runs,
        "seconds": seconds,
        "runs_per_s": runs as f64 / seconds,
        "server_cpu_ms_per_run": server_cpu * 1e3 / runs.max(1) as f64,
        "client_cpu_share": (proc_stat::self_cpu()? - cpu_before) / seconds,
        "server_wait_per_cpu": waited / ran.max(1e-9),
        "db_cpu_ms_per_run": db_cpu,
    }))
}
