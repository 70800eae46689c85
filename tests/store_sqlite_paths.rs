//! `SqliteStore`'s fast paths (a namespace streamed newest first from its
//! index, queries scored from the cache of vectors, a lone get as one
//! statement) answer exactly as `MemoryStore`, the reference backend, on
//! the same seeded workload: nested namespaces, items with and without
//! vectors, ties of `updated_at` inside a batch, filters, offsets, TTLs,
//! and writes by another connection between searches.

#![cfg(feature = "sqlite")]

use agent_state::store::{
    Filter, IndexConfig, IndexFields, MemoryStore, Op, OpResult, PutOp, SearchItem, SearchOp,
    SqliteStore, Store, StoreExt, Ttl,
};
use serde_json::{json, Map, Value};

const DIMS: usize = 12;

fn embed(texts: &[String]) -> Vec<Vec<f32>> {
    let one = |text: &String| {
        let mut v = vec![0f32; DIMS];
        text.bytes().for_each(|b| v[b as usize % DIMS] += 1.0);
        v
    };
    texts.iter().map(one).collect()
}

fn index() -> IndexConfig {
    IndexConfig::new(DIMS, embed).fields(["text"])
}

/// xorshift64*: the same workload on every run.
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    }
}

const SPACES: [&[&str]; 5] = [&["a"], &["a", "b"], &["a", "b", "c"], &["a-c"], &["z"]];

fn put(draws: &mut Draws, i: usize) -> Op {
    let ns = SPACES[draws.below(SPACES.len())];
    let mut value = Map::new();
    value.insert("g".into(), json!(draws.below(3)));
    if draws.below(4) > 0 {
        value.insert(
            "text".into(),
            json!(format!("w{} x{}", i % 7, draws.below(50))),
        );
    }
    Op::Put(PutOp {
        namespace: ns.iter().map(|s| s.to_string()).collect(),
        key: format!("k{}", draws.below(40)),
        value: (draws.below(10) > 0).then_some(value),
        index: if draws.below(5) == 0 {
            IndexFields::Off
        } else {
            IndexFields::Configured
        },
        ttl: if draws.below(8) == 0 {
            Ttl::Minutes(60.0)
        } else {
            Ttl::Configured
        },
    })
}

/// Namespace, key, value and whether scored of each item, in order: the
/// times differ between stores, their order does not.
fn seen(items: &[SearchItem]) -> Vec<(Vec<String>, String, Value, bool)> {
    items
        .iter()
        .map(|i| {
            (
                i.namespace.clone(),
                i.key.clone(),
                Value::Object(i.value.clone()),
                i.score.is_some(),
            )
        })
        .collect()
}

fn searches(round: usize) -> Vec<SearchOp> {
    let mut out = Vec::new();
    for prefix in [
        &[][..],
        &["a"],
        &["a", "b"],
        &["a-c"],
        &["a", "b", "c"],
        &["q"],
    ] {
        for (offset, limit) in [(0, 10), (3, 4), (0, 100), (7, 0)] {
            let base = SearchOp::new(prefix.iter().copied())
                .offset(offset)
                .limit(limit);
            out.push(base.clone());
            out.push(base.clone().filter(Filter::new().eq("g", 1)));
            out.push(base.clone().filter(Filter::new().eq("g", 1.0)));
            out.push(base.clone().query(format!("w{} x{}", round % 7, round)));
            out.push(base.query("x3 w1").filter(Filter::new().eq("g", 2)));
        }
    }
    out
}

async fn same_answers(memory: &MemoryStore, sqlite: &SqliteStore, round: usize) {
    for op in searches(round) {
        let want = memory.search(op.clone()).await.unwrap();
        let have = sqlite.search(op.clone()).await.unwrap();
        assert_eq!(seen(&have), seen(&want), "{op:?}");
        for (h, w) in have.iter().zip(&want) {
            let (h, w) = (h.score.unwrap_or(0.0), w.score.unwrap_or(0.0));
            assert!((h - w).abs() < 1e-9, "{op:?}: {h} vs {w}");
        }
    }
    for ns in SPACES {
        for k in 0..40 {
            let key = format!("k{k}");
            let want = memory.get(ns.iter().copied(), &key).await.unwrap();
            let have = sqlite.get(ns.iter().copied(), &key).await.unwrap();
            assert_eq!(have.map(|i| i.value), want.map(|i| i.value), "{ns:?} {key}");
        }
    }
}

#[tokio::test]
async fn the_fast_paths_answer_as_the_memory_store() {
    let dir = std::env::temp_dir().join(format!("agent-state-sqlite-paths-{}", std::process::id()));
    let path = dir.join("store.db");
    let _ = std::fs::remove_dir_all(&dir);
    let memory = MemoryStore::new().with_index(index());
    let sqlite = SqliteStore::open(&path).unwrap().with_index(index());
    // Another handle on the file: its writes must reach the first one's
    // cached vectors.
    let other = SqliteStore::open(&path).unwrap().with_index(index());
    let mut draws = Draws(0x5EED);
    for round in 0..12 {
        let ops: Vec<Op> = (0..1 + draws.below(30))
            .map(|i| put(&mut draws, i))
            .collect();
        memory.batch(ops.clone()).await.unwrap();
        let writer: &SqliteStore = if round % 3 == 2 { &other } else { &sqlite };
        writer.batch(ops).await.unwrap();
        same_answers(&memory, &sqlite, round).await;
    }
    let results = sqlite
        .batch(vec![
            Op::Search(SearchOp::new(["a"]).query("w1")),
            Op::Search(SearchOp::new(["a"])),
        ])
        .await
        .unwrap();
    assert!(
        matches!(&results[..], [OpResult::Items(a), OpResult::Items(b)] if !a.is_empty() && !b.is_empty())
    );
    drop((sqlite, other));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A query's cached vectors follow a commit of another connection: only
/// SQLite's `data_version` tells of it (no TTL here, so reads write
/// nothing), and a delete, an overwrite and a new item all show.
#[tokio::test]
async fn cached_vectors_follow_another_connections_commits() {
    let dir = std::env::temp_dir().join(format!("agent-state-sqlite-cache-{}", std::process::id()));
    let path = dir.join("store.db");
    let _ = std::fs::remove_dir_all(&dir);
    let store = SqliteStore::open(&path).unwrap().with_index(index());
    let other = SqliteStore::open(&path).unwrap().with_index(index());
    let keys = |found: Vec<SearchItem>| found.into_iter().map(|i| i.item.key).collect::<Vec<_>>();
    let query = || SearchOp::new(["n"]).query("aaaa");
    for (key, text) in [("far", "zzzz"), ("near", "aaab")] {
        store
            .put(["n"], key, json!({ "text": text }))
            .await
            .unwrap();
    }
    assert_eq!(keys(store.search(query()).await.unwrap()), ["near", "far"]);
    assert_eq!(keys(store.search(query()).await.unwrap()), ["near", "far"]);
    other
        .put(["n"], "same", json!({"text": "aaaa"}))
        .await
        .unwrap();
    assert_eq!(
        keys(store.search(query()).await.unwrap()),
        ["same", "near", "far"]
    );
    other
        .put(["n"], "far", json!({"text": "aaaa"}))
        .await
        .unwrap();
    other.delete(["n"], "near").await.unwrap();
    let found = store.search(query()).await.unwrap();
    assert_eq!(found.len(), 2);
    assert!(found
        .iter()
        .all(|i| i.score.is_some_and(|s| (s - 1.0).abs() < 1e-9)));
    drop((store, other));
    let _ = std::fs::remove_dir_all(&dir);
}
