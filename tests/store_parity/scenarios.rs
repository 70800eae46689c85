//! The scenarios of `tests/reference/store/*.py`, on our stores: the same
//! operations in the same order, printing the same facts (see each
//! script's docstring for what a scenario covers).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_state::serde_json::{json, Map, Value};
use agent_state::store::{
    Filter, IndexConfig, IndexFields, Item, ListNamespacesOp, Op, OpResult, PutOp, SearchItem,
    SearchOp, Store, StoreError, StoreExt, Ttl,
};

use super::Factory;

/// Every scenario, by the name of its script.
pub const NAMES: [&str; 9] = [
    "basics",
    "search_prefix",
    "filters",
    "paging_order",
    "list_namespaces",
    "batches",
    "semantic",
    "embedded_texts",
    "validation",
];

/// The letters whose counts are the fixed embedding, as in
/// `tests/reference/store_common.py`.
const ALPHABET: &str = "aeioustr";

/// The fixed embedding: how often each letter of [`ALPHABET`] occurs.
fn letter_counts(texts: &[String]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|t| {
            let t = t.to_lowercase();
            ALPHABET
                .chars()
                .map(|c| t.matches(c).count() as f32)
                .collect()
        })
        .collect()
}

/// Each scenario's facts, run on a fresh store of `factory`.
pub async fn all(factory: Factory<'_>) -> Vec<(&'static str, Value)> {
    let index = || Some(IndexConfig::new(ALPHABET.len(), letter_counts).fields(["text"]));
    vec![
        ("basics", basics(&*factory(None).await).await),
        ("search_prefix", search_prefix(&*factory(None).await).await),
        ("filters", filters(&*factory(None).await).await),
        ("paging_order", paging_order(factory).await),
        (
            "list_namespaces",
            list_namespaces(&*factory(None).await).await,
        ),
        ("batches", batches(&*factory(None).await).await),
        ("semantic", semantic(&*factory(index()).await).await),
        ("embedded_texts", embedded_texts(factory).await),
        ("validation", validation(&*factory(None).await).await),
    ]
}

/// Lets the clock move on, so the next write is stamped later than the
/// last (the scripts wait for SqliteStore's next second where it matters).
fn tick() {
    std::thread::sleep(Duration::from_millis(2));
}

fn ident(item: &Item) -> String {
    let mut parts = item.namespace.clone();
    parts.push(item.key.clone());
    parts.join("/")
}

fn idents(items: &[SearchItem]) -> Vec<String> {
    items.iter().map(|i| ident(i)).collect()
}

fn sorted(mut idents: Vec<String>) -> Vec<String> {
    idents.sort();
    idents
}

/// Our error as the class LangGraph raises for the same case: a refused
/// namespace is its `InvalidNamespaceError`; a refused filter, value, key
/// or argument its `ValueError`. Anything else is named as ours.
fn error_class(error: &StoreError) -> String {
    match error {
        StoreError::InvalidNamespace { .. } => "InvalidNamespaceError".into(),
        StoreError::InvalidFilter { .. }
        | StoreError::InvalidValue { .. }
        | StoreError::InvalidKey { .. }
        | StoreError::InvalidArgument { .. } => "ValueError".into(),
        other => format!("ours: {other}"),
    }
}

