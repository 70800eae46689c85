//! `/runs`: a thread's runs (streamed, waited for, listed, read) and
//! stateless runs on a thread of their own.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::app::{App, Outcome};
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::ids::{is_uuid, new_id};
use crate::runner::{start, Started};
use crate::sse;
use crate::store::RunRow;
use crate::threads::{new_thread, path_thread};

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads/{id}/runs", get(list).post(background))
        .route("/threads/{id}/runs/{run_id}/join", get(join))
        .route("/threads/{id}/runs/{run_id}/cancel", post(cancel))
        .route("/threads/{id}/runs/{run_id}/stream", get(join_stream))
        .route("/threads/{id}/runs/stream", post(thread_stream))
        .route("/threads/{id}/runs/wait", post(thread_wait))
        .route("/threads/{id}/runs/{run_id}", get(one).delete(delete))
        .route("/runs/stream", post(stateless_stream))
        .route("/runs/wait", post(stateless_wait))
        .merge(crate::background::routes())
        .merge(crate::joined::routes())
}

/// A run's body (`RunCreateStateful` / `RunCreateStateless`); stored
/// as sent with a queued run, which a worker starts from.
#[derive(Deserialize, serde::Serialize)]
pub(crate) struct RunCreate {
    pub assistant_id: String,
    #[serde(default)]
    pub input: Option<Value>,
    #[serde(default)]
    pub command: Option<Command>,
    #[serde(default)]
    pub stream_mode: Value,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(default)]
    pub multitask_strategy: Option<String>,
    #[serde(default)]
    pub if_not_exists: Option<String>,
    #[serde(default)]
    pub interrupt_before: Option<Value>,
    #[serde(default)]
    pub interrupt_after: Option<Value>,
    #[serde(default)]
    pub checkpoint_id: Option<Value>,
    #[serde(default)]
    pub checkpoint: Option<Value>,
    #[serde(default)]
    pub durability: Option<Value>,
    #[serde(default)]
    pub on_disconnect: Option<String>,
    #[serde(default)]
    pub stream_resumable: Option<bool>,
    #[serde(default)]
    pub stream_subgraphs: Value,
    /// `config` (its `configurable` is merged over the assistant's).
    #[serde(default)]
    pub config: Option<Value>,
    /// `context` (merged over the assistant's).
    #[serde(default)]
    pub context: Option<Value>,
    /// A stateless run's thread after it: `delete` (the default) or
    /// `keep`; set by the stateless routes (`None` on a thread's run), so
    /// a queued run's worker reads it back.
    #[serde(default)]
    pub on_completion: Option<String>,
    /// Tools the caller executes: set by the AG-UI endpoint (`agui.rs`),
    /// never read from a body.
    #[serde(skip)]
    pub client_tools: Option<agent_state::agent::ClientTools>,
}

/// `command`: a resume value, or an update and the nodes to go to.
#[derive(Deserialize, serde::Serialize)]
pub(crate) struct Command {
    #[serde(default)]
    pub resume: Option<Value>,
    #[serde(default)]
    pub update: Option<Value>,
    #[serde(default)]
    pub goto: Option<Value>,
}

/// The thread a run goes to: stored, or created when the body says
/// `if_not_exists: "create"`.
async fn run_thread(app: &App, id: &str, body: &RunCreate) -> Result<(), ApiError> {
    if !is_uuid(id) {
        return Err(ApiError::not_uuid("thread"));
    }
    if app.store.thread(id).await?.is_some() {
        return Ok(());
    }
    match body.if_not_exists.as_deref() {
        Some("create") => {
            app.store
                .insert_thread(&new_thread(id.to_owned(), body.metadata.clone()))
                .await?;
            Ok(())
        }
        _ => Err(ApiError::NotFound(
            "Thread or assistant not found.".to_owned(),
        )),
    }
}

/// A run from a checkpoint the thread does not have (a stateless run's
/// thread has none) is a 404 naming it, before anything is stored.
pub(crate) async fn check_checkpoint(
    app: &App,
    thread_id: &str,
    body: &RunCreate,
) -> Result<(), ApiError> {
    let Some(from) = crate::control::checkpoint(body)? else {
        return Ok(());
    };
    if !is_uuid(thread_id) {
        // Refused for its id by `run_thread`.
        return Ok(());
    }
    let Ok(assistant) = app.resolve(&body.assistant_id).await else {
        // The run is refused for its assistant when it starts.
        return Ok(());
    };
    let snap = assistant.graph.state_at(&*app.saver, thread_id, from).await;
    match snap {
        Ok(s) if s.checkpoint.is_some() => Ok(()),
        Ok(_) | Err(agent_state::graph::GraphError::Checkpoint(_)) => Err(ApiError::NotFound(
            format!("Checkpoint {} not found in thread {thread_id}", from.0),
        )),
        Err(e) => Err(ApiError::Internal(e.to_string())),
    }
}

async fn thread_stream(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    check_checkpoint(&app, &id, &body).await?;
    run_thread(&app, &id, &body).await?;
    let started = start(&app, id.clone(), body, false, true).await?;
    let at = format!("/threads/{id}/runs/{}", started.run_id);
    Ok(stream_response(started, &format!("{at}/stream"), &at))
}

