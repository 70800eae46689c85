//! The behaviour every store keeps, as one suite run against each backend
//! (`tests/store.rs`): each case gets a maker of fresh, empty stores.

use std::time::Duration;

use agent_state::checkpoint::BoxFuture;
use agent_state::store::{
    Filter, IndexConfig, IndexFields, ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store,
    StoreError, StoreExt, Ttl, TtlConfig,
};
use serde_json::{json, Map, Value};

/// How a case wants its store.
#[derive(Clone, Default)]
pub struct Opts {
    pub index: Option<IndexConfig>,
    pub ttl: Option<TtlConfig>,
}

/// Makes a fresh, empty store.
pub trait Maker: Sync {
    fn make(&self, opts: Opts) -> BoxFuture<'_, Box<dyn Store>>;
}

type Res = Result<(), StoreError>;

/// The words of the fixed embedding: a text's vector counts them.
const WORDS: [&str; 4] = ["rust", "tea", "cat", "sea"];

/// A fixed embedding for tests: how often each of [`WORDS`] occurs.
pub fn word_counts(texts: &[String]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|t| WORDS.iter().map(|w| t.matches(w).count() as f32).collect())
        .collect()
}

/// An index on `text` with [`word_counts`].
pub fn word_index() -> IndexConfig {
    IndexConfig::new(WORDS.len(), word_counts).fields(["text"])
}

fn obj(value: Value) -> Map<String, Value> {
    value.as_object().expect("an object").clone()
}

fn put_op(ns: &[&str], key: &str, value: Value) -> PutOp {
    PutOp {
        namespace: ns.iter().map(|s| s.to_string()).collect(),
        key: key.into(),
        value: Some(obj(value)),
        index: IndexFields::Configured,
        ttl: Ttl::Configured,
    }
}

fn keys(found: &[agent_state::store::SearchItem]) -> Vec<&str> {
    found.iter().map(|f| f.key.as_str()).collect()
}

/// Separates the times of two writes (the stores keep microseconds).
async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

pub async fn put_get_overwrite_keeps_created_at(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    assert!(store.get(["a"], "k").await?.is_none());
    store
        .put(
            ["a", "b"],
            "k",
            json!({"n": 1, "deep": {"l": [1, 2.5, "x", null, true]}}),
        )
        .await?;
    let first = store.get(["a", "b"], "k").await?.expect("stored");
    assert_eq!(first.namespace, ["a", "b"]);
    assert_eq!(
        first.value,
        obj(json!({"n": 1, "deep": {"l": [1, 2.5, "x", null, true]}}))
    );
    assert_eq!(first.created_at, first.updated_at);
    tick().await;
    store.put(["a", "b"], "k", json!({"n": 2})).await?;
    let second = store.get(["a", "b"], "k").await?.expect("stored");
    assert_eq!(second.value, obj(json!({"n": 2})));
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at > first.updated_at);
    // Another key, another namespace: apart.
    assert!(store.get(["a"], "k").await?.is_none());
    Ok(())
}

pub async fn delete_removes_the_item(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    store.put(["a"], "k", json!({"n": 1})).await?;
    store.put(["a"], "other", json!({"n": 2})).await?;
    store.delete(["a"], "k").await?;
    assert!(store.get(["a"], "k").await?.is_none());
    assert!(store.get(["a"], "other").await?.is_some());
    // Deleting what is not there is no error.
    store.delete(["a"], "never").await?;
    // Put again after a delete: a new item, a new creation time.
    store.put(["a"], "k", json!({"n": 3})).await?;
    assert_eq!(store.get(["a"], "k").await?.unwrap().value["n"], 3);
    Ok(())
}

