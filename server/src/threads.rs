//! `/threads`: create, read, patch, delete, search, copy, and a thread's
//! state (its history is `history.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use agent_state::checkpoint::CheckpointId;
use agent_state::graph::GraphError;

use crate::app::App;
use crate::assistants::paginated;
use crate::auth::Scope;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::ids::{is_uuid, new_id, now};
use crate::served::UpdateError;
use crate::snapshot;
use crate::store::ThreadRow;

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/count", post(count))
        .route("/threads/prune", post(crate::retention::prune))
        .route("/threads/{id}", get(one).patch(patch).delete(delete))
        .route("/threads/{id}/state", get(state).post(update_state))
        .route("/threads/{id}/state/{checkpoint_id}", get(state_at))
        .route("/threads/{id}/state/checkpoint", post(state_at_post))
        .route(
            "/threads/{id}/history",
            post(crate::history::history).get(crate::history::history_query),
        )
        .route("/threads/{id}/copy", post(copy))
}

/// A thread as the API shows it: `error` and `interrupts` once it ran.
pub(crate) fn thread_json(t: &ThreadRow) -> Value {
    let mut value = json!({
        "thread_id": t.thread_id, "created_at": t.created_at, "updated_at": t.updated_at,
        "state_updated_at": t.state_updated_at, "metadata": t.metadata, "status": t.status,
        "config": t.config, "values": t.values,
    });
    if t.values.is_some() {
        value["error"] = t.error.clone().unwrap_or(Value::Null);
        value["interrupts"] = t.interrupts.clone();
    }
    value
}

/// A new idle thread.
pub(crate) fn new_thread(id: String, metadata: Map<String, Value>) -> ThreadRow {
    let stamp = now();
    ThreadRow {
        thread_id: id,
        created_at: stamp.clone(),
        updated_at: stamp.clone(),
        state_updated_at: stamp,
        metadata,
        status: "idle".to_owned(),
        config: json!({}),
        values: None,
        error: None,
        interrupts: json!({}),
    }
}

/// The stored thread a path names: 422 for an id that is not a UUID
/// (`.` and `..` included), 404 for an unknown one.
pub(crate) async fn path_thread(app: &App, id: &str) -> Result<ThreadRow, ApiError> {
    if !is_uuid(id) {
        return Err(ApiError::not_uuid("thread"));
    }
    app.store
        .thread(id)
        .await?
        .ok_or_else(|| ApiError::no_thread(id))
}

/// `POST /threads`'s body.
#[derive(Deserialize)]
struct Create {
    thread_id: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
    if_exists: Option<String>,
    ttl: Option<Value>,
}

async fn create(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<Create>,
) -> Result<Json<Value>, ApiError> {
    let do_nothing = match body.if_exists.as_deref() {
        None | Some("raise") => false,
        Some("do_nothing") => true,
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "if_exists: `{other}` is not one of \"raise\", \"do_nothing\""
            )))
        }
    };
    let id = body.thread_id.unwrap_or_else(new_id);
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("thread"));
    }
    let ttl = crate::retention::read_ttl(body.ttl.as_ref(), &app)?;
    let thread = new_thread(id.clone(), body.metadata);
    if app.store.insert_thread(&thread).await? {
        crate::retention::start_ttl(&app, &id, ttl).await?;
        return Ok(Json(thread_json(&thread)));
    }
    match (do_nothing, app.store.thread(&id).await?) {
        (true, Some(existing)) => Ok(Json(thread_json(&existing))),
        _ => Err(ApiError::Conflict(format!(
            "Thread with ID {id} already exists"
        ))),
    }
}

/// `GET /threads/{id}`; with `?include=ttl`, its TTL too (when it has
/// one), as the official server shows it.
async fn one(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let mut thread = thread_json(&path_thread(&app, &id).await?);
    let include = query.get("include").map_or("", String::as_str);
    if include.split(',').any(|f| f.trim() == "ttl") {
        if let Some(ttl) = crate::retention::ttl_json(&app, &id).await? {
            thread["ttl"] = ttl;
        }
    }
    Ok(Json(thread))
}

/// `PATCH /threads/{id}`'s body.
#[derive(Deserialize)]
struct Patch {
    #[serde(default)]
    metadata: Map<String, Value>,
    ttl: Option<Value>,
}

async fn patch(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Patch>,
) -> Result<Json<Value>, ApiError> {
    let mut thread = path_thread(&app, &id).await?;
    let ttl = crate::retention::read_ttl(body.ttl.as_ref(), &app)?;
    thread.metadata.extend(body.metadata);
    thread.updated_at = now();
    app.store.save_thread(&thread).await?;
    if let Some(ttl) = ttl {
        crate::retention::set_ttl(&app, &id, ttl).await?;
    }
    Ok(Json(thread_json(&thread)))
}

