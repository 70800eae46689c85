//! Stateless background runs (`POST /runs`, a batch of them with
//! `POST /runs/batch`) and cancelling several runs at once
//! (`POST /runs/cancel`).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use crate::app::App;
use crate::auth::Scope;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::ids::{is_uuid, new_id};
use crate::runs::{run_json, RunCreate};
use crate::store::RunRow;

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/runs", post(stateless_background))
        .route("/runs/batch", post(batch))
        .route("/runs/cancel", post(cancel_many))
}

/// A stateless run started in the background on a thread of its own,
/// deleted once the run ends unless `on_completion` is `keep`: its record.
async fn start_one(app: &Arc<App>, body: RunCreate) -> Result<RunRow, ApiError> {
    let thread_id = new_id();
    crate::runs::check_checkpoint(app, &thread_id, &body).await?;
    crate::runner::start_background(app, thread_id.clone(), body, true)
        .await
        // A refused run leaves no lock behind for its thread.
        .inspect_err(|_| app.drop_lock(&thread_id))
}

/// `POST /runs`: a stateless run in the background, answered with its
/// record (`pending`) and `Content-Location: /runs/{run_id}`; its thread's
/// `/runs/{run_id}/join` waits for it while the thread is there.
async fn stateless_background(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<RunCreate>,
) -> Result<Response, ApiError> {
    let run = start_one(&app, body).await?;
    let mut response = Json(run_json(&run)).into_response();
    if let Ok(at) = HeaderValue::from_str(&format!("/runs/{}", run.run_id)) {
        response.headers_mut().insert(header::CONTENT_LOCATION, at);
    }
    Ok(response)
}

/// The most runs one `/runs/batch` starts, or one `/runs/cancel` names:
/// a request's work stays bounded (a 2 MiB body could hold 45,000).
const MOST_RUNS: usize = 1000;

/// `POST /runs/batch`: a list of stateless background runs, answered with
/// their records in order. Each is checked before any starts, so a bad
/// one (a 422 naming its index and field) starts none.
async fn batch(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(list): JsonBody<Value>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let Value::Array(items) = list else {
        return Err(ApiError::Invalid(
            "the body must be a list of runs (`RunCreateStateless`)".to_owned(),
        ));
    };
    if items.is_empty() || items.len() > MOST_RUNS {
        let how_many = match items.len() {
            0 => "is empty".to_owned(),
            n => format!("has {n} runs"),
        };
        return Err(ApiError::Invalid(format!(
            "the list of runs {how_many}: send 1 to {MOST_RUNS}"
        )));
    }
    let mut bodies = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = |e: ApiError| naming(e, i);
        let mut body: RunCreate =
            serde_json::from_value(item).map_err(|e| ApiError::Invalid(format!("[{i}]: {e}")))?;
        crate::runner::check_stateless(&app, &mut body)
            .await
            .map_err(at)?;
        // Under custom auth, each run's thread is the caller's.
        body.metadata.extend(scope.stamp());
        if crate::control::checkpoint(&body).map_err(at)?.is_some() {
            // A new thread has no checkpoint to run from.
            return Err(ApiError::NotFound(format!(
                "[{i}]: checkpoint_id: a stateless run's new thread has no checkpoint"
            )));
        }
        bodies.push(body);
    }
    let mut runs = Vec::with_capacity(bodies.len());
    for body in bodies {
        runs.push(run_json(&start_one(&app, body).await?));
    }
    Ok(Json(runs))
}

/// A refusal of a batch's run `i`, its detail prefixed with `[i]: ` (so
/// it names the run and then the field), its status kept.
fn naming(e: ApiError, i: usize) -> ApiError {
    let at = |d: String| format!("[{i}]: {d}");
    match e {
        ApiError::NotFound(d) => ApiError::NotFound(at(d)),
        ApiError::Conflict(d) => ApiError::Conflict(at(d)),
        ApiError::Invalid(d) => ApiError::Invalid(at(d)),
        ApiError::BadRequest(d) => ApiError::BadRequest(at(d)),
        other => other,
    }
}

/// `POST /runs/cancel`'s body: `thread_id` and `run_ids`, or `status`.
#[derive(Deserialize)]
struct CancelMany {
    thread_id: Option<Value>,
    run_ids: Option<Value>,
    status: Option<Value>,
}

/// Which runs a cancel names.
enum Named {
    /// These runs of this thread.
    Ids(String, Vec<String>),
    /// Every run in one of these statuses.
    Status(&'static [&'static str]),
}

