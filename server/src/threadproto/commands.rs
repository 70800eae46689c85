//! `POST /threads/{id}/commands`: one protocol command, one answer
//! (`{"type": "success", "id", "result", "meta"}` or `{"type": "error",
//! "id", "error", "message"}`), as the official server answers them over
//! HTTP, where no session outlives the request: `run.start` and
//! `input.respond` start a run (through the same runner as `/runs`);
//! the subscription and tree commands find no run bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::{follow, respond};
use crate::app::App;
use crate::error::ApiError;
use crate::ids::{is_uuid, new_id};
use crate::runs::RunCreate;
use crate::threads::new_thread;

/// The commands this server knows; any other is `unknown_command`.
const KNOWN: [&str; 6] = [
    "run.start",
    "input.respond",
    "agent.getTree",
    "subscription.subscribe",
    "subscription.unsubscribe",
    "subscription.reconnect",
];

/// The `multitaskStrategy` values `run.start` honours (others: `enqueue`).
const STRATEGIES: [&str; 4] = ["reject", "rollback", "interrupt", "enqueue"];

/// The modes a protocol run streams from the runtime: `values` and the
/// message chunks go on the wire; `updates` tell when a subgraph's node
/// is done and carry interrupts.
const MODES: [&str; 3] = ["values", "updates", "messages-tuple"];

/// How long `input.respond` waits for a busy thread's interrupts to be
/// stored (the official server's settle time).
const SETTLE: Duration = Duration::from_secs(5);

/// A refusal: `{"type": "error", ...}`.
pub(crate) fn error(id: &Value, code: &str, message: impl Into<String>) -> Value {
    json!({"type": "error", "id": id, "error": code, "message": message.into()})
}

fn success(id: &Value, result: Value) -> Value {
    json!({"type": "success", "id": id, "result": result, "meta": {"applied_through_seq": 0}})
}

/// Answers `command` (an object with an integer `id` and a `method`).
pub(crate) async fn handle(app: &Arc<App>, thread_id: &str, command: &Map<String, Value>) -> Value {
    let id = command.get("id").cloned().unwrap_or(Value::Null);
    let method = command
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let empty = Map::new();
    let params = command
        .get("params")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    match method {
        _ if !KNOWN.contains(&method) => error(
            &id,
            "unknown_command",
            format!("Unknown protocol command: {method}"),
        ),
        "run.start" => run_start(app, thread_id, &id, params).await,
        "input.respond" => input_respond(app, thread_id, &id, params).await,
        "subscription.subscribe" => subscribe(&id, params),
        "subscription.unsubscribe" => match params.get("subscription_id").and_then(Value::as_str) {
            None => error(
                &id,
                "invalid_argument",
                "subscription.unsubscribe requires a subscription_id.",
            ),
            Some(sub) => error(
                &id,
                "no_such_subscription",
                format!("Unknown subscription: {sub}"),
            ),
        },
        _ => error(&id, "no_such_run", "No active run is bound to this thread."),
    }
}

/// Over HTTP a subscription lives in no session: it is checked and
/// acknowledged (the stream's body is what filters events).
fn subscribe(id: &Value, params: &Map<String, Value>) -> Value {
    let channels = params.get("channels").and_then(Value::as_array);
    let Some(channels) = channels.filter(|c| !c.is_empty()) else {
        return error(
            id,
            "invalid_argument",
            "subscription.subscribe requires a non-empty channels array.",
        );
    };
    if !channels
        .iter()
        .all(|c| c.as_str().is_some_and(super::filter::is_channel))
    {
        return error(
            id,
            "invalid_argument",
            "subscription.subscribe received an unsupported channel.",
        );
    }
    success(
        id,
        json!({"subscription_id": new_id(), "replayed_events": 0}),
    )
}