pub async fn search_reads_under_the_prefix_only(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    for (ns, key) in [
        (vec!["a", "b"], "ab"),
        (vec!["a", "b", "c"], "abc"),
        (vec!["a", "bc"], "a-bc"),
        (vec!["a", "b-"], "a-b-"),
        (vec!["a"], "a"),
        (vec!["x"], "x"),
    ] {
        store.put(ns, key, json!({"k": key})).await?;
    }
    let found = |prefix: Vec<&'static str>| {
        let store = &store;
        async move {
            let mut k: Vec<String> = store
                .search(SearchOp::new(prefix).limit(100))
                .await?
                .iter()
                .map(|f| f.key.clone())
                .collect();
            k.sort();
            Ok::<_, StoreError>(k)
        }
    };
    assert_eq!(found(vec!["a", "b"]).await?, ["ab", "abc"]);
    assert_eq!(found(vec!["a", "b", "c"]).await?, ["abc"]);
    assert_eq!(found(vec!["a"]).await?, ["a", "a-b-", "a-bc", "ab", "abc"]);
    assert_eq!(found(vec![]).await?.len(), 6);
    assert!(found(vec!["b"]).await?.is_empty());
    Ok(())
}

pub async fn filters_follow_langgraph(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    store
        .put(
            ["f"],
            "one",
            json!({"kind": "note", "n": 1, "meta": {"tag": "x", "l": [1, 2]}}),
        )
        .await?;
    store
        .put(
            ["f"],
            "two",
            json!({"kind": "note", "n": 2.5, "meta": {"tag": "y"}}),
        )
        .await?;
    store
        .put(["f"], "three", json!({"kind": "todo", "n": 3}))
        .await?;
    let run = |filter: Value| {
        let store = &store;
        async move {
            let op = SearchOp::new(["f"]).filter(Filter::from_json(filter)?);
            let mut k: Vec<String> = store
                .search(op)
                .await?
                .iter()
                .map(|f| f.key.clone())
                .collect();
            k.sort();
            Ok::<_, StoreError>(k)
        }
    };
    assert_eq!(run(json!({"kind": "note"})).await?, ["one", "two"]);
    assert_eq!(run(json!({"n": 1.0})).await?, ["one"]);
    assert_eq!(run(json!({"meta": {"tag": "x"}})).await?, ["one"]);
    assert_eq!(run(json!({"meta": {"l": [1, 2]}})).await?, ["one"]);
    assert_eq!(run(json!({"kind": {"$eq": "todo"}})).await?, ["three"]);
    assert_eq!(run(json!({"kind": {"$ne": "note"}})).await?, ["three"]);
    assert_eq!(run(json!({"n": {"$gt": 1}})).await?, ["three", "two"]);
    assert_eq!(run(json!({"n": {"$gte": 2.5}})).await?, ["three", "two"]);
    assert_eq!(run(json!({"n": {"$lt": 2.5}})).await?, ["one"]);
    assert_eq!(run(json!({"n": {"$lte": 2.5}})).await?, ["one", "two"]);
    assert_eq!(run(json!({"n": {"$gt": 1, "$lt": 3}})).await?, ["two"]);
    assert_eq!(
        run(json!({"kind": "note", "n": {"$gt": 2}})).await?,
        ["two"]
    );
    assert!(run(json!({"missing": {"$gt": 0}})).await?.is_empty());
    Ok(())
}

pub async fn pages_newest_first(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    for i in 0..5 {
        store.put(["p"], &format!("k{i}"), json!({"i": i})).await?;
        tick().await;
    }
    // An update makes an item the newest.
    store.put(["p"], "k1", json!({"i": 10})).await?;
    let all = store.search(SearchOp::new(["p"])).await?;
    assert_eq!(keys(&all), ["k1", "k4", "k3", "k2", "k0"]);
    assert!(all.iter().all(|f| f.score.is_none()));
    let page = store
        .search(SearchOp::new(["p"]).offset(1).limit(2))
        .await?;
    assert_eq!(keys(&page), ["k4", "k3"]);
    let past = store.search(SearchOp::new(["p"]).offset(9)).await?;
    assert!(past.is_empty());
    Ok(())
}

