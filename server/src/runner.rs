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
    /// Its events as they come (what the thread protocol translates).
    pub log: Arc<RunLog>,
}

/// Checks the request, records the run and starts it. Every refusal
/// (unknown assistant, bad mode or input, busy thread) comes before
/// anything is stored. A `stateless` run creates its thread, deleted
/// once it ends unless its `on_completion` says `keep`.
pub(crate) async fn start(
    app: &Arc<App>,
    thread_id: String,
    mut body: RunCreate,
    stateless: bool,
    stream: bool,
) -> Result<Started, ApiError> {
    on_completion(&mut body, stateless)?;
    let (job, events, turn, _) = admit(app, &thread_id, &body, stateless, false).await?;
    Ok(spawn(job, events, turn, stream))
}

/// `on_completion`: read for a stateless run (`delete`, the default, or
/// `keep`: a 422 naming it otherwise) and written back, so a worker that
/// claims the queued run reads what to do with its thread; dropped for a
/// thread's run (its thread stays).
fn on_completion(body: &mut RunCreate, stateless: bool) -> Result<(), ApiError> {
    let chosen = match (stateless, body.on_completion.as_deref()) {
        (false, _) => None,
        (true, None | Some("delete")) => Some("delete"),
        (true, Some("keep")) => Some("keep"),
        (true, Some(other)) => {
            return Err(ApiError::Invalid(format!(
                "on_completion: `{other}` is not one of \"delete\", \"keep\""
            )))
        }
    };
    body.on_completion = chosen.map(str::to_owned);
    Ok(())
}

/// Whether a run's thread is deleted once the run ends: a stateless run's
/// whose `on_completion` is `delete` (as [`on_completion`] wrote it).
fn temporary(body: &RunCreate) -> bool {
    body.on_completion.as_deref() == Some("delete")
}

/// Every refusal a run's request can meet before it is stored, checked
/// without storing or starting anything: what a batch of stateless runs
/// checks of each before it creates any.
pub(crate) async fn check_stateless(app: &Arc<App>, body: &mut RunCreate) -> Result<(), ApiError> {
    on_completion(body, true)?;
    let strategy = body.multitask_strategy.as_deref().unwrap_or("enqueue");
    if !matches!(strategy, "enqueue" | "reject" | "interrupt" | "rollback") {
        return Err(bad_strategy(strategy));
    }
    let assistant = app.resolve(&body.assistant_id).await?;
    open_job(app, &assistant, &new_id(), &new_id(), body, true, 1).map(drop)
}

/// `POST /threads/{id}/runs` (and `POST /runs`, `stateless`): the run
/// recorded and started in the background (on PostgreSQL, queued for any
/// server's worker to run):
/// its record as stored (what the client is answered even when another
/// run's `rollback` deletes it a moment later).
pub(crate) async fn start_background(
    app: &Arc<App>,
    thread_id: String,
    mut body: RunCreate,
    stateless: bool,
) -> Result<RunRow, ApiError> {
    on_completion(&mut body, stateless)?;
    // A stateless run whose thread goes once it ends is run here, as a
    // streamed run is: its output is then at hand for a join here after
    // its thread (and record) are gone.
    #[cfg(feature = "postgres")]
    let queued = app.leases.session().is_some() && !temporary(&body);
    #[cfg(not(feature = "postgres"))]
    let queued = false;
    let (job, events, turn, row) = admit(app, &thread_id, &body, stateless, queued).await?;
    if !queued {
        spawn(job, events, turn, false);
    }
    Ok(row)
}