async fn run_start(
    app: &Arc<App>,
    thread_id: &str,
    id: &Value,
    params: &Map<String, Value>,
) -> Value {
    let assistant_id = params
        .get("assistant_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if assistant_id.is_empty() {
        return error(
            id,
            "invalid_argument",
            "run.start requires an assistant_id.",
        );
    }
    if let Err(message) = checkpoint_id(params).and_then(|_| tracer(params)) {
        return error(id, "invalid_argument", message);
    }
    match start(app, thread_id, assistant_id, params, None).await {
        Ok(run_id) => success(id, json!({"run_id": run_id})),
        Err(e) => error(id, "unknown_error", e.status_and_detail_text()),
    }
}

/// Records and starts a run on the thread (created if new): a resume of
/// its pending interrupt with `resume`, or with `run.start`'s `input` when
/// the thread waits on one; its events go on the thread's tape.
async fn start(
    app: &Arc<App>,
    thread_id: &str,
    assistant_id: &str,
    params: &Map<String, Value>,
    mut resume: Option<Value>,
) -> Result<String, ApiError> {
    if !is_uuid(thread_id) {
        return Err(ApiError::not_uuid("thread"));
    }
    // The assistant is checked before a new thread is stored: a refused
    // run leaves nothing behind.
    let graph_name = app.resolve(assistant_id).await?.graph_id;
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    // An input may answer an interrupt a run is storing right now: as the
    // official server, wait for a busy thread to settle first.
    let thread = match resume.is_none() && !input.is_null() {
        true => settled(app, thread_id).await?,
        false => app.store.thread(thread_id).await?,
    };
    let mut created = false;
    match thread {
        None => {
            let thread = new_thread(thread_id.to_owned(), Map::new());
            created = app.store.insert_thread(&thread).await?;
        }
        Some(t) if resume.is_none() && !input.is_null() && pending(&t.interrupts) => {
            resume = Some(input.clone());
        }
        Some(_) => {}
    }
    let body = run_body(assistant_id, params, input, resume)?;
    let started = match crate::runner::start(app, thread_id.to_owned(), body, false, false).await {
        Ok(started) => started,
        Err(e) => {
            // A refused run leaves no thread it created behind.
            if created {
                let _ = app.store.delete_thread(thread_id).await;
            }
            return Err(e);
        }
    };
    follow(app, thread_id, &started, &graph_name);
    Ok(started.run_id)
}

/// The run as `/runs` takes it: its input or resume, the modes the
/// protocol is made from, subgraphs streamed, its metadata, strategy and
/// checkpoint.
fn run_body(
    assistant_id: &str,
    params: &Map<String, Value>,
    input: Value,
    resume: Option<Value>,
) -> Result<RunCreate, ApiError> {
    let strategy = params.get("multitaskStrategy").and_then(Value::as_str);
    let strategy = strategy
        .filter(|s| STRATEGIES.contains(s))
        .unwrap_or("enqueue");
    let checkpoint = checkpoint_id(params).ok().flatten();
    let body = json!({
        "assistant_id": assistant_id,
        "input": if resume.is_some() { Value::Null } else { input },
        "command": resume.map(|r| json!({"resume": r})),
        "stream_mode": MODES,
        "stream_subgraphs": true,
        "stream_resumable": true,
        "metadata": params.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or(json!({})),
        "multitask_strategy": strategy,
        "checkpoint_id": checkpoint,
    });
    serde_json::from_value(body).map_err(|e| ApiError::Invalid(e.to_string()))
}

/// Whether a thread's stored interrupts (by node) hold any.
fn pending(interrupts: &Value) -> bool {
    interrupts.as_object().is_some_and(|m| {
        m.values()
            .any(|l| l.as_array().is_some_and(|l| !l.is_empty()))
    })
}

/// The ids of a thread's stored interrupts.
fn interrupt_ids(interrupts: &Value) -> Vec<String> {
    let lists = interrupts.as_object().into_iter().flat_map(|m| m.values());
    let entries = lists.filter_map(Value::as_array).flatten();
    entries
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect()
}

