//! The HTTP API: start or resume a debate and stream it, read a thread,
//! the page, the graph's drawing.
//!
//! * `POST /api/debate` with `{"threadId"?, "topic"?, "maxRounds"?,
//!   "streamMode"?}` (seed 004's endpoint): a thread that does not exist
//!   starts with `topic` (and `maxRounds`, default 3, at most 10); one that
//!   stopped midway (its server died, its client left) resumes where its
//!   last step was stored; a finished one is only read. The answer is a
//!   stream of server-sent events: `metadata` (the thread, and whether it
//!   `started`, `resumed` or was `finished`), then the run's events in the
//!   modes asked for (default `values`, `updates`, `messages`, `custom`;
//!   a resumed run's first `values` is the state it resumes from, as in
//!   LangGraph), then `end` (or `error`).
//! * `GET /api/debate/{thread}`: the thread's state, what runs next, its
//!   checkpoint.
//! * `GET /`: the page; `GET /api/graph`: the graph in Mermaid.
//!
//! Bad requests are answered 400 with `{"error": ..}` naming the field; a
//! thread another run holds, 409.

use std::convert::Infallible;
use std::sync::Arc;

use agent_state::checkpoint::Checkpointer;
use agent_state::futures::stream::{self, BoxStream, StreamExt};
use agent_state::graph::{Graph, Input, RunStream, StreamEvent, StreamModes};
use agent_state::serde_json::{json, Value};
use agent_state::{new_message_id, AgentState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::debate::DebateState;
use crate::lease::{Lease, Leases};

/// What the handlers share.
pub struct App {
    /// The debate graph.
    pub graph: Arc<Graph<DebateState>>,
    /// Where threads are stored.
    pub saver: Arc<dyn Checkpointer>,
    /// Who runs which thread.
    pub leases: Leases,
}

/// The server's routes.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/debate", post(debate))
        .route("/api/debate/{thread}", get(thread_state))
        .route("/api/graph", get(graph))
        .with_state(app)
}

/// A refusal: a status and a message for `{"error": ..}`.
pub struct ApiError(StatusCode, String);

impl ApiError {
    fn bad(message: impl Into<String>) -> Self {
        ApiError(StatusCode::BAD_REQUEST, message.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl<E: std::fmt::Display> From<E> for ApiError {
    fn from(error: E) -> Self {
        ApiError(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
    }
}

/// The body of `POST /api/debate`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DebateRequest {
    thread_id: Option<String>,
    topic: Option<String>,
    max_rounds: Option<u32>,
    stream_mode: Option<Vec<String>>,
}

/// The modes streamed when the request names none.
const DEFAULT_MODES: &str = "values,updates,messages,custom";

/// The longest thread id taken.
const MAX_THREAD_ID: usize = 128;

/// The most rounds a debate may have (seed 004's schema).
const MAX_ROUNDS: u32 = 10;

async fn page() -> Html<&'static str> {
    Html(include_str!("page.html"))
}

async fn graph(State(app): State<Arc<App>>) -> impl IntoResponse {
    let headers = [(header::CONTENT_TYPE, "text/plain; charset=utf-8")];
    (headers, app.graph.to_mermaid())
}

fn check_thread_id(id: &str) -> Result<(), ApiError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || "-_.:".contains(c);
    if id.is_empty() || id.len() > MAX_THREAD_ID || !id.chars().all(fine) {
        return Err(ApiError::bad(format!(
            "`threadId` {id:?}: expected 1 to {MAX_THREAD_ID} letters, digits, `-`, `_`, `.` or `:`"
        )));
    }
    Ok(())
}

async fn thread_state(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
) -> Result<Json<Value>, ApiError> {
    check_thread_id(&thread)?;
    let snapshot = app.graph.get_state(&*app.saver, &thread).await?;
    let Some(checkpoint) = snapshot.checkpoint else {
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("no debate on thread `{thread}`"),
        ));
    };
    Ok(Json(json!({
        "threadId": thread,
        "values": snapshot.values.to_json(),
        "next": snapshot.next,
        "step": checkpoint.step,
        "checkpointId": checkpoint.id,
    })))
}

/// The modes a request asks for.
fn modes(request: &DebateRequest) -> Result<StreamModes, ApiError> {
    let list = match &request.stream_mode {
        Some(names) => names.join(","),
        None => DEFAULT_MODES.to_owned(),
    };
    StreamModes::parse_list(&list).map_err(|e| ApiError::bad(format!("`streamMode`: {e}")))
}