/// Checks the request and records the run: the run's task to spawn
/// (unless `queued` for the workers), its events and how it gets its
/// thread.
async fn admit(
    app: &Arc<App>,
    thread_id: &str,
    body: &RunCreate,
    stateless: bool,
    queued: bool,
) -> Result<(Job, BoxStream<'static, RunEvent>, Turn, RunRow), ApiError> {
    let assistant = &app.resolve(&body.assistant_id).await?;
    same_graph(app, thread_id, assistant).await?;
    let run_id = new_id();
    let temporary = temporary(body);
    let (job, events) = open_job(app, assistant, thread_id, &run_id, body, temporary, 1)?;
    let strategy = body.multitask_strategy.as_deref();
    let turn = take_turn(app, thread_id, strategy).await?;
    if stateless {
        app.store
            .insert_thread(&new_thread(thread_id.to_owned(), body.metadata.clone()))
            .await?;
    }
    stamp_thread(app, thread_id, assistant).await?;
    let (modes, subgraphs) = (modes::parse(&body.stream_mode)?.1, job_subgraphs(body)?);
    let row = run_row(
        assistant, thread_id, &run_id, body, modes, temporary, subgraphs,
    );
    record(app, &row, body, queued).await?;
    tracing::info!(%run_id, %thread_id, graph = %assistant.graph_id, "run started");
    let rollback = match strategy {
        Some("interrupt") => Some(false),
        Some("rollback") => Some(true),
        _ => None,
    };
    if let Some(rollback) = rollback {
        // The runs before it stop at their next event (and are deleted
        // with what they wrote, for `rollback`), here and on any other
        // server; queued ones never start.
        let stopped = crate::remote::stop_runs_before(app, thread_id, &run_id, rollback);
        if let Err(e) = stopped.await {
            // The run is recorded: it waits for the others to end instead.
            tracing::error!(%thread_id, error = %e, "could not stop the thread's runs");
        }
    }
    Ok((job, events, turn, row))
}

fn job_subgraphs(body: &RunCreate) -> Result<bool, ApiError> {
    modes::subgraphs(&body.stream_subgraphs)
}

/// Stores the run: on PostgreSQL in the queue (owned by this server, or
/// `queued` for any), where a `reject` run is refused (409) if another
/// holds the thread, checked and stored at once.
async fn record(app: &App, row: &RunRow, body: &RunCreate, queued: bool) -> Result<(), ApiError> {
    #[cfg(feature = "postgres")]
    if let (Some(db), Some(fleet)) = (app.store.pg(), app.fleet.as_ref()) {
        let sent = serde_json::to_value(body).map_err(|e| ApiError::Internal(e.to_string()))?;
        let owner = (!queued).then(|| app.store.owner());
        let reject = body.multitask_strategy.as_deref() == Some("reject");
        let stored =
            crate::queue::insert(db, row, &sent, owner, fleet.settings.lease, reject).await?;
        return match stored {
            true => Ok(()),
            false => Err(busy()),
        };
    }
    let _ = (body, queued);
    app.store.insert_run(row).await?;
    Ok(())
}

/// The run's task and its events, from its request: every refusal (bad
/// mode, input or control) before anything is stored.
fn open_job(
    app: &Arc<App>,
    assistant: &Assistant,
    thread_id: &str,
    run_id: &str,
    body: &RunCreate,
    temporary: bool,
    attempt: i64,
) -> Result<(Job, BoxStream<'static, RunEvent>), ApiError> {
    let (modes, _) = modes::parse(&body.stream_mode)?;
    let subgraphs = modes::subgraphs(&body.stream_subgraphs)?;
    let control = crate::control::read(body, assistant)?;
    let cancel_on_disconnect = on_disconnect(body.on_disconnect.as_deref())?;
    let mut meta = run_metadata(assistant, thread_id, run_id, &body.metadata);
    meta.insert("run_attempt".into(), json!(attempt));
    let spec = RunSpec {
        input: body.input.clone(),
        resume: body.command.as_ref().and_then(|c| c.resume.clone()),
        modes,
        subgraphs,
        meta,
        control,
        store: Arc::clone(&app.items),
        client_tools: body.client_tools.clone(),
        config: Some(run_config(assistant, thread_id, run_id, body)),
    };
    let saver = Arc::clone(&app.saver);
    let events = assistant
        .graph
        .start(saver, thread_id.to_owned(), spec)
        .map_err(ApiError::Invalid)?;
    let job = Job {
        app: Arc::clone(app),
        graph: Arc::clone(&assistant.graph),
        cancel: Arc::default(),
        rollback: Arc::default(),
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        temporary,
        cancel_on_disconnect,
        log: RunLog::for_run(app, run_id, thread_id),
        resumable: body.stream_resumable.unwrap_or(false),
        attempt,
        base: None,
        handover: Arc::default(),
    };
    Ok((job, events))
}