pub async fn lists_namespaces(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    for ns in [
        vec!["users", "1", "notes"],
        vec!["users", "2", "notes"],
        vec!["users", "2", "prefs"],
        vec!["teams", "t", "notes"],
        vec!["users"],
    ] {
        store.put(ns, "k", json!({})).await?;
    }
    let list = |op: ListNamespacesOp| {
        let store = &store;
        async move { store.list_namespaces(op).await }
    };
    let all = list(ListNamespacesOp::default()).await?;
    assert_eq!(
        all,
        [
            vec!["teams", "t", "notes"],
            vec!["users"],
            vec!["users", "1", "notes"],
            vec!["users", "2", "notes"],
            vec!["users", "2", "prefs"],
        ]
    );
    let users = list(ListNamespacesOp::default().prefix(["users", "2"])).await?;
    assert_eq!(
        users,
        [vec!["users", "2", "notes"], vec!["users", "2", "prefs"]]
    );
    let notes = list(ListNamespacesOp::default().suffix(["*", "notes"])).await?;
    assert_eq!(notes.len(), 3);
    let wild = list(ListNamespacesOp::default().prefix(["*", "2"])).await?;
    assert_eq!(wild.len(), 2);
    let shallow = list(ListNamespacesOp::default().max_depth(2)).await?;
    assert_eq!(
        shallow,
        [
            vec!["teams", "t"],
            vec!["users"],
            vec!["users", "1"],
            vec!["users", "2"]
        ]
    );
    let paged = list(ListNamespacesOp::default().offset(1).limit(2)).await?;
    assert_eq!(paged, [vec!["users"], vec!["users", "1", "notes"]]);
    store.delete(["users"], "k").await?;
    assert_eq!(list(ListNamespacesOp::default()).await?.len(), 4);
    Ok(())
}

pub async fn batches_read_before_and_last_put_wins(m: &dyn Maker) -> Res {
    let store = m.make(Opts::default()).await;
    store.put(["b"], "k", json!({"v": 1})).await?;
    let get = |key: &str| {
        Op::Get(agent_state::store::GetOp {
            namespace: vec!["b".into()],
            key: key.into(),
            refresh_ttl: None,
        })
    };
    let results = store
        .batch(vec![
            Op::Put(put_op(&["b"], "k", json!({"v": 2}))),
            get("k"),
            Op::Put(put_op(&["b"], "k", json!({"v": 3}))),
            Op::Put(put_op(&["b"], "new", json!({"v": 4}))),
            get("new"),
            Op::Search(SearchOp::new(["b"])),
        ])
        .await?;
    assert_eq!(results.len(), 6);
    assert!(matches!(&results[0], OpResult::Done));
    match &results[1] {
        OpResult::Item(Some(item)) => assert_eq!(item.value["v"], 1),
        other => panic!("the get saw {other:?}"),
    }
    assert!(matches!(&results[4], OpResult::Item(None)));
    match &results[5] {
        OpResult::Items(items) => assert_eq!(keys(items), ["k"]),
        other => panic!("the search saw {other:?}"),
    }
    assert_eq!(store.get(["b"], "k").await?.unwrap().value["v"], 3);
    assert_eq!(store.get(["b"], "new").await?.unwrap().value["v"], 4);
    // One bad operation: nothing of the batch is written.
    let mut bad = put_op(&["b"], "", json!({}));
    bad.key = String::new();
    let err = store
        .batch(vec![
            Op::Put(put_op(&["b"], "fresh", json!({"v": 5}))),
            Op::Put(bad),
        ])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidKey { .. }), "{err}");
    assert!(store.get(["b"], "fresh").await?.is_none());
    Ok(())
}

