//! `OpenAiEmbeddings` against a local server this test starts, which
//! speaks OpenAI's `POST /v1/embeddings`: it embeds each input by letter
//! counts (answering the vectors in reverse order, each with its
//! `index`), or answers what the test scripts (errors, a wrong count of
//! vectors, a wrong size, a body that is not JSON). Error statuses come
//! with `Retry-After: 0`, so the client's own retries (three) are quick.
//! No network, no key.
#![cfg(feature = "openai")]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_state::serde_json::{json, Value};
use agent_state::store::{
    IndexConfig, ListNamespacesOp, MemoryStore, Op, PutOp, SearchOp, Store, StoreError, StoreExt,
};
use agent_state::store::{IndexFields, OpenAiEmbeddings, Ttl};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

/// What the server answers instead of the vectors, in order.
enum Fault {
    Status(u16, Value),
    /// One vector fewer than the inputs.
    Short,
    /// Vectors of three dimensions.
    Small,
    /// Both vectors claim index 0.
    SameIndex,
    NotJson,
}

#[derive(Default)]
struct Server {
    faults: Mutex<VecDeque<Fault>>,
    /// Each request's body and `Authorization` header.
    requests: Mutex<Vec<(Value, Option<String>)>>,
}

const ALPHABET: &str = "aeioustr";

fn letter_counts(text: &str) -> Vec<f32> {
    let text = text.to_lowercase();
    ALPHABET
        .chars()
        .map(|c| text.matches(c).count() as f32)
        .collect()
}

async fn embeddings(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    server
        .requests
        .lock()
        .unwrap()
        .push((request.clone(), auth));
    let inputs: Vec<String> = request["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({"object": "embedding", "index": index, "embedding": letter_counts(text)})
        })
        .collect();
    data.reverse();
    match server.faults.lock().unwrap().pop_front() {
        Some(Fault::Status(code, body)) => {
            let status = StatusCode::from_u16(code).unwrap();
            return (status, [(header::RETRY_AFTER, "0")], axum::Json(body)).into_response();
        }
        Some(Fault::NotJson) => return "<html>gateway</html>".into_response(),
        Some(Fault::Short) => drop(data.pop()),
        Some(Fault::Small) => data
            .iter_mut()
            .for_each(|d| d["embedding"] = json!([1.0, 2.0, 3.0])),
        Some(Fault::SameIndex) => data.iter_mut().for_each(|d| d["index"] = json!(0)),
        None => {}
    }
    let usage = json!({"prompt_tokens": 1, "total_tokens": 1});
    axum::Json(json!({"object": "list", "data": data, "model": request["model"], "usage": usage}))
        .into_response()
}

/// Starts the server on a loopback port; the embeddings talk to it.
async fn serve(faults: Vec<Fault>) -> (OpenAiEmbeddings, Arc<Server>) {
    let server = Arc::new(Server {
        faults: Mutex::new(faults.into()),
        requests: Mutex::default(),
    });
    let app = Router::new()
        .route("/v1/embeddings", post(embeddings))
        .with_state(Arc::clone(&server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let model = OpenAiEmbeddings::new("embed-test")
        .with_base_url(url)
        .with_api_key("sk-test");
    (model, server)
}

fn put(key: &str, text: &str) -> Op {
    Op::Put(PutOp {
        namespace: vec!["docs".into()],
        key: key.into(),
        value: json!({"text": text}).as_object().cloned(),
        index: IndexFields::Configured,
        ttl: Ttl::Configured,
    })
}

fn store(embeddings: OpenAiEmbeddings) -> MemoryStore {
    MemoryStore::new().with_index(IndexConfig::new(ALPHABET.len(), embeddings).fields(["text"]))
}

#[tokio::test]
async fn a_store_puts_and_searches_through_the_endpoint() {
    let (embeddings, server) = serve(vec![]).await;
    let store = store(embeddings.with_batch_size(2));
    let puts = vec![
        put("tea", "green tea at seven"),
        put("rust", "rust is a systems language"),
        put("trees", "oaks and ash trees"),
    ];
    store.batch(puts).await.unwrap();
    let found = store
        .search(SearchOp::new(["docs"]).query("tea"))
        .await
        .unwrap();
    let keys: Vec<&str> = found.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["tea", "trees", "rust"]);
    // The scores are the letter counts' cosines, as the Python side's.
    let score = found[0].score.unwrap();
    assert!((score - 0.8783).abs() < 1e-4, "{score}");

    let requests = server.requests.lock().unwrap();
    let inputs: Vec<&Value> = requests.iter().map(|(body, _)| &body["input"]).collect();
    assert_eq!(
        inputs,
        [
            &json!(["green tea at seven", "rust is a systems language"]),
            &json!(["oaks and ash trees"]),
            &json!(["tea"])
        ]
    );
    let (first, auth) = &requests[0];
    assert_eq!(first["model"], "embed-test");
    assert_eq!(first["encoding_format"], "float");
    assert!(first.get("dimensions").is_none(), "{first}");
    assert_eq!(auth.as_deref(), Some("Bearer sk-test"));
}

#[tokio::test]
async fn dimensions_are_asked_for_and_checked() {
    let (embeddings, server) = serve(vec![]).await;
    let store = store(embeddings.with_dimensions(8));
    store.batch(vec![put("a", "tea")]).await.unwrap();
    assert_eq!(server.requests.lock().unwrap()[0].0["dimensions"], 8);
    server.faults.lock().unwrap().push_back(Fault::Small);
    let err = store.search(SearchOp::new(["docs"]).query("tea")).await;
    let reason = embedding_reason(err);
    assert!(
        reason.contains("a vector of 3 dimensions where 8 were expected"),
        "{reason}"
    );
}

fn embedding_reason<T: std::fmt::Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Err(StoreError::Embedding { reason }) => reason,
        other => panic!("expected an embedding error, got {other:?}"),
    }
}

