//! `/assistants`: each registered graph's own assistant and those
//! clients create (`edit`), stored with their versions; searched,
//! counted, read, drawn and described.

mod edit;
mod form;
mod subgraphs;

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
use crate::auth::Scope;
use crate::body::JsonBody;
use crate::drawing;
use crate::error::ApiError;
use crate::listing;
use crate::store::AssistantRow;

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/assistants", post(edit::create))
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route(
            "/assistants/{id}",
            get(one).patch(edit::patch).delete(edit::delete),
        )
        .route("/assistants/{id}/versions", post(edit::versions))
        .route("/assistants/{id}/latest", post(edit::latest))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
        .route("/assistants/{id}/subgraphs", get(subgraphs::all))
        .route(
            "/assistants/{id}/subgraphs/{namespace}",
            get(subgraphs::under),
        )
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
pub(crate) const FIELDS: [&str; 10] = [
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

/// The assistants a search matches: by graph (one the server serves,
/// else 404), by name (a part of it, any case), by metadata (contained
/// in theirs) and by the caller's filter, in the order asked.
async fn matching(app: &App, q: &Search, scope: &Scope) -> Result<Vec<Value>, ApiError> {
    if let Some(graph_id) = &q.graph_id {
        served_graph(app, graph_id)?;
    }
    let name = q.name.as_ref().map(|n| n.to_lowercase());
    let wanted = Value::Object(q.metadata.clone());
    let matches = |a: &AssistantRow| {
        q.graph_id.as_ref().is_none_or(|g| *g == a.graph_id)
            && name
                .as_ref()
                .is_none_or(|n| a.name.to_lowercase().contains(n))
            && contains(&Value::Object(a.metadata.clone()), &wanted)
            && scope.admits(&a.metadata)
            && app.assistants.contains_key(&a.graph_id)
    };
    let all = app.store.assistants().await?;
    let mut found: Vec<Value> = all
        .iter()
        .filter(|a| matches(a))
        .map(AssistantRow::to_json)
        .collect();
    let (by, order) = (q.sort_by.as_deref(), q.sort_order.as_deref());
    listing::sort(&mut found, by, order, &SORT_KEYS, "created_at")?;
    if let Some(key @ ("name" | "graph_id")) = by {
        // Names sort in any case, as the official server sorts them.
        let lower = |v: &Value| v[key].as_str().unwrap_or_default().to_lowercase();
        let descending = order != Some("asc");
        found.sort_by(|a, b| match descending {
            true => lower(b).cmp(&lower(a)),
            false => lower(a).cmp(&lower(b)),
        });
    }
    Ok(found)
}

/// Whether `whole` holds `part` (PostgreSQL's `@>` on objects: each key
/// of `part` in `whole`, objects compared the same way down).
pub(crate) fn contains(whole: &Value, part: &Value) -> bool {
    match (whole, part) {
        (Value::Object(w), Value::Object(p)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|have| contains(have, v))),
        _ => whole == part,
    }
}

/// Graph `graph_id` if the server serves it; else the official server's
/// 404 listing the graphs.
pub(crate) fn served_graph<'a>(
    app: &'a App,
    graph_id: &str,
) -> Result<&'a crate::app::Assistant, ApiError> {
    app.assistants.get(graph_id).ok_or_else(|| {
        let names: Vec<String> = app.assistants.keys().map(|k| format!("'{k}'")).collect();
        tracing::info!(graph_id, "refused: no such graph");
        ApiError::NotFound(format!(
            "Graph '{graph_id}' not found. Expected one of: [{}]",
            names.join(", ")
        ))
    })
}

/// `POST /assistants/search`: a page of the assistants found, with the
/// total in `x-pagination-total` and, when more follow, the offset of the
/// next page in `x-pagination-next` (what the SDK's `response_format=
/// "object"` reads).
async fn search(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(q): JsonBody<Search>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &q, &scope).await?;
    let total = found.len();
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(10));
    let page = found
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|a| listing::select(a, &q.select, &FIELDS))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    let mut response = paginated(page, total);
    let next = offset.saturating_add(limit);
    if next < total {
        let headers = response.headers_mut();
        headers.insert("x-pagination-next", HeaderValue::from(next));
    }
    Ok(response)
}

/// `POST /assistants/count`: how many assistants a search would find.
async fn count(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(q): JsonBody<Search>,
) -> Result<Json<usize>, ApiError> {
    Ok(Json(matching(&app, &q, &scope).await?.len()))
}

/// A list with its `x-pagination-total` header.
pub(crate) fn paginated(page: Vec<Value>, total: usize) -> Response {
    let mut response = Json(page).into_response();
    response
        .headers_mut()
        .insert("x-pagination-total", HeaderValue::from(total));
    response
}

/// The 404 of a route reading an assistant: the official server's
/// plain one, or, under a filter, one naming the id.
pub(crate) fn unknown(scope: &Scope) -> impl Fn(&str) -> ApiError + '_ {
    move |id| match scope.is_filtered() {
        true => ApiError::NotFound(format!("Assistant {id} not found")),
        false => ApiError::NotFound("Not Found".to_owned()),
    }
}

/// `GET /assistants/{id}`.
async fn one(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (row, _) = app.path_record(&id, &scope, unknown(&scope)).await?;
    Ok(Json(row.to_json()))
}

/// The graph's nodes and edges; with `xray`, its subgraph nodes drawn
/// expanded (`true`: every level; a number: that many).
async fn graph(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let (_, assistant) = app.path_record(&id, &scope, unknown(&scope)).await?;
    let depth = drawing::xray_depth(q.get("xray").map(String::as_str))?;
    Ok(Json(assistant.graph.drawing(depth)))
}

/// The input, output and state JSON Schemas of a graph registered with
/// them; `null` each otherwise (clients then build no form).
async fn schemas(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (_, a) = app.path_record(&id, &scope, unknown(&scope)).await?;
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
