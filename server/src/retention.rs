//! Storage that stays bounded on a long-running deployment: threads'
//! time-to-live (`ttl` on `POST /threads` and `PATCH /threads/{id}`, a
//! default for every thread, and a periodic sweep), `POST /threads/prune`,
//! and after each run the thread's last checkpoints kept and the pending
//! writes of its landed steps collected.
//!
//! A TTL counts from when it is set and starts again at the end of each
//! run on the thread (reads do not refresh it). When it passes, the sweep
//! applies its strategy: `delete` removes the thread with its runs and
//! checkpoints (as `DELETE /threads/{id}` does), `keep_latest` keeps the
//! thread and only its latest checkpoint, and starts the TTL again. A
//! thread busy with a run, on this server or (PostgreSQL) any other, is
//! left for the next sweep. On PostgreSQL every server sweeps: two may
//! handle one thread at once, which is harmless (a second delete finds
//! nothing, a second `keep_latest` has one checkpoint to keep).

use std::num::NonZeroUsize;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::app::App;
use crate::auth::Scope;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::ids::is_uuid;
use crate::served::ServedGraph;
use crate::store::StoreError;
use crate::threads::thread_graph;

/// What a thread's TTL does when it passes (LangGraph's `strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlStrategy {
    /// Delete the thread with its runs and checkpoints (`"delete"`).
    Delete,
    /// Keep the thread and its latest checkpoint only (`"keep_latest"`).
    KeepLatest,
}

impl TtlStrategy {
    /// The name the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            TtlStrategy::Delete => "delete",
            TtlStrategy::KeepLatest => "keep_latest",
        }
    }

    /// The strategy the API names `name`, if one is.
    fn parse(name: &str) -> Option<Self> {
        match name {
            "delete" => Some(TtlStrategy::Delete),
            "keep_latest" => Some(TtlStrategy::KeepLatest),
            _ => None,
        }
    }
}

/// A thread's time-to-live: what [`Server::thread_ttl`](crate::Server::thread_ttl)
/// gives every new thread, and what a client's `ttl` sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadTtl {
    /// What happens when it passes.
    pub strategy: TtlStrategy,
    /// Minutes from the thread's creation or last run (fractions allowed).
    pub minutes: f64,
}

/// The server's retention settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    /// Checkpoints a thread keeps after each run; `None`: all.
    pub keep: Option<NonZeroUsize>,
    /// The TTL of a thread created without one; `None`: none.
    pub default_ttl: Option<ThreadTtl>,
    /// How often expired threads are swept.
    pub sweep_every: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep: None,
            default_ttl: None,
            sweep_every: Duration::from_secs(5 * 60),
        }
    }
}

/// The most threads one sweep handles (the official server's default).
const SWEEP_LIMIT: i64 = 10_000;

/// Milliseconds since the Unix epoch, the clock TTLs are kept in.
fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A body's `ttl` (absent or `null`: none), checked whole before
/// anything is stored; each refusal a 422 naming the field.
pub(crate) fn read_ttl(ttl: Option<&Value>, app: &App) -> Result<Option<ThreadTtl>, ApiError> {
    let Some(ttl) = ttl.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let invalid = |what: String| Err(ApiError::Invalid(what));
    let Some(fields) = ttl.as_object() else {
        return invalid(format!(
            "ttl: {ttl} is not of type \"object\" ({{\"strategy\": .., \"ttl\": minutes}})"
        ));
    };
    let strategy = match fields.get("strategy") {
        None | Some(Value::Null) => TtlStrategy::Delete,
        Some(Value::String(s)) if TtlStrategy::parse(s).is_some() => {
            TtlStrategy::parse(s).unwrap_or(TtlStrategy::Delete)
        }
        Some(other) => {
            return invalid(format!(
                "ttl.strategy: {other} is not one of \"delete\" or \"keep_latest\""
            ))
        }
    };
    let minutes = match fields.get("ttl") {
        None | Some(Value::Null) => match app.retention.default_ttl {
            Some(default) => default.minutes,
            None => return invalid("ttl.ttl: required (this server has no default TTL)".into()),
        },
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => return invalid(format!("ttl.ttl: {other} is not of type \"number\"")),
    };
    if !(minutes.is_finite() && minutes > 0.0) {
        return invalid(format!(
            "ttl.ttl: {minutes} is not a number of minutes above 0"
        ));
    }
    Ok(Some(ThreadTtl { strategy, minutes }))
}