/// What a request does to its thread, decided once the lease is held.
enum Plan {
    /// A new thread with this state.
    Start(DebateState),
    /// A stored thread: run from where it stopped (nothing to run when it
    /// finished, `true`; the run then only streams its state).
    Resume(bool),
}

async fn plan(app: &App, thread: &str, request: &DebateRequest) -> Result<Plan, ApiError> {
    let snapshot = app.graph.get_state(&*app.saver, thread).await?;
    if snapshot.checkpoint.is_none() {
        let topic = request.topic.as_deref().map(str::trim).unwrap_or_default();
        if topic.is_empty() {
            return Err(ApiError::bad(format!(
                "`topic` is required to start a debate (thread `{thread}` has none)"
            )));
        }
        let rounds = request.max_rounds.unwrap_or(3);
        if !(1..=MAX_ROUNDS).contains(&rounds) {
            return Err(ApiError::bad(format!(
                "`maxRounds` {rounds}: expected 1 to {MAX_ROUNDS}"
            )));
        }
        return Ok(Plan::Start(DebateState::new(topic, rounds)));
    }
    let stored = &snapshot.values;
    if let Some(topic) = request
        .topic
        .as_deref()
        .filter(|t| t.trim() != stored.topic)
    {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!(
                "`topic` {topic:?}: thread `{thread}` debates {:?}",
                stored.topic
            ),
        ));
    }
    Ok(Plan::Resume(snapshot.next.is_empty()))
}

async fn debate(
    State(app): State<Arc<App>>,
    body: Result<Json<DebateRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = body.map_err(|e| ApiError::bad(e.body_text()))?;
    let modes = modes(&request)?;
    let thread = match &request.thread_id {
        Some(id) => id.clone(),
        None => new_message_id(),
    };
    check_thread_id(&thread)?;
    let Some(lease) = app.leases.acquire(&thread).await? else {
        return Err(ApiError(
            StatusCode::CONFLICT,
            format!("thread `{thread}` is running in another request"),
        ));
    };
    let (status, input) = match plan(&app, &thread, &request).await? {
        Plan::Start(state) => ("started", Input::State(state)),
        Plan::Resume(false) => ("resumed", Input::Resume),
        Plan::Resume(true) => ("finished", Input::Resume),
    };
    tracing::info!(thread = %thread, status, "debate request");
    let metadata = frame("metadata", &json!({"threadId": thread, "status": status}));
    let events = run_events(&app, &thread, input, modes);
    Ok(sse(
        stream::once(async { metadata }).chain(events).boxed(),
        thread,
        lease,
    ))
}

/// The run's events as SSE frames: each event under its mode's name, an
/// error as `error`.
fn run_events(
    app: &App,
    thread: &str,
    input: Input<DebateState>,
    modes: StreamModes,
) -> BoxStream<'static, Frame> {
    let graph = Arc::clone(&app.graph);
    let saver = Arc::clone(&app.saver);
    let thread_id = thread.to_owned();
    let run = RunStream::shared(graph, saver, thread, input, modes, |run| run);
    run.map(move |event| match event {
        Ok(event) => {
            if let StreamEvent::End(out) = &event {
                tracing::info!(thread = %thread_id, steps = out.steps, "debate run ended");
            }
            frame(event.name(), &event.to_json())
        }
        Err(error) => {
            tracing::warn!(thread = %thread_id, %error, "debate run failed");
            frame("error", &json!({"error": error.to_string()}))
        }
    })
    .boxed()
}

/// An event, and whether it is the last (`end` or `error`).
type Frame = (Event, bool);

fn frame(name: &str, data: &Value) -> Frame {
    let last = name == "end" || name == "error";
    (Event::default().event(name).data(data.to_string()), last)
}

/// A response body's lease, and whether its last event went out: dropped
/// before that, its client left (and the run stopped with the body).
struct Watch {
    thread: String,
    done: bool,
    _lease: Lease,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.done {
            tracing::info!(thread = %self.thread, "client left: the run stopped at its last stored step");
        }
    }
}

/// The response: the frames, the lease held until the body is done with
/// (or dropped, when the client leaves: then the run stops too).
fn sse(frames: BoxStream<'static, Frame>, thread: String, lease: Lease) -> Response {
    let mut watch = Watch {
        thread,
        done: false,
        _lease: lease,
    };
    let body = frames.map(move |(event, last)| {
        // The whole `watch` moves in (not only its field), lease included.
        let watch = &mut watch;
        watch.done |= last;
        Ok::<_, Infallible>(event)
    });
    Sse::new(body)
        .keep_alive(KeepAlive::default())
        .into_response()
}