pub async fn ttl_expires_refreshes_and_sweeps(m: &dyn Maker) -> Res {
    let ttl = TtlConfig {
        default_ttl: Some(0.01), // 600 ms
        refresh_on_read: true,
    };
    let store = m
        .make(Opts {
            index: None,
            ttl: Some(ttl),
        })
        .await;
    store.put(["t"], "read", json!({"n": 1})).await?;
    store.put(["t"], "unread", json!({"n": 2})).await?;
    store.put(["t"], "peeked", json!({"n": 3})).await?;
    let mut forever = put_op(&["t"], "forever", json!({"n": 4}));
    forever.ttl = Ttl::Never;
    store.put_op(Ok(forever)).await?;
    let mut short = put_op(&["t"], "short", json!({"n": 5}));
    short.ttl = Ttl::Minutes(0.001); // 60 ms
    store.put_op(Ok(short)).await?;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        store.get(["t"], "short").await?.is_none(),
        "expired after 60 ms"
    );
    tokio::time::sleep(Duration::from_millis(250)).await;
    // 400 ms in: a read restarts the TTL; a read told not to does not.
    assert!(store.get(["t"], "read").await?.is_some());
    let peek = Op::Get(agent_state::store::GetOp {
        namespace: vec!["t".into()],
        key: "peeked".into(),
        refresh_ttl: Some(false),
    });
    store.batch(vec![peek]).await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    // 800 ms in: the read one lives until 1000 ms, the others are gone.
    let mut left: Vec<String> = store
        .search(SearchOp::new(["t"]))
        .await?
        .iter()
        .map(|f| f.key.clone())
        .collect();
    left.sort();
    assert_eq!(left, ["forever", "read"]);
    let listed = store.list_namespaces(ListNamespacesOp::default()).await?;
    assert_eq!(listed, [vec!["t"]]);
    assert_eq!(store.sweep_ttl().await?, 3, "short, unread, peeked");
    assert_eq!(store.sweep_ttl().await?, 0);
    assert!(store.get(["t"], "forever").await?.is_some());
    Ok(())
}

pub async fn semantic_search_ranks_by_similarity(m: &dyn Maker) -> Res {
    let store = m
        .make(Opts {
            index: Some(word_index()),
            ttl: None,
        })
        .await;
    store
        .put(["s"], "tea", json!({"text": "green tea and more tea"}))
        .await?;
    store
        .put(["s"], "rust", json!({"text": "rust rust code"}))
        .await?;
    store
        .put(["s"], "both", json!({"text": "rust with tea"}))
        .await?;
    let mut off = put_op(&["s"], "off", json!({"text": "rust"}));
    off.index = IndexFields::Off;
    store.put_op(Ok(off)).await?;
    let mut paths = put_op(&["s"], "paths", json!({"text": "tea", "other": "sea cat"}));
    paths.index = IndexFields::Paths(vec!["other".into()]);
    store.put_op(Ok(paths)).await?;
    store
        .put(["elsewhere"], "x", json!({"text": "rust"}))
        .await?;

    let found = store.search(SearchOp::new(["s"]).query("rust")).await?;
    // Equal scores: the newest first (`paths` was put after `tea`).
    assert_eq!(keys(&found), ["rust", "both", "paths", "tea", "off"]);
    let scores: Vec<Option<f64>> = found.iter().map(|f| f.score).collect();
    assert!((scores[0].unwrap() - 1.0).abs() < 1e-6, "{scores:?}");
    assert!(
        (scores[1].unwrap() - 0.5f64.sqrt()).abs() < 1e-6,
        "{scores:?}"
    );
    assert!(scores[2].unwrap().abs() < 1e-6 && scores[3].unwrap().abs() < 1e-6);
    assert_eq!(scores[4], None, "an item not embedded comes last, unscored");
    // Paths: `paths` was embedded by `other` only.
    let sea = store
        .search(SearchOp::new(["s"]).query("sea").limit(1))
        .await?;
    assert_eq!(keys(&sea), ["paths"]);
    // A filter and a page apply to the ranking.
    let op = SearchOp::new(["s"])
        .query("tea")
        .filter(Filter::new().eq("text", "rust with tea"));
    assert_eq!(keys(&store.search(op).await?), ["both"]);
    let page = store
        .search(SearchOp::new(["s"]).query("rust").offset(1).limit(2))
        .await?;
    assert_eq!(keys(&page), ["both", "paths"]);
    // A put replaces the item's vectors.
    store
        .put(["s"], "tea", json!({"text": "rust rust"}))
        .await?;
    let top = store
        .search(SearchOp::new(["s"]).query("rust").limit(2))
        .await?;
    assert!(keys(&top).contains(&"tea") && keys(&top).contains(&"rust"));
    Ok(())
}

