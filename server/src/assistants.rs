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
        .route("/assistants/{id}", get(one))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
}

/// `POST /assistants/search`'s body.
#[derive(Deserialize)]
struct Search {
    graph_id: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
    limit: Option<usize>,
    offset: Option<usize>,
}

async fn search(State(app): State<Arc<App>>, JsonBody(q): JsonBody<Search>) -> Response {
    // Every assistant's metadata is `{"created_by": "system"}`.
    let system = json!("system");
    let matches = |a: &&crate::app::Assistant| {
        q.graph_id.as_ref().is_none_or(|g| *g == a.graph_id)
            && q.metadata
                .iter()
                .all(|(k, v)| k == "created_by" && *v == system)
    };
    let found: Vec<Value> = app
        .assistants
        .values()
        .filter(matches)
        .map(|a| a.to_json())
        .collect();
    let total = found.len();
    let page: Vec<Value> = found
        .into_iter()
        .skip(q.offset.unwrap_or(0))
        .take(q.limit.unwrap_or(10))
        .collect();
    paginated(page, total)
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
