//! A run's events as they were sent: what a client that reconnects
//! (`Last-Event-ID`) or joins a run's stream replays, then follows.
//!
//! The process running a run keeps its events in memory while it lives
//! ([`RunLog`]), and its own joiners follow them there. On PostgreSQL each
//! event is also appended to the database ([`postgres`]), so a client on
//! any server joins or reconnects to the run, during it and for a while
//! after it ended; on SQLite (one process) the memory is all there is.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::app::App;
use crate::sse::frame_with_id;
use crate::store::RunRow;

#[cfg(feature = "postgres")]
pub(crate) mod notify;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

/// Where runs' events go besides memory: nowhere (SQLite), or the
/// PostgreSQL database every server shares.
#[derive(Default)]
pub(crate) struct Events {
    #[cfg(feature = "postgres")]
    pub(crate) stored: Option<Arc<postgres::StoredEvents>>,
}

/// How many ids each attempt of a run has: attempt `n` numbers its events
/// from `(n - 1) * ATTEMPT_IDS` on. A server killed mid-run may have sent
/// events its clients hold but never stored them; the attempt that takes
/// over cannot know their ids, so it starts above all of them.
#[cfg(feature = "postgres")]
pub(crate) const ATTEMPT_IDS: usize = match 1usize.checked_shl(32) {
    Some(ids) => ids,
    // A 32-bit target: a million ids an attempt.
    None => 1 << 20,
};

/// The events of one run, numbered in the order they were sent: from 1,
/// or on from the last one stored when a server takes over a run another
/// began.
pub(crate) struct RunLog {
    /// The id before the first event held here.
    base: usize,
    frames: Mutex<Vec<(Cow<'static, str>, String)>>,
    /// The last id, and whether the run ended.
    progress: watch::Sender<(usize, bool)>,
    /// Where each event is stored too (PostgreSQL).
    #[cfg(feature = "postgres")]
    stored: Option<postgres::Appender>,
}

impl RunLog {
    /// An empty log, kept in memory only.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::starting(0))
    }

    fn starting(base: usize) -> RunLog {
        RunLog {
            base,
            frames: Mutex::default(),
            progress: watch::channel((base, false)).0,
            #[cfg(feature = "postgres")]
            stored: None,
        }
    }

    /// The log of run `run_id` of thread `thread_id`: in memory, and on
    /// PostgreSQL stored as well, so clients on other servers follow it.
    pub(crate) fn for_run(app: &App, run_id: &str, thread_id: &str) -> Arc<Self> {
        #[cfg(feature = "postgres")]
        if let Some(stored) = &app.events.stored {
            return Arc::new(RunLog {
                stored: Some(stored.appender(run_id, thread_id)),
                ..Self::starting(0)
            });
        }
        let _ = (app, run_id, thread_id);
        Self::new()
    }