async fn nothing_written(store: &dyn Store) -> Res {
    let all = store.search(SearchOp::new(Vec::<String>::new())).await?;
    assert!(all.is_empty(), "written: {:?}", keys(&all));
    Ok(())
}

pub async fn refused_operations_write_nothing(m: &dyn Maker) -> Res {
    let store = m
        .make(Opts {
            index: Some(word_index()),
            ttl: None,
        })
        .await;
    let cases: Vec<(Vec<&str>, &str, Value, &str)> = vec![
        (vec![], "k", json!({}), "cannot be empty"),
        (vec!["a.b"], "k", json!({}), "period"),
        (vec!["a", ""], "k", json!({}), "label cannot be empty"),
        (vec!["langgraph", "x"], "k", json!({}), "reserved"),
        (vec!["a"], "", json!({}), "invalid key"),
        (vec!["a"], "k", json!([1, 2]), "JSON object"),
        (vec!["a"], "k", json!("text"), "JSON object"),
        (vec!["a"], "k", json!({"s": "nul\u{0}"}), "`s`"),
    ];
    for (ns, key, value, says) in cases {
        let refused = store.put(ns.clone(), key, value.clone()).await;
        let err = refused.expect_err(&format!("{ns:?} / {key:?} / {value}"));
        assert!(err.to_string().contains(says), "{ns:?}/{key}: {err}");
        nothing_written(store.as_ref()).await?;
    }
    let mut nan = put_op(&["a"], "k", json!({}));
    nan.ttl = Ttl::Minutes(f64::NAN);
    let err = store.put_op(Ok(nan)).await.unwrap_err();
    assert!(
        matches!(err, StoreError::InvalidValue { .. }) && err.to_string().contains("NaN"),
        "{err}"
    );
    let err = Filter::from_json(json!({"n": {"$near": 1}})).unwrap_err();
    assert!(err.to_string().contains("$near"), "{err}");
    let err = store.get(["a.b"], "k").await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidNamespace { .. }), "{err}");
    // A model answering vectors of the wrong size: refused, nothing written.
    let bad = m
        .make(Opts {
            index: Some(IndexConfig::new(3, word_counts).fields(["text"])),
            ttl: None,
        })
        .await;
    let batch = vec![
        Op::Put(put_op(&["a"], "plain", json!({"n": 1}))),
        Op::Put(put_op(&["a"], "k", json!({"text": "rust"}))),
    ];
    let err = bad.batch(batch).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Embedding { .. }) && err.to_string().contains("dimensions"),
        "{err}"
    );
    nothing_written(bad.as_ref()).await?;
    let err = bad
        .search(SearchOp::new(["a"]).query("tea"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Embedding { .. }), "{err}");
    nothing_written(store.as_ref()).await
}

pub async fn typed_values_round_trip(m: &dyn Maker) -> Res {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Profile {
        work: String,
        level: u32,
        ratio: f64,
    }
    let store = m.make(Opts::default()).await;
    let profile = Profile {
        work: "géologie \"quoted\"".into(),
        level: u32::MAX,
        ratio: 0.1 + 0.2,
    };
    store
        .put_as(["users", "did:1"], "profile", &profile)
        .await?;
    let back: Profile = store
        .get_as(["users", "did:1"], "profile")
        .await?
        .expect("stored");
    assert_eq!(back, profile);
    let wrong = store
        .get_as::<Vec<u8>, _>(["users", "did:1"], "profile")
        .await
        .unwrap_err();
    assert!(wrong.to_string().contains("profile"), "{wrong}");
    Ok(())
}
