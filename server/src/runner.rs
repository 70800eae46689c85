//! A run's life: checked and recorded before the response starts, then
//! driven by a task of its own (so it finishes, and its thread is
//! updated, even when the client leaves), its events framed for the
//! client as they come.

use std::sync::Arc;

use agent_state::futures::stream::BoxStream;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch};

use crate::app::{App, Assistant, Outcome, Running};
use crate::error::ApiError;
use crate::ids::{new_id, now};
use crate::log::RunLog;
use crate::modes;
use crate::runs::RunCreate;
use crate::served::{RunEvent, RunSpec};
use crate::store::RunRow;
use crate::task::{drive, Job, Turn};
use crate::threads::new_thread;

/// A run that started: its id, its frames (a streamed run) and its final
/// output (what `runs/wait` answers).
pub(crate) struct Started {
    pub run_id: String,
    pub frames: Option<mpsc::Receiver<String>>,
    pub done: Outcome,
}

/// Checks the request, records the run and starts it. Every refusal
/// (unknown assistant, bad mode or input, busy thread) comes before
/// anything is stored.
pub(crate) async fn start(
    app: &Arc<App>,
    thread_id: String,
    body: RunCreate,
    temporary: bool,
    stream: bool,
) -> Result<Started, ApiError> {
    let assistant = app.run_assistant(&body.assistant_id)?;
    same_graph(app, &thread_id, assistant).await?;
    let (modes, mode_names) = modes::parse(&body.stream_mode)?;
    let subgraphs = modes::subgraphs(&body.stream_subgraphs)?;
    let control = crate::control::read(&body, assistant)?;
    let cancel_on_disconnect = on_disconnect(body.on_disconnect.as_deref())?;
    let resumable = body.stream_resumable.unwrap_or(false);
    let turn = take_turn(app, &thread_id, body.multitask_strategy.as_deref()).await?;
    let run_id = new_id();
    let spec = RunSpec {
        input: body.input.clone(),
        resume: body.command.as_ref().and_then(|c| c.resume.clone()),
        modes,
        subgraphs,
        meta: run_metadata(assistant, &thread_id, &run_id, &body.metadata),
        control,
        store: Arc::clone(&app.items),
        client_tools: body.client_tools.clone(),
    };
    let saver = Arc::clone(&app.saver);
    let events = assistant
        .graph
        .start(saver, thread_id.clone(), spec)
        .map_err(ApiError::Invalid)?;
    if temporary {
        app.store
            .insert_thread(&new_thread(thread_id.clone(), body.metadata.clone()))
            .await?;
    }
    stamp_thread(app, &thread_id, assistant).await?;
    let row = run_row(
        assistant, &thread_id, &run_id, &body, mode_names, temporary, subgraphs,
    );
    app.store.insert_run(&row).await?;
    tracing::info!(%run_id, %thread_id, graph = %assistant.graph_id, "run started");
    let rollback = match body.multitask_strategy.as_deref() {
        Some("interrupt") => Some(false),
        Some("rollback") => Some(true),
        _ => None,
    };
    if let Some(rollback) = rollback {
        // The runs holding the thread stop at their next event (and are
        // deleted with what they wrote, for `rollback`), here and on any
        // other server (which stops them without a rollback).
        app.cancel_thread_runs(&thread_id, rollback);
        if let Err(e) = crate::remote::cancel_elsewhere(app, &thread_id, None).await {
            // The run is recorded: it waits for the others to end instead.
            tracing::error!(%thread_id, error = %e, "could not ask other servers to stop the thread's runs");
        }
    }
    let log = RunLog::for_run(app, &run_id, &thread_id);
    let job = Job {
        app: Arc::clone(app),
        graph: Arc::clone(&assistant.graph),
        cancel: Arc::default(),
        rollback: Arc::default(),
        run_id,
        thread_id,
        temporary,
        cancel_on_disconnect,
        log,
        resumable,
    };
    Ok(spawn(job, events, turn, stream))
}

