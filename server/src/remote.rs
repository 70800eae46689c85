//! Runs of other servers on the same database: what this one knows of
//! them is what the store holds, so a join waits on the stored status,
//! and a cancel is done in the queue (a run no server claimed) or sent
//! to the server running it. On SQLite the runs a server that died left
//! unfinished are failed at the next start; on PostgreSQL they are taken
//! over by another server (see [`crate::queue`], [`crate::worker`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::app::App;
use crate::error::ApiError;
use crate::store::{RunRow, StoreError, ThreadRow};

/// How often a join asks the store whether another server's run ended.
const POLL: Duration = Duration::from_millis(100);

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
    if let (Some(session), Some(db)) = (app.leases.session(), app.store.pg()) {
        crate::queue::cancel_queued(db, thread_id, run_id, false).await?;
        session.send_cancel(thread_id, run_id, false).await?;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = (app, thread_id, run_id);
    Ok(())
}

/// A run not running here: cancelled in the queue if no server claimed
/// it yet, else the server running it is told (`NOTIFY`).
#[cfg(feature = "postgres")]
async fn cancel_not_here(
    session: &crate::lease::postgres::Session,
    db: &crate::store::postgres::PgDb,
    thread_id: &str,
    run_id: &str,
    rollback: bool,
) -> Result<(), StoreError> {
    let queued = crate::queue::cancel_queued(db, thread_id, Some(run_id), rollback);
    if queued.await?.is_empty() {
        session
            .send_cancel(thread_id, Some(run_id), rollback)
            .await?;
    }
    Ok(())
}

/// The `interrupt` and `rollback` strategies: the thread's runs stored
/// before run `run_id` stop (rolled back with `rollback`), here and on
/// any server: on PostgreSQL, a queued one in the queue, a claimed one by
/// its server, told by a message (so of two such runs sent at once, the
/// later stops the earlier, never the reverse). On SQLite, every run of
/// the thread this process runs (there is no other server).
pub(crate) async fn stop_runs_before(
    app: &App,
    thread_id: &str,
    run_id: &str,
    rollback: bool,
) -> Result<(), StoreError> {
    #[cfg(feature = "postgres")]
    if let (Some(session), Some(db)) = (app.leases.session(), app.store.pg()) {
        for older in crate::queue::runs_before(db, thread_id, run_id).await? {
            if app.cancel_run(thread_id, &older, rollback) {
                continue;
            }
            cancel_not_here(session, db, thread_id, &older, rollback).await?;
        }
        return Ok(());
    }
    let _ = run_id;
    app.cancel_thread_runs(thread_id, rollback);
    Ok(())
}

/// Whether a run of the thread runs on some server, on PostgreSQL (on
/// SQLite the thread's lock in this process says it).
pub(crate) async fn runs_anywhere(app: &App, thread_id: &str) -> Result<bool, StoreError> {
    #[cfg(feature = "postgres")]
    if let Some(db) = app.store.pg() {
        return crate::queue::running(db, thread_id).await;
    }
    let _ = (app, thread_id);
    Ok(false)
}

/// Waits until no run of the thread runs on any server (a thread being
/// deleted or pruned).
pub(crate) async fn wait_thread_free(app: &App, thread_id: &str) -> Result<(), StoreError> {
    while runs_anywhere(app, thread_id).await? {
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

/// The events of a run stored a moment ago and not registered here yet
/// (on SQLite every run is this server's and registers at once): its log
/// once it registers, `None` when it ended. On PostgreSQL always `None`:
/// the run's stored events follow it wherever it runs, and from whenever
/// it starts, with no polling while it waits in the queue.
pub(crate) async fn queued_log(
    app: &App,
    thread_id: &str,
    run_id: &str,
) -> Result<Option<Arc<crate::log::RunLog>>, StoreError> {
    #[cfg(feature = "postgres")]
    if app.events.stored.is_some() {
        return Ok(None);
    }
    // A run claimed here is registered a moment after it is `running`.
    let mut running_for = 0;
    loop {
        if let Some(log) = app.running_log(thread_id, run_id) {
            return Ok(Some(log));
        }
        let status = app.store.run(thread_id, run_id).await?.map(|r| r.status);
        match status.as_deref() {
            Some("pending") => {}
            Some("running") if running_for < 10 => running_for += 1,
            _ => return Ok(app.running_log(thread_id, run_id)),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A cancel of a run this process does not run: `false` when the store
/// has no unfinished run by that id; else a queued run is cancelled in
/// the queue (deleted with `rollback`), a claimed one's server is told,
/// and with `wait`, this answers once the run ended.
pub(crate) async fn cancel_stored(
    app: &App,
    thread_id: &str,
    run_id: &str,
    wait: bool,
    rollback: bool,
) -> Result<bool, ApiError> {
    let run = app.store.run(thread_id, run_id).await?;
    let Some(mut run) = run.filter(|r| unfinished(&r.status)) else {
        return Ok(false);
    };
    #[cfg(feature = "postgres")]
    if let (Some(session), Some(db)) = (app.leases.session(), app.store.pg()) {
        cancel_not_here(session, db, thread_id, run_id, rollback).await?;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = rollback;
    while wait && unfinished(&run.status) {
        tokio::time::sleep(POLL).await;
        match app.store.run(thread_id, run_id).await? {
            Some(now) => run = now,
            None => break,
        }
    }
    Ok(true)
}

/// At a server's start: on SQLite, fails the runs a server that died
/// left unfinished (one server owns the file); on PostgreSQL, starts this
/// server's queue worker and heartbeat (which take over the runs of
/// servers that died, see [`crate::worker`]) and acts on the cancels
/// other servers send.
pub(crate) async fn recover(app: &Arc<App>) -> Result<(), StoreError> {
    #[cfg(feature = "postgres")]
    if let Some(session) = app.leases.session() {
        crate::worker::start(app).await;
        if let Some(cancels) = session.cancels() {
            act_on_cancels(app, cancels);
        }
        return Ok(());
    }
    let failed = app.store.fail_runs_of(None).await?;
    if failed > 0 {
        tracing::warn!(
            runs = failed,
            "runs left unfinished by a server that died marked failed"
        );
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
            let (thread_id, rollback) = (&cancel.thread_id, cancel.rollback);
            match &cancel.run_id {
                Some(run_id) => _ = app.cancel_run(thread_id, run_id, rollback),
                None => _ = app.cancel_thread_runs(thread_id, rollback),
            }
        }
    });
}
