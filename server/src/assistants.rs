//! `/assistants`: one per registered graph.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::body::JsonBody;
use crate::error::ApiError;

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route("/assistants/{id}", get(one))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
}

/// `POST /assistants/search`'s (and `/count`'s) body.
#[derive(Deserialize)]
struct Search {
    graph_id: Option<String>,
    name: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
    limit: Option<usize>,
    offset: Option<usize>,
    sort_by: Option<String>,
    sort_order: Option<String>,
    #[serde(default)]
    select: Vec<String>,
}

/// The keys `sort_by` may name (the official server's).
const SORT_KEYS: [&str; 5] = [
    "assistant_id",
    "created_at",
    "updated_at",
    "name",
    "graph_id",
];

/// The assistants a search matches: by graph, by name (a part of it, any
/// case) and by metadata (every assistant's is `{"created_by":
/// "system"}`), in the order asked.
fn matching(app: &App, q: &Search) -> Result<Vec<Value>, ApiError> {
    let name = q.name.as_ref().map(|n| n.to_lowercase());
    let matches = |a: &&crate::app::Assistant| {
        let meta = a.to_json()["metadata"].clone();
        q.graph_id.as_ref().is_none_or(|g| *g == a.graph_id)
            && name
                .as_ref()
                .is_none_or(|n| a.graph_id.to_lowercase().contains(n))
            && q.metadata.iter().all(|(k, v)| meta.get(k) == Some(v))
    };
    let mut found: Vec<Value> = app
        .assistants
        .values()
        .filter(matches)
        .map(|a| a.to_json())
        .collect();
    let key = q.sort_by.as_deref().unwrap_or("created_at");
    if !SORT_KEYS.contains(&key) {
        return Err(ApiError::Invalid(format!(
            "sort_by: `{key}` is not one of {}",
            SORT_KEYS.join(", ")
        )));
    }
    let descending = match q.sort_order.as_deref().unwrap_or("desc") {
        "asc" => false,
        "desc" => true,
        other => {
            return Err(ApiError::Invalid(format!(
                "sort_order: `{other}` is not one of \"asc\", \"desc\""
            )))
        }
    };
    let text = |v: &Value| v[key].as_str().unwrap_or_default().to_owned();
    found.sort_by_key(text);
    if descending {
        found.reverse();
    }
    Ok(found)
}

/// Only the `select`ed keys of an assistant (all when none is named).
fn selected(a: Value, select: &[String]) -> Result<Value, ApiError> {
    let Value::Object(all) = a else { return Ok(a) };
    if select.is_empty() {
        return Ok(Value::Object(all));
    }
    let mut out = Map::new();
    for key in select {
        let value = all.get(key).ok_or_else(|| {
            ApiError::Invalid(format!("select: `{key}` is not a field of an assistant"))
        })?;
        out.insert(key.clone(), value.clone());
    }
    Ok(Value::Object(out))
}

async fn search(
    State(app): State<Arc<App>>,
    JsonBody(q): JsonBody<Search>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &q)?;
    let total = found.len();
    let page = found
        .into_iter()
        .skip(q.offset.unwrap_or(0))
        .take(q.limit.unwrap_or(10))
        .map(|a| selected(a, &q.select))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(paginated(page, total))
}

/// `POST /assistants/count`: how many assistants a search would find.
async fn count(
    State(app): State<Arc<App>>,
    JsonBody(q): JsonBody<Search>,
) -> Result<Json<usize>, ApiError> {
    Ok(Json(matching(&app, &q)?.len()))
}

/// A list with its `x-pagination-total` header.
pub(crate) fn paginated(page: Vec<Value>, total: usize) -> Response {
    let mut response = Json(page).into_response();
    response
        .headers_mut()
        .insert("x-pagination-total", HeaderValue::from(total));
    response
}

async fn one(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(app.path_assistant(&id)?.to_json()))
}

async fn graph(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(app.path_assistant(&id)?.graph.drawing()))
}

/// The input, output and state JSON Schemas of a graph registered with
/// them; `null` each otherwise (clients then build no form).
async fn schemas(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let a = app.path_assistant(&id)?;
    let of = |key: &str| a.schemas.as_ref().map_or(Value::Null, |s| s[key].clone());
    Ok(Json(json!({
        "graph_id": a.graph_id,
        "input_schema": of("input_schema"),
        "output_schema": of("output_schema"),
        "state_schema": of("state_schema"),
        "config_schema": {},
        "context_schema": null,
    })))
}