/// Runs a run a worker claimed from the queue, holding `slot` (room in
/// [`crate::Server::max_runs`]) until it ends. A run taken over from
/// another server resumes from the thread's last stored step when it
/// stored one (no new input: the steps it stored are not done again),
/// else starts as it was asked.
#[cfg(feature = "postgres")]
pub(crate) async fn run_claimed(
    app: &Arc<App>,
    claimed: crate::queue::Claimed,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    let (run_id, thread_id) = (claimed.run_id.clone(), claimed.thread_id.clone());
    match claimed_job(app, claimed).await {
        Ok((job, events)) => {
            tracing::info!(%run_id, %thread_id, attempt = job.attempt, "queued run claimed");
            let mut done = spawn(job, events, Turn::Claimed, false).done;
            tokio::spawn(async move {
                let _ = done.wait_for(Option::is_some).await;
                drop(slot);
            });
        }
        Err(error) => {
            tracing::error!(%run_id, %error, "a queued run could not start");
            // The thread first: a join that sees the run failed reads why.
            if let Ok(Some(mut thread)) = app.store.thread(&thread_id).await {
                thread.status = "error".to_owned();
                thread.error = Some(error);
                let _ = app.store.save_thread(&thread).await;
            }
            let _ = app.store.set_run_status(&run_id, "error").await;
        }
    }
}

/// The task of a claimed run, from the request it was queued with; else
/// the thread's error saying why it cannot run.
#[cfg(feature = "postgres")]
async fn claimed_job(
    app: &Arc<App>,
    claimed: crate::queue::Claimed,
) -> Result<(Job, BoxStream<'static, RunEvent>), Value> {
    use agent_state::checkpoint::CheckpointId;
    let failed = |message: String| json!({"error": "RunFailed", "message": message});
    // A run left by a server of a version before the queue has no
    // request stored: it cannot be resumed.
    let Ok(mut body) = serde_json::from_value::<RunCreate>(claimed.body) else {
        let message = "the server running this run stopped before the run ended";
        return Err(json!({"error": "ServerDied", "message": message}));
    };
    let head = app.saver.head(&claimed.thread_id).await;
    let head = head.map_err(|e| failed(e.to_string()))?;
    let head = head.map(|h| h.meta.id.0.to_string()).unwrap_or_default();
    let base = claimed.base.filter(|_| claimed.resume);
    if base.as_deref().is_some_and(|b| b != head) {
        // It stored steps: it goes on from the last, as asked.
        (body.input, body.command) = (None, None);
        (body.checkpoint, body.checkpoint_id) = (None, None);
    }
    let (thread_id, run_id) = (&claimed.thread_id, &claimed.run_id);
    let assistant = app.resolve(&body.assistant_id).await;
    let assistant = assistant.map_err(|e| failed(e.status_and_detail_text()))?;
    let temporary = temporary(&body);
    let opened = open_job(
        app,
        &assistant,
        thread_id,
        run_id,
        &body,
        temporary,
        claimed.attempt,
    );
    let (mut job, events) = opened.map_err(|e| failed(format!("{e:?}")))?;
    job.base = base.map(|b| b.parse().ok().map(CheckpointId));
    // A run taken over or handed over goes on after the last event the
    // server before stored (a new attempt from its own range of ids), so
    // a client following it misses nothing and sees nothing twice.
    let log = crate::log::RunLog::continuing(app, run_id, thread_id, claimed.attempt).await;
    job.log = log.map_err(|e| failed(e.to_string()))?;
    Ok((job, events))
}

fn busy() -> ApiError {
    ApiError::Conflict(
        "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
            .to_owned(),
    )
}

