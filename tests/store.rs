//! The store's conformance suite (`support/store_cases.rs`) against every
//! backend: `MemoryStore`, `SqliteStore` on a real file, and
//! `PostgresStore` on a fresh database of a throwaway server
//! (`support/pg.rs`); then what only one backend has (its file, its
//! tables, pgvector).

#[path = "support/store_cases.rs"]
mod cases;
#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

use agent_state::checkpoint::BoxFuture;
use agent_state::store::{MemoryStore, Store, StoreError, StoreExt};
use cases::{Maker, Opts};
use serde_json::json;

/// The suite's cases, each run against the backend `$maker` makes.
macro_rules! conformance {
    ($backend:ident, $maker:expr) => {
        mod $backend {
            use super::*;
            conformance!(@cases $maker;
                put_get_overwrite_keeps_created_at,
                delete_removes_the_item,
                search_reads_under_the_prefix_only,
                filters_follow_langgraph,
                pages_newest_first,
                lists_namespaces,
                batches_read_before_and_last_put_wins,
                ttl_expires_refreshes_and_sweeps,
                semantic_search_ranks_by_similarity,
                refused_operations_write_nothing,
                typed_values_round_trip,
            );
        }
    };
    (@cases $maker:expr; $($case:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $case() {
            cases::$case(&$maker).await.unwrap();
        }
    )*};
}

struct Memory;

impl Maker for Memory {
    fn make(&self, opts: Opts) -> BoxFuture<'_, Box<dyn Store>> {
        Box::pin(async move {
            let mut store = MemoryStore::new();
            if let Some(index) = opts.index {
                store = store.with_index(index);
            }
            if let Some(ttl) = opts.ttl {
                store = store.with_ttl(ttl);
            }
            Box::new(store) as Box<dyn Store>
        })
    }
}

conformance!(memory, Memory);

#[cfg(feature = "sqlite")]
mod on_sqlite {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    use agent_state::store::{SearchOp, SqliteStore};

    use super::*;

