//! AG-UI (<https://docs.ag-ui.com>): `POST /ag-ui/{assistant_id}` takes a
//! `RunAgentInput` and answers with AG-UI's events as server-sent events,
//! what CopilotKit's `HttpAgent` and AG-UI web clients speak.
//!
//! The run is an ordinary run of the server (`runner::start`): on the
//! server's thread for the client's `threadId` (that id when it is a UUID,
//! else a UUID derived from it, so `/threads/{id}/state` shows the same
//! conversation), one run at a time per thread, recorded and listed like
//! any other. Its input is the messages the thread does not have yet (by
//! id) and `state`'s fields; `tools` are offered to an agent's model as
//! tools the browser runs (`agent::ClientTools`): a call naming one ends
//! the run and goes back as `TOOL_CALL_*` events, and its result comes as
//! a `tool` message in the next run's `messages`. A run paused on an
//! interrupt ends with `RUN_FINISHED` whose `outcome` lists it (and a
//! CUSTOM `on_interrupt` event, as `@ag-ui/langgraph` sends one); the next
//! run answers it with a `resolved` `resume` entry (or
//! `forwardedProps.command.resume`). Behind custom auth the request is a
//! `threads` `create_run` for the authorize hooks: a thread outside the
//! caller's filter is answered 404, a new one is stamped with it.

mod input;
mod messages;
mod translate;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::app::{App, Assistant};
use crate::auth::Scope;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::runner::{start, Started};
use crate::runs::RunCreate;
use input::{problem, Refused, RunInput};
use translate::Translator;

/// The route.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new().route("/ag-ui/{assistant_id}", post(run))
}

/// The namespace a thread id that is not a UUID is turned into one in
/// (UUID v5), so the same AG-UI thread is always the same server thread.
const THREAD_NAMESPACE: Uuid = Uuid::from_u128(0x3f0c_52a1_8d4e_5b7a_9c61_0e2d_4a8b_7f15);

/// The server's thread for an AG-UI `threadId`.
pub(crate) fn server_thread_id(agui_thread_id: &str) -> String {
    match Uuid::parse_str(agui_thread_id) {
        Ok(id) => id.to_string(),
        Err(_) => Uuid::new_v5(&THREAD_NAMESPACE, agui_thread_id.as_bytes()).to_string(),
    }
}

/// `POST /ag-ui/{assistant_id}`: checks the input, starts the run and
/// answers with its AG-UI events.
async fn run(
    State(app): State<Arc<App>>,
    Path(assistant_id): Path<String>,
    scope: Scope,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, Response> {
    let assistant = &app.resolve(&assistant_id).await.map_err(reply)?;
    let input = input::read(&body).map_err(IntoResponse::into_response)?;
    let thread_id = server_thread_id(&input.thread_id);
    let created = ensure_thread(&app, &thread_id, &input.thread_id, &scope)
        .await
        .map_err(reply)?;
    let started = match start_run(&app, assistant, &input, &thread_id).await {
        Ok(started) => started,
        Err(answer) => {
            // A refused run leaves no thread behind.
            if created {
                let _ = app.store.delete_thread(&thread_id).await;
                app.drop_lock(&thread_id);
            }
            return Err(answer);
        }
    };
    tracing::info!(run_id = %started.run_id, %thread_id, agui_run_id = %input.run_id, "AG-UI run");
    Ok(respond(started, input))
}

/// Checks what the input asks of the thread and starts the run.
async fn start_run(
    app: &Arc<App>,
    assistant: &Assistant,
    input: &RunInput,
    thread_id: &str,
) -> Result<Started, Response> {
    // A thread this graph cannot read (another graph's) reads as empty
    // here: `start` refuses it (409).
    let (values, pending) = match assistant.graph.state(&*app.saver, thread_id).await {
        Ok(snapshot) => (snapshot.values, snapshot.interrupts),
        Err(_) => (Value::Null, Vec::new()),
    };
    check_resume(input, &pending).map_err(IntoResponse::into_response)?;
    let body = run_body(assistant, input_run(input, &values));
    let mut body: RunCreate =
        serde_json::from_value(body).map_err(|e| reply(ApiError::Internal(e.to_string())))?;
    // No browser tools (AG-UI clients send `tools: []`): the run gets its
    // assistant's `RunConfig` as its context instead.
    body.client_tools = input.tools.clone().filter(|t| !t.definitions().is_empty());
    start(app, thread_id.to_owned(), body, false, true)
        .await
        .map_err(reply)
}

fn reply(e: ApiError) -> Response {
    e.into_response()
}

/// Creates the thread at its first run, noting the client's id in its
/// metadata (`agui_thread_id`) beside what the caller's auth filter
/// stamps: `true` when this request made it. A thread outside the filter
/// (another user's) is answered as a missing one, as a run on it is.
async fn ensure_thread(
    app: &App,
    thread_id: &str,
    agui_id: &str,
    scope: &Scope,
) -> Result<bool, ApiError> {
    if app.store.thread(thread_id).await?.is_none() {
        let mut metadata = scope.stamp();
        metadata.insert("agui_thread_id".to_owned(), json!(agui_id));
        let row = crate::threads::new_thread(thread_id.to_owned(), metadata);
        if app.store.insert_thread(&row).await? {
            return Ok(true);
        }
    }
    // There already, or made by another request in the meantime (whose
    // caller may be someone else): the caller's to run on only if the
    // filter admits it.
    let thread = app.store.thread(thread_id).await?;
    if !thread.is_some_and(|t| scope.admits(&t.metadata)) {
        return Err(ApiError::NotFound(
            "Thread or assistant not found.".to_owned(),
        ));
    }
    Ok(false)
}

/// A resume needs the thread paused, on the interrupt it names.
fn check_resume(
    input: &RunInput,
    pending: &[agent_state::graph::Interrupt],
) -> Result<(), Refused> {
    let Some((named, _)) = &input.resume else {
        return Ok(());
    };
    let msg = match named {
        _ if pending.is_empty() => format!(
            "thread `{}` is not paused on an interrupt: there is nothing to resume",
            input.thread_id
        ),
        Some(id) if !pending.iter().any(|i| &i.id == id) => {
            format!(
                "no pending interrupt of thread `{}` has id `{id}`",
                input.thread_id
            )
        }
        _ => return Ok(()),
    };
    let loc = [json!("resume")];
    Err(Refused(vec![problem("value_error", &loc, msg)]))
}

/// The run's `input` and `command`: a resume value, or the messages the
/// thread does not have yet and `state`'s fields.
fn input_run(input: &RunInput, values: &Value) -> (Option<Value>, Option<Value>) {
    if let Some((_, value)) = &input.resume {
        return (None, Some(json!({"resume": value})));
    }
    let known: Vec<&str> = values
        .get("messages")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|m| m.get("id")?.as_str()).collect())
        .unwrap_or_default();
    let new: Vec<&Value> = input
        .messages
        .iter()
        .filter(|m| !known.contains(&m["id"].as_str().unwrap_or_default()))
        .collect();
    let mut run_input = input.state.clone();
    if !new.is_empty() {
        run_input.insert("messages".to_owned(), json!(new));
    }
    (Some(Value::Object(run_input)), None)
}

