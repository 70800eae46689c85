//! What a store's search costs: a query scored over 10,000 vectors of 256
//! dimensions (the exact scan, µs per query), a search under a small
//! namespace beside 10,000 items elsewhere, and a filter-only search.
//! SQLite always, memory beside it, PostgreSQL (pgvector and the exact
//! scan, on a throwaway server as the tests start it) with the `postgres`
//! feature:
//!
//! `cargo bench --bench store_search --features postgres`

#[cfg(feature = "postgres")]
#[path = "../tests/support/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::time::Instant;

use agent_state::store::{
    Filter, IndexConfig, IndexFields, MemoryStore, Op, PutOp, SearchOp, SqliteStore, Store,
    StoreExt, Ttl,
};
use serde_json::json;

const DIMS: usize = 256;
const ITEMS: usize = 10_000;

/// 256 pseudo-random components from a text's hash.
fn hashed(texts: &[String]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|t| {
            let mut state = t.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            (0..DIMS)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect()
        })
        .collect()
}

fn index() -> IndexConfig {
    IndexConfig::new(DIMS, hashed).fields(["text"])
}

/// `ITEMS` embedded items under `["docs", "u<i % 10>"]`, and as many not
/// embedded under `["other"]`, in batches of 500.
async fn fill(store: &dyn Store) {
    for start in (0..ITEMS).step_by(500) {
        let mut ops = Vec::new();
        for i in start..start + 500 {
            let doc = json!({"text": format!("document {i}"), "n": i});
            ops.push(put(
                vec!["docs".into(), format!("u{}", i % 10)],
                i,
                doc,
                true,
            ));
            ops.push(put(vec!["other".into()], i, json!({"n": i}), false));
        }
        store.batch(ops).await.expect("filled");
    }
}

fn put(namespace: Vec<String>, i: usize, value: serde_json::Value, embed: bool) -> Op {
    Op::Put(PutOp {
        namespace,
        key: format!("k{i}"),
        value: value.as_object().cloned(),
        index: if embed {
            IndexFields::Configured
        } else {
            IndexFields::Off
        },
        ttl: Ttl::Configured,
    })
}

/// Mean µs of `runs` runs of `op`.
async fn time(store: &dyn Store, op: SearchOp, runs: u32) -> f64 {
    store.search(op.clone()).await.expect("warm-up");
    let started = Instant::now();
    for _ in 0..runs {
        let found = store.search(op.clone()).await.expect("searched");
        assert!(!found.is_empty());
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(runs)
}

async fn report(name: &str, store: &dyn Store) {
    let started = Instant::now();
    fill(store).await;
    let fill_ms = started.elapsed().as_secs_f64() * 1e3;
    let query = time(store, SearchOp::new(["docs"]).query("document 42"), 20).await;
    let small = time(
        store,
        SearchOp::new(["docs", "u3"]).query("document 42"),
        50,
    )
    .await;
    let filter = Filter::new().op("n", "$lt", 100).expect("a filter");
    let filtered = time(store, SearchOp::new(["docs"]).filter(filter), 20).await;
    let get = {
        let started = Instant::now();
        for i in 0..1000 {
            store.get(["other"], &format!("k{i}")).await.expect("read");
        }
        started.elapsed().as_secs_f64() * 1e3
    };
    println!(
        "{name:<22} fill {fill_ms:>8.0} ms | query over {ITEMS} × {DIMS}: {query:>9.0} µs | \
         over 1,000: {small:>8.0} µs | filter over {ITEMS}: {filtered:>8.0} µs | get: {get:>6.1} µs"
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::temp_dir().join(format!("agent-state-store-bench-{}", std::process::id()));
    let sqlite = SqliteStore::open(dir.join("store.db"))
        .expect("opened")
        .with_index(index());
    report("memory", &MemoryStore::new().with_index(index())).await;
    report("sqlite (exact)", &sqlite).await;
    drop(sqlite);
    std::fs::remove_dir_all(&dir).ok();
    #[cfg(feature = "postgres")]
    postgres().await;
}

#[cfg(feature = "postgres")]
async fn postgres() {
    use agent_state::store::PostgresStore;
    let (admin, conn) = tokio_postgres::connect(pg::url(), tokio_postgres::NoTls)
        .await
        .expect("the server");
    tokio::spawn(conn);
    admin
        .batch_execute("DROP DATABASE IF EXISTS store_bench")
        .await
        .expect("dropped");
    admin
        .batch_execute("CREATE DATABASE store_bench")
        .await
        .expect("created");
    let url = format!("{} dbname=store_bench", pg::url());
    let store = PostgresStore::connect(&url)
        .await
        .expect("connected")
        .with_index(index());
    let name = if store.uses_pgvector() {
        "postgres (pgvector)"
    } else {
        "postgres (no pgvector)"
    };
    report(name, &store).await;
    let exact = PostgresStore::connect(&url)
        .await
        .expect("connected")
        .with_index(index())
        .exact_vectors();
    let query = time(&exact, SearchOp::new(["docs"]).query("document 42"), 20).await;
    println!("postgres (exact scan)  query over {ITEMS} × {DIMS}: {query:>9.0} µs");
}
