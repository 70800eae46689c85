//! The agent-state half of the store benchmark
//! (`bash benches/store_side_by_side.sh`): the workload of
//! `benches/langgraph/store.py` (LangGraph's stores), on ours — change both
//! or neither.
//!
//! * N items (`--n`, default 100,000) over 100 namespaces `["bench",
//!   "ns<j>"]`, item i in namespace i % 100 under key `k<i>`, value
//!   `{"i", "group": (i / 100) % 10, "text"}`. All but the last 1,000 are
//!   loaded by `batch` of 1,000 puts (`put_batch`, µs per item), the last
//!   1,000 by one `put` each (`put`).
//! * `get`: 10,000 gets of keys drawn by a seeded generator.
//! * `search_filter`: 1,000 searches of one namespace (N / 100 items) with
//!   the filter `{"group": 3}` (a tenth match), limit 10.
//! * `semantic_put` / `semantic_search`: a store with a 100-dimension
//!   index over `text` (the counts of its characters by code point modulo
//!   100, as in Python), 1,000 items in `["sem"]`, then 200 searches,
//!   limit 10.
//!
//! Every answer is checked. Output: one JSON object per line, as the
//! Python half writes: `{"impl": "agent-state", "backend", "op", "n",
//! "ops", "us_per_op"}`.
//!
//! `cargo bench --bench store --features postgres -- [--backend memory|sqlite|postgres] [--pg-url URL] [--n N]`

use std::sync::Arc;
use std::time::Instant;

use agent_state::serde_json::{json, Value};
use agent_state::store::{
    Filter, IndexConfig, IndexFields, MemoryStore, Op, PutOp, SearchOp, SqliteStore, Store,
    StoreExt, Ttl,
};

const NAMESPACES: usize = 100;
const PUTS: usize = 1_000;
const GETS: usize = 10_000;
const FILTER_SEARCHES: usize = 1_000;
const SEMANTIC_ITEMS: usize = 1_000;
const SEMANTIC_SEARCHES: usize = 200;
const DIMS: usize = 100;

/// The fixed embedding: counts of the characters by code point mod 100.
fn embed(texts: &[String]) -> Vec<Vec<f32>> {
    let one = |text: &String| {
        let mut vector = vec![0f32; DIMS];
        text.chars().for_each(|c| vector[c as usize % DIMS] += 1.0);
        vector
    };
    texts.iter().map(one).collect()
}

fn place(i: usize) -> ([String; 2], String) {
    (
        ["bench".into(), format!("ns{}", i % NAMESPACES)],
        format!("k{i}"),
    )
}

fn value(i: usize) -> Value {
    let group = (i / NAMESPACES) % 10;
    json!({"i": i, "group": group, "text": format!("item {i} of group {group}")})
}

fn line(backend: &str, op: &str, n: usize, ops: usize, started: Instant) {
    let us = started.elapsed().as_secs_f64() * 1e6 / ops as f64;
    let record = json!({"impl": "agent-state", "backend": backend, "op": op, "n": n, "ops": ops,
        "us_per_op": (us * 1000.0).round() / 1000.0});
    println!("{record}");
}

/// A seeded generator (xorshift64*): keys and namespaces drawn alike on
/// every run.
fn draws(seed: u64, count: usize, below: usize) -> Vec<usize> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..count)
        .map(|_| (next() % below as u64) as usize)
        .collect()
}

fn put_op(i: usize) -> Op {
    let (namespace, key) = place(i);
    let Value::Object(value) = value(i) else {
        unreachable!("an object")
    };
    Op::Put(PutOp {
        namespace: namespace.to_vec(),
        key,
        value: Some(value),
        index: IndexFields::Configured,
        ttl: Ttl::Configured,
    })
}

async fn puts(store: &dyn Store, backend: &str, n: usize) {
    let loaded = n.saturating_sub(PUTS);
    let started = Instant::now();
    for first in (0..loaded).step_by(PUTS) {
        let ops = (first..(first + PUTS).min(loaded)).map(put_op).collect();
        store.batch(ops).await.expect("batch of puts");
    }
    if loaded > 0 {
        line(backend, "put_batch", n, loaded, started);
    }
    let started = Instant::now();
    for i in loaded..n {
        let (namespace, key) = place(i);
        store.put(namespace, &key, value(i)).await.expect("put");
    }
    line(backend, "put", n, n - loaded, started);
}

