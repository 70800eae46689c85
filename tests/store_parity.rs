//! Our stores side by side with LangGraph's: each scenario of
//! `tests/reference/store/<name>.py` (recorded by `tests/reference/run.sh
//! --record` into `tests/expected/store/<name>.json`, for LangGraph's
//! `InMemoryStore` and its `SqliteStore`) runs here on our store and prints
//! the same facts, which must equal the recording of each LangGraph store
//! field by field, except where a difference is declared below: then ours
//! must answer the declared value and LangGraph's recording must not, so a
//! difference that disappears (or a new one) fails the test.
//!
//! Every backend of ours answers alike (the conformance contract of
//! `Store`), so each is checked against both recordings with the same
//! declared differences. To add a backend, await [`parity`] with a
//! factory for it in a new test, as below for SQLite and PostgreSQL; a
//! sketch:
//!
//! ```text
//! #[cfg(feature = "sqlite")]
//! #[test]
//! fn sqlite_store_answers_as_langgraphs_stores() {
//!     let dir = /* a fresh directory, removed at the end */;
//!     let count = AtomicUsize::new(0);
//!     let factory = |index: Option<IndexConfig>| -> BoxFuture<'_, Box<dyn Store>> {
//!         let path = dir.join(format!("{}.db", count.fetch_add(1, SeqCst)));
//!         let store = SqliteStore::open(path).unwrap();
//!         let store: Box<dyn Store> = match index {
//!             Some(index) => Box::new(store.with_index(index)),
//!             None => Box::new(store),
//!         };
//!         Box::pin(std::future::ready(store))
//!     };
//!     block_on(parity(&factory, "memory", &memory_differences()));
//!     block_on(parity(&factory, "sqlite", &sqlite_differences()));
//! }
//! ```
//!
//! For `PostgresStore`, a `#[tokio::test]` whose factory opens it on a
//! fresh database (`Box::pin(async move { ... })`), awaiting `parity`.

#[path = "store_parity/scenarios.rs"]
mod scenarios;

use std::collections::BTreeMap;

use agent_state::checkpoint::{block_on, BoxFuture};
use agent_state::serde_json::{json, Value};
use agent_state::store::{IndexConfig, MemoryStore, Store};

/// Makes a fresh, empty store of one backend, with the index given.
/// Async, so that a backend whose connection needs an executor (Tokio's
/// for PostgreSQL) can be opened on the one the test runs.
pub type Factory<'a> = &'a dyn Fn(Option<IndexConfig>) -> BoxFuture<'a, Box<dyn Store>>;

/// A deliberate difference: in scenario `.0`, field `.1` (a `.`-path into
/// the scenario's facts), ours answers `.2`.
type Difference = (&'static str, &'static str, Value);

/// Where our stores differ from LangGraph's `InMemoryStore` on purpose.
fn memory_differences() -> Vec<Difference> {
    vec![
        // LangGraph's InMemoryStore (and SqliteStore, through INSERT OR
        // REPLACE) stamps an overwritten item anew; ours keeps when it
        // was first put, as LangGraph's PostgresStore does.
        ("basics", "created_at_kept", json!(true)),
        // InMemoryStore keeps a namespace listed once its last item is
        // deleted, and lists one a `get` merely read (its defaultdict);
        // ours lists namespaces that hold items, as SqliteStore does.
        ("basics", "namespaces_after", json!([["users", "u1"]])),
        ("list_namespaces", "after_delete_and_get", json!([])),
        // `$gt` on a field an item lacks raises TypeError in
        // InMemoryStore (`float(None)`); ours skips the item, as
        // SqliteStore does.
        ("filters", "op_gt_missing_field", json!(["n2", "n3"])),
        // Without a query InMemoryStore lists in insertion order; ours
        // lists the newest update first (store/mod.rs), as SqliteStore
        // does when its one-second stamps differ.
        (
            "paging_order",
            "same_second.all",
            json!(["p/e", "p/a", "p/d", "p/b", "p/c"]),
        ),
        (
            "paging_order",
            "same_second.offset0_limit2",
            json!(["p/e", "p/a"]),
        ),
        (
            "paging_order",
            "same_second.offset2_limit2",
            json!(["p/d", "p/b"]),
        ),
        ("paging_order", "same_second.offset4_limit2", json!(["p/c"])),
        (
            "paging_order",
            "second_apart.all",
            json!(["q/deeper/z", "q/c", "q/b", "q/a"]),
        ),
        (
            "paging_order",
            "second_apart.limit2_offset1",
            json!(["q/c", "q/b"]),
        ),
        // A put's embeddings replace the item's old ones (store/mod.rs);
        // both LangGraph stores keep the old vectors of an item
        // overwritten with `index=False`, and still score it by them.
        (
            "semantic",
            "after_unindexed_overwrite",
            json!([["docs/pair", 0.6667], ["docs/trees", 0.6351]]),
        ),
        // A batch is checked whole: InMemoryStore writes a put whose label
        // holds a period when it comes straight to `batch` (and the valid
        // put beside it); ours refuses the batch and writes nothing.
        (
            "validation",
            "batch_dotted_label_with_valid_put",
            json!({"error": "InvalidNamespaceError",
                   "after": {"items": ["held/k"], "namespaces": [["held"]]}}),
        ),
    ]
}

