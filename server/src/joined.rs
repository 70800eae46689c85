//! `GET /threads/{id}/stream` (the SDKs' `threads.join_stream`): the
//! events of a thread's runs, one run after the other, as each run
//! streams them, each run closed by a `metadata` event
//! `{"status": "run_done", "run_id"}`.
//!
//! Which runs: those in progress when the client joins (pending or
//! running) and every run the thread gets after, on this server (told
//! as it registers, [`RunStarts`]) or, on PostgreSQL, on any server
//! (found in the runs table, its events read from the stored log). With
//! `Last-Event-ID`, the runs from that event on whose events are still
//! held (the live runs here; on PostgreSQL those stored, for
//! `Server::stream_ttl` after their end).
//!
//! An event's id is `<ms>-<n>`, the official server's form (a Redis
//! stream id): `ms` is the run's creation time (from its time-ordered
//! id), `n` the event's number in the run, so the ids of a thread's
//! stream grow and a reconnect names where it left off.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use tokio::sync::{broadcast, mpsc, watch};

use crate::app::App;
use crate::error::ApiError;
use crate::log::RunLog;
use crate::store::RunRow;
use crate::threads::path_thread;

/// The routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new().route("/threads/{id}/stream", get(join_thread))
}

/// A run that registered on this server, told to the threads' streams.
#[derive(Clone)]
pub(crate) struct StartedRun {
    /// Its thread.
    pub thread_id: String,
    /// Its id.
    pub run_id: String,
    /// Its events (all of them, from its first).
    pub log: Arc<RunLog>,
}

/// What the threads' join streams hear from the server: each run that
/// registers here, and that the server stops (the streams then end, so a
/// graceful stop is not held by them).
pub(crate) struct RunStarts {
    starts: broadcast::Sender<StartedRun>,
    stop: watch::Sender<bool>,
}

impl Default for RunStarts {
    /// Room for the runs that start while a stream relays another.
    fn default() -> Self {
        RunStarts {
            starts: broadcast::channel(1024).0,
            stop: watch::channel(false).0,
        }
    }
}

impl RunStarts {
    /// Tells the streams of a run that registered here.
    pub(crate) fn started(&self, run: StartedRun) {
        // No stream listening is no error.
        let _ = self.starts.send(run);
    }

    /// Ends every thread's join stream: the server stops.
    pub(crate) fn stop(&self) {
        self.stop.send_replace(true);
    }
}

/// How many of a thread's runs a stream looks at, newest first.
const RUNS: i64 = 1000;

/// How often a stream looks for runs other servers started (PostgreSQL).
const POLL: Duration = Duration::from_millis(250);

/// How long a stream stays open without an event once no run of its
/// thread is in progress, so that a graceful stop is not held by idle
/// streams.
const IDLE: Duration = Duration::from_secs(60);

/// Which events a stream carries (`stream_modes`): every event of the
/// runs but `state_update` (`run_modes`, the default), each run's start
/// and end `metadata` (`lifecycle`), `state_update` events.
#[derive(Debug, Clone, Copy, Default)]
struct Modes {
    run: bool,
    lifecycle: bool,
    state: bool,
}

impl Modes {
    /// `stream_modes`: one mode, or several separated by commas.
    fn read(query: Option<&String>) -> Result<Modes, ApiError> {
        let Some(query) = query.filter(|q| !q.is_empty()) else {
            return Ok(Modes {
                run: true,
                ..Modes::default()
            });
        };
        let mut modes = Modes::default();
        for mode in query.split(',').map(str::trim) {
            match mode {
                "run_modes" => modes.run = true,
                "lifecycle" => modes.lifecycle = true,
                "state_update" => modes.state = true,
                other => {
                    return Err(ApiError::Invalid(format!(
                        "stream_modes: `{other}` is not one of \"lifecycle\", \"run_modes\", \"state_update\""
                    )))
                }
            }
        }
        Ok(modes)
    }

    /// Whether an event goes to the client.
    fn pass(self, event: &str, data: &str) -> bool {
        let lifecycle = event == "metadata"
            && (data.contains("\"run_done\"")
                || (data.contains("\"run_id\"") && data.contains("\"attempt\"")));
        (self.run && event != "state_update")
            || (self.state && event == "state_update")
            || (self.lifecycle && lifecycle)
    }
}

