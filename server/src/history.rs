//! `POST` (and `GET`) `/threads/{id}/history`: a thread's states, newest first, from its
//! head or a checkpoint, filtered by their metadata.

use std::collections::HashMap;
use std::sync::Arc;

use agent_state::checkpoint::CheckpointId;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::snapshot;
use crate::threads::{path_thread, thread_graph};

/// The most states one request lists.
const MOST: usize = 1000;

/// `POST /threads/{id}/history`'s body.
#[derive(Deserialize)]
pub(crate) struct History {
    limit: Option<usize>,
    #[serde(default)]
    before: Value,
    #[serde(default)]
    checkpoint: Value,
    #[serde(default)]
    metadata: Map<String, Value>,
}

/// Where a history starts: below `before`, or at `checkpoint` (both as
/// `{"checkpoint_id"}` or `{"configurable": {"checkpoint_id"}}`). `None`
/// inside: from the head; `Some(None)`: an id this thread cannot have,
/// so nothing. The flag: only the state at `checkpoint` is listed, as
/// LangGraph's checkpointers list a config that names a checkpoint.
fn history_start(body: &History) -> Result<(Option<Option<CheckpointId>>, bool), ApiError> {
    if let Some(id) = checkpoint_in("before", &body.before)? {
        return Ok((Some(id.parse().ok().map(CheckpointId)), false));
    }
    if let Some(id) = checkpoint_in("checkpoint", &body.checkpoint)? {
        let id: Option<u64> = id.parse().ok();
        let above = id.and_then(|n| n.checked_add(1)).map(CheckpointId);
        return Ok((Some(above), true));
    }
    Ok((None, false))
}

/// The `checkpoint_id` of a checkpoint config, if it names one.
fn checkpoint_in<'a>(field: &str, config: &'a Value) -> Result<Option<&'a str>, ApiError> {
    let map = match config {
        Value::Null => return Ok(None),
        Value::Object(map) => map,
        other => {
            return Err(ApiError::Invalid(format!(
                "{field}: `{other}` is not a checkpoint config (an object with `checkpoint_id`)"
            )))
        }
    };
    let nested = map.get("configurable").and_then(|c| c.get("checkpoint_id"));
    match nested.or_else(|| map.get("checkpoint_id")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => Ok(Some(id)),
        Some(other) => Err(ApiError::Invalid(format!(
            "{field}.checkpoint_id: `{other}` is not a string"
        ))),
    }
}

/// `GET /threads/{id}/history?limit=&before=`: the same list as the
/// `POST`, from a query: `limit` (1, as the official server's GET; at
/// most [`MOST`]) states below checkpoint `before`.
pub(crate) async fn history_query(
    app: State<Arc<App>>,
    id: Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let limit = match q.get("limit") {
        None => None,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n <= MOST => Some(n),
            _ => {
                let why = format!("limit: `{v}` is not a number from 0 to {MOST}");
                return Err(ApiError::Invalid(why));
            }
        },
    };
    let limit = limit.or(Some(1));
    let before = q
        .get("before")
        .map_or(Value::Null, |b| json!({"checkpoint_id": b}));
    let body = History {
        limit,
        before,
        checkpoint: Value::Null,
        metadata: Map::new(),
    };
    history(app, id, JsonBody(body)).await
}

/// `POST /threads/{id}/history`: the thread's states, newest first, up to
/// `limit` (10), below `before` (or only the one at `checkpoint`), those whose metadata
/// holds every key of `metadata`.
pub(crate) async fn history(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<History>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let thread = path_thread(&app, &id).await?;
    let (start, only_at) = history_start(&body)?;
    let Some(assistant) = thread_graph(&app, &thread) else {
        return Ok(Json(Vec::new()));
    };
    let before = match start {
        Some(None) => return Ok(Json(Vec::new())),
        Some(Some(id)) => Some(id),
        None => None,
    };
    let limit = match only_at {
        true => body.limit.unwrap_or(10).min(1),
        false => body.limit.unwrap_or(10),
    };
    // A metadata filter reads every state, then keeps `limit` of them.
    let read = if body.metadata.is_empty() || only_at {
        limit
    } else {
        usize::MAX
    };
    let all = assistant
        .graph
        .history(&*app.saver, &id, before, read)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let matches = |s: &Value| {
        let meta = &s["metadata"];
        body.metadata.iter().all(|(k, v)| meta.get(k) == Some(v))
    };
    let states = all.iter().map(|s| snapshot::to_json(s, &thread.metadata));
    Ok(Json(states.filter(matches).take(limit).collect()))
}