/// Reads the body: a 422 naming the field for anything else.
fn named(body: CancelMany) -> Result<Named, ApiError> {
    let given = |v: &Option<Value>| v.as_ref().is_some_and(|v| !v.is_null());
    if given(&body.status) {
        if given(&body.thread_id) || given(&body.run_ids) {
            return Err(ApiError::Invalid(
                "status: cancels every run in that status, whatever its thread: leave out `thread_id` and `run_ids`".to_owned(),
            ));
        }
        let status = body.status.unwrap_or_default();
        return match status.as_str().map(str::to_lowercase).as_deref() {
            Some("pending") => Ok(Named::Status(&["pending"])),
            Some("running") => Ok(Named::Status(&["running"])),
            Some("all") => Ok(Named::Status(&["pending", "running"])),
            _ => Err(ApiError::Invalid(format!(
                "status: `{}` is not one of \"pending\", \"running\", \"all\"",
                status
                    .as_str()
                    .map_or_else(|| status.to_string(), str::to_owned)
            ))),
        };
    }
    let thread_id = match body.thread_id {
        Some(Value::String(id)) if is_uuid(&id) => id,
        None | Some(Value::Null) => {
            return Err(ApiError::Invalid(
                "thread_id: required with `run_ids` (or send `status` alone)".to_owned(),
            ))
        }
        Some(_) => {
            return Err(ApiError::Invalid(
                "Invalid thread ID: must be a UUID".to_owned(),
            ))
        }
    };
    let Some(Value::Array(ids)) = body.run_ids else {
        return Err(ApiError::Invalid(
            "run_ids: required with `thread_id`, a list of run ids".to_owned(),
        ));
    };
    if ids.len() > MOST_RUNS {
        return Err(ApiError::Invalid(format!(
            "run_ids: {} ids; name at most {MOST_RUNS} a request",
            ids.len()
        )));
    }
    let ids = ids.iter().map(|id| match id.as_str() {
        Some(id) if is_uuid(id) => Ok(id.to_owned()),
        _ => Err(ApiError::Invalid(
            "Invalid run ID: must be a UUID".to_owned(),
        )),
    });
    Ok(Named::Ids(thread_id, ids.collect::<Result<_, _>>()?))
}

/// The runs a cancel names that the caller may see (under custom auth,
/// those of threads its filter admits).
async fn candidates(app: &App, named: &Named, scope: &Scope) -> Result<Vec<RunRow>, ApiError> {
    let mine =
        |t: &Option<crate::store::ThreadRow>| t.as_ref().is_some_and(|t| scope.admits(&t.metadata));
    let mut found = Vec::new();
    match named {
        Named::Ids(thread_id, ids) => {
            if !mine(&app.store.thread(thread_id).await?) {
                return Ok(found);
            }
            for id in ids {
                found.extend(app.store.run(thread_id, id).await?);
            }
        }
        Named::Status(statuses) => {
            for thread in app.store.threads().await? {
                if !scope.admits(&thread.metadata) {
                    continue;
                }
                let runs = app.store.runs(&thread.thread_id, i64::MAX, 0).await?;
                let live = runs
                    .into_iter()
                    .filter(|r| statuses.contains(&r.status.as_str()));
                found.extend(live);
            }
        }
    }
    Ok(found)
}

/// `POST /runs/cancel` (the SDKs' `runs.cancel_many`): the runs named by
/// `thread_id` and `run_ids`, or every run `pending`, `running` or `all`
/// of those (`status`), stop as `POST .../runs/{run_id}/cancel` stops one
/// (`action` `interrupt` or `rollback`), on whichever server runs them.
/// 204; 404 when none is named, or none named is still pending or running.
async fn cancel_many(
    State(app): State<Arc<App>>,
    scope: Scope,
    Query(query): Query<std::collections::HashMap<String, String>>,
    JsonBody(body): JsonBody<CancelMany>,
) -> Result<Response, ApiError> {
    let named = named(body)?;
    let rollback = match query.get("action").map_or("interrupt", String::as_str) {
        "interrupt" => false,
        "rollback" => true,
        other => {
            return Err(ApiError::Invalid(format!(
                "action: `{other}` is not one of \"interrupt\", \"rollback\""
            )))
        }
    };
    let runs = candidates(&app, &named, &scope).await?;
    if runs.is_empty() {
        return Err(ApiError::NotFound("No runs found to cancel.".to_owned()));
    }
    let mut cancelled = Vec::new();
    for run in runs
        .iter()
        .filter(|r| matches!(r.status.as_str(), "pending" | "running"))
    {
        let (thread_id, run_id) = (&run.thread_id, &run.run_id);
        let here = app.cancel_run(thread_id, run_id, rollback);
        if here || crate::remote::cancel_stored(&app, thread_id, run_id, false, rollback).await? {
            cancelled.push(run_id.as_str());
        }
    }
    if cancelled.is_empty() {
        return Err(ApiError::NotFound(
            "No matching runs to cancel: the runs named ended, or were deleted".to_owned(),
        ));
    }
    tracing::info!(runs = ?cancelled, rollback, "runs cancelled");
    Ok(StatusCode::NO_CONTENT.into_response())
}
