//! On PostgreSQL, a thread's tape on this server is filled from the
//! stored events of the thread's runs, whichever server runs them: a task
//! per followed thread puts its runs on the tape one after the other, in
//! the order they were made, from the first whose events are still
//! stored (as the official server replays a thread's stream), then the
//! runs that start after, woken by their first events. So a client may
//! subscribe on one server and start its runs on another.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::mpsc;

use super::session::Session;
use super::tape::Tape;
use crate::app::App;
use crate::log::postgres::{StoredEvents, POLL};
use crate::store::RunRow;

/// How many of a thread's runs the task looks at, newest first.
const RUNS: i64 = 1000;

/// The thread's tape, with a task filling it from the stored events
/// (started unless one runs).
pub(crate) fn fed(app: &Arc<App>, stored: &Arc<StoredEvents>, thread_id: &str) -> Arc<Tape> {
    let tape = app.threadproto.of(thread_id);
    if !tape.feeding.swap(true, Ordering::SeqCst) {
        let (app, stored) = (Arc::clone(app), Arc::clone(stored));
        let weak = Arc::downgrade(&tape);
        tokio::spawn(feed(app, stored, thread_id.to_owned(), weak));
    }
    tape
}

/// Puts the thread's runs on `tape`, until no stream holds it.
async fn feed(app: Arc<App>, stored: Arc<StoredEvents>, thread_id: String, tape: Weak<Tape>) {
    // Woken by any event of the thread's runs, subscribed before the
    // first look, so no run's start is missed.
    let mut wake = stored.wake_on_thread(&thread_id);
    loop {
        wake.seen();
        // A failed look is tried again at the next wake or poll.
        let runs = app.store.runs(&thread_id, RUNS, 0).await;
        let runs = runs.unwrap_or_else(|e| {
            tracing::error!(%thread_id, error = %e, "could not list a thread's runs");
            Vec::new()
        });
        for run in runs.into_iter().rev() {
            let Some(tape) = tape.upgrade() else { return };
            if !tape
                .translated
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&run.run_id)
            {
                translate(&app, &tape, &run).await;
                let mut translated = tape.translated.lock().unwrap_or_else(|e| e.into_inner());
                translated.insert(run.run_id);
            }
        }
        tokio::select! {
            () = wake.next() => {}
            () = tokio::time::sleep(POLL) => {}
        }
        if !still_wanted(&tape) {
            return;
        }
    }
}

/// Whether a stream still holds the tape (beyond the map of tapes); if
/// not, the task stops, and a stream opened meanwhile starts another.
fn still_wanted(tape: &Weak<Tape>) -> bool {
    let Some(tape) = tape.upgrade() else {
        return false;
    };
    // Ours (just now) and the map's.
    if Arc::strong_count(&tape) > 2 {
        return true;
    }
    tape.feeding.store(false, Ordering::SeqCst);
    // A stream that came between the count and the flag found it set.
    Arc::strong_count(&tape) > 2 && !tape.feeding.swap(true, Ordering::SeqCst)
}

/// Puts one run on the tape, from its stored events to its end: nothing
/// for a run none of whose events are stored any more.
async fn translate(app: &Arc<App>, tape: &Arc<Tape>, run: &RunRow) {
    // The graph the run ran (stamped in its metadata): its assistant may
    // have been changed or deleted since.
    let stamped = run.metadata.get("graph_id").and_then(|g| g.as_str());
    let graph = match stamped {
        Some(graph) => graph.to_owned(),
        None => app
            .resolve(&run.assistant_id)
            .await
            .map(|a| a.graph_id)
            .unwrap_or_default(),
    };
    let _running = tape.running();
    let (tx, mut rx) = mpsc::channel(64);
    crate::log::follow_elsewhere(app, run, Some(0), tx);
    let mut session = None;
    while let Some(framed) = rx.recv().await {
        let session =
            session.get_or_insert_with(|| Session::start(Arc::clone(tape), &run.run_id, &graph));
        if let Some((name, data)) = super::parse(&framed) {
            session.ingest(&name, data);
        }
    }
    if let Some(mut session) = session {
        session.finish(&super::status(app, &run.thread_id, &run.run_id).await);
    }
}