    /// The log of a run this server claims after another server held it:
    /// its ids go on after the last event stored, so a client that
    /// follows the run sees one increasing sequence. A run taken over from
    /// a server that died (`attempt` counted up) numbers from its
    /// attempt's own range ([`ATTEMPT_IDS`]), above any id the dead
    /// server could have sent without storing it, so a client that
    /// reconnects with such an id misses none of the new attempt's events.
    /// In memory only (numbered from 1) on SQLite, where no other server
    /// ran it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) async fn continuing(
        app: &App,
        run_id: &str,
        thread_id: &str,
        attempt: i64,
    ) -> Result<Arc<Self>, crate::store::StoreError> {
        #[cfg(feature = "postgres")]
        if let Some(stored) = &app.events.stored {
            return Self::continuing_in(stored, run_id, thread_id, attempt).await;
        }
        let _ = attempt;
        Ok(Self::for_run(app, run_id, thread_id))
    }

    /// [`continuing`](Self::continuing), in `stored`.
    #[cfg(feature = "postgres")]
    async fn continuing_in(
        stored: &Arc<postgres::StoredEvents>,
        run_id: &str,
        thread_id: &str,
        attempt: i64,
    ) -> Result<Arc<Self>, crate::store::StoreError> {
        let last = stored.last_seq(run_id).await?;
        let floor = ATTEMPT_IDS * usize::try_from(attempt - 1).unwrap_or(0);
        Ok(Arc::new(RunLog {
            stored: Some(stored.appender(run_id, thread_id)),
            ..Self::starting(last.max(floor))
        }))
    }

    /// Adds an event (its SSE name and JSON data); its id.
    pub(crate) fn push(&self, event: Cow<'static, str>, data: String) -> usize {
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        #[cfg(feature = "postgres")]
        if let Some(stored) = &self.stored {
            stored.append(self.base + frames.len() + 1, &event, &data);
        }
        frames.push((event, data));
        let id = self.base + frames.len();
        self.progress.send_replace((id, false));
        id
    }

    /// Marks the run ended: followers stop once they have sent the rest.
    /// A stored log is written to its end first (its end marked, so
    /// followers on other servers stop too).
    pub(crate) async fn close(&self) {
        #[cfg(feature = "postgres")]
        if let Some(stored) = &self.stored {
            stored.finish().await;
        }
        self.progress.send_modify(|p| p.1 = true);
    }

    /// The run moved to another server: the stored events are written
    /// without an end (the new server numbers on from them, and followers
    /// elsewhere keep following); this server's own followers stop.
    pub(crate) async fn release(&self) {
        #[cfg(feature = "postgres")]
        if let Some(stored) = &self.stored {
            stored.release().await;
        }
        self.progress.send_modify(|p| p.1 = true);
    }

    /// Whether this log holds every event after id `after` (a run taken
    /// over holds only those since).
    pub(crate) fn holds_after(&self, after: usize) -> bool {
        after >= self.base
    }

    /// Sends the events after id `after` (at least the log's base, see
    /// [`holds_after`](Self::holds_after)), each with its `id:` line, then
    /// each new one as it comes, until the run ends or `tx`'s client
    /// leaves.
    pub(crate) fn follow(self: Arc<Self>, after: usize, tx: mpsc::Sender<String>) {
        let mut progress = self.progress.subscribe();
        tokio::spawn(async move {
            let mut next = after.max(self.base);
            loop {
                let (last, ended) = *progress.borrow_and_update();
                for id in next + 1..=last {
                    if tx.send(self.framed(id)).await.is_err() {
                        return;
                    }
                }
                next = next.max(last);
                if ended || progress.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// `f` of event `id`'s data.
    pub(crate) fn with_data<T>(&self, id: usize, f: impl FnOnce(&str) -> T) -> T {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        f(&frames[id - self.base - 1].1)
    }

    fn framed(&self, id: usize) -> String {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        let (event, data) = &frames[id - self.base - 1];
        frame_with_id(event, data, id)
    }
}

/// Streams to `tx` the events of a run this process does not hold (it
/// runs elsewhere, or ended): on PostgreSQL from the stored log, after
/// `after` (from the start when `None`), then live until the run ends. A
/// run that ended streams only when the client names the last event it
/// has (`Last-Event-ID`), as the official server replays only then. On
/// SQLite nothing: a run no process runs has no events left.
pub(crate) fn follow_elsewhere(
    app: &Arc<App>,
    run: &RunRow,
    after: Option<usize>,
    tx: mpsc::Sender<String>,
) {
    #[cfg(feature = "postgres")]
    if let Some(stored) = &app.events.stored {
        let live = matches!(run.status.as_str(), "pending" | "running");
        if live || after.is_some() {
            let (app, stored) = (Arc::clone(app), Arc::clone(stored));
            let (run_id, thread_id) = (run.run_id.clone(), run.thread_id.clone());
            let after = i64::try_from(after.unwrap_or(0)).unwrap_or(i64::MAX);
            tokio::spawn(async move {
                stored
                    .follow(&app.store, &thread_id, &run_id, after, tx)
                    .await;
            });
        }
        return;
    }
    let _ = (app, run, after, tx);
}

#[cfg(all(test, feature = "postgres"))]
mod tests;