/// Where our stores differ from LangGraph's `SqliteStore` on purpose.
fn sqlite_differences() -> Vec<Difference> {
    let mut differences = vec![
        ("basics", "created_at_kept", json!(true)),
        // SqliteStore reads a dotted filter field as a JSON path; ours, as
        // InMemoryStore, as one field of that name.
        ("filters", "dotted_field", json!([])),
        // SqliteStore takes an object in a filter for operators and
        // raises on `{"lang": ...}`; ours compares it field by field, as
        // InMemoryStore.
        ("filters", "nested_exact", json!(["n1", "n3"])),
        ("filters", "nested_subset", json!(["n1", "n3"])),
        // SQL's `NULL != 3` is not true; a missing field is "not 3" for
        // ours, as for InMemoryStore.
        ("filters", "op_ne_missing_field", json!(["n1", "n2", "n4"])),
        // SqliteStore compares strings with `$gt`; ours refuses an order
        // operator against anything but a number, when the filter is made.
        (
            "filters",
            "order_against_string",
            json!({"error": "ValueError"}),
        ),
        (
            "validation",
            "order_against_string",
            json!({"error": "ValueError",
                   "after": {"items": ["held/k"], "namespaces": [["held"]]}}),
        ),
    ];
    differences.extend(sqlite_order_differences());
    // Within one second SqliteStore's stamps tie and rows come in the
    // order they were written; ours has microseconds.
    differences.extend(
        memory_differences()
            .into_iter()
            .filter(|(scenario, field, _)| {
                *scenario == "paging_order" && field.starts_with("same")
            }),
    );
    differences
}

/// Where our stores order or omit results unlike `SqliteStore`.
fn sqlite_order_differences() -> Vec<Difference> {
    vec![
        // Namespaces are sorted as label lists (InMemoryStore's order);
        // SqliteStore sorts the dot-joined text, putting `a-b` before
        // `a.b`.
        (
            "list_namespaces",
            "all",
            json!([
                ["a", "b", "c"],
                ["a", "b", "d"],
                ["a", "x"],
                ["a-b"],
                ["b", "b", "c"],
                ["c"]
            ]),
        ),
        (
            "list_namespaces",
            "prefix_star",
            json!([
                ["a", "b", "c"],
                ["a", "b", "d"],
                ["a", "x"],
                ["a-b"],
                ["b", "b", "c"],
                ["c"]
            ]),
        ),
        (
            "list_namespaces",
            "limit2_offset1",
            json!([["a", "b", "d"], ["a", "x"]]),
        ),
        (
            "list_namespaces",
            "max_depth_2",
            json!([["a", "b"], ["a", "x"], ["a-b"], ["b", "b"], ["c"]]),
        ),
        // Items with nothing embedded fill a semantic page, unscored, as
        // in InMemoryStore; SqliteStore's join never returns them.
        (
            "semantic",
            "query_tea",
            json!([
                ["docs/tea", 0.8783],
                ["docs/trees", 0.6928],
                ["docs/pair", 0.6667],
                ["docs/rust", 0.5833],
                ["docs/sections", 0.2887],
                ["docs/quiet", null]
            ]),
        ),
        (
            "semantic",
            "after_unindexed_overwrite",
            json!([["docs/pair", 0.6667], ["docs/trees", 0.6351]]),
        ),
    ]
}