/// `Last-Event-ID`: `<ms>-<n>` (or `<ms>`): the run made at `ms` and the
/// last event of it the client has; a 422 naming the header otherwise.
fn position(headers: &HeaderMap) -> Result<Option<(u64, usize)>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let bad = || {
        ApiError::Invalid(
            "Last-Event-ID: not an id of this stream (`<ms>-<n>`, as its events' ids)".to_owned(),
        )
    };
    let text = value.to_str().map_err(|_| bad())?.trim();
    let (ms, n) = text.split_once('-').unwrap_or((text, "0"));
    let ms = ms.parse().map_err(|_| bad())?;
    let n = n.parse().map_err(|_| bad())?;
    Ok(Some((ms, n)))
}

/// When a run was made, in ms since the epoch: the time in its UUID v7
/// (0 for an id of another kind).
fn run_ms(run_id: &str) -> u64 {
    let stamp = uuid::Uuid::parse_str(run_id)
        .ok()
        .and_then(|id| id.get_timestamp());
    stamp.map_or(0, |t| {
        let (secs, nanos) = t.to_unix();
        secs * 1000 + u64::from(nanos / 1_000_000)
    })
}

/// `GET /threads/{id}/stream`: 422 for a bad `stream_modes` or
/// `Last-Event-ID`, 404 for an unknown thread; else the stream.
async fn join_thread(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    path_thread(&app, &id).await?;
    let modes = Modes::read(query.get("stream_modes"))?;
    let from = position(&headers)?;
    let (tx, rx) = mpsc::channel(64);
    let relay = Relay {
        starts: app.run_starts.starts.subscribe(),
        stop: app.run_starts.stop.subscribe(),
        app,
        thread_id: id.clone(),
        modes,
        tx,
        seen: HashSet::new(),
        relayed: tokio::time::Instant::now(),
    };
    tokio::spawn(relay.run(from));
    let at = format!("/threads/{id}");
    Ok(crate::sse::response(rx, &format!("{at}/stream"), &at))
}

/// The task behind one client's thread stream.
struct Relay {
    app: Arc<App>,
    thread_id: String,
    modes: Modes,
    tx: mpsc::Sender<String>,
    starts: broadcast::Receiver<StartedRun>,
    /// Set when the server stops.
    stop: watch::Receiver<bool>,
    /// The runs relayed (or passed over) already.
    seen: HashSet<String>,
    /// When the last run relayed ended (or the stream opened).
    relayed: tokio::time::Instant,
}

/// Whether the client is still there.
type Open = bool;

/// What woke a stream.
enum Next {
    /// A run registered on this server.
    Started(StartedRun),
    /// Time to look for runs started elsewhere.
    Look,
}

