//! Runs of other servers on the same database: what this one knows of
//! them is what the store holds, so a join waits on the stored status,
//! and the runs of a server that died are failed by whoever notices.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::app::App;
use crate::error::ApiError;
use crate::store::{RunRow, StoreError, ThreadRow};

/// How often a join asks the store whether another server's run ended.
const POLL: Duration = Duration::from_millis(100);

/// How often a server on PostgreSQL looks for runs whose server died.
#[cfg(feature = "postgres")]
const SWEEP: Duration = Duration::from_secs(5);

fn unfinished(status: &str) -> bool {
    matches!(status, "pending" | "running")
}

/// The output of a run this process is not running: once it has ended
/// (another server's run is waited for), the thread's values, or its error
/// as `__error__` when the run failed.
pub(crate) async fn stored_outcome(
    app: &App,
    mut thread: ThreadRow,
    mut run: RunRow,
) -> Result<Value, ApiError> {
    while unfinished(&run.status) {
        tokio::time::sleep(POLL).await;
        let Some(now) = app.store.run(&run.thread_id, &run.run_id).await? else {
            // Deleted with its thread meanwhile.
            return Ok(json!({}));
        };
        run = now;
    }
    if let Some(now) = app.store.thread(&thread.thread_id).await? {
        thread = now;
    }
    Ok(match (run.status.as_str(), thread.error) {
        ("error", Some(error)) => json!({ "__error__": error }),
        ("error", None) => {
            json!({"__error__": {"error": "RunFailed", "message": "the run failed"}})
        }
        _ => thread.values.unwrap_or_else(|| json!({})),
    })
}

/// Fails the runs left unfinished by processes that are gone: on SQLite
/// (one server per file) every one, at start; on PostgreSQL those whose
/// server's lock is free (see [`crate::lease::postgres`]), so a live
/// server's runs are never touched.
async fn fail_orphans(app: &App) -> Result<u64, StoreError> {
    #[cfg(feature = "postgres")]
    if let Some(session) = app.leases.session() {
        let mut failed = 0;
        for owner in app.store.unfinished_owners().await? {
            if session.is_dead(&owner).await? {
                failed += app.store.fail_runs_of(Some(&owner)).await?;
            }
        }
        return Ok(failed);
    }
    app.store.fail_runs_of(None).await
}

/// Stops a run of the thread that another server is running (all the
/// thread's runs when `run_id` is `None`): a message to every server on
/// the database; the one running it stops it at its next event. Nothing
/// on SQLite, where there is no other server.
pub(crate) async fn cancel_elsewhere(
    app: &App,
    thread_id: &str,
    run_id: Option<&str>,
) -> Result<(), StoreError> {
    #[cfg(feature = "postgres")]
    if let Some(session) = app.leases.session() {
        session.send_cancel(thread_id, run_id).await?;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = (app, thread_id, run_id);
    Ok(())
}

/// A cancel of a run this process does not run: `false` when the store
/// has no unfinished run by that id; else the run's server is told, and
/// with `wait`, this answers once the run ended.
pub(crate) async fn cancel_stored(
    app: &App,
    thread_id: &str,
    run_id: &str,
    wait: bool,
) -> Result<bool, ApiError> {
    let run = app.store.run(thread_id, run_id).await?;
    let Some(mut run) = run.filter(|r| unfinished(&r.status)) else {
        return Ok(false);
    };
    cancel_elsewhere(app, thread_id, Some(run_id)).await?;
    while wait && unfinished(&run.status) {
        tokio::time::sleep(POLL).await;
        match app.store.run(thread_id, run_id).await? {
            Some(now) => run = now,
            None => break,
        }
    }
    Ok(true)
}

/// At a server's start: fails the runs of servers that died, then (on
/// PostgreSQL, where other servers may die while this one runs) keeps
/// looking every 5 s (`SWEEP`).
pub(crate) async fn recover(app: &Arc<App>) -> Result<(), StoreError> {
    let failed = fail_orphans(app).await?;
    if failed > 0 {
        tracing::warn!(
            runs = failed,
            "runs left unfinished by a server that died marked failed"
        );
    }
    #[cfg(feature = "postgres")]
    if let Some(session) = app.leases.session() {
        sweep_forever(app);
        if let Some(cancels) = session.cancels() {
            act_on_cancels(app, cancels);
        }
    }
    Ok(())
}

/// Stops the runs other servers ask this one to stop, as long as the
/// server is up.
#[cfg(feature = "postgres")]
fn act_on_cancels(
    app: &Arc<App>,
    mut cancels: tokio::sync::mpsc::UnboundedReceiver<crate::lease::postgres::Cancel>,
) {
    let app = Arc::downgrade(app);
    tokio::spawn(async move {
        while let Some(cancel) = cancels.recv().await {
            let Some(app) = app.upgrade() else { return };
            match &cancel.run_id {
                Some(run_id) => _ = app.cancel_run(&cancel.thread_id, run_id, false),
                None => _ = app.cancel_thread_runs(&cancel.thread_id, false),
            }
        }
    });
}

/// Fails orphaned runs every [`SWEEP`] while the server is up, so a run
/// whose server died mid-way does not stay `running` (nor its joiners
/// waiting) until some server restarts.
#[cfg(feature = "postgres")]
fn sweep_forever(app: &Arc<App>) {
    let app = Arc::downgrade(app);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(SWEEP).await;
            let Some(app) = app.upgrade() else { return };
            match fail_orphans(&app).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(runs = n, "runs of a server that died marked failed"),
                Err(e) => tracing::error!(error = %e, "could not look for runs of dead servers"),
            }
        }
    });
}
