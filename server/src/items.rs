//! The Store's endpoints (LangGraph's long-term memory, shared by every
//! thread and graph), in the official server's shapes: `PUT`, `GET` and
//! `DELETE /store/items`, `POST /store/items/search` and `POST
//! /store/namespaces`. A missing item is `200 null`; a namespace in a
//! query string is dotted; every refusal is a 422 naming what is wrong,
//! and nothing is written.

use std::sync::Arc;

use agent_state::store::{
    Filter, GetOp, IndexFields, ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Ttl,
};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::body::JsonBody;
use crate::error::ApiError;

/// The routes, on the app's store.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route(
            "/store/items",
            put(put_item).get(get_item).delete(delete_item),
        )
        .route("/store/items/search", post(search))
        .route("/store/namespaces", post(namespaces))
}

/// `PUT /store/items`'s body.
#[derive(Deserialize)]
struct PutBody {
    #[serde(default)]
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    #[serde(default)]
    index: Option<IndexBody>,
    #[serde(default)]
    ttl: Option<f64>,
}

/// `index`: `false`, or the paths to embed.
#[derive(Deserialize)]
#[serde(untagged)]
enum IndexBody {
    Off(bool),
    Paths(Vec<String>),
}

async fn put_item(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<PutBody>,
) -> Result<StatusCode, ApiError> {
    let index = match body.index {
        None => IndexFields::Configured,
        Some(IndexBody::Off(false)) => IndexFields::Off,
        Some(IndexBody::Off(true)) => {
            return Err(ApiError::Invalid(
                "`index` is false or a list of paths, not true".into(),
            ))
        }
        Some(IndexBody::Paths(paths)) => IndexFields::Paths(paths),
    };
    let op = PutOp {
        namespace: body.namespace,
        key: body.key,
        value: Some(body.value),
        index,
        ttl: body.ttl.map_or(Ttl::Configured, Ttl::Minutes),
    };
    app.items.batch(vec![Op::Put(op)]).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /store/items`'s query: the namespace dotted, as the SDKs send it.
#[derive(Deserialize)]
struct GetQuery {
    #[serde(default)]
    namespace: String,
    key: Option<String>,
    refresh_ttl: Option<String>,
}

async fn get_item(
    State(app): State<Arc<App>>,
    query: Result<Query<GetQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::Invalid(format!("Invalid query: {e}")))?;
    let Some(key) = query.key.filter(|k| !k.is_empty()) else {
        // The official server's answer, which has `error`, not `detail`.
        let body = Json(json!({"error": "Key is required"}));
        return Ok((StatusCode::BAD_REQUEST, body).into_response());
    };
    let op = GetOp {
        namespace: query.namespace.split('.').map(str::to_owned).collect(),
        key,
        refresh_ttl: query.refresh_ttl.map(|r| r.eq_ignore_ascii_case("true")),
    };
    match one(app.items.batch(vec![Op::Get(op)]).await?) {
        OpResult::Item(Some(item)) => Ok(Json(item).into_response()),
        _ => Ok(Json(Value::Null).into_response()),
    }
}

/// `DELETE /store/items`'s body.
#[derive(Deserialize)]
struct DeleteBody {
    #[serde(default)]
    namespace: Vec<String>,
    key: String,
}

async fn delete_item(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<DeleteBody>,
) -> Result<StatusCode, ApiError> {
    let op = PutOp {
        namespace: body.namespace,
        key: body.key,
        value: None,
        index: IndexFields::Configured,
        ttl: Ttl::Configured,
    };
    app.items.batch(vec![Op::Put(op)]).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /store/items/search`'s body.
#[derive(Deserialize)]
struct SearchBody {
    #[serde(default)]
    namespace_prefix: Option<Vec<String>>,
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

async fn search(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let mut op = SearchOp::new(body.namespace_prefix.unwrap_or_default())
        .filter(Filter::from_json(body.filter.unwrap_or(Value::Null))?)
        .limit(body.limit.unwrap_or(10))
        .offset(body.offset.unwrap_or(0));
    op.query = body.query;
    op.refresh_ttl = body.refresh_ttl;
    match one(app.items.batch(vec![Op::Search(op)]).await?) {
        OpResult::Items(items) => Ok(Json(json!({ "items": items }))),
        _ => Ok(Json(json!({ "items": [] }))),
    }
}

/// `POST /store/namespaces`'s body.
#[derive(Deserialize)]
struct NamespacesBody {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

async fn namespaces(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<NamespacesBody>,
) -> Result<Json<Value>, ApiError> {
    let mut op = ListNamespacesOp::default()
        .limit(body.limit.unwrap_or(100))
        .offset(body.offset.unwrap_or(0));
    // An empty list is no condition, as the official server reads it.
    if let Some(prefix) = body.prefix.filter(|p| !p.is_empty()) {
        op = op.prefix(prefix);
    }
    if let Some(suffix) = body.suffix.filter(|s| !s.is_empty()) {
        op = op.suffix(suffix);
    }
    op.max_depth = body.max_depth;
    match one(app.items.batch(vec![Op::ListNamespaces(op)]).await?) {
        OpResult::Namespaces(namespaces) => Ok(Json(json!({ "namespaces": namespaces }))),
        _ => Ok(Json(json!({ "namespaces": [] }))),
    }
}

fn one(mut results: Vec<OpResult>) -> OpResult {
    results.pop().unwrap_or(OpResult::Done)
}