impl Relay {
    /// The runs under way (or after `from`), then each new one, until the
    /// client leaves or the stream idles out.
    async fn run(mut self, from: Option<(u64, usize)>) {
        if !self.first_runs(from).await {
            return;
        }
        loop {
            let next = tokio::select! {
                started = self.starts.recv() => match started {
                    Ok(run) => Next::Started(run),
                    // Runs missed while it relayed others: on PostgreSQL
                    // the next look at the runs table finds them.
                    Err(broadcast::error::RecvError::Lagged(_)) => Next::Look,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                () = tokio::time::sleep(POLL) => Next::Look,
                () = self.tx.closed() => return,
                _ = self.stop.wait_for(|stop| *stop) => return,
            };
            let open = match next {
                Next::Started(run) => self.relay_started(run).await,
                Next::Look => self.new_stored_runs().await,
            };
            if !open || (self.relayed.elapsed() > IDLE && !self.busy().await) {
                return;
            }
        }
    }

    /// A run that registered here: relayed from its first event if it is
    /// the thread's and new to the stream.
    async fn relay_started(&mut self, run: StartedRun) -> Open {
        if run.thread_id != self.thread_id || !self.seen.insert(run.run_id.clone()) {
            return true;
        }
        let (tx, rx) = mpsc::channel(64);
        run.log.follow(0, tx);
        self.pump(&run.run_id, rx).await
    }

    /// The thread's runs, oldest first (none if they cannot be read: the
    /// stream goes on with the runs that start).
    async fn runs(&self) -> Vec<RunRow> {
        let runs = self.app.store.runs(&self.thread_id, RUNS, 0).await;
        let mut runs = runs.unwrap_or_else(|e| {
            tracing::error!(thread_id = %self.thread_id, error = %e, "could not list a thread's runs");
            Vec::new()
        });
        runs.reverse();
        runs
    }

    /// The runs under way as the client joins (each from its start), or
    /// with `from`, the runs from that event on.
    async fn first_runs(&mut self, from: Option<(u64, usize)>) -> Open {
        for run in self.runs().await {
            self.seen.insert(run.run_id.clone());
            let ms = run_ms(&run.run_id);
            let after = match from {
                Some((at, n)) if ms == at => Some(n),
                Some((at, _)) if ms > at => Some(0),
                Some(_) => continue,
                None if matches!(run.status.as_str(), "pending" | "running") => None,
                None => continue,
            };
            if !self.relay_row(&run, after).await {
                return false;
            }
        }
        true
    }

    /// On PostgreSQL, the runs other servers started since the last look
    /// (their events read from the stored log, from the first).
    async fn new_stored_runs(&mut self) -> Open {
        if !stored_events(&self.app) {
            return true;
        }
        for run in self.runs().await {
            if self.seen.insert(run.run_id.clone()) && !self.relay_row(&run, Some(0)).await {
                return false;
            }
        }
        true
    }

    /// Whether a run of the thread is still pending or running.
    async fn busy(&self) -> bool {
        let runs = self.app.store.runs(&self.thread_id, RUNS, 0).await;
        runs.map_or(true, |runs| {
            runs.iter()
                .any(|r| matches!(r.status.as_str(), "pending" | "running"))
        })
    }

    /// Relays one stored run: from this server's log while it runs here,
    /// else from wherever its events are held.
    async fn relay_row(&mut self, run: &RunRow, after: Option<usize>) -> Open {
        let (tx, rx) = mpsc::channel(64);
        match self.app.running_log(&run.thread_id, &run.run_id) {
            Some(log) if log.holds_after(after.unwrap_or(0)) => log.follow(after.unwrap_or(0), tx),
            _ => crate::log::follow_elsewhere(&self.app, run, after, tx),
        }
        self.pump(&run.run_id, rx).await
    }

    /// Sends the client a run's events as they come (renumbered, those
    /// its modes take), then its `run_done` once the run's stream ended.
    async fn pump(&mut self, run_id: &str, mut rx: mpsc::Receiver<String>) -> Open {
        let ms = run_ms(run_id);
        let mut last = 0;
        let mut any = false;
        loop {
            let framed = tokio::select! {
                framed = rx.recv() => framed,
                _ = self.stop.wait_for(|stop| *stop) => return false,
            };
            let Some(framed) = framed else { break };
            let Some((event, data, id)) = parse(&framed) else {
                continue;
            };
            (last, any) = (id.unwrap_or(last + 1), true);
            if self.modes.pass(event, data) && !self.send(event, data, ms, last).await {
                return false;
            }
        }
        if any {
            self.relayed = tokio::time::Instant::now();
        }
        let done = format!("{{\"status\":\"run_done\",\"run_id\":\"{run_id}\"}}");
        if any && self.modes.pass("metadata", &done) {
            return self.send("metadata", &done, ms, last).await;
        }
        true
    }

    async fn send(&self, event: &str, data: &str, ms: u64, n: usize) -> Open {
        let framed = crate::sse::frame_with_id(event, data, format!("{ms}-{n}"));
        self.tx.send(framed).await.is_ok()
    }
}

/// Whether runs' events are stored for other servers (PostgreSQL).
fn stored_events(app: &App) -> bool {
    #[cfg(feature = "postgres")]
    if app.events.stored.is_some() {
        return true;
    }
    let _ = app;
    false
}

/// A frame's event name, data and id (as `sse` writes them).
fn parse(framed: &str) -> Option<(&str, &str, Option<usize>)> {
    let (mut event, mut data, mut id) = (None, None, None);
    for line in framed.split("\r\n") {
        if let Some(e) = line.strip_prefix("event: ") {
            event = Some(e);
        } else if let Some(d) = line.strip_prefix("data: ") {
            data = Some(d);
        } else if let Some(i) = line.strip_prefix("id: ") {
            id = i.trim().parse().ok();
        }
    }
    Some((event?, data?, id))
}