/// The recorded facts of scenario `name`, by LangGraph store.
fn recording(name: &str) -> BTreeMap<String, Value> {
    let path = format!(
        "{}/tests/expected/store/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let recorded: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    match recorded {
        // paging_order.py records two runs, each for both stores.
        Value::Object(map) if name == "paging_order" => ["memory", "sqlite"]
            .into_iter()
            .map(|side| {
                let facts: serde_json::Map<String, Value> = map
                    .iter()
                    .map(|(run, by_side)| (run.clone(), by_side[side].clone()))
                    .collect();
                (side.to_owned(), Value::Object(facts))
            })
            .collect(),
        Value::Object(map) => map.into_iter().collect(),
        other => panic!("{path}: not an object: {other}"),
    }
}

/// The leaves of `facts` by their `.`-path, down to the depth the
/// differences name (two levels for paging_order's runs, one otherwise).
fn fields(scenario: &str, facts: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (field, value) in facts.as_object().expect("facts are an object") {
        match value {
            Value::Object(inner) if scenario == "paging_order" => {
                for (sub, v) in inner {
                    out.insert(format!("{field}.{sub}"), v.clone());
                }
            }
            _ => {
                out.insert(field.clone(), value.clone());
            }
        }
    }
    out
}

/// Compares our facts of one scenario with one LangGraph store's
/// recorded facts; returns each disagreement, named.
fn compare(
    scenario: &str,
    side: &str,
    ours: &Value,
    theirs: &Value,
    differences: &[Difference],
) -> Vec<String> {
    let (ours, theirs) = (fields(scenario, ours), fields(scenario, theirs));
    if ours.keys().ne(theirs.keys()) {
        let keys = |m: &BTreeMap<String, Value>| m.keys().cloned().collect::<Vec<_>>();
        return vec![format!(
            "{scenario}: our facts are {:?}, the recording's {:?}",
            keys(&ours),
            keys(&theirs)
        )];
    }
    let mut failures = Vec::new();
    for (field, their) in &theirs {
        let our = &ours[field];
        let declared = differences
            .iter()
            .find(|(s, f, _)| *s == scenario && f == field);
        match declared {
            Some((_, _, want)) if our != want => failures.push(format!(
                "{scenario}.{field}: declared different from {side} as {want}, ours is {our}"
            )),
            Some((_, _, want)) if their == want => failures.push(format!(
                "{scenario}.{field}: declared a difference, but {side} now answers {want} too"
            )),
            None if our != their => failures.push(format!(
                "{scenario}.{field}: LangGraph's {side} store answers {their}, ours {our}"
            )),
            _ => {}
        }
    }
    failures
}

