//! The thread-centric protocol the newest LangGraph clients speak
//! (`@langchain/react`'s `useStream`, `@langchain/langgraph-sdk`'s thread
//! streams) instead of `runs/stream`:
//!
//! * `POST /threads/{thread_id}/commands`: one JSON command, one JSON
//!   answer. `run.start` starts a run on the thread (created if new) and
//!   answers its `run_id`; `input.respond` resumes the thread's pending
//!   interrupt. The runs are ordinary runs, listed by
//!   `/threads/{id}/runs`.
//! * `POST /threads/{thread_id}/stream/events`: server-sent events of the
//!   thread's runs, filtered by the body's `channels`, `namespaces` and
//!   `depth`: each event an envelope `{"type": "event", "event_id",
//!   "seq", "method", "params": {"namespace", "timestamp", "data"}}`
//!   named by its `method`, with `seq` as its SSE `id`. A stream replays
//!   the thread's events from its first run (or after the body's
//!   `since`), then follows new ones.
//!
//! The envelopes are made once per run, on this server, from the run's
//! own event log ([`session`]), and kept per thread ([`tape`]). On
//! PostgreSQL a thread's tape is filled from the stored events of all
//! the thread's runs ([`stored`]), so they may run on any server.
//!
//! A client's side of it (what `useStream` does), over plain HTTP:
//!
//! ```no_run
//! # async fn chat() -> Result<(), reqwest::Error> {
//! let (c, base) = (reqwest::Client::new(), "http://127.0.0.1:2024");
//! let thread = "6f1d1f9e-8d0c-4c39-9d59-1f7e2c1b9a10";
//! // Subscribe first, then start: the stream replays the run from its
//! // `lifecycle` `running` on, however fast it is.
//! let body = serde_json::json!({"channels": ["values", "messages", "lifecycle"]});
//! let mut events = c
//!     .post(format!("{base}/threads/{thread}/stream/events"))
//!     .json(&body)
//!     .send()
//!     .await?;
//! let start = serde_json::json!({"id": 1, "method": "run.start", "params": {
//!     "assistant_id": "chat",
//!     "input": {"messages": [{"type": "human", "content": "hi"}]},
//! }});
//! c.post(format!("{base}/threads/{thread}/commands"))
//!     .json(&start)
//!     .send()
//!     .await?;
//! while let Some(frames) = events.chunk().await? {
//!     // `event: messages\r\ndata: {"type":"event","seq":3,...}\r\nid: 3`
//!     print!("{}", String::from_utf8_lossy(&frames));
//! }
//! # Ok(())
//! # }
//! ```

mod commands;
mod filter;
mod respond;
mod session;
#[cfg(feature = "postgres")]
mod stored;
pub(crate) mod tape;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use crate::app::App;
use crate::auth::Scope;
use crate::error::ApiError;
use crate::runner::Started;
use session::Session;
pub(crate) use tape::Tapes;

/// How long a stream stays silent before a `: heartbeat` comment.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long a stream stays open with no event, once no run of the thread
/// is in progress here: then it ends, so a server stopping gracefully is
/// not held open by idle streams (the client opens a new one).
const IDLE_END: Duration = Duration::from_secs(60);

/// The protocol's two routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/threads/{thread_id}/commands", post(command))
        .route("/threads/{thread_id}/stream/events", post(events))
}

/// A refusal with `{"detail": ..}`, as the official server's 400s.
fn detail(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "detail": message }))).into_response()
}

async fn command(
    State(app): State<Arc<App>>,
    Path(thread_id): Path<String>,
    scope: Scope,
    body: Bytes,
) -> Response {
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else {
        return detail(StatusCode::BAD_REQUEST, "Invalid JSON body");
    };
    let integer = |c: &&serde_json::Map<String, Value>| {
        c.get("id").is_some_and(|id| id.is_i64() || id.is_u64())
    };
    let named = |c: &&serde_json::Map<String, Value>| c.get("method").is_some_and(Value::is_string);
    let Some(command) = payload.as_object().filter(integer).filter(named) else {
        let id = payload.get("id").cloned().unwrap_or(Value::Null);
        let message = "Protocol commands must include an integer id and string method.";
        let answer = commands::error(&id, "invalid_argument", message);
        return (StatusCode::BAD_REQUEST, Json(answer)).into_response();
    };
    if let Some(refused) = outside_scope(&app, &scope, &thread_id, command).await {
        return Json(refused).into_response();
    }
    Json(commands::handle(&app, &thread_id, command).await).into_response()
}

async fn events(
    State(app): State<Arc<App>>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> Response {
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else {
        return detail(StatusCode::BAD_REQUEST, "Invalid JSON body");
    };
    let filter = match filter::read(&payload) {
        Ok(filter) => filter,
        Err(message) => return detail(StatusCode::BAD_REQUEST, &message),
    };
    let tape = tape_of(&app, &thread_id);
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut sent = filter.since;
        let mut added = tape.watch();
        loop {
            for event in tape.after(sent) {
                sent = event["seq"].as_u64().unwrap_or(sent);
                if filter.admits(&event) && tx.send(frame(&event)).await.is_err() {
                    return;
                }
            }
            let idle = tokio::time::timeout(IDLE_END, added.changed());
            // A client that left is noticed at once, not at the next event.
            let waited = tokio::select! {
                () = tx.closed() => return,
                waited = idle => waited,
            };
            match waited {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return,
                Err(_) if !tape.busy() => return,
                Err(_) => {}
            }
        }
    });
    stream(rx)
}