    /// A fresh file under the target directory.
    pub fn temp_db(name: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stores");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}-{}-{n}.db", std::process::id()));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        path
    }

    pub struct Sqlite;

    impl Maker for Sqlite {
        fn make(&self, opts: Opts) -> BoxFuture<'_, Box<dyn Store>> {
            Box::pin(async move {
                let mut store = SqliteStore::open(temp_db("suite")).unwrap();
                if let Some(index) = opts.index {
                    store = store.with_index(index);
                }
                if let Some(ttl) = opts.ttl {
                    store = store.with_ttl(ttl);
                }
                Box::new(store) as Box<dyn Store>
            })
        }
    }

    conformance!(suite, Sqlite);

    #[tokio::test]
    async fn one_file_holds_checkpoints_and_memories() {
        let path = temp_db("shared");
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let store = SqliteStore::open(&path).unwrap();
        store.put(["u"], "k", json!({"n": 1})).await.unwrap();
        drop(store);
        // Opened again, in either order, beside the checkpointer.
        let store = SqliteStore::beside(&saver).unwrap();
        let again = SqliteCheckpointer::open(&path).unwrap();
        assert_eq!(store.get(["u"], "k").await.unwrap().unwrap().value["n"], 1);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            tables.contains(&"agent_state_checkpoints".to_owned()),
            "{tables:?}"
        );
        assert!(tables.contains(&"store_items".to_owned()), "{tables:?}");
        assert!(
            tables.contains(&"store_embeddings".to_owned()),
            "{tables:?}"
        );
        drop((saver, again));
    }

    #[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
    struct Counter {
        #[reducer(append)]
        seen: Vec<u32>,
    }

    /// A store on the connection of a checkpointer that holds its file
    /// alone: steps and batches take turns on it, and both are kept.
    #[tokio::test]
    async fn a_store_shares_the_checkpointers_connection() {
        use agent_state::checkpoint::{Source, Thread};
        let path = temp_db("sharing");
        let saver = std::sync::Arc::new(SqliteCheckpointer::open_exclusive(&path).unwrap());
        let store = SqliteStore::sharing(saver.clone())
            .unwrap()
            .with_index(cases::word_index());
        assert_eq!(store.path(), path.as_path());
        let mut thread = Thread::<Counter, _>::open(&*saver, "t").await.unwrap();
        for n in 0..3 {
            let update = CounterUpdate::new().add_seen(n);
            thread
                .save_step(Source::Loop, [("n", update)])
                .await
                .unwrap();
            let text = format!("rust {}", "tea ".repeat(n as usize));
            store
                .put(["m"], &format!("k{n}"), json!({ "text": text }))
                .await
                .unwrap();
        }
        let found = store
            .search(SearchOp::new(["m"]).query("rust"))
            .await
            .unwrap();
        assert_eq!(found[0].key, "k0");
        drop(thread);
        drop((store, saver));
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.search(SearchOp::new(["m"])).await.unwrap().len(), 3);
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let thread = Thread::<Counter, _>::open(&saver, "t").await.unwrap();
        assert_eq!(thread.state().seen, [0, 1, 2]);
    }

    #[tokio::test]
    async fn a_corrupt_row_is_named() {
        let path = temp_db("corrupt");
        let store = SqliteStore::open(&path).unwrap();
        store
            .put(["users", "1"], "profile", json!({"n": 1}))
            .await
            .unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE store_items SET value = '{not json' WHERE key = 'profile'",
            [],
        )
        .unwrap();
        for err in [
            store.get(["users", "1"], "profile").await.unwrap_err(),
            store.search(SearchOp::new(["users"])).await.unwrap_err(),
        ] {
            match &err {
                StoreError::Corrupt { namespace, key, .. } => {
                    assert_eq!((namespace.as_str(), key.as_str()), ("users.1", "profile"));
                }
                other => panic!("not Corrupt: {other}"),
            }
            assert!(err.to_string().contains("not JSON"), "{err}");
        }
        conn.execute("UPDATE store_items SET value = '[1]'", [])
            .unwrap();
        let err = store.get(["users", "1"], "profile").await.unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
    }

    /// A put the file refuses (here through a trigger added by hand)
    /// fails the batch naming the file, and nothing of it is written.
    #[tokio::test]
    async fn a_batch_the_database_refuses_writes_nothing() {
        let path = temp_db("refused");
        let store = SqliteStore::open(&path)
            .unwrap()
            .with_index(cases::word_index());
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER no_bad BEFORE INSERT ON store_items WHEN NEW.key = 'bad'
             BEGIN SELECT RAISE(ABORT, 'no bad keys'); END;",
        )
        .unwrap();
        let ops = ["a", "b", "bad", "c"].map(|key| {
            agent_state::store::Op::Put(agent_state::store::PutOp {
                namespace: vec!["r".into()],
                key: key.into(),
                value: json!({"text": "rust"}).as_object().cloned(),
                index: agent_state::store::IndexFields::Configured,
                ttl: agent_state::store::Ttl::Configured,
            })
        });
        let err = store.batch(ops.to_vec()).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("no bad keys") && text.contains(&path.display().to_string()),
            "{text}"
        );
        assert!(store.search(SearchOp::new(["r"])).await.unwrap().is_empty());
        let vectors: i64 = conn
            .query_row("SELECT count(*) FROM store_embeddings", [], |r| r.get(0))
            .unwrap();
        assert_eq!(vectors, 0);
    }

    #[test]
    fn searches_read_a_range_of_the_primary_key() {
        let path = temp_db("plan");
        let _store = SqliteStore::open(&path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let plan = |sql: &str| -> String {
            let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let rows = st.query_map([], |r| r.get::<_, String>(3)).unwrap();
            rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ")
        };
        for table in ["store_items", "store_embeddings"] {
            let found = plan(&format!(
                "SELECT * FROM {table} WHERE (prefix = 'a.b' OR (prefix >= 'a.b.' AND prefix < 'a.b/'))"
            ));
            assert!(
                found.contains("SEARCH") && found.contains("(prefix") && !found.contains("SCAN"),
                "{table}: {found}"
            );
        }
    }

    /// Reads of a store whose items have no TTL take no write lock: they
    /// go on while another connection (a checkpoint step) holds it.
    #[tokio::test]
    async fn reads_without_ttls_do_not_wait_for_writers() {
        let path = temp_db("readers");
        let store = SqliteStore::open(&path).unwrap();
        store.put(["r"], "k", json!({"n": 1})).await.unwrap();
        let writer = rusqlite::Connection::open(&path).unwrap();
        writer.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = std::time::Instant::now();
        assert!(store.get(["r"], "k").await.unwrap().is_some());
        assert_eq!(store.search(SearchOp::new(["r"])).await.unwrap().len(), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        writer.execute_batch("COMMIT").unwrap();
        let sql = "EXPLAIN QUERY PLAN
                   SELECT EXISTS (SELECT 1 FROM store_items WHERE expires_at IS NOT NULL)";
        let mut st = writer.prepare(sql).unwrap();
        let rows = st.query_map([], |r| r.get::<_, String>(3)).unwrap();
        let plan = rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ");
        assert!(plan.contains("store_items_expires_at"), "{plan}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_named() {
        let path = temp_db("garbage");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::Backend { .. }), "{err}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn items_outlive_the_handle() {
        let path = temp_db("reopen");
        let store = SqliteStore::open(&path)
            .unwrap()
            .with_index(cases::word_index());
        store
            .put(["n"], "a", json!({"text": "rust"}))
            .await
            .unwrap();
        drop(store);
        let store = SqliteStore::open(&path)
            .unwrap()
            .with_index(cases::word_index());
        let found = store
            .search(SearchOp::new(["n"]).query("rust"))
            .await
            .unwrap();
        assert_eq!(found[0].score, Some(1.0));
    }
}

#[cfg(feature = "postgres")]
mod on_postgres {
    use std::sync::atomic::{AtomicU32, Ordering};

    use agent_state::store::{Filter, Op, PostgresStore, SearchOp};
    use serde_json::Value;
    use tokio_postgres::{Config, NoTls};

    use super::*;

    /// A fresh database on the test server: its name.
    async fn fresh_database(name: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let db = format!(
            "store_{name}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let (admin, conn) = tokio_postgres::connect(pg::url(), NoTls).await.unwrap();
        tokio::spawn(conn);
        // Each alone: neither runs inside a transaction block.
        for sql in [
            format!("DROP DATABASE IF EXISTS {db}"),
            format!("CREATE DATABASE {db}"),
        ] {
            admin.batch_execute(&sql).await.unwrap();
        }
        db
    }

    /// A client of database `db`.
    async fn client(db: &str) -> tokio_postgres::Client {
        let mut config: Config = pg::url().parse().unwrap();
        config.dbname(db);
        let (client, conn) = config.connect(NoTls).await.unwrap();
        tokio::spawn(conn);
        client
    }

    async fn store_on(db: &str) -> PostgresStore {
        PostgresStore::from_client(client(db).await).await.unwrap()
    }

    pub struct Postgres;

    impl Maker for Postgres {
        fn make(&self, opts: Opts) -> BoxFuture<'_, Box<dyn Store>> {
            Box::pin(async move {
                let mut store = store_on(&fresh_database("suite").await).await;
                if let Some(index) = opts.index {
                    store = store.with_index(index);
                }
                if let Some(ttl) = opts.ttl {
                    store = store.with_ttl(ttl);
                }
                Box::new(store) as Box<dyn Store>
            })
        }
    }

    conformance!(suite, Postgres);

    /// Whether the test server has pgvector to install.
    async fn server_has_pgvector(db: &str) -> bool {
        client(db)
            .await
            .query_one(
                "SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'vector'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// 64-dimensional vectors drawn from a text's hash: texts that differ
    /// get scores far apart (no near-ties for rounding to flip), equal
    /// texts equal vectors.
    fn hashed_vectors(texts: &[String]) -> Vec<Vec<f32>> {
        texts
            .iter()
            .map(|t| {
                if t.is_empty() {
                    // A zero vector: scored 0 on both paths.
                    return vec![0.0; 64];
                }
                let mut state = t.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
                (0..64)
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

    fn vector_index() -> agent_state::store::IndexConfig {
        agent_state::store::IndexConfig::new(64, hashed_vectors).fields(["text", "tags[*]"])
    }

    /// Forty notes under four namespaces, each embedded by its text and
    /// its tags (shared tags: ties), and a zero vector.
    async fn fill_notes(store: &PostgresStore) {
        for i in 0..40 {
            let text = format!("note {i}: {}", "abcdefghij".repeat(i % 5));
            let tags = json!([format!("t{}", i % 3), format!("x{i}")]);
            let value = json!({"text": text, "tags": tags});
            let ns = format!("u{}", i % 4);
            store
                .put(["v", &ns], &format!("k{i}"), value)
                .await
                .unwrap();
        }
        let zero = json!({"text": ""});
        store.put(["v", "u0"], "zero", zero).await.unwrap();
    }

    /// The same items in memory, put in the same order (ties rank newest
    /// first).
    async fn in_memory(from: &PostgresStore) -> MemoryStore {
        let memory = MemoryStore::new().with_index(vector_index());
        let items = from.search(SearchOp::new(["v"]).limit(100)).await.unwrap();
        for item in items.iter().rev() {
            let value = item.value.clone().into();
            memory
                .put(item.namespace.clone(), &item.key, value)
                .await
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        memory
    }

    fn scored(found: &[agent_state::store::SearchItem]) -> Vec<(String, f64)> {
        found
            .iter()
            .map(|f| (f.key.clone(), f.score.unwrap()))
            .collect()
    }

    /// Rows without the pgvector column's value (stored before the
    /// extension was there) are scored in Rust meanwhile, and filled when
    /// a store next connects.
    async fn stored_before_the_extension_score_alike(db: &str, server: &PostgresStore) {
        let sql = "UPDATE store_embeddings SET embedding_vector = NULL WHERE prefix = 'v.u2'";
        client(db).await.batch_execute(sql).await.unwrap();
        let op = SearchOp::new(["v"]).query("t2 note").limit(100);
        let mixed = scored(&server.search(op.clone()).await.unwrap());
        let _filled = store_on(db).await;
        let count = "SELECT count(*) FROM store_embeddings WHERE embedding_vector IS NULL";
        let left: i64 = client(db).await.query_one(count, &[]).await.unwrap().get(0);
        assert_eq!(left, 0, "filled on connect");
        let filled = scored(&server.search(op).await.unwrap());
        assert_eq!(mixed.len(), filled.len());
        let filled: std::collections::HashMap<_, _> = filled.into_iter().collect();
        for (key, score) in mixed {
            assert!(
                (filled[&key] - score).abs() < 1e-5,
                "{key}: {score} vs {}",
                filled[&key]
            );
        }
    }

    #[tokio::test]
    async fn pgvector_and_the_exact_scan_rank_alike() {
        let db = fresh_database("vectors").await;
        let server = store_on(&db).await.with_index(vector_index());
        // pgvector is used wherever the server has it, never silently not.
        assert_eq!(server.uses_pgvector(), server_has_pgvector(&db).await);
        fill_notes(&server).await;
        if server.uses_pgvector() {
            stored_before_the_extension_score_alike(&db, &server).await;
        }
        let exact = store_on(&db)
            .await
            .with_index(vector_index())
            .exact_vectors();
        assert!(!exact.uses_pgvector());
        let memory = in_memory(&exact).await;
        for query in ["note 7", "abcdefghij", "t1", "", "x39 note"] {
            for prefix in [vec!["v"], vec!["v", "u1"], vec!["v", "u2"]] {
                let op = SearchOp::new(prefix.clone())
                    .query(query)
                    .limit(15)
                    .offset(2);
                let a = scored(&server.search(op.clone()).await.unwrap());
                let b = scored(&exact.search(op.clone()).await.unwrap());
                let c = scored(&memory.search(op).await.unwrap());
                let keys =
                    |s: &[(String, f64)]| s.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
                assert_eq!(
                    keys(&a),
                    keys(&b),
                    "{query:?} under {prefix:?}: {a:?} vs {b:?}"
                );
                assert_eq!(keys(&b), keys(&c), "{query:?} under {prefix:?}");
                for ((_, x), (_, y)) in a.iter().zip(&b).chain(b.iter().zip(&c)) {
                    assert!((x - y).abs() < 1e-5, "{query:?}: {x} vs {y}");
                }
            }
        }
    }

    /// A put the database refuses (here a check added by hand) fails the
    /// batch with the server's reason, and nothing of it is written.
    #[tokio::test]
    async fn a_batch_the_database_refuses_writes_nothing() {
        let db = fresh_database("refused").await;
        let store = store_on(&db).await.with_index(cases::word_index());
        let check = "ALTER TABLE store_items ADD CONSTRAINT no_bad CHECK (key <> 'bad')";
        client(&db).await.batch_execute(check).await.unwrap();
        let ops = ["a", "b", "bad", "c"].map(|key| {
            agent_state::store::Op::Put(agent_state::store::PutOp {
                namespace: vec!["r".into()],
                key: key.into(),
                value: json!({"text": "rust"}).as_object().cloned(),
                index: agent_state::store::IndexFields::Configured,
                ttl: agent_state::store::Ttl::Configured,
            })
        });
        let err = store.batch(ops.to_vec()).await.unwrap_err();
        assert!(err.to_string().contains("no_bad"), "{err}");
        assert!(store.search(SearchOp::new(["r"])).await.unwrap().is_empty());
        let sql = "SELECT count(*) FROM store_embeddings";
        let vectors: i64 = client(&db).await.query_one(sql, &[]).await.unwrap().get(0);
        assert_eq!(vectors, 0);
        // The refused batch's transaction is over: the next put is
        // committed on its own, as another connection sees.
        store.put(["r"], "ok", json!({"text": "go"})).await.unwrap();
        let sql = "SELECT count(*) FROM store_items WHERE key = 'ok'";
        let items: i64 = client(&db).await.query_one(sql, &[]).await.unwrap().get(0);
        assert_eq!(items, 1);
    }

    #[tokio::test]
    async fn a_corrupt_row_is_named() {
        let db = fresh_database("corrupt").await;
        let store = store_on(&db).await;
        store
            .put(["users", "1"], "profile", json!({"n": 1}))
            .await
            .unwrap();
        client(&db)
            .await
            .batch_execute("UPDATE store_items SET value = '[1, 2]'::jsonb")
            .await
            .unwrap();
        match store.get(["users", "1"], "profile").await.unwrap_err() {
            StoreError::Corrupt {
                namespace,
                key,
                reason,
            } => {
                assert_eq!((namespace.as_str(), key.as_str()), ("users.1", "profile"));
                assert!(reason.contains("not a JSON object"), "{reason}");
            }
            other => panic!("not Corrupt: {other}"),
        }
    }

    #[tokio::test]
    async fn instances_share_one_database() {
        let db = fresh_database("shared").await;
        let url = format!("{} dbname={db}", pg::url());
        let connect = || async {
            let store = PostgresStore::connect(&url).await.unwrap();
            store.with_index(cases::word_index())
        };
        let (a, b) = (connect().await, connect().await);
        // Twenty items, and one item both write ten times, at once.
        let writes = (0..40).map(|i| {
            let store = if i % 2 == 0 { &a } else { &b };
            let key = if i < 20 {
                format!("k{i}")
            } else {
                "same".into()
            };
            async move {
                let text = format!("rust {}", "tea ".repeat(i % 3));
                store
                    .put(["shared"], &key, json!({"i": i, "text": text}))
                    .await
            }
        });
        for result in futures::future::join_all(writes).await {
            result.unwrap();
        }
        let seen = a
            .search(SearchOp::new(["shared"]).limit(100))
            .await
            .unwrap();
        assert_eq!(seen.len(), 21);
        // The item written by both has the vectors of one write, not a mix.
        let same = b.search(SearchOp::new(["shared"]).query("rust").filter(
            agent_state::store::Filter::new().eq(
                "i",
                a.get(["shared"], "same").await.unwrap().unwrap().value["i"].clone(),
            ),
        ));
        let found = same.await.unwrap();
        let i = found[0].value["i"].as_u64().unwrap() as usize;
        let expected = [1.0, 0.5f64.sqrt(), 1.0 / 5f64.sqrt()][i % 3];
        assert!(
            (found[0].score.unwrap() - expected).abs() < 1e-6,
            "{found:?}"
        );
        let rows: i64 = client(&db)
            .await
            .query_one(
                "SELECT count(*) FROM store_embeddings WHERE key = 'same'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1);
    }
    /// Two batches of puts (items of one batch share their time: ties)
    /// over a namespace, its descendants (`a` before `a-b` by labels,
    /// after it by bytes) and a sibling, on PostgreSQL and in memory.
    async fn ties_and_descendants(store: &dyn Store) {
        let spaces: [&[&str]; 5] = [
            &["p"],
            &["p", "a"],
            &["p", "a-b"],
            &["p", "a", "c"],
            &["pa"],
        ];
        let values = [
            json!({"g": 3, "ok": true}),
            json!({"g": 3.0, "ok": false}),
            json!({"g": "3"}),
            json!({"g": null, "ok": true}),
            json!({}),
            json!({"g": [3], "ok": true}),
        ];
        for batch in 0..2 {
            let mut ops = Vec::new();
            for (n, space) in spaces.iter().enumerate() {
                for (v, key) in ["b9", "K", "b10", "é", "a"].iter().enumerate() {
                    let value = values[(n + v + batch) % values.len()].clone();
                    let Value::Object(value) = value else {
                        unreachable!()
                    };
                    ops.push(Op::Put(agent_state::store::PutOp {
                        namespace: space.iter().map(|l| l.to_string()).collect(),
                        key: format!("{key}{batch}"),
                        value: Some(value),
                        index: agent_state::store::IndexFields::Configured,
                        ttl: agent_state::store::Ttl::Configured,
                    }));
                }
            }
            store.batch(ops).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// Searches whose filter the server applies (newest first, stopping
    /// at the page's end) answer as memory does: ties broken by labels
    /// and keys, descendants merged, pages cut alike; filters it does not
    /// apply too.
    #[tokio::test]
    async fn server_side_filters_answer_as_memory() {
        let postgres = store_on(&fresh_database("pushed").await).await;
        let memory = MemoryStore::new();
        ties_and_descendants(&postgres).await;
        ties_and_descendants(&memory).await;
        let filters = [
            json!({}),
            json!({"g": 3}),
            json!({"g": {"$eq": 3}}),
            json!({"g": "3"}),
            json!({"ok": true}),
            json!({"g": 3, "ok": true}),
            json!({"g": null}),
            json!({"g": 3.0}),
            json!({"g": {"$ne": 3}}),
        ];
        let prefixes: [&[&str]; 4] = [&["p"], &["p", "a"], &["p", "a", "c"], &["q"]];
        let mut answered = 0;
        for filter in &filters {
            for prefix in prefixes {
                for (offset, limit) in [(0, 100), (0, 1), (1, 2), (3, 5), (7, 3)] {
                    let op = SearchOp::new(prefix.iter().copied())
                        .filter(Filter::from_json(filter.clone()).unwrap())
                        .offset(offset)
                        .limit(limit);
                    let place = |found: Vec<agent_state::store::SearchItem>| {
                        found
                            .into_iter()
                            .map(|f| (f.namespace.clone(), f.key.clone()))
                            .collect::<Vec<_>>()
                    };
                    let want = place(memory.search(op.clone()).await.unwrap());
                    let have = place(postgres.search(op).await.unwrap());
                    assert_eq!(have, want, "{filter} under {prefix:?}, {offset}+{limit}");
                    answered += have.len();
                }
            }
        }
        // 40 items under `p`, 30 under `p.a`: most searches find some.
        assert!(answered > 300, "{answered}");
    }

    /// The namespace range of a search is an index condition on the
    /// primary key, or on `store_items_newest` (whose first column is the
    /// prefix too); a fresh, tiny table may still be read whole: the plan
    /// is asked for with sequential scans off.
    #[tokio::test]
    async fn searches_use_the_primary_key_range() {
        let db = fresh_database("plan").await;
        let _store = store_on(&db).await;
        let conn = client(&db).await;
        conn.batch_execute("SET enable_seqscan = off")
            .await
            .unwrap();
        for table in ["store_items", "store_embeddings"] {
            let sql = format!(
                "EXPLAIN SELECT * FROM {table}
                 WHERE (prefix = 'a.b' OR (prefix >= 'a.b.' AND prefix < 'a.b/'))"
            );
            let rows = conn.query(&sql, &[]).await.unwrap();
            let plan: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            let text = plan.join("\n");
            let newest = table == "store_items" && text.contains("store_items_newest");
            assert!(text.contains(&format!("{table}_pkey")) || newest, "{text}");
            assert!(!text.contains("Seq Scan"), "{text}");
        }
    }
}

#[test]
fn errors_say_what_was_refused() {
    let err = agent_state::checkpoint::block_on(MemoryStore::new().put(["a.b"], "k", json!({})))
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    assert!(err.to_string().contains("\"a.b\""), "{err}");
}
