//! Assistants created, changed (each change a new version), pointed at
//! one of their versions, listed by version and deleted, as the official
//! server does it. A graph's own assistant is one of them: it may be
//! changed or deleted too, and comes back unchanged at the next start
//! once deleted.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::form::{config_and_context, Form};
use super::served_graph;
use crate::app::App;
use crate::auth::{Scope, ThreadsDeleted};
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::ids::{is_uuid, now};
use crate::store::AssistantRow;

/// How many times a change is tried again when another change of the
/// same assistant landed between its read and its write.
const RETRIES: usize = 8;

/// The official server's 404 for a change of an unknown assistant.
fn not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("Assistant {id} not found"))
}

/// `POST /assistants`: a new assistant of a served graph (`if_exists`:
/// `raise`, a 409, or `do_nothing`, the one stored answered).
pub(super) async fn create(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let form = Form::new(body)?;
    let row = new_row(&app, &form, &scope)?;
    let if_exists = form.choice("if_exists", &["raise", "do_nothing"])?;
    if app.store.insert_assistant(&row).await? {
        tracing::info!(assistant_id = %row.assistant_id, graph = %row.graph_id, "assistant created");
        return Ok(Json(row.to_json()));
    }
    let taken = || {
        tracing::info!(assistant_id = %row.assistant_id, "refused: assistant id taken");
        ApiError::Conflict(format!("Assistant {} already exists", row.assistant_id))
    };
    let stored = app.store.assistant(&row.assistant_id).await?;
    match stored {
        Some(s) if scope.admits(&s.metadata) && if_exists.as_deref() == Some("do_nothing") => {
            Ok(Json(s.to_json()))
        }
        _ => Err(taken()),
    }
}

/// The assistant a create body describes (every field checked first).
fn new_row(app: &App, form: &Form, scope: &Scope) -> Result<AssistantRow, ApiError> {
    let id = form.text("assistant_id")?;
    if id.as_deref().is_some_and(|id| !is_uuid(id)) {
        tracing::info!("refused: an assistant_id that is no UUID");
        return Err(ApiError::not_uuid("assistant"));
    }
    let Some(graph_id) = form.text("graph_id")? else {
        tracing::info!("refused: an assistant without graph_id");
        return Err(ApiError::Invalid("graph_id: a required field".to_owned()));
    };
    let (config, context) = config_and_context(form.object("config")?, form.object("context")?)?;
    let mut metadata = form.object("metadata")?.unwrap_or_default();
    let (name, description) = (form.text("name")?, form.text("description")?);
    form.choice("if_exists", &["raise", "do_nothing"])?;
    served_graph(app, &graph_id)?;
    metadata.extend(scope.stamp());
    let at = now();
    Ok(AssistantRow {
        assistant_id: id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        graph_id,
        config: config.unwrap_or_else(|| json!({})),
        context: context.unwrap_or_else(|| json!({})),
        metadata,
        name: name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "Untitled".into()),
        description,
        version: 1,
        created_at: at.clone(),
        updated_at: at,
    })
}

/// What a `PATCH` changes: each field given replaces the assistant's
/// (`metadata` is merged into it).
struct Change {
    graph_id: Option<String>,
    config: Option<Value>,
    context: Option<Value>,
    metadata: Map<String, Value>,
    name: Option<String>,
    description: Option<String>,
}

impl Change {
    /// The change a body asks for (every field checked first).
    fn read(app: &App, form: &Form) -> Result<Self, ApiError> {
        let config = form.object("config")?.filter(|c| !c.is_empty());
        let (config, context) = config_and_context(config, form.object("context")?)?;
        let change = Change {
            graph_id: form.text("graph_id")?,
            config,
            context,
            metadata: form.object("metadata")?.unwrap_or_default(),
            name: form.text("name")?,
            description: form.text("description")?,
        };
        if let Some(graph_id) = &change.graph_id {
            served_graph(app, graph_id)?;
        }
        Ok(change)
    }

    /// `from`'s next version with the change.
    fn apply(&self, from: &AssistantRow) -> AssistantRow {
        let mut metadata = from.metadata.clone();
        metadata.extend(self.metadata.clone());
        let pick = |mine: &Option<String>, theirs: &String| mine.clone().unwrap_or(theirs.clone());
        let at = now();
        AssistantRow {
            assistant_id: from.assistant_id.clone(),
            graph_id: pick(&self.graph_id, &from.graph_id),
            config: self.config.clone().unwrap_or(from.config.clone()),
            context: self.context.clone().unwrap_or(from.context.clone()),
            metadata,
            name: pick(&self.name, &from.name),
            description: self.description.clone().or(from.description.clone()),
            version: from.version + 1,
            created_at: at.clone(),
            updated_at: at,
        }
    }
}

/// `PATCH /assistants/{id}`: a new version with the fields given, which
/// the assistant becomes.
pub(super) async fn patch(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("assistant"));
    }
    let change = Change::read(&app, &Form::new(body)?)?;
    for _ in 0..RETRIES {
        let (row, _) = app.path_record(&id, &scope, not_found).await?;
        let next = change.apply(&latest_version(&app, &row).await?);
        if app.store.save_assistant(&next, row.version).await? {
            tracing::info!(assistant_id = %id, version = next.version, "assistant changed");
            let mut shown = next;
            shown.created_at = row.created_at;
            return Ok(Json(shown.to_json()));
        }
    }
    Err(busy(&id))
}