/// What a stream of the thread reads: the thread's tape in this process,
/// on PostgreSQL filled from the stored events of the thread's runs on
/// every server ([`stored`]).
fn tape_of(app: &Arc<App>, thread_id: &str) -> Arc<tape::Tape> {
    #[cfg(feature = "postgres")]
    if let Some(stored) = &app.events.stored {
        return stored::fed(app, stored, thread_id);
    }
    app.threadproto.of(thread_id)
}

/// With custom auth scoping threads (a filter on their metadata), a
/// `run.start` does not create a thread the caller could not then see:
/// the thread is created first, with `POST /threads`, which stamps it.
async fn outside_scope(
    app: &App,
    scope: &Scope,
    thread_id: &str,
    command: &serde_json::Map<String, Value>,
) -> Option<Value> {
    let starts = command.get("method").and_then(Value::as_str) == Some("run.start");
    if !starts || scope.admits(&serde_json::Map::new()) {
        return None;
    }
    match app.store.thread(thread_id).await {
        Ok(Some(_)) => None,
        Ok(None) => {
            let message = ApiError::no_thread(thread_id).status_and_detail_text();
            Some(commands::error(&command["id"], "unknown_error", message))
        }
        Err(e) => Some(commands::error(
            &command["id"],
            "unknown_error",
            ApiError::from(e).status_and_detail_text(),
        )),
    }
}

/// An envelope as an SSE frame: named by its method, `id` its `seq`.
fn frame(event: &Value) -> String {
    let method = event["method"].as_str().unwrap_or("event");
    let id = &event["seq"];
    format!("event: {method}\r\ndata: {event}\r\nid: {id}\r\n\r\n")
}

/// The frames `rx` yields, a `: heartbeat` after each silent period.
fn stream(rx: mpsc::Receiver<String>) -> Response {
    let frames = agent_state::futures::stream::unfold(rx, |mut rx| async move {
        let next = match tokio::time::timeout(HEARTBEAT, rx.recv()).await {
            Ok(frame) => frame?,
            Err(_) => ": heartbeat\r\n\r\n".to_owned(),
        };
        Some((Ok::<_, Infallible>(next), rx))
    });
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    let event_stream = HeaderValue::from_static("text/event-stream; charset=utf-8");
    headers.insert(header::CONTENT_TYPE, event_stream);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Translates a started run's events onto its thread's tape, after the
/// runs started before it on this thread, then its end.
fn follow(app: &Arc<App>, thread_id: &str, started: &Started, graph_name: &str) {
    // On PostgreSQL the tape is filled from the stored events.
    #[cfg(feature = "postgres")]
    if app.events.stored.is_some() {
        return;
    }
    let tape = app.threadproto.of(thread_id);
    let (app, log) = (Arc::clone(app), Arc::clone(&started.log));
    let (thread_id, run_id, graph_name) = (
        thread_id.to_owned(),
        started.run_id.clone(),
        graph_name.to_owned(),
    );
    let mut done: watch::Receiver<Option<Value>> = started.done.clone();
    let running = tape.running();
    tokio::spawn(async move {
        let _turn = tape.turn().await;
        let mut session = Session::start(Arc::clone(&tape), &run_id, &graph_name);
        let (tx, mut rx) = mpsc::channel(64);
        log.follow(0, tx);
        while let Some(framed) = rx.recv().await {
            if let Some((name, data)) = parse(&framed) {
                session.ingest(&name, data);
            }
        }
        let _ = done.wait_for(Option::is_some).await;
        session.finish(&status(&app, &thread_id, &run_id).await);
        drop(running);
    });
}

/// The run's end as a lifecycle status: `completed`, `interrupted`
/// (paused on an interrupt, or cancelled) or `failed`.
async fn status(app: &App, thread_id: &str, run_id: &str) -> String {
    let run = app.store.run(thread_id, run_id).await.ok().flatten();
    let paused = match app.store.thread(thread_id).await {
        Ok(Some(t)) => t.status == "interrupted",
        _ => false,
    };
    match run.map(|r| r.status).as_deref() {
        Some("success") if !paused => "completed",
        Some("error") => "failed",
        _ => "interrupted",
    }
    .to_owned()
}

/// A frame of the run's log: its event name and data.
fn parse(framed: &str) -> Option<(String, Value)> {
    let mut name = None;
    let mut data = None;
    for line in framed.split("\r\n") {
        if let Some(n) = line.strip_prefix("event: ") {
            name = Some(n.to_owned());
        } else if let Some(d) = line.strip_prefix("data: ") {
            data = serde_json::from_str(d).ok();
        }
    }
    Some((name?, data?))
}
