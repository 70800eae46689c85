//! The debate server: `cargo run -p debate-server`, then open
//! <http://127.0.0.1:3000>, or point any LangGraph client at it (graphs
//! `debate`, `approval`, `agent`).
//!
//! ```sh
//! cargo run -p debate-server                               # SQLite: debate-server.db
//! cargo run -p debate-server -- --db /tmp/debates.db --addr 0.0.0.0:8080
//! cargo run -p debate-server -- --pg postgresql://user@host/db   # any number of servers
//! cargo run -p debate-server -- --token-delay-ms 0 --log debug  # spans with durations
//! OPENAI_API_KEY=sk-.. cargo run -p debate-server --features openai
//! ```
//!
//! Options (or environment variables): `--addr` (`DEBATE_ADDR`, default
//! `127.0.0.1:3000`), `--db PATH` (`DEBATE_DB`, default `debate-server.db`
//! in the current directory: threads, runs and checkpoints), `--pg URL`
//! (`DEBATE_PG_URL`: PostgreSQL instead, shared by any number of these
//! servers), `--token-delay-ms N` (`DEBATE_TOKEN_DELAY_MS`,
//! default 40: the scripted model's pause before each token), `--log
//! LEVEL` (`DEBATE_LOG`, default `info`: requests and runs; `debug` adds
//! every step and node).

use std::time::Duration;

use debate_server::{debate::model_from_env, server, Store};
use tracing_subscriber::fmt::format::FmtSpan;

struct Options {
    addr: String,
    store: Store,
    token_delay: Duration,
    log: tracing::Level,
}

fn options() -> Result<Options, String> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let mut addr = env("DEBATE_ADDR", "127.0.0.1:3000");
    let mut db = env("DEBATE_DB", "debate-server.db");
    let mut pg = std::env::var("DEBATE_PG_URL").ok();
    let mut delay = env("DEBATE_TOKEN_DELAY_MS", "40");
    let mut log = env("DEBATE_LOG", "info");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--addr" => addr = value,
            "--db" => db = value,
            "--pg" => pg = Some(value),
            "--token-delay-ms" => delay = value,
            "--log" => log = value,
            other => {
                return Err(format!(
                "unknown option `{other}`; expected --addr, --db, --pg, --token-delay-ms or --log"
            ))
            }
        }
    }
    let delay: u64 = delay
        .parse()
        .map_err(|e| format!("--token-delay-ms `{delay}`: {e}"))?;
    Ok(Options {
        store: pg.map_or_else(|| Store::Sqlite(db.into()), Store::Postgres),
        addr,
        token_delay: Duration::from_millis(delay),
        log: log
            .parse()
            .map_err(|_| format!("--log `{log}`: expected error, warn, info, debug or trace"))?,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = options()?;
    tracing_subscriber::fmt()
        .with_max_level(opts.log)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();
    let (model, what) = model_from_env(opts.token_delay);
    match &opts.store {
        Store::Sqlite(path) => tracing::info!("threads in the SQLite file {}", path.display()),
        // The URL may hold a password: not logged.
        Store::Postgres(_) => tracing::info!("threads in PostgreSQL"),
    }
    let listening = server(opts.store, model)?.bind(&opts.addr).await?;
    tracing::info!("debaters on {what}");
    // The line scripts and tests wait for (with port 0, the port the
    // system chose).
    println!("listening on http://{}", listening.local_addr());
    listening.serve().await?;
    Ok(())
}