/// Runs every scenario on fresh stores of `factory` and compares the
/// facts with LangGraph's `side` recording (`"memory"` or `"sqlite"`),
/// `differences` allowed; panics listing every disagreement.
pub async fn parity(factory: Factory<'_>, side: &str, differences: &[Difference]) {
    let mut failures = Vec::new();
    for (name, facts) in scenarios::all(factory).await {
        let theirs = &recording(name)[side];
        failures.extend(compare(name, side, &facts, theirs, differences));
    }
    // A difference must name a fact a scenario records, or it excuses
    // nothing and says nothing.
    for (scenario, field, _) in differences {
        let known = scenarios::NAMES.contains(scenario)
            && fields(scenario, &recording(scenario)[side]).contains_key(*field);
        assert!(
            known,
            "a difference names no recorded fact: {scenario}.{field}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn memory_store(index: Option<IndexConfig>) -> BoxFuture<'static, Box<dyn Store>> {
    let store: Box<dyn Store> = match index {
        Some(index) => Box::new(MemoryStore::new().with_index(index)),
        None => Box::new(MemoryStore::new()),
    };
    Box::pin(std::future::ready(store))
}

#[test]
fn memory_store_answers_as_langgraphs_in_memory_store() {
    block_on(parity(&memory_store, "memory", &memory_differences()));
}

#[test]
fn memory_store_answers_as_langgraphs_sqlite_store() {
    block_on(parity(&memory_store, "sqlite", &sqlite_differences()));
}

/// A fresh SQLite file per store, under the target directory.
#[cfg(feature = "sqlite")]
fn sqlite_store(index: Option<IndexConfig>) -> BoxFuture<'static, Box<dyn Store>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("store-parity");
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{}-{n}.db", std::process::id()));
    let store = agent_state::store::SqliteStore::open(path).unwrap();
    let store: Box<dyn Store> = match index {
        Some(index) => Box::new(store.with_index(index)),
        None => Box::new(store),
    };
    Box::pin(std::future::ready(store))
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_store_answers_as_langgraphs_stores() {
    block_on(parity(&sqlite_store, "memory", &memory_differences()));
    block_on(parity(&sqlite_store, "sqlite", &sqlite_differences()));
}

/// A store on a fresh database of the throwaway server (`support/pg.rs`).
#[cfg(feature = "postgres")]
fn postgres_store(index: Option<IndexConfig>) -> BoxFuture<'static, Box<dyn Store>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let db = format!(
        "parity_{}_{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    Box::pin(async move {
        let (admin, conn) = tokio_postgres::connect(pg::url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        admin
            .batch_execute(&format!("CREATE DATABASE {db}"))
            .await
            .unwrap();
        let url = format!("{} dbname={db}", pg::url());
        let store = agent_state::store::PostgresStore::connect(&url)
            .await
            .unwrap();
        let store: Box<dyn Store> = match index {
            Some(index) => Box::new(store.with_index(index)),
            None => Box::new(store),
        };
        store
    })
}

#[cfg(feature = "postgres")]
#[path = "support/pg.rs"]
mod pg;

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_store_answers_as_langgraphs_stores() {
    parity(&postgres_store, "memory", &memory_differences()).await;
    parity(&postgres_store, "sqlite", &sqlite_differences()).await;
}

#[test]
fn a_disagreement_is_reported_by_name() {
    // The comparison itself: an undeclared difference, a declared one
    // LangGraph no longer has, a declared one ours no longer answers, and
    // facts of other fields are each named.
    let ours = json!({"first": 1, "second": 2});
    let failures = compare("t", "memory", &ours, &json!({"first": 1, "second": 3}), &[]);
    assert_eq!(
        failures,
        ["t.second: LangGraph's memory store answers 3, ours 2"]
    );
    let gone = [("t", "first", json!(1))];
    let failures = compare(
        "t",
        "memory",
        &ours,
        &json!({"first": 1, "second": 2}),
        &gone,
    );
    assert_eq!(
        failures,
        ["t.first: declared a difference, but memory now answers 1 too"]
    );
    let stale = [("t", "first", json!(5))];
    let failures = compare(
        "t",
        "memory",
        &ours,
        &json!({"first": 0, "second": 2}),
        &stale,
    );
    assert_eq!(
        failures,
        ["t.first: declared different from memory as 5, ours is 1"]
    );
    let failures = compare("t", "sqlite", &ours, &json!({"first": 1}), &[]);
    assert!(
        failures[0].contains("the recording's [\"first\"]"),
        "{failures:?}"
    );
    // A declared difference in one scenario does not excuse another's.
    let elsewhere = [("u", "second", json!(2))];
    let failures = compare(
        "t",
        "memory",
        &ours,
        &json!({"first": 1, "second": 3}),
        &elsewhere,
    );
    assert_eq!(failures.len(), 1, "{failures:?}");
}