/// `DELETE /threads/{id}`: its runs are stopped first (each at its next
/// event), then the thread, its runs and its checkpoints are deleted; 204.
async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    path_thread(&app, &id).await?;
    crate::retention::remove_thread(&app, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /threads/search`'s (and `/count`'s) body.
#[derive(Deserialize)]
struct Search {
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    values: Map<String, Value>,
    ids: Option<Vec<String>>,
    status: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
    sort_by: Option<String>,
    sort_order: Option<String>,
    #[serde(default)]
    select: Vec<String>,
    #[serde(default)]
    extract: Map<String, Value>,
}

/// The fields `sort_by` may name (the official server's).
const SORT_KEYS: [&str; 5] = [
    "thread_id",
    "status",
    "created_at",
    "updated_at",
    "state_updated_at",
];

/// The fields `select` may name.
const FIELDS: [&str; 9] = [
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "config",
    "status",
    "values",
    "interrupts",
];

/// The threads a search or a count matches (by ids, status, metadata and
/// values, each key equal), in the order asked (newest first).
async fn matching(app: &App, q: &Search, scope: &Scope) -> Result<Vec<Value>, ApiError> {
    if !q.extract.is_empty() {
        return Err(ApiError::Invalid(
            "extract: not supported by this server yet; use `select`".to_owned(),
        ));
    }
    let matches = |t: &ThreadRow| {
        let values = t.values.as_ref();
        scope.admits(&t.metadata)
            && q.ids.as_ref().is_none_or(|ids| ids.contains(&t.thread_id))
            && q.status.as_ref().is_none_or(|s| *s == t.status)
            && q.metadata.iter().all(|(k, v)| t.metadata.get(k) == Some(v))
            && q.values
                .iter()
                .all(|(k, v)| values.and_then(|x| x.get(k)) == Some(v))
    };
    let threads = app.store.threads().await?.into_iter().filter(matches);
    let mut found: Vec<Value> = threads.map(|t| thread_json(&t)).collect();
    let (by, order) = (q.sort_by.as_deref(), q.sort_order.as_deref());
    crate::listing::sort(&mut found, by, order, &SORT_KEYS, "created_at")?;
    Ok(found)
}

async fn search(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(q): JsonBody<Search>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &q, &scope).await?;
    let total = found.len();
    let page = found
        .into_iter()
        .skip(q.offset.unwrap_or(0))
        .take(q.limit.unwrap_or(10))
        .map(|t| crate::listing::select(t, &q.select, &FIELDS))
        .collect::<Result<Vec<Value>, ApiError>>()?;
    Ok(paginated(page, total))
}

/// `POST /threads/count`: how many threads a search would find.
async fn count(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(q): JsonBody<Search>,
) -> Result<Json<usize>, ApiError> {
    Ok(Json(matching(&app, &q, &scope).await?.len()))
}

/// The graph a thread ran on, from the `graph_id` its first run stamped.
pub(crate) fn thread_graph<'a>(app: &'a App, t: &ThreadRow) -> Option<&'a crate::app::Assistant> {
    let graph_id = t.metadata.get("graph_id")?.as_str()?;
    app.assistants.get(graph_id)
}

async fn state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let thread = path_thread(&app, &id).await?;
    let Some(assistant) = thread_graph(&app, &thread) else {
        return Ok(Json(snapshot::empty()));
    };
    let snap = assistant
        .graph
        .state(&*app.saver, &id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(snapshot::to_json(&snap, &thread.metadata)))
}

/// `GET /threads/{id}/state/{checkpoint_id}`: the thread at one of its
/// checkpoints (ids as `/history` lists them).
async fn state_at(
    State(app): State<Arc<App>>,
    Path((id, checkpoint_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let thread = path_thread(&app, &id).await?;
    Ok(Json(
        state_at_checkpoint(&app, &thread, &checkpoint_id).await?,
    ))
}

/// The thread's state at `checkpoint_id`; 404 for an id it does not have.
async fn state_at_checkpoint(
    app: &App,
    thread: &ThreadRow,
    checkpoint_id: &str,
) -> Result<Value, ApiError> {
    let id = &thread.thread_id;
    let unknown = || {
        ApiError::NotFound(format!(
            "Checkpoint {checkpoint_id} not found in thread {id}"
        ))
    };
    let cp = checkpoint_id
        .parse()
        .map(CheckpointId)
        .map_err(|_| unknown())?;
    let assistant = thread_graph(app, thread).ok_or_else(unknown)?;
    let snap = assistant.graph.state_at(&*app.saver, id, cp).await;
    match snap {
        Ok(snap) if snap.checkpoint.is_some() => Ok(snapshot::to_json(&snap, &thread.metadata)),
        Ok(_) | Err(GraphError::Checkpoint(_)) => Err(unknown()),
        Err(e) => Err(ApiError::Internal(e.to_string())),
    }
}

/// `POST /threads/{id}/state/checkpoint`'s body: what the SDKs'
/// `get_state(thread, checkpoint=..)` sends.
#[derive(Deserialize)]
struct StateAt {
    checkpoint: Option<Value>,
    /// Accepted as the official server accepts it: a subgraph's task shows
    /// `state: null` either way here.
    #[serde(default)]
    #[allow(dead_code)]
    subgraphs: Option<bool>,
}

/// `POST /threads/{id}/state/checkpoint`: the thread at the checkpoint
/// `{"checkpoint_id", "checkpoint_ns"}` names (its latest state when it
/// names none, as the official server answers `{}`).
async fn state_at_post(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<StateAt>,
) -> Result<Json<Value>, ApiError> {
    let thread = path_thread(&app, &id).await?;
    let checkpoint = match body.checkpoint {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => {
            return Err(ApiError::Invalid(
                "checkpoint: required (an object with `checkpoint_id`)".to_owned(),
            ))
        }
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "checkpoint: `{other}` is not an object with `checkpoint_id`"
            )))
        }
    };
    match checkpoint.get("checkpoint_id") {
        None | Some(Value::Null) => state(State(app), Path(id)).await,
        Some(Value::String(cp)) => Ok(Json(state_at_checkpoint(&app, &thread, cp).await?)),
        Some(other) => Err(ApiError::Invalid(format!(
            "checkpoint.checkpoint_id: `{other}` is not a string"
        ))),
    }
}

/// `POST /threads/{id}/state`'s body.
#[derive(Deserialize)]
struct UpdateState {
    #[serde(default)]
    values: Value,
    as_node: Option<String>,
    /// The checkpoint to fork the thread at (`checkpoint_id`, or
    /// `checkpoint.checkpoint_id` as the SDKs' `checkpoint=` sends it).
    checkpoint_id: Option<Value>,
    checkpoint: Option<Value>,
}

/// The checkpoint an update forks the thread at, if it names one: 422 for
/// an id of the wrong form, 404 for one the thread does not have.
async fn fork_point(
    app: &App,
    thread: &ThreadRow,
    body: &UpdateState,
) -> Result<Option<CheckpointId>, ApiError> {
    let nested = body
        .checkpoint
        .as_ref()
        .map(|c| (c, c.get("checkpoint_id")));
    let named = match (&body.checkpoint_id, nested) {
        (Some(v), _) if !v.is_null() => ("checkpoint_id", v),
        (_, Some((_, Some(v)))) if !v.is_null() => ("checkpoint.checkpoint_id", v),
        (_, Some((c, _))) if !c.is_null() && !c.is_object() => {
            return Err(ApiError::Invalid(format!(
                "checkpoint: `{c}` is not an object with `checkpoint_id`"
            )))
        }
        _ => return Ok(None),
    };
    let Some(cp) = named.1.as_str() else {
        return Err(ApiError::Invalid(format!(
            "{}: `{}` is not a string",
            named.0, named.1
        )));
    };
    state_at_checkpoint(app, thread, cp).await?;
    Ok(cp.parse().ok().map(CheckpointId))
}

async fn update_state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdateState>,
) -> Result<Json<Value>, ApiError> {
    let mut thread = path_thread(&app, &id).await?;
    let Some(assistant) = thread_graph(&app, &thread) else {
        return Err(ApiError::BadRequest(
            "Thread has no graph yet: run it once before updating its state".to_owned(),
        ));
    };
    let at = fork_point(&app, &thread, &body).await?;
    let values = if body.values.is_null() {
        json!({})
    } else {
        body.values
    };
    let saver = &*app.saver;
    let cp = match assistant
        .graph
        .update_state(saver, &id, values, body.as_node, at)
        .await
    {
        Ok(cp) => cp,
        Err(UpdateError::Values(e)) => return Err(ApiError::Invalid(format!("values: {e}"))),
        Err(UpdateError::Graph(e)) => return Err(ApiError::from_graph(e)),
    };
    if let Ok(snap) = assistant.graph.state(saver, &id).await {
        thread.values = Some(snap.values);
        thread.state_updated_at = now();
        thread.updated_at = thread.state_updated_at.clone();
        app.store.save_thread(&thread).await?;
    }
    Ok(Json(snapshot::updated(&cp)))
}

/// `POST /threads/{id}/copy`: a new thread with the thread's metadata,
/// state and whole history (its checkpoints copied), answered with the
/// new thread.
async fn copy(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let original = path_thread(&app, &id).await?;
    let new_id = new_id();
    crate::copy::copy_thread(&*app.saver, &id, &new_id, None)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let mut thread = new_thread(new_id, original.metadata.clone());
    thread.values = original.values;
    thread.interrupts = original.interrupts;
    thread.error = original.error;
    if original.status != "busy" {
        thread.status = original.status;
    }
    app.store.insert_thread(&thread).await?;
    Ok(Json(thread_json(&thread)))
}