/// Gives a new thread its TTL: the one asked for, else the server's
/// default, if any.
pub(crate) async fn start_ttl(
    app: &App,
    thread_id: &str,
    asked: Option<ThreadTtl>,
) -> Result<(), StoreError> {
    match asked.or(app.retention.default_ttl) {
        Some(ttl) => set_ttl(app, thread_id, ttl).await,
        None => Ok(()),
    }
}

/// Sets a thread's TTL from now on.
pub(crate) async fn set_ttl(app: &App, thread_id: &str, ttl: ThreadTtl) -> Result<(), StoreError> {
    let strategy = ttl.strategy.as_str();
    app.store
        .set_ttl(thread_id, strategy, ttl.minutes, now_ms())
        .await
}

/// A thread's TTL as `GET /threads/{id}?include=ttl` shows it, `None`
/// for a thread without one.
pub(crate) async fn ttl_json(app: &App, thread_id: &str) -> Result<Option<Value>, StoreError> {
    let Some(row) = app.store.ttl(thread_id).await? else {
        return Ok(None);
    };
    let expires = u64::try_from(row.expires_at_ms).unwrap_or(0);
    Ok(Some(json!({
        "strategy": row.strategy,
        "ttl_minutes": row.minutes,
        "expires_at": crate::ids::from_millis(expires),
    })))
}

/// After a run ends (its thread still held): the thread's TTL starts
/// again (the server's default given if it has none), its last
/// checkpoints are kept if the server keeps a number, and its landed
/// steps' pending writes are collected. A failure is logged: the run's
/// outcome stands.
pub(crate) async fn after_run(app: &App, graph: &dyn ServedGraph, thread_id: &str) {
    let now = now_ms();
    let ttl = async {
        if let Some(ttl) = app.retention.default_ttl {
            let strategy = ttl.strategy.as_str();
            app.store
                .default_ttl(thread_id, strategy, ttl.minutes, now)
                .await?;
        }
        app.store.refresh_ttl(thread_id, now).await
    };
    if let Err(e) = ttl.await {
        tracing::warn!(thread_id, error = %e, "could not start the thread's TTL again");
    }
    let saver = &*app.saver;
    let pruned = match app.retention.keep {
        Some(keep) => graph
            .keep_last(saver, thread_id, keep.get())
            .await
            .map(|_| ()),
        None => saver.collect_pending(thread_id).await.map(|_| ()),
    };
    if let Err(e) = pruned {
        tracing::warn!(thread_id, error = %e, "could not prune the thread's checkpoints");
    }
}

/// Deletes a thread as `DELETE /threads/{id}` does: its runs stopped
/// (here and on other servers), then, holding the thread, its record,
/// runs, TTL and checkpoints, its subgraphs' too. `false` when there was
/// no such thread.
pub(crate) async fn remove_thread(app: &App, id: &str) -> Result<bool, ApiError> {
    if app.store.thread(id).await?.is_none() {
        return Ok(false);
    }
    app.cancel_thread_runs(id, false);
    crate::remote::cancel_elsewhere(app, id, None).await?;
    let _held = app.leases.take(id).await?;
    crate::remote::wait_thread_free(app, id).await?;
    // The checkpoints first: once the thread answers 404 nothing of it is
    // left, and a failure here leaves it there for the DELETE to be sent
    // again.
    let checkpoints = async {
        app.saver.delete_thread(id).await?;
        app.saver.delete_children(id).await
    };
    checkpoints
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    app.store.delete_ttl(id).await?;
    let existed = app.store.delete_thread(id).await?;
    app.drop_lock(id);
    Ok(existed)
}

/// Keeps only a thread's latest checkpoint (the caller holds the
/// thread); `false` when there is no such thread.
async fn keep_latest(app: &App, id: &str) -> Result<bool, ApiError> {
    let Some(thread) = app.store.thread(id).await? else {
        return Ok(false);
    };
    // A thread that never ran has no checkpoint to prune.
    if let Some(assistant) = thread_graph(app, &thread) {
        let one = assistant.graph.keep_last(&*app.saver, id, 1).await;
        one.map_err(|e| ApiError::Internal(e.to_string()))?;
    }
    Ok(true)
}