fn spawn(job: Job, events: BoxStream<'static, RunEvent>, turn: Turn, stream: bool) -> Started {
    let run_id = job.run_id.clone();
    // Written by hand to keep the official key order (`run_id` first).
    let meta = format!("{{\"run_id\":\"{run_id}\",\"attempt\":{}}}", job.attempt);
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
        handover: Arc::clone(&job.handover),
    };
    job.app.register_run(&run_id, running);
    let log = Arc::clone(&job.log);
    tokio::spawn(drive(job, events, turn, frames, done_tx));
    Started {
        run_id,
        frames: rx,
        done,
        log,
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
/// it, then take it). On PostgreSQL every run waits its turn in the runs
/// table, where `reject` is checked as the run is stored.
async fn take_turn(app: &App, thread_id: &str, strategy: Option<&str>) -> Result<Turn, ApiError> {
    let strategy = strategy.unwrap_or("enqueue");
    if !matches!(strategy, "enqueue" | "reject" | "interrupt" | "rollback") {
        return Err(bad_strategy(strategy));
    }
    #[cfg(feature = "postgres")]
    if app.leases.session().is_some() {
        return Ok(Turn::Claim);
    }
    match strategy {
        "reject" => app
            .leases
            .try_take(thread_id)
            .await?
            .map(Turn::Held)
            .ok_or_else(busy),
        // `interrupt` and `rollback`: the runs holding the thread are
        // stopped (and rolled back) once this one is recorded (`admit`),
        // then it takes the thread.
        _ => Ok(Turn::Wait),
    }
}

/// A 422 naming an unknown `multitask_strategy`.
fn bad_strategy(strategy: &str) -> ApiError {
    ApiError::Invalid(format!(
        "multitask_strategy: `{strategy}` is not one of \"reject\", \"rollback\", \"interrupt\", \"enqueue\""
    ))
}

/// The keys a run adds to its `messages` events' metadata.
fn run_metadata(
    a: &Assistant,
    thread_id: &str,
    run_id: &str,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    let mut meta = a.metadata.clone();
    meta.extend(extra.clone());
    meta.insert("graph_id".into(), json!(a.graph_id));
    meta.insert("assistant_id".into(), json!(a.id));
    meta.insert("thread_id".into(), json!(thread_id));
    meta.insert("run_id".into(), json!(run_id));
    meta
}

/// A run's `configurable` and `context`: the assistant's, with the run's
/// own over them key by key (the run's `context`, else its
/// `config.configurable`, stands for both), as the official server
/// merges them.
fn configured(a: &Assistant, body: &RunCreate) -> (Map<String, Value>, Map<String, Value>) {
    let object = |v: Option<&Value>| match v {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let given = object(body.context.as_ref());
    let own = match given.is_empty() {
        true => object(body.config.as_ref().and_then(|c| c.get("configurable"))),
        false => given,
    };
    let mut configurable = object(a.config.get("configurable"));
    configurable.extend(own.clone());
    let mut context = object(Some(&a.context));
    context.extend(own);
    (configurable, context)
}

/// What the run's nodes are given: [`configured`], with the run's ids in
/// `configurable`.
fn run_config(a: &Assistant, thread_id: &str, run_id: &str, body: &RunCreate) -> crate::RunConfig {
    let (mut configurable, context) = configured(a, body);
    let ids = [
        ("run_id", run_id),
        ("thread_id", thread_id),
        ("graph_id", &a.graph_id),
        ("assistant_id", &a.id),
    ];
    configurable.extend(ids.map(|(k, v)| (k.to_owned(), json!(v))));
    crate::RunConfig::new(configurable, context)
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
    let mut metadata = a.metadata.clone();
    metadata.extend(body.metadata.clone());
    metadata.insert("graph_id".into(), json!(a.graph_id));
    metadata.insert("assistant_id".into(), json!(a.id));
    let crate::RunConfig {
        configurable,
        context,
        ..
    } = run_config(a, thread_id, run_id, body);
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
        "config": {"configurable": configurable}, "context": context, "stream_mode": stream_mode,
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