async fn input_respond(
    app: &Arc<App>,
    thread_id: &str,
    id: &Value,
    params: &Map<String, Value>,
) -> Value {
    let answers = match respond::entries(params) {
        Ok(answers) => answers,
        Err((code, message)) => return error(id, code, message),
    };
    // As `command.resume` with them on `/runs`: refused, not ignored.
    if ["update", "goto"]
        .iter()
        .any(|k| params.get(*k).is_some_and(|v| !v.is_null()))
    {
        let message = "input.respond: `update` or `goto` with a resume is not supported by this server yet; send them as a run of their own";
        return error(id, "unsupported", message.to_owned());
    }
    let thread = match settled(app, thread_id).await {
        Ok(thread) => thread,
        Err(e) => return error(id, "unknown_error", e.status_and_detail_text()),
    };
    if let Some(t) = &thread {
        let pending = interrupt_ids(&t.interrupts);
        if let Some((unknown, _)) = answers.iter().find(|(i, _)| !pending.contains(i)) {
            let message = format!("Unknown or already-consumed interrupt: {unknown}");
            return error(id, "no_such_interrupt", message);
        }
    }
    let assistant = thread
        .as_ref()
        .and_then(|t| t.metadata.get("assistant_id")?.as_str().map(str::to_owned));
    let Some(assistant) = assistant else {
        return error(
            id,
            "no_such_run",
            "No interrupted run is bound to this thread.",
        );
    };
    let mut run = params.clone();
    run.remove("input");
    // One resume map, `{interrupt_id: response}`: the run answers each.
    let response = Value::Object(answers.into_iter().collect());
    match start(app, thread_id, &assistant, &run, Some(response)).await {
        Ok(_) => success(id, json!({})),
        Err(e) => error(id, "unknown_error", e.status_and_detail_text()),
    }
}

/// The thread, once a run holding it has stored its interrupts (or
/// [`SETTLE`] passed); `None` when there is no such thread.
async fn settled(app: &App, thread_id: &str) -> Result<Option<crate::store::ThreadRow>, ApiError> {
    let until = Instant::now() + SETTLE;
    loop {
        let thread = app.store.thread(thread_id).await?;
        let waiting = thread
            .as_ref()
            .is_some_and(|t| t.status == "busy" && !pending(&t.interrupts));
        if !waiting || Instant::now() >= until {
            return Ok(thread);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `config.configurable.checkpoint_id`: absent, or a UUID.
fn checkpoint_id(params: &Map<String, Value>) -> Result<Option<String>, String> {
    let value = &params.get("config").cloned().unwrap_or_default()["configurable"]["checkpoint_id"];
    match value {
        Value::Null => Ok(None),
        Value::String(s) if !s.trim().is_empty() => match is_uuid(s) {
            true => Ok(Some(s.clone())),
            false => Err(format!("Invalid config.configurable.checkpoint_id: '{s}'.")),
        },
        _ => Err("config.configurable.checkpoint_id must be a non-empty string.".to_owned()),
    }
}

/// `langsmith_tracer`: absent, or `{project_name?, example_id?}` strings.
fn tracer(params: &Map<String, Value>) -> Result<(), String> {
    let Some(value) = params.get("langsmith_tracer").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Some(map) = value.as_object() else {
        return Err("langsmith_tracer must be an object.".to_owned());
    };
    let mut unknown: Vec<&String> = map
        .keys()
        .filter(|k| !matches!(k.as_str(), "project_name" | "example_id"))
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        let listed: Vec<String> = unknown.iter().map(|k| format!("'{k}'")).collect();
        return Err(format!(
            "langsmith_tracer has unsupported fields: [{}].",
            listed.join(", ")
        ));
    }
    match map.iter().find(|(_, v)| !v.is_string()) {
        Some((key, _)) => Err(format!("langsmith_tracer.{key} must be a string.")),
        None => Ok(()),
    }
}