/// The assistant as it stands, numbered after its newest version (after
/// a `latest` back to an old one, a change is numbered past them all).
async fn latest_version(app: &App, row: &AssistantRow) -> Result<AssistantRow, ApiError> {
    let versions = app.store.assistant_versions(&row.assistant_id).await?;
    let newest = versions
        .iter()
        .map(|v| v.version)
        .max()
        .unwrap_or(row.version);
    let mut now = row.clone();
    now.version = newest.max(row.version);
    Ok(now)
}

/// The 409 for a change that lost to others every time it was tried.
fn busy(id: &str) -> ApiError {
    tracing::warn!(assistant_id = %id, "refused: assistant changed concurrently");
    ApiError::Conflict(format!("Assistant {id} is being changed: try again"))
}

/// `POST /assistants/{id}/latest`: the assistant becomes its version
/// `version` (its config, metadata, name and description, as the
/// official server takes them).
pub(super) async fn latest(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("assistant"));
    }
    let wanted = Form::new(body)?.count("version")?;
    let (row, _) = app.path_record(&id, &scope, not_found).await?;
    let versions = app.store.assistant_versions(&id).await?;
    let Some(old) = versions.into_iter().find(|v| Some(v.version) == wanted) else {
        tracing::info!(assistant_id = %id, ?wanted, "refused: no such assistant version");
        let shown = wanted.map_or("None".to_owned(), |v| v.to_string());
        return Err(ApiError::NotFound(format!(
            "Version {shown} not found for assistant {id}"
        )));
    };
    let next = AssistantRow {
        config: old.config,
        metadata: old.metadata,
        name: old.name,
        description: old.description,
        version: old.version,
        updated_at: now(),
        ..row.clone()
    };
    if !app.store.point_assistant(&next, row.version).await? {
        return Err(busy(&id));
    }
    tracing::info!(assistant_id = %id, version = next.version, "assistant version set");
    Ok(Json(next.to_json()))
}

/// `POST /assistants/{id}/versions`: its versions, newest first, those
/// whose metadata holds `metadata`, `limit` (10) from `offset`.
pub(super) async fn versions(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Vec<Value>>, ApiError> {
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("assistant"));
    }
    let form = Form::new(body)?;
    let wanted = Value::Object(form.object("metadata")?.unwrap_or_default());
    let limit = form.count("limit")?.unwrap_or(10) as usize;
    let offset = form.count("offset")?.unwrap_or(0) as usize;
    app.path_record(&id, &scope, not_found).await?;
    let all = app.store.assistant_versions(&id).await?;
    let page: Vec<Value> = all
        .iter()
        .filter(|v| super::contains(&Value::Object(v.metadata.clone()), &wanted))
        .filter(|v| scope.admits(&v.metadata))
        .skip(offset)
        .take(limit)
        .map(AssistantRow::version_json)
        .collect();
    if page.is_empty() {
        return Err(not_found(&id));
    }
    Ok(Json(page))
}

/// `DELETE /assistants/{id}`: the assistant and its versions; with
/// `?delete_threads=true` the threads it ran on (those whose metadata
/// names it) too.
pub(super) async fn delete(
    State(app): State<Arc<App>>,
    scope: Scope,
    ThreadsDeleted(threads): ThreadsDeleted,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let gone = |id: &str| ApiError::NotFound(format!("Assistant with ID {id} not found"));
    if !is_uuid(&id) {
        return Err(ApiError::not_uuid("assistant"));
    }
    app.path_record(&id, &scope, gone).await?;
    let with_threads = query
        .get("delete_threads")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let threads = match (with_threads, threads) {
        (true, None) => {
            tracing::info!(assistant_id = %id, "refused: its threads' delete is denied");
            let denied = Json(serde_json::json!({"detail": "Forbidden"}));
            return Ok((StatusCode::FORBIDDEN, denied).into_response());
        }
        (_, threads) => threads.unwrap_or_default(),
    };
    stop_runs(&app, &id).await?;
    if with_threads {
        delete_threads(&app, &id, &threads).await?;
    }
    if !app.store.delete_assistant(&id).await? {
        return Err(gone(&id));
    }
    tracing::info!(assistant_id = %id, with_threads, "assistant deleted");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Stops the assistant's runs that have not ended, here or on another
/// server, as a cancel of each would (the official server does so before
/// it deletes an assistant).
async fn stop_runs(app: &App, id: &str) -> Result<(), ApiError> {
    for (thread_id, run_id) in app.store.unfinished_runs_of(id).await? {
        tracing::info!(%run_id, assistant_id = %id, "run stopped: its assistant is deleted");
        if !app.cancel_run(&thread_id, &run_id, false) {
            crate::remote::cancel_elsewhere(app, &thread_id, Some(&run_id)).await?;
        }
    }
    Ok(())
}

/// Deletes the threads whose metadata names assistant `id` (those the
/// threads' `delete` filter of the caller admits).
async fn delete_threads(app: &App, id: &str, scope: &Scope) -> Result<(), ApiError> {
    let threads = app.store.threads().await?;
    let named = threads.iter().filter(|t| {
        t.metadata.get("assistant_id").and_then(Value::as_str) == Some(id)
            && scope.admits(&t.metadata)
    });
    for thread in named {
        crate::retention::remove_thread(app, &thread.thread_id).await?;
    }
    Ok(())
}
