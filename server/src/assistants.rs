//! `/assistants`: one per registered graph.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::body::JsonBody;
use crate::drawing;
use crate::error::ApiError;
use crate::listing;

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

/// The fields `sort_by` may name (the official server's).
const SORT_KEYS: [&str; 5] = [
    "assistant_id",
    "created_at",
    "updated_at",
    "name",
    "graph_id",
];

/// The fields `select` may name.
const FIELDS: [&str; 10] = [
    "assistant_id",
    "graph_id",
    "config",
    "context",
    "metadata",
    "name",
    "created_at",
    "updated_at",
    "version",
    "description",
];

/// The assistants a search matches: by graph, by name (a part of it, any
/// case) and by metadata (every assistant's is `{"created_by":
/// "system"}`), in the order asked.
fn matching(app: &App, q: &Search) -> Result<Vec<Value>, ApiError> {
    let name = q.name.as_ref().map(|n| n.to_lowercase());
    let matches = |a: &Value| {
        let text = |k: &str| a[k].as_str().unwrap_or_default().to_owned();
        q.graph_id.as_ref().is_none_or(|g| *g == text("graph_id"))
            && name
                .as_ref()
                .is_none_or(|n| text("name").to_lowercase().contains(n))
            && q.metadata
                .iter()
                .all(|(k, v)| a["metadata"].get(k) == Some(v))
    };
    let all = app.assistants.values().map(crate::app::Assistant::to_json);
    let mut found: Vec<Value> = all.filter(matches).collect();
    let (by, order) = (q.sort_by.as_deref(), q.sort_order.as_deref());
    listing::sort(&mut found, by, order, &SORT_KEYS, "created_at")?;
    Ok(found)
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
        .map(|a| listing::select(a, &q.select, &FIELDS))
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

/// The graph's nodes and edges; with `xray`, its subgraph nodes drawn
/// expanded (`true`: every level; a number: that many).
async fn graph(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let assistant = app.path_assistant(&id)?;
    let depth = drawing::xray_depth(q.get("xray").map(String::as_str))?;
    Ok(Json(assistant.graph.drawing(depth)))
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
