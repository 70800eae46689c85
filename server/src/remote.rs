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
    if app.leases.session().is_some() {
        sweep_forever(app);
    }
    Ok(())
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
