//! A run's life: checked and recorded before the response starts, then
//! driven by a task of its own (so it finishes, and its thread is
//! updated, even when the client leaves), its events framed for the
//! client as they come.

use std::sync::Arc;

use agent_state::futures::stream::{BoxStream, StreamExt};
use agent_state::graph::Interrupt;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot, Mutex, OwnedMutexGuard};

use crate::app::{App, Assistant};
use crate::error::ApiError;
use crate::events::{state_interrupts, with_interrupts};
use crate::ids::{new_id, now};
use crate::modes;
use crate::runs::RunCreate;
use crate::served::{RunEvent, RunSpec};
use crate::sse::frame;
use crate::store::RunRow;
use crate::threads::new_thread;

/// A run that started: its id, its frames (a streamed run) and its final
/// output (what `runs/wait` answers).
pub(crate) struct Started {
    pub run_id: String,
    pub frames: Option<mpsc::Receiver<String>>,
    pub done: oneshot::Receiver<Value>,
}

/// How the run gets its thread: it holds it already (`reject` found it
/// free), or waits its turn (`enqueue`).
enum Turn {
    Held(OwnedMutexGuard<()>),
    Wait(Arc<Mutex<()>>),
}

/// What the run's task needs to know.
struct Job {
    app: Arc<App>,
    run_id: String,
    thread_id: String,
    temporary: bool,
}

/// Checks the request, records the run and starts it. Every refusal
/// (unknown assistant, bad mode or input, busy thread) comes before
/// anything is stored.
pub(crate) fn start(
    app: &Arc<App>,
    thread_id: String,
    body: RunCreate,
    temporary: bool,
    stream: bool,
) -> Result<Started, ApiError> {
    let assistant = app.run_assistant(&body.assistant_id)?;
    let (modes, mode_names) = modes::parse(&body.stream_mode)?;
    refuse_unserved(&body)?;
    let turn = take_turn(app, &thread_id, body.multitask_strategy.as_deref())?;
    let run_id = new_id();
    let spec = RunSpec {
        input: body.input.clone(),
        resume: body.command.as_ref().and_then(|c| c.resume.clone()),
        modes,
        meta: run_metadata(assistant, &thread_id, &run_id, &body.metadata),
    };
    let saver = Arc::clone(&app.saver);
    let events = assistant
        .graph
        .start(saver, thread_id.clone(), spec)
        .map_err(ApiError::Invalid)?;
    if temporary {
        app.store
            .insert_thread(&new_thread(thread_id.clone(), Map::new()))?;
    }
    stamp_thread(app, &thread_id, assistant)?;
    let row = run_row(assistant, &thread_id, &run_id, &body, mode_names, temporary);
    app.store.insert_run(&row)?;
    tracing::info!(%run_id, %thread_id, graph = %assistant.graph_id, "run started");
    Ok(spawn(
        app, run_id, thread_id, temporary, events, turn, stream,
    ))
}