fn error_of<T>(result: Result<T, StoreError>) -> Value {
    result.err().map_or(Value::Null, |e| json!(error_class(&e)))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn search(store: &dyn Store, op: SearchOp) -> Vec<SearchItem> {
    store.search(op).await.expect("search")
}

async fn basics(store: &dyn Store) -> Value {
    let ns = ["users", "u1"];
    let profile = json!({"work": "geology", "level": 3, "langs": ["en", "fr"]});
    store.put(ns, "profile", profile).await.expect("put");
    let first = store.get(ns, "profile").await.expect("get").expect("there");
    tick();
    store
        .put(ns, "profile", json!({"work": "botany"}))
        .await
        .expect("put");
    let second = store.get(ns, "profile").await.expect("get").expect("there");
    let u2 = ["users", "u2"];
    store
        .put(u2, "profile", json!({"work": "tea"}))
        .await
        .expect("put");
    store.delete(u2, "profile").await.expect("delete");
    let after_delete = store.get(u2, "profile").await.expect("get");
    let get_missing = store.get(["nobody"], "x").await.expect("get");
    let listed = store.list_namespaces(ListNamespacesOp::default()).await;
    let mut dict_keys: Vec<String> = object(json!(second)).keys().cloned().collect();
    dict_keys.sort();
    json!({
        "first": {"namespace": first.namespace, "key": first.key, "value": first.value},
        "overwritten_value": second.value,
        "created_at_kept": second.created_at == first.created_at,
        "updated_at_later": second.updated_at > first.updated_at,
        "after_delete": after_delete.map(|i| i.value),
        "delete_missing_error": error_of(store.delete(ns, "never-there").await),
        "get_missing": get_missing.map(|i| i.value),
        "namespaces_after": listed.expect("list"),
        "item_dict_keys": dict_keys,
    })
}

async fn search_prefix(store: &dyn Store) -> Value {
    let held: [&[&str]; 14] = [
        &["a", "b"],
        &["a", "b", "c"],
        &["a", "bc"],
        &["a"],
        &["ab"],
        &["A", "b"],
        &["b"],
        &["p%"],
        &["pxq"],
        &["p_q"],
        &["x*"],
        &["xy"],
        &["x[1]"],
        &["x1"],
    ];
    for ns in held {
        let at = ns.join(".");
        store.put(ns, "k", json!({"at": at})).await.expect("put");
    }
    let prefixes: [&[&str]; 12] = [
        &["a", "b"],
        &["a"],
        &["a", "b", "c"],
        &["a", "bc"],
        &["ab"],
        &["A"],
        &["a", "b", "c", "d"],
        &[],
        &["p%"],
        &["p_q"],
        &["x*"],
        &["x[1]"],
    ];
    let mut out = Map::new();
    for prefix in prefixes {
        let found = search(store, SearchOp::new(prefix).limit(100)).await;
        let name = if prefix.is_empty() {
            "(empty)".to_owned()
        } else {
            prefix.join("/")
        };
        out.insert(name, json!(sorted(idents(&found))));
    }
    Value::Object(out)
}

/// The cases of filters.py: (case, namespace prefix, filter).
fn filter_cases() -> Vec<(&'static str, &'static [&'static str], Value)> {
    let (docs, num): (&[&str], &[&str]) = (&["docs"], &["docs", "num"]);
    vec![
        ("eq_string", docs, json!({"kind": "note"})),
        ("eq_int", num, json!({"n": 1})),
        ("eq_int_as_float", num, json!({"n": 1.0})),
        ("eq_float", num, json!({"n": 2.5})),
        ("eq_true", docs, json!({"flag": true})),
        ("eq_false", docs, json!({"flag": false})),
        ("eq_null_missing", docs, json!({"n": null})),
        (
            "nested_exact",
            docs,
            json!({"meta": {"lang": "en", "len": 3}}),
        ),
        ("nested_subset", docs, json!({"meta": {"lang": "en"}})),
        ("list_exact", docs, json!({"tags": ["x", "y"]})),
        ("list_other_order", docs, json!({"tags": ["y", "x"]})),
        ("list_shorter", docs, json!({"tags": ["x"]})),
        ("two_fields", docs, json!({"kind": "todo", "n": 3})),
        ("op_eq", num, json!({"n": {"$eq": 3}})),
        ("op_ne", num, json!({"n": {"$ne": 3}})),
        ("op_gt", num, json!({"n": {"$gt": 1}})),
        ("op_gte", num, json!({"n": {"$gte": 2.5}})),
        ("op_lt", num, json!({"n": {"$lt": 3}})),
        ("op_lte", num, json!({"n": {"$lte": 2.5}})),
        ("op_range", num, json!({"n": {"$gt": 1, "$lt": 3}})),
        ("op_eq_string", docs, json!({"kind": {"$eq": "todo"}})),
        ("op_ne_string", docs, json!({"kind": {"$ne": "todo"}})),
        ("op_ne_missing_field", docs, json!({"n": {"$ne": 3}})),
        ("op_gt_missing_field", docs, json!({"n": {"$gt": 1}})),
        ("dotted_field", docs, json!({"meta.lang": "en"})),
        ("unknown_operator", docs, json!({"n": {"$in": [1, 3]}})),
        ("order_against_string", docs, json!({"kind": {"$gt": "m"}})),
    ]
}

async fn filters(store: &dyn Store) -> Value {
    let items = [
        (
            ["docs", "num"],
            "n1",
            json!({"kind": "note", "n": 1, "tags": ["x", "y"],
                   "meta": {"lang": "en", "len": 3}, "flag": true}),
        ),
        (
            ["docs", "num"],
            "n2",
            json!({"kind": "note", "n": 2.5, "tags": ["y"],
                   "meta": {"lang": "fr"}, "flag": false}),
        ),
        (
            ["docs", "num"],
            "n3",
            json!({"kind": "todo", "n": 3, "tags": ["x", "y"],
                   "meta": {"lang": "en", "len": 3, "extra": 1}}),
        ),
        (
            ["docs", "other"],
            "n4",
            json!({"kind": "todo", "name": "has no n"}),
        ),
    ];
    for (ns, key, value) in items {
        store.put(ns, key, value).await.expect("put");
    }
    let mut out = Map::new();
    for (case, prefix, filter) in filter_cases() {
        let found = match Filter::from_json(filter) {
            Ok(filter) => {
                store
                    .search(SearchOp::new(prefix).filter(filter).limit(100))
                    .await
            }
            Err(e) => Err(e),
        };
        let facts = match found {
            Ok(found) => json!(sorted(found.iter().map(|i| i.key.clone()).collect())),
            Err(e) => json!({"error": error_class(&e)}),
        };
        out.insert(case.to_owned(), facts);
    }
    Value::Object(out)
}

async fn paging_order(factory: Factory<'_>) -> Value {
    json!({
        "same_second": same_second(&*factory(None).await).await,
        "second_apart": second_apart(&*factory(None).await).await,
    })
}

async fn same_second(store: &dyn Store) -> Value {
    for (i, key) in ["c", "a", "e", "b", "d"].into_iter().enumerate() {
        store.put(["p"], key, json!({"i": i})).await.expect("put");
        tick();
    }
    store.put(["p"], "a", json!({"i": 9})).await.expect("put");
    tick();
    store.delete(["p"], "e").await.expect("delete");
    store.put(["p"], "e", json!({"i": 10})).await.expect("put");
    let mut out = Map::new();
    let all = search(store, SearchOp::new(["p"]).limit(10)).await;
    out.insert("all".into(), json!(idents(&all)));
    for offset in [0, 2, 4, 6] {
        let page = search(store, SearchOp::new(["p"]).limit(2).offset(offset)).await;
        out.insert(format!("offset{offset}_limit2"), json!(idents(&page)));
    }
    Value::Object(out)
}

async fn second_apart(store: &dyn Store) -> Value {
    for key in ["c", "a", "b"] {
        store.put(["q"], key, json!({"k": key})).await.expect("put");
        tick();
    }
    store
        .put(["q"], "c", json!({"k": "c again"}))
        .await
        .expect("put");
    tick();
    store
        .put(["q", "deeper"], "z", json!({"k": "z"}))
        .await
        .expect("put");
    let all = search(store, SearchOp::new(["q"]).limit(10)).await;
    let page = search(store, SearchOp::new(["q"]).limit(2).offset(1)).await;
    json!({"all": idents(&all), "limit2_offset1": idents(&page)})
}

/// The cases of list_namespaces.py.
fn list_cases() -> Vec<(&'static str, ListNamespacesOp)> {
    let op = ListNamespacesOp::default;
    vec![
        ("all", op()),
        ("prefix_a", op().prefix(["a"])),
        ("prefix_a_star_c", op().prefix(["a", "*", "c"])),
        ("prefix_star", op().prefix(["*"])),
        ("suffix_c", op().suffix(["c"])),
        ("suffix_b_star", op().suffix(["b", "*"])),
        ("prefix_and_suffix", op().prefix(["a"]).suffix(["d"])),
        ("max_depth_1", op().max_depth(1)),
        ("max_depth_2", op().max_depth(2)),
        ("prefix_a_max_depth_2", op().prefix(["a"]).max_depth(2)),
        ("limit2_offset1", op().limit(2).offset(1)),
        (
            "max_depth_1_limit2_offset1",
            op().max_depth(1).limit(2).offset(1),
        ),
    ]
}

async fn list_namespaces(store: &dyn Store) -> Value {
    let held: [&[&str]; 6] = [
        &["a", "b", "c"],
        &["a", "b", "d"],
        &["a", "x"],
        &["a-b"],
        &["b", "b", "c"],
        &["c"],
    ];
    for ns in held {
        store.put(ns, "k", json!({})).await.expect("put");
    }
    let mut out = Map::new();
    for (case, op) in list_cases() {
        let listed = store.list_namespaces(op).await.expect("list");
        out.insert(case.to_owned(), json!(listed));
    }
    store.put(["gone", "x"], "k", json!({})).await.expect("put");
    store.delete(["gone", "x"], "k").await.expect("delete");
    store.get(["ghost"], "k").await.expect("get");
    let mut after = Vec::new();
    for prefix in ["g", "gone", "ghost"] {
        let op = ListNamespacesOp::default().prefix([prefix]);
        after.extend(store.list_namespaces(op).await.expect("list"));
    }
    out.insert("after_delete_and_get".into(), json!(after));
    Value::Object(out)
}

fn put(ns: &str, key: &str, value: Option<Value>) -> Op {
    Op::Put(PutOp {
        namespace: vec![ns.to_owned()],
        key: key.to_owned(),
        value: value.map(object),
        index: IndexFields::Configured,
        ttl: Ttl::Configured,
    })
}

fn get(ns: &str, key: &str) -> Op {
    Op::Get(agent_state::store::GetOp {
        namespace: vec![ns.to_owned()],
        key: key.to_owned(),
        refresh_ttl: None,
    })
}

/// A batch's result as batches.py prints it.
fn result_facts(result: OpResult) -> Value {
    match result {
        OpResult::Item(item) => item.map_or(Value::Null, |i| Value::Object(i.value)),
        OpResult::Done => Value::Null,
        OpResult::Items(items) => {
            let mut found: Vec<Value> = items.iter().map(|i| json!([ident(i), i.value])).collect();
            found.sort_by_key(|pair| pair[0].as_str().unwrap_or_default().to_owned());
            json!(found)
        }
        OpResult::Namespaces(namespaces) => json!(namespaces),
    }
}

async fn batches(store: &dyn Store) -> Value {
    store.put(["b"], "k1", json!({"v": 1})).await.expect("put");
    store
        .put(["b"], "gone", json!({"v": 0}))
        .await
        .expect("put");
    let ops = vec![
        get("b", "k1"),
        put("b", "k1", Some(json!({"v": 2}))),
        get("b", "k1"),
        put("b", "k2", Some(json!({"v": "first"}))),
        put("b", "k2", Some(json!({"v": "last"}))),
        Op::Search(SearchOp::new(["b"]).limit(10)),
        put("c", "k3", Some(json!({"v": 3}))),
        put("c", "k3", None),
        put("b", "gone", None),
        put("b", "gone", Some(json!({"v": "back"}))),
        Op::ListNamespaces(ListNamespacesOp::default()),
        get("b", "k2"),
    ];
    let results = store.batch(ops).await.expect("batch");
    let results: Vec<Value> = results.into_iter().map(result_facts).collect();
    let mut after = Map::new();
    for (ns, key) in [("b", "k1"), ("b", "k2"), ("c", "k3"), ("b", "gone")] {
        let item = store.get([ns], key).await.expect("get");
        after.insert(
            key.to_owned(),
            item.map_or(Value::Null, |i| Value::Object(i.value)),
        );
    }
    json!({"results": results, "after": after})
}

/// What a semantic search found, scores rounded to four places as
/// Python's `round(score, 4)`.
fn scored(items: &[SearchItem]) -> Value {
    let round = |s: f64| (s * 1e4).round() / 1e4;
    json!(items
        .iter()
        .map(|i| json!([ident(i), i.score.map(round)]))
        .collect::<Vec<_>>())
}

fn put_indexed(key: &str, value: Value, index: IndexFields) -> Result<PutOp, StoreError> {
    Ok(PutOp {
        namespace: vec!["docs".to_owned()],
        key: key.to_owned(),
        value: Some(object(value)),
        index,
        ttl: Ttl::Configured,
    })
}

/// The items of semantic.py, each with its own paths to embed.
async fn semantic_items(store: &dyn Store) {
    let paths = |path: &str| IndexFields::Paths(vec![path.to_owned()]);
    let items = [
        (
            "tea",
            json!({"text": "green tea at seven", "kind": "drink"}),
            IndexFields::Configured,
        ),
        (
            "rust",
            json!({"text": "rust is a systems language", "kind": "code"}),
            IndexFields::Configured,
        ),
        (
            "trees",
            json!({"text": "oaks and ash trees", "kind": "plant"}),
            IndexFields::Configured,
        ),
        (
            "quiet",
            json!({"text": "tea tea tea", "kind": "drink"}),
            IndexFields::Off,
        ),
        (
            "sections",
            json!({"sections": [{"body": "iris"}, {"body": "tulips"}], "kind": "plant"}),
            paths("sections[*].body"),
        ),
        (
            "pair",
            json!({"title": "sea", "summary": "stars", "kind": "sky"}),
            paths("{title,summary}"),
        ),
    ];
    for (key, value, index) in items {
        store
            .put_op(put_indexed(key, value, index))
            .await
            .expect("put");
    }
}

async fn semantic(store: &dyn Store) -> Value {
    semantic_items(store).await;
    let query = |q: &str| SearchOp::new(["docs"]).query(q);
    let plants = Filter::new().eq("kind", "plant");
    let searches = [
        ("query_tea", query("tea").limit(10)),
        ("query_tulips", query("tulips").limit(3)),
        ("query_stars", query("stars").limit(2)),
        ("query_with_filter", query("tea").filter(plants).limit(10)),
        ("query_limit2_offset1", query("rust").limit(2).offset(1)),
    ];
    let mut out = Map::new();
    for (case, op) in searches {
        out.insert(case.to_owned(), scored(&search(store, op).await));
    }
    let all = search(store, SearchOp::new(["docs"]).limit(10)).await;
    out.insert("no_query".into(), json!(sorted(idents(&all))));
    let changed = json!({"text": "changed to coffee", "kind": "drink"});
    let overwrite = put_indexed("tea", changed, IndexFields::Off);
    store.put_op(overwrite).await.expect("put");
    let after = search(store, query("green tea").limit(2)).await;
    out.insert("after_unindexed_overwrite".into(), scored(&after));
    Value::Object(out)
}

/// The cases of embedded_texts.py: (case, the put's paths; none: the
/// index's default, `$`).
const TEXT_CASES: [(&str, &[&str]); 11] = [
    ("whole_value", &[]),
    ("every_item", &["a[*]"]),
    ("last_item", &["a[-1]"]),
    ("first_item", &["a[0]"]),
    ("nested_field", &["c.y"]),
    ("wildcard", &["c.*"]),
    ("two_fields", &["{b,c}"]),
    ("two_nested_fields", &["{c.z,c.w}"]),
    ("numbers", &["big", "wide", "small", "tiny"]),
    ("missing", &["nope", "c.nope"]),
    ("several_paths", &["b", "a[1]", "c.w.k"]),
];

async fn embedded_texts(factory: Factory<'_>) -> Value {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let noted = Arc::clone(&seen);
    let recording = move |texts: &[String]| {
        noted.lock().unwrap().extend(texts.iter().cloned());
        letter_counts(texts)
    };
    let store = factory(Some(IndexConfig::new(ALPHABET.len(), recording))).await;
    let value = json!({
        "b": 1,
        "a": [1, 2.5, "é", true, null, [3, "x"]],
        "c": {"z": "line\nbreak \"quoted\"", "y": 1.0, "w": {"k": false}},
        "big": 1e20,
        "wide": 12_345_678_901_234_567_890_u64,
        "small": 0.1 + 0.2,
        "tiny": 1.5e-7,
    });
    let mut out = Map::new();
    for (case, paths) in TEXT_CASES {
        seen.lock().unwrap().clear();
        let index = match paths {
            [] => IndexFields::Configured,
            paths => IndexFields::Paths(paths.iter().map(|p| (*p).to_owned()).collect()),
        };
        let op = PutOp {
            namespace: vec!["t".into()],
            key: case.into(),
            value: Some(object(value.clone())),
            index,
            ttl: Ttl::Configured,
        };
        store.put_op(Ok(op)).await.expect("put");
        let mut texts = seen.lock().unwrap().clone();
        texts.sort();
        texts.dedup();
        out.insert(case.to_owned(), json!(texts));
    }
    Value::Object(out)
}

/// Every item and namespace the store holds.
async fn written(store: &dyn Store) -> Value {
    let items = search(store, SearchOp::new(Vec::<String>::new()).limit(100)).await;
    let namespaces = store.list_namespaces(ListNamespacesOp::default()).await;
    json!({"items": sorted(idents(&items)), "namespaces": namespaces.expect("list")})
}

async fn filtered(store: &dyn Store, filter: Value) -> Result<Vec<SearchItem>, StoreError> {
    let filter = Filter::from_json(filter)?;
    store.search(SearchOp::new(["held"]).filter(filter)).await
}

/// Records a case of validation.py: the error's class, then what the
/// store holds right after.
async fn note(
    out: &mut Map<String, Value>,
    store: &dyn Store,
    case: &str,
    result: Result<(), StoreError>,
) {
    let facts = json!({"error": error_of(result), "after": written(store).await});
    out.insert(case.to_owned(), facts);
}

async fn validation(store: &dyn Store) -> Value {
    store
        .put(["held"], "k", json!({"n": 1}))
        .await
        .expect("put");
    let v = || json!({"v": 1});
    let none: [&str; 0] = [];
    let mut out = Map::new();
    let result = store.put(none, "k", v()).await;
    note(&mut out, store, "empty_namespace", result).await;
    let result = store.put(["a.b"], "k", v()).await;
    note(&mut out, store, "dotted_label", result).await;
    let result = store.put(["a", ""], "k", v()).await;
    note(&mut out, store, "empty_label", result).await;
    let result = store.put(["langgraph", "x"], "k", v()).await;
    note(&mut out, store, "langgraph_root", result).await;
    let result = store.search(SearchOp::new(["a.b"])).await.map(drop);
    note(&mut out, store, "search_dotted_prefix", result).await;
    let result = filtered(store, json!({"n": {"$in": [1]}})).await.map(drop);
    note(&mut out, store, "unknown_operator", result).await;
    let result = filtered(store, json!({"n": {"$gt": "x"}})).await.map(drop);
    note(&mut out, store, "order_against_string", result).await;
    let batch = vec![put("ok", "k", Some(v())), put("x.y", "k", Some(v()))];
    let result = store.batch(batch).await.map(drop);
    note(&mut out, store, "batch_dotted_label_with_valid_put", result).await;
    Value::Object(out)
}