fn spawn(job: Job, events: BoxStream<'static, RunEvent>, turn: Turn, stream: bool) -> Started {
    let run_id = job.run_id.clone();
    // Written by hand to keep the official key order (`run_id` first).
    let meta = format!("{{\"run_id\":\"{run_id}\",\"attempt\":1}}");
    let first = job.emit("metadata", meta);
    let (frames, rx) = if stream {
        let (tx, rx) = mpsc::channel(64);
        // The channel is new and has room: the first frame always fits.
        let _ = tx.try_send(first);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let (done_tx, done) = watch::channel(None);
    let running = Running {
        thread_id: job.thread_id.clone(),
        outcome: done.clone(),
        cancel: Arc::clone(&job.cancel),
        rollback: Arc::clone(&job.rollback),
        log: Arc::clone(&job.log),
    };
    job.app.register_run(&run_id, running);
    tokio::spawn(drive(job, events, turn, frames, done_tx));
    Started {
        run_id,
        frames: rx,
        done,
    }
}

/// A thread that ran holds the typed state of its graph: a run of another
/// graph is refused (409) rather than failing on a state it cannot read.
/// The official server, whose states are dicts, lets it run.
async fn same_graph(app: &App, thread_id: &str, a: &Assistant) -> Result<(), ApiError> {
    let Some(thread) = app.store.thread(thread_id).await? else {
        return Ok(());
    };
    let ran = thread.values.is_some();
    match thread.metadata.get("graph_id").and_then(Value::as_str) {
        Some(graph) if ran && graph != a.graph_id => Err(ApiError::Conflict(format!(
            "Thread {thread_id} holds the state of graph `{graph}`: it cannot run graph `{}`",
            a.graph_id
        ))),
        _ => Ok(()),
    }
}

/// Whether the run stops when its client leaves: `on_disconnect`
/// `"cancel"`, or `"continue"` (the default).
fn on_disconnect(value: Option<&str>) -> Result<bool, ApiError> {
    match value.unwrap_or("continue") {
        "continue" => Ok(false),
        "cancel" => Ok(true),
        other => Err(ApiError::Invalid(format!(
            "on_disconnect: `{other}` is not one of \"cancel\", \"continue\""
        ))),
    }
}

/// The thread for this run under `multitask_strategy`: `reject` (409 when
/// another run holds it, here or on another server), `enqueue` (the
/// default: wait for it), `interrupt` or `rollback` (stop the runs holding
/// it, then take it).
async fn take_turn(app: &App, thread_id: &str, strategy: Option<&str>) -> Result<Turn, ApiError> {
    match strategy.unwrap_or("enqueue") {
        "enqueue" => Ok(Turn::Wait),
        "reject" => app.leases.try_take(thread_id).await?.map(Turn::Held).ok_or_else(|| {
            ApiError::Conflict(
                "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
                    .to_owned(),
            )
        }),
        // The runs holding the thread are stopped (and rolled back) once
        // this one is recorded (`start`), then it takes the thread.
        "interrupt" | "rollback" => Ok(Turn::Wait),
        other => Err(ApiError::Invalid(format!(
            "multitask_strategy: `{other}` is not one of \"reject\", \"rollback\", \"interrupt\", \"enqueue\""
        ))),
    }
}

/// The keys a run adds to its `messages` events' metadata.
fn run_metadata(
    a: &Assistant,
    thread_id: &str,
    run_id: &str,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    let mut meta = extra.clone();
    meta.insert("created_by".into(), json!("system"));
    meta.insert("graph_id".into(), json!(a.graph_id));
    meta.insert("assistant_id".into(), json!(a.id));
    meta.insert("run_attempt".into(), json!(1));
    meta.insert("thread_id".into(), json!(thread_id));
    meta.insert("run_id".into(), json!(run_id));
    meta
}

/// Marks the thread busy, and stamps `graph_id` and `assistant_id` into
/// its metadata at its first run (thread lists filter on them).
async fn stamp_thread(app: &App, thread_id: &str, a: &Assistant) -> Result<(), ApiError> {
    let Some(mut thread) = app.store.thread(thread_id).await? else {
        return Err(ApiError::no_thread(thread_id));
    };
    let meta = &mut thread.metadata;
    meta.entry("graph_id").or_insert_with(|| json!(a.graph_id));
    meta.entry("assistant_id").or_insert_with(|| json!(a.id));
    thread.status = "busy".to_owned();
    thread.updated_at = now();
    app.store.save_thread(&thread).await?;
    Ok(())
}

fn run_row(
    a: &Assistant,
    thread_id: &str,
    run_id: &str,
    body: &RunCreate,
    stream_mode: Vec<String>,
    temporary: bool,
    subgraphs: bool,
) -> RunRow {
    let mut metadata = body.metadata.clone();
    metadata.insert("graph_id".into(), json!(a.graph_id));
    metadata.insert("assistant_id".into(), json!(a.id));
    let configurable = json!({"run_id": run_id, "thread_id": thread_id, "graph_id": a.graph_id, "assistant_id": a.id});
    // The command as it was sent: the keys it had.
    let command = body.command.as_ref().map(|c| {
        let keys = [
            ("resume", &c.resume),
            ("update", &c.update),
            ("goto", &c.goto),
        ];
        let sent = keys
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_owned(), v.clone()?)));
        Value::Object(sent.collect())
    });
    let durability = body.durability.clone().filter(|d| !d.is_null());
    let kwargs = json!({
        "input": body.input, "command": command,
        "config": {"configurable": configurable}, "context": {}, "stream_mode": stream_mode,
        "interrupt_before": body.interrupt_before, "interrupt_after": body.interrupt_after,
        "temporary": temporary, "subgraphs": subgraphs, "resumable": false,
        "durability": durability.unwrap_or_else(|| json!("async")),
    });
    let stamp = now();
    RunRow {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        assistant_id: a.id.clone(),
        metadata: Value::Object(metadata),
        status: "pending".to_owned(),
        kwargs,
        multitask_strategy: body.multitask_strategy.clone().unwrap_or("enqueue".into()),
        created_at: stamp.clone(),
        updated_at: stamp,
    }
}