/// `POST /threads/prune`'s body, checked as the official server checks it
/// (its schema first, then each id), before anything is deleted.
fn read_prune(body: &Value) -> Result<(Vec<String>, TtlStrategy), ApiError> {
    let invalid = |what: String| Err(ApiError::Invalid(what));
    let Some(ids) = body.get("thread_ids") else {
        return invalid("\"thread_ids\" is a required property".to_owned());
    };
    let Some(ids) = ids.as_array() else {
        return invalid(format!("thread_ids: {ids} is not of type \"array\""));
    };
    let mut thread_ids = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let Some(id) = id.as_str() else {
            return invalid(format!("thread_ids[{i}]: {id} is not of type \"string\""));
        };
        thread_ids.push(id.to_owned());
    }
    let strategy = match body.get("strategy") {
        None => TtlStrategy::Delete,
        Some(Value::String(s)) if TtlStrategy::parse(s).is_some() => {
            TtlStrategy::parse(s).unwrap_or(TtlStrategy::Delete)
        }
        Some(other) => {
            return invalid(format!(
                "strategy: {other} is not one of \"delete\" or \"keep_latest\""
            ))
        }
    };
    if thread_ids.iter().any(|id| !is_uuid(id)) {
        return Err(ApiError::not_uuid("thread"));
    }
    Ok((thread_ids, strategy))
}

/// `POST /threads/prune`: deletes the threads named (`delete`), or keeps
/// only each one's latest checkpoint (`keep_latest`); unknown ids are
/// skipped. Answers `{"pruned_count": n}`, the threads pruned.
pub(crate) async fn prune(
    State(app): State<Arc<App>>,
    scope: Scope,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let (thread_ids, strategy) = read_prune(&body)?;
    all_admitted(&app, &scope, &thread_ids).await?;
    let mut pruned = 0u64;
    for id in &thread_ids {
        let done = match strategy {
            TtlStrategy::Delete => remove_thread(&app, id).await?,
            TtlStrategy::KeepLatest => {
                let _held = app.leases.take(id).await?;
                crate::remote::wait_thread_free(&app, id).await?;
                keep_latest(&app, id).await?
            }
        };
        pruned += u64::from(done);
    }
    Ok(Json(json!({ "pruned_count": pruned })))
}

/// Under an authorize hook's filter, a prune naming any thread that is
/// missing or not the caller's prunes nothing, as the official server
/// refuses it.
async fn all_admitted(app: &App, scope: &Scope, ids: &[String]) -> Result<(), ApiError> {
    if !scope.is_filtered() {
        return Ok(());
    }
    for id in ids {
        let thread = app.store.thread(id).await?;
        if !thread.is_some_and(|t| scope.admits(&t.metadata)) {
            return Err(ApiError::NotFound(
                "At least one thread not found or not authorized".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Applies the strategy of every thread whose TTL passed, except those
/// busy with a run (left for the next sweep): how many it handled.
pub(crate) async fn sweep(app: &App) -> Result<u64, ApiError> {
    let now = now_ms();
    let mut handled = 0;
    for (id, strategy) in app.store.expired(now, SWEEP_LIMIT).await? {
        let Some(held) = app.leases.try_take(&id).await? else {
            continue;
        };
        // Busy on another server (PostgreSQL): the next sweep.
        if crate::remote::runs_anywhere(app, &id).await? {
            continue;
        }
        match TtlStrategy::parse(&strategy) {
            Some(TtlStrategy::KeepLatest) => {
                keep_latest(app, &id).await?;
                app.store.refresh_ttl(&id, now).await?;
                drop(held);
            }
            _ => {
                // Deleting takes the thread again, after stopping its runs.
                drop(held);
                remove_thread(app, &id).await?;
            }
        }
        handled += 1;
    }
    Ok(handled)
}

/// Sweeps every [`Retention::sweep_every`] while the app lives.
pub(crate) fn spawn_sweeper(app: &Arc<App>) {
    let every = app.retention.sweep_every;
    let app: Weak<App> = Arc::downgrade(app);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(app) = app.upgrade() else { return };
            match sweep(&app).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(threads = n, "swept threads whose TTL passed"),
                Err(e) => tracing::warn!(error = ?e, "the TTL sweep failed"),
            }
        }
    });
}