async fn gets_and_searches(store: &dyn Store, backend: &str, n: usize) {
    let wanted = draws(7, GETS, n);
    let started = Instant::now();
    let mut found = Vec::with_capacity(GETS);
    for &i in &wanted {
        let (namespace, key) = place(i);
        found.push(store.get(namespace, &key).await.expect("get"));
    }
    line(backend, "get", n, GETS, started);
    for (item, i) in found.iter().zip(&wanted) {
        assert_eq!(item.as_ref().expect("stored").value["i"], *i);
    }
    let spaces = draws(11, FILTER_SEARCHES, NAMESPACES);
    let filter = Filter::new().eq("group", 3);
    let started = Instant::now();
    let mut results = Vec::with_capacity(FILTER_SEARCHES);
    for j in spaces {
        let op = SearchOp::new(["bench".to_owned(), format!("ns{j}")]);
        results.push(
            store
                .search(op.filter(filter.clone()).limit(10))
                .await
                .expect("search"),
        );
    }
    line(backend, "search_filter", n, FILTER_SEARCHES, started);
    let want = 10.min(n / NAMESPACES / 10);
    assert!(results
        .iter()
        .all(|r| r.len() == want && r.iter().all(|i| i.value["group"] == 3)));
}

async fn semantic(store: &dyn Store, backend: &str) {
    let started = Instant::now();
    for i in 0..SEMANTIC_ITEMS {
        let text = format!("note {i} about topic {} and colour {}", i % 37, i % 11);
        store
            .put(["sem"], &format!("n{i}"), json!({ "text": text }))
            .await
            .expect("put");
    }
    line(
        backend,
        "semantic_put",
        SEMANTIC_ITEMS,
        SEMANTIC_ITEMS,
        started,
    );
    let started = Instant::now();
    let mut results = Vec::with_capacity(SEMANTIC_SEARCHES);
    for q in 0..SEMANTIC_SEARCHES {
        let query = format!("topic {} colour {}", q % 37, q % 11);
        results.push(
            store
                .search(SearchOp::new(["sem"]).query(query).limit(10))
                .await
                .expect("search"),
        );
    }
    line(
        backend,
        "semantic_search",
        SEMANTIC_ITEMS,
        SEMANTIC_SEARCHES,
        started,
    );
    assert!(results
        .iter()
        .all(|r| r.len() == 10 && r[0].score.is_some()));
}

fn index() -> IndexConfig {
    IndexConfig::new(DIMS, embed).fields(["text"])
}

/// A fresh store of `backend`, with the index when asked.
async fn open(
    backend: &str,
    pg_url: Option<&str>,
    dir: &std::path::Path,
    indexed: bool,
) -> Arc<dyn Store> {
    let file = dir.join(if indexed { "sem.db" } else { "items.db" });
    match backend {
        "memory" if indexed => Arc::new(MemoryStore::new().with_index(index())),
        "memory" => Arc::new(MemoryStore::new()),
        "sqlite" => {
            let store = SqliteStore::open(file).expect("the bench's SQLite file opens");
            Arc::new(if indexed {
                store.with_index(index())
            } else {
                store
            })
        }
        _ => open_postgres(pg_url.expect("--pg-url"), indexed).await,
    }
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str, indexed: bool) -> Arc<dyn Store> {
    use agent_state::store::{ListNamespacesOp, PostgresStore};
    let store = PostgresStore::connect(url)
        .await
        .expect("PostgreSQL accepts a connection");
    // A fresh start for this part: what an earlier run left of its own
    // namespace goes, in one batch.
    let root = if indexed { "sem" } else { "bench" };
    let spaces =
        store.list_namespaces(ListNamespacesOp::default().prefix([root]).limit(usize::MAX));
    let mut deletes = Vec::new();
    for ns in spaces.await.expect("list") {
        let items = store
            .search(SearchOp::new(ns.clone()).limit(usize::MAX))
            .await
            .expect("search");
        deletes.extend(items.into_iter().map(|item| {
            Op::Put(PutOp {
                namespace: ns.clone(),
                key: item.key.clone(),
                value: None,
                index: IndexFields::Configured,
                ttl: Ttl::Configured,
            })
        }));
    }
    if !deletes.is_empty() {
        store.batch(deletes).await.expect("the old items go");
    }
    Arc::new(if indexed {
        store.with_index(index())
    } else {
        store
    })
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_: &str, _: bool) -> Arc<dyn Store> {
    panic!("--backend postgres needs `--features postgres`")
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).map(String::as_str)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let backend = arg(&args, "--backend").unwrap_or("memory").to_owned();
    let n: usize = arg(&args, "--n").map_or(100_000, |n| n.parse().expect("--n N"));
    assert!(n >= NAMESPACES, "--n must be at least {NAMESPACES}");
    let pg_url = arg(&args, "--pg-url").map(str::to_owned);
    let dir = std::env::temp_dir().join(format!("agent-state-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the bench's directory");
    // PostgreSQL's driver needs Tokio; the other stores run on it alike.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("Tokio");
    runtime.block_on(async {
        let store = open(&backend, pg_url.as_deref(), &dir, false).await;
        puts(&*store, &backend, n).await;
        gets_and_searches(&*store, &backend, n).await;
        let store = open(&backend, pg_url.as_deref(), &dir, true).await;
        semantic(&*store, &backend).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}