async fn thread_wait(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    check_checkpoint(&app, &id, &body).await?;
    run_thread(&app, &id, &body).await?;
    let started = start(&app, id.clone(), body, false, false).await?;
    Ok(wait_response(started, &id).await)
}

async fn stateless_stream(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    let thread_id = new_id();
    check_checkpoint(&app, &thread_id, &body).await?;
    // A refused stateless run leaves no lock behind for its thread.
    let started = start(&app, thread_id.clone(), body, true, true)
        .await
        .inspect_err(|_| app.drop_lock(&thread_id))?;
    let at = format!("/runs/{}", started.run_id);
    Ok(stream_response(started, &format!("{at}/stream"), &at))
}

async fn stateless_wait(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    let thread_id = new_id();
    check_checkpoint(&app, &thread_id, &body).await?;
    let started = start(&app, thread_id.clone(), body, true, false)
        .await
        .inspect_err(|_| app.drop_lock(&thread_id))?;
    Ok(wait_response(started, &thread_id).await)
}

fn stream_response(started: Started, location: &str, content_location: &str) -> Response {
    let frames = started
        .frames
        .unwrap_or_else(|| tokio::sync::mpsc::channel(1).1);
    sse::response(frames, location, content_location)
}

/// The run's final output (or `{"__error__": ..}`), once it ends. A
/// client that leaves does not stop the run.
async fn wait_response(started: Started, thread_id: &str) -> Response {
    let at = format!("/threads/{thread_id}/runs/{}", started.run_id);
    let output = outcome_of(started.done).await;
    with_locations(Json(output).into_response(), &at)
}

/// The run's output once it ends.
async fn outcome_of(mut done: Outcome) -> Value {
    match done.wait_for(Option::is_some).await {
        Ok(output) => output.clone().unwrap_or_default(),
        Err(_) => json!({"__error__": {"error": "Cancelled", "message": "the run was dropped"}}),
    }
}

/// `Location` (the run's join) and `Content-Location` (the run).
fn with_locations(mut response: Response, at: &str) -> Response {
    let headers = response.headers_mut();
    if let Ok(join) = HeaderValue::from_str(&format!("{at}/join")) {
        headers.insert(header::LOCATION, join);
    }
    if let Ok(at) = HeaderValue::from_str(at) {
        headers.insert(header::CONTENT_LOCATION, at);
    }
    response
}

/// `POST /threads/{id}/runs`: a run in the background, answered with its
/// record (`pending`); `join` waits for it.
async fn background(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    check_checkpoint(&app, &id, &body).await?;
    run_thread(&app, &id, &body).await?;
    let run = crate::runner::start_background(&app, id.clone(), body, false).await?;
    let at = format!("/threads/{id}/runs/{}", run.run_id);
    let mut response = Json(run_json(&run)).into_response();
    if let Ok(at) = HeaderValue::from_str(&at) {
        response.headers_mut().insert(header::CONTENT_LOCATION, at);
    }
    Ok(response)
}

/// `GET /threads/{id}/runs/{run_id}/join`: the run's output once it ends;
/// for a run that ended, the thread's values. An unknown run is answered
/// 200 with `__error__`, as the official server answers it.
async fn join(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let thread = path_thread(&app, &id).await?;
    let at = format!("/threads/{id}/runs/{run_id}");
    let output = match (
        app.running_run(&id, &run_id),
        app.store.run(&id, &run_id).await?,
    ) {
        (Some(done), _) => outcome_of(done).await,
        (None, Some(run)) => crate::remote::stored_outcome(&app, thread, run).await?,
        (None, None) => {
            json!({"__error__": {"error": "NotFound", "message": "404: Run not found"}})
        }
    };
    Ok(with_locations(Json(output).into_response(), &at))
}

/// A run as the API shows it.
pub(crate) fn run_json(r: &RunRow) -> Value {
    serde_json::json!({
        "run_id": r.run_id, "thread_id": r.thread_id, "assistant_id": r.assistant_id,
        "metadata": r.metadata, "status": r.status, "kwargs": r.kwargs,
        "multitask_strategy": r.multitask_strategy, "created_at": r.created_at,
        "updated_at": r.updated_at,
    })
}

async fn list(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    q: QueryMap,
) -> Result<Json<Vec<Value>>, ApiError> {
    path_thread(&app, &id).await?;
    let (limit, offset) = (number(&q, "limit", 10)?, number(&q, "offset", 0)?);
    let runs = app.store.runs(&id, limit, offset).await?;
    Ok(Json(runs.iter().map(run_json).collect()))
}

async fn one(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    path_thread(&app, &id).await?;
    if !is_uuid(&run_id) {
        return Err(ApiError::not_uuid("run"));
    }
    let run = app.store.run(&id, &run_id).await?;
    run.map(|r| Json(run_json(&r)))
        .ok_or_else(|| ApiError::NotFound("Not Found".to_owned()))
}