/// The run's body, as a client of `/threads/{id}/runs/stream` would send
/// it, streaming what AG-UI's events are made of.
fn run_body(assistant: &Assistant, (input, command): (Option<Value>, Option<Value>)) -> Value {
    json!({
        "assistant_id": assistant.id,
        "input": input,
        "command": command,
        "stream_mode": ["messages-tuple", "updates", "tasks", "values"],
    })
}

/// How long the stream stays silent before a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// The run's frames, translated as they come, as AG-UI's SSE stream
/// (`data: {event}` per event).
fn respond(started: Started, input: RunInput) -> Response {
    let (tx, rx) = mpsc::channel::<String>(64);
    let translator = Translator::new(input.thread_id, input.run_id);
    tokio::spawn(translate(started, translator, tx));
    let body = agent_state::futures::stream::unfold(rx, |mut rx| async move {
        match tokio::time::timeout(KEEP_ALIVE, rx.recv()).await {
            Ok(frame) => frame.map(|f| (Ok::<_, Infallible>(f), rx)),
            Err(_) => Some((Ok(": keep-alive\n\n".to_owned()), rx)),
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Reads the run's frames until it ends, sending each AG-UI event; stops
/// when the client leaves (the run goes on, as any run).
async fn translate(started: Started, mut t: Translator, tx: mpsc::Sender<String>) {
    let send = |events: Vec<Value>| {
        let tx = tx.clone();
        async move {
            for e in events {
                tx.send(format!("data: {e}\n\n")).await.map_err(drop)?;
            }
            Ok::<(), ()>(())
        }
    };
    if send(vec![t.started()]).await.is_err() {
        return;
    }
    if let Some(mut frames) = started.frames {
        while let Some(frame) = frames.recv().await {
            let Some((name, data)) = parse_frame(&frame) else {
                continue;
            };
            if send(t.event(name, data)).await.is_err() {
                return;
            }
        }
    }
    let mut done = started.done;
    let output = match done.wait_for(Option::is_some).await {
        Ok(output) => output.clone().unwrap_or_default(),
        Err(_) => json!({"__error__": {"error": "Cancelled", "message": "the run was dropped"}}),
    };
    let _ = send(t.finished(&output)).await;
}

/// A frame the server wrote (`event: NAME\r\ndata: JSON\r\n\r\n`) read
/// back: its name and data.
fn parse_frame(frame: &str) -> Option<(&str, Value)> {
    let mut name = None;
    let mut data = None;
    for line in frame.split("\r\n") {
        if let Some(n) = line.strip_prefix("event: ") {
            name = Some(n);
        } else if let Some(d) = line.strip_prefix("data: ") {
            data = serde_json::from_str(d).ok();
        }
    }
    Some((name?, data?))
}