/// A put through `embeddings` fails with the reason returned, and wrote
/// nothing.
async fn refused_put(embeddings: OpenAiEmbeddings) -> String {
    let store = store(embeddings);
    let reason = embedding_reason(store.batch(vec![put("a", "tea"), put("b", "rust")]).await);
    assert!(store.get(["docs"], "a").await.unwrap().is_none());
    let listed = store.list_namespaces(ListNamespacesOp::default()).await;
    assert!(listed.unwrap().is_empty());
    reason
}

#[tokio::test]
async fn error_answers_are_named_and_nothing_is_written() {
    let error = |message: &str| json!({"error": {"message": message, "type": "server_error"}});
    // A 500 is sent four times (the client retries it thrice); a 401 once.
    let overloaded = || Fault::Status(500, error("the engine is overloaded"));
    let faults = vec![
        overloaded(),
        overloaded(),
        overloaded(),
        overloaded(),
        Fault::Status(401, error("Incorrect API key provided")),
        Fault::Short,
        Fault::SameIndex,
        Fault::NotJson,
    ];
    let (embeddings, server) = serve(faults).await;
    let reason = refused_put(embeddings.clone()).await;
    assert!(
        reason.contains("/v1/embeddings answered HTTP 500: the engine is overloaded"),
        "{reason}"
    );
    let reason = refused_put(embeddings.clone()).await;
    assert!(
        reason.contains("HTTP 401: Incorrect API key provided"),
        "{reason}"
    );
    let reason = refused_put(embeddings.clone()).await;
    assert!(
        reason.contains("answered 1 vectors for 2 texts"),
        "{reason}"
    );
    let reason = refused_put(embeddings.clone()).await;
    assert!(reason.contains("index 0 twice or out of range"), "{reason}");
    let reason = refused_put(embeddings).await;
    assert!(reason.contains("not a list of embeddings"), "{reason}");
    assert!(reason.contains("<html>gateway</html>"), "{reason}");
    assert_eq!(server.requests.lock().unwrap().len(), 8);
}

#[tokio::test]
async fn passing_failures_are_retried() {
    let busy = json!({"error": {"message": "slow down"}});
    let faults = vec![Fault::Status(429, busy.clone()), Fault::Status(503, busy)];
    let (embeddings, server) = serve(faults).await;
    let store = store(embeddings);
    store.batch(vec![put("a", "tea")]).await.unwrap();
    assert_eq!(server.requests.lock().unwrap().len(), 3);
    assert!(store.get(["docs"], "a").await.unwrap().is_some());
    // A refusal that will not pass is not sent again.
    let bad = json!({"error": {"message": "bad input"}});
    server
        .faults
        .lock()
        .unwrap()
        .push_back(Fault::Status(400, bad));
    let reason = embedding_reason(store.batch(vec![put("b", "x")]).await);
    assert!(reason.contains("HTTP 400: bad input"), "{reason}");
    assert_eq!(server.requests.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    // The client tries a refused connection four times, 0.7 s in all.
    let embeddings = OpenAiEmbeddings::new("m").with_base_url(&url);
    let reason = refused_put(embeddings).await;
    assert!(
        reason.contains(&format!("could not reach {url}/embeddings")),
        "{reason}"
    );
}