/// `DELETE /threads/{id}/runs/{run_id}`: the run's record goes (a run
/// that has not ended is stopped first, the thread keeping what it
/// stored); 204, or 404 for a run the thread does not have.
async fn delete(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("thread"));
    }
    if !is_uuid(&run_id) {
        return Err(ApiError::not_uuid("run"));
    }
    if app.store.run(&id, &run_id).await?.is_none() {
        return Err(ApiError::NotFound("Run not found".to_owned()));
    }
    if let Some(done) = app.running_run(&id, &run_id) {
        app.cancel_run(&id, &run_id, false);
        outcome_of(done).await;
    }
    app.store.delete_run(&run_id).await?;
    Ok(axum::http::StatusCode::NO_CONTENT.into_response())
}

/// A query string's values by name (read by hand: clients send booleans
/// as `1` and `true`, and a bad value is a 422 naming it).
type QueryMap = Query<std::collections::HashMap<String, String>>;

/// A boolean query value: `true`/`1` or `false`/`0`.
fn flag(q: &QueryMap, name: &str) -> Result<bool, ApiError> {
    match q.get(name).map(String::as_str) {
        None | Some("false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(ApiError::Invalid(format!(
            "{name}: `{other}` is not a boolean"
        ))),
    }
}

/// A number in the query, or `default`.
fn number(q: &QueryMap, name: &str, default: i64) -> Result<i64, ApiError> {
    // A negative one would be SQLite's "no limit", PostgreSQL's error.
    q.get(name).map_or(Ok(default), |v| match v.parse() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(ApiError::Invalid(format!(
            "{name}: `{v}` is not a number of 0 or more"
        ))),
    })
}

/// `POST /threads/{id}/runs/{run_id}/cancel`: the run stops at its next
/// event (or before it starts, if queued), the thread at its last stored
/// step; with `action=rollback` the run and the steps it stored are
/// deleted, the thread back as it was before it. 202; with `wait=true`,
/// 200 and `{}` once it stopped.
async fn cancel(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    q: QueryMap,
) -> Result<Response, ApiError> {
    path_thread(&app, &id).await?;
    let wait = flag(&q, "wait")?;
    let rollback = match q.get("action").map_or("interrupt", String::as_str) {
        "interrupt" => false,
        "rollback" => true,
        other => {
            return Err(ApiError::Invalid(format!(
                "action: `{other}` is not one of \"interrupt\", \"rollback\""
            )))
        }
    };
    let outcome = app.running_run(&id, &run_id);
    let here = app.cancel_run(&id, &run_id, rollback);
    if !here && !crate::remote::cancel_stored(&app, &id, &run_id, wait, rollback).await? {
        return Err(ApiError::NotFound(format!(
            "Run {run_id} of thread {id} is not running: it ended, or was never started"
        )));
    }
    match (wait, outcome) {
        // As the official server answers a wait for a cancelled run: 200
        // and `{}`, once it stopped (another server's run was waited for
        // by `cancel_stored`).
        (true, Some(done)) => {
            outcome_of(done).await;
            Ok(Json(json!({})).into_response())
        }
        (true, None) => Ok(Json(json!({})).into_response()),
        _ => Ok(axum::http::StatusCode::ACCEPTED.into_response()),
    }
}

/// The id of the last event a reconnecting client has: a negative one
/// (`-1`, which clients send for "from the start") or one that is no
/// number is 0; one beyond any id (`99999999999999999999`) is after every
/// event, so nothing is replayed.
fn last_event_id(text: &str) -> usize {
    let text = text.trim();
    let beyond = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<i64>() {
        Ok(id) => usize::try_from(id).unwrap_or(0),
        // Ids are numbered far below this: it has room to count on.
        Err(_) if beyond => usize::try_from(i64::MAX).unwrap_or(usize::MAX / 2),
        Err(_) => 0,
    }
}

/// `GET /threads/{id}/runs/{run_id}/stream`: a run's events from the
/// start (or after the `Last-Event-ID` a reconnecting client sends), each
/// with its id, then each new one until the run ends, whichever server
/// runs it (on PostgreSQL, from the stored events). A run that ended
/// streams nothing, as the official server answers it, unless the client
/// names the last event it has: then, on PostgreSQL and for a while after
/// the run ended, the events after it.
async fn join_stream(
    State(app): State<Arc<App>>,
    Path((id, run_id)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    path_thread(&app, &id).await?;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let after = headers
        .get("last-event-id")
        .map(|v| last_event_id(v.to_str().unwrap_or_default()));
    let log = match app.running_log(&id, &run_id) {
        Some(log) => Some(log),
        None => crate::remote::queued_log(&app, &id, &run_id).await?,
    };
    match log {
        Some(log) if log.holds_after(after.unwrap_or(0)) => log.follow(after.unwrap_or(0), tx),
        _ => match app.store.run(&id, &run_id).await? {
            Some(run) => crate::log::follow_elsewhere(&app, &run, after, tx),
            None => return Err(ApiError::NotFound("Not Found".to_owned())),
        },
    }
    let at = format!("/threads/{id}/runs/{run_id}");
    Ok(sse::response(rx, &format!("{at}/stream"), &at))
}
