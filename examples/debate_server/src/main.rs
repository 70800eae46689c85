//! The debate server: `cargo run -p debate-server`, then open
//! <http://127.0.0.1:3000>.
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
//! in the current directory), `--pg URL` (`DEBATE_PG_URL`: PostgreSQL
//! instead of SQLite), `--token-delay-ms N` (`DEBATE_TOKEN_DELAY_MS`,
//! default 40: the scripted model's pause before each token), `--log
//! LEVEL` (`DEBATE_LOG`, default `info`: requests and runs; `debug` adds
//! every step and node).

use std::time::Duration;

use debate_server::{app, debate::model_from_env, serve, Store};
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
    let addr = tokio::net::lookup_host(&opts.addr)
        .await?
        .next()
        .ok_or_else(|| format!("--addr `{}` names no address", opts.addr))?;
    let (model, what) = model_from_env(opts.token_delay);
    let router = app(&opts.store, model).await?;
    match &opts.store {
        Store::Sqlite(path) => tracing::info!("threads in the SQLite file {}", path.display()),
        Store::Postgres(_) => tracing::info!("threads in PostgreSQL"),
    }
    tracing::info!("debaters on {what}");
    serve(addr, router).await?;
    Ok(())
}