fn spawn(
    app: &Arc<App>,
    run_id: String,
    thread_id: String,
    temporary: bool,
    events: BoxStream<'static, RunEvent>,
    turn: Turn,
    stream: bool,
) -> Started {
    let (frames, rx) = if stream {
        let (tx, rx) = mpsc::channel(64);
        // Written by hand to keep the official key order (`run_id` first).
        let meta = format!("{{\"run_id\":\"{run_id}\",\"attempt\":1}}");
        let first = format!("event: metadata\r\ndata: {meta}\r\n\r\n");
        // The channel is new and has room: the first frame always fits.
        let _ = tx.try_send(first);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let (done_tx, done) = oneshot::channel();
    let job = Job {
        app: Arc::clone(app),
        run_id: run_id.clone(),
        thread_id,
        temporary,
    };
    tokio::spawn(drive(job, events, turn, frames, done_tx));
    Started {
        run_id,
        frames: rx,
        done,
    }
}

/// Refuses what a request asks and this server does not do yet, rather
/// than ignoring it.
fn refuse_unserved(body: &RunCreate) -> Result<(), ApiError> {
    let unserved = |what: &str| {
        Err(ApiError::Invalid(format!(
            "{what} is not supported by this server yet"
        )))
    };
    if let Some(c) = &body.command {
        if c.update.as_ref().is_some_and(|v| !v.is_null()) {
            return unserved("command.update");
        }
        if c.goto.as_ref().is_some_and(|v| !v.is_null()) {
            return unserved("command.goto");
        }
    }
    for (name, value) in [
        ("interrupt_before", &body.interrupt_before),
        ("interrupt_after", &body.interrupt_after),
        ("checkpoint_id", &body.checkpoint_id),
    ] {
        if value.as_ref().is_some_and(|v| !v.is_null()) {
            return unserved(name);
        }
    }
    Ok(())
}

/// The thread for this run under `multitask_strategy`: `reject` (409 when
/// another run holds it) or `enqueue` (the default: wait for it).
fn take_turn(app: &App, thread_id: &str, strategy: Option<&str>) -> Result<Turn, ApiError> {
    let lock = app.thread_lock(thread_id);
    match strategy.unwrap_or("enqueue") {
        "enqueue" => Ok(Turn::Wait(lock)),
        "reject" => lock.try_lock_owned().map(Turn::Held).map_err(|_| {
            ApiError::Conflict(
                "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
                    .to_owned(),
            )
        }),
        "interrupt" | "rollback" => Err(ApiError::Invalid(format!(
            "multitask_strategy: `{}` is not supported by this server yet",
            strategy.unwrap_or_default()
        ))),
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
fn stamp_thread(app: &App, thread_id: &str, a: &Assistant) -> Result<(), ApiError> {
    let Some(mut thread) = app.store.thread(thread_id)? else {
        return Err(ApiError::no_thread(thread_id));
    };
    let meta = &mut thread.metadata;
    meta.entry("graph_id").or_insert_with(|| json!(a.graph_id));
    meta.entry("assistant_id").or_insert_with(|| json!(a.id));
    thread.status = "busy".to_owned();
    thread.updated_at = now();
    app.store.save_thread(&thread)?;
    Ok(())
}

fn run_row(
    a: &Assistant,
    thread_id: &str,
    run_id: &str,
    body: &RunCreate,
    stream_mode: Vec<String>,
    temporary: bool,
) -> RunRow {
    let mut metadata = body.metadata.clone();
    metadata.insert("graph_id".into(), json!(a.graph_id));
    metadata.insert("assistant_id".into(), json!(a.id));
    let configurable = json!({"run_id": run_id, "thread_id": thread_id, "graph_id": a.graph_id, "assistant_id": a.id});
    let kwargs = json!({
        "input": body.input, "command": body.command.as_ref().map(|c| json!({"resume": c.resume})),
        "config": {"configurable": configurable}, "context": {}, "stream_mode": stream_mode,
        "interrupt_before": null, "interrupt_after": null, "temporary": temporary,
        "subgraphs": false, "resumable": false, "durability": "async",
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

/// The run's task: waits its turn, runs, frames each event for the
/// client while it listens, and records how the run ended.
async fn drive(
    job: Job,
    mut events: BoxStream<'static, RunEvent>,
    turn: Turn,
    mut frames: Option<mpsc::Sender<String>>,
    done: oneshot::Sender<Value>,
) {
    let _turn = match turn {
        Turn::Held(guard) => guard,
        Turn::Wait(lock) => lock.lock_owned().await,
    };
    job.record_status("running");
    let mut output =
        json!({"__error__": {"error": "Cancelled", "message": "the run ended without a result"}});
    while let Some(event) = events.next().await {
        let data = match event {
            RunEvent::Event(name, data) => frame(name, &data),
            RunEvent::Done {
                output: state,
                next,
                interrupts,
            } => {
                output = with_interrupts(state.clone(), &interrupts);
                job.finished(state, &next, &interrupts);
                continue;
            }
            RunEvent::Failed(error) => {
                job.failed(&error);
                output = json!({ "__error__": error });
                frame("error", &error)
            }
        };
        // A client that left no longer gets frames; the run goes on.
        if let Some(tx) = &frames {
            if tx.send(data).await.is_err() {
                frames = None;
            }
        }
    }
    job.cleanup().await;
    let _ = done.send(output);
}

impl Job {
    fn record_status(&self, status: &str) {
        if let Err(e) = self.app.store.set_run_status(&self.run_id, status) {
            tracing::error!(run_id = %self.run_id, error = %e, "could not record the run's status");
        }
    }

    /// The run reached its end or paused: the thread holds its output.
    fn finished(&self, values: Value, next: &[String], interrupts: &[Interrupt]) {
        let mut by_task = Map::new();
        for i in interrupts {
            let list = by_task.entry(i.node.clone()).or_insert_with(|| json!([]));
            if let Value::Array(list) = list {
                list.extend(
                    state_interrupts(std::slice::from_ref(i))
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
        }
        let paused = !interrupts.is_empty() || !next.is_empty();
        let status = if paused { "interrupted" } else { "idle" };
        self.update_thread(status, Some(values), None, Value::Object(by_task));
        self.record_status("success");
        tracing::info!(run_id = %self.run_id, status, "run finished");
    }

    /// The run failed: the thread keeps its last state and shows the error.
    fn failed(&self, error: &Value) {
        self.update_thread("error", None, Some(error.clone()), json!({}));
        self.record_status("error");
        tracing::warn!(run_id = %self.run_id, %error, "run failed");
    }

    fn update_thread(
        &self,
        status: &str,
        values: Option<Value>,
        error: Option<Value>,
        interrupts: Value,
    ) {
        let store = &self.app.store;
        let Ok(Some(mut thread)) = store.thread(&self.thread_id) else {
            return;
        };
        let stamp = now();
        if values.is_some() {
            thread.values = values;
        }
        thread.status = status.to_owned();
        thread.error = error;
        thread.interrupts = interrupts;
        thread.state_updated_at = stamp.clone();
        thread.updated_at = stamp;
        if let Err(e) = store.save_thread(&thread) {
            tracing::error!(thread_id = %self.thread_id, error = %e, "could not record the thread");
        }
    }

    /// A stateless run's thread goes once the run ends.
    async fn cleanup(&self) {
        if !self.temporary {
            return;
        }
        let _ = self.app.store.delete_thread(&self.thread_id);
        if let Err(e) = self.app.saver.delete_thread(&self.thread_id).await {
            tracing::error!(thread_id = %self.thread_id, error = %e, "could not delete a stateless run's thread");
        }
        self.app.drop_lock(&self.thread_id);
    }
}
