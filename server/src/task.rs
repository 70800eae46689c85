//! A run's task: waits for its thread, drives the run, frames each event
//! for the client while it listens, and records how the run ended.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_state::checkpoint::CheckpointId;

use agent_state::futures::stream::{BoxStream, StreamExt};
use agent_state::graph::Interrupt;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch, Notify};

use crate::app::App;
use crate::events::{state_interrupts, with_interrupts};
use crate::ids::now;
use crate::lease::Lease;
use crate::log::RunLog;
use crate::served::{RunEvent, ServedGraph};
use crate::sse::{frame, frame_with_id};

/// How the run gets its thread: it holds it already (`reject` found it
/// free), or waits its turn (`enqueue`); on PostgreSQL, it waits for its
/// turn in the runs table (`Claim`, see [`crate::queue`]), or a worker
/// claimed it there already (`Claimed`).
pub(crate) enum Turn {
    Held(Lease),
    Wait,
    #[cfg(feature = "postgres")]
    Claim,
    #[cfg(feature = "postgres")]
    Claimed,
}

/// Why a run did not get its thread.
enum NoTurn {
    /// It was cancelled while it waited.
    Cancelled,
    /// It is no longer this server's to run (another took it over).
    #[cfg(feature = "postgres")]
    Gone,
    /// The database failed: the run fails with this error.
    Failed(Value),
}

/// What the run's task needs to know.
pub(crate) struct Job {
    pub app: Arc<App>,
    pub graph: Arc<dyn ServedGraph>,
    pub run_id: String,
    pub thread_id: String,
    pub temporary: bool,
    /// Whether the run stops when its streaming client leaves
    /// (`on_disconnect: "cancel"`).
    pub cancel_on_disconnect: bool,
    /// Told when the run is to stop (a cancel, or a run of the
    /// `interrupt` strategy); a permit is kept if it is not listening yet.
    pub cancel: Arc<Notify>,
    /// Set when the stop rolls the run back (the `rollback` strategy or
    /// cancel action): the run and what it wrote are deleted.
    pub rollback: Arc<AtomicBool>,
    /// Its events, for clients that join its stream.
    pub log: Arc<RunLog>,
    /// Whether its client's frames carry ids (`stream_resumable`).
    pub resumable: bool,
    /// 1, then one more each time another server took the run over.
    pub attempt: i64,
    /// For a run resumed from another server: the thread's head before
    /// its first attempt wrote (what a rollback returns to).
    pub base: Option<Option<CheckpointId>>,
    /// Set when the run stops to be handed over to another server.
    pub handover: Arc<AtomicBool>,
}

/// A thread's `interrupts`: the pending ones by the node that asked.
fn by_node(interrupts: &[Interrupt]) -> Value {
    let mut by_node = Map::new();
    for i in interrupts {
        let list = by_node.entry(i.node.clone()).or_insert_with(|| json!([]));
        if let (Value::Array(list), Value::Array(mine)) =
            (list, state_interrupts(std::slice::from_ref(i)))
        {
            list.extend(mine);
        }
    }
    Value::Object(by_node)
}

/// The thread's head before the run wrote (`Some(None)`: no checkpoint
/// yet; `None`: the run never took the thread, so wrote nothing); `Err`
/// when it could not be read.
type Base = Result<Option<Option<CheckpointId>>, ()>;

/// A run's output when it ended without one (stopped before its end).
fn no_result() -> Value {
    json!({"__error__": {"error": "Cancelled", "message": "the run ended without a result"}})
}

/// What the run does next.
enum Next {
    Event(RunEvent),
    End,
    Stop(&'static str),
}

/// What became of a frame handed to the run's client.
enum Delivery {
    Sent,
    /// The client left, or took no frame for the read timeout.
    Gone,
    /// The run was cancelled while the frame waited.
    Cancelled,
}

/// The run's task: waits its turn, runs, frames each event for the
/// client while it listens, and records how the run ended.
pub(crate) async fn drive(
    job: Job,
    mut events: BoxStream<'static, RunEvent>,
    turn: Turn,
    frames: Option<mpsc::Sender<String>>,
    done: watch::Sender<Option<Value>>,
) {
    let _turn = match job.wait_turn(turn).await {
        Ok(lease) => lease,
        Err(NoTurn::Cancelled) => {
            // Another run may hold the thread: nothing of it is this run's.
            let why = Some("cancelled while queued");
            return job.finish(&done, no_result(), why, Ok(None)).await;
        }
        #[cfg(feature = "postgres")]
        Err(NoTurn::Gone) => return job.let_go(&done).await,
        Err(NoTurn::Failed(error)) => return job.unrunnable(error, frames, &done).await,
    };
    // Where the thread stands before the run writes: what a rollback
    // returns it to.
    let base = match job.base {
        Some(base) => Ok(Some(base)),
        None => job.head().await,
    };
    job.record_base(&base).await;
    job.record_status("running").await;
    job.mark_busy().await;
    let (stop, output, frames) = job.run(&mut events, frames).await;
    // Dropping the run's stream cancels it: the thread stays at its last
    // stored step.
    drop(events);
    job.finish(&done, output, stop, base).await;
    // The client's stream ends once the run's end is recorded: a client
    // that then asks for the run (the SDK does, to know whether to
    // reconnect) finds it ended, not running.
    drop(frames);
}

impl Job {
    /// Runs the graph, framing each event for the client while it
    /// listens and recording the run's end as it comes: why it stopped
    /// early (`None` when it ran to its end), its output, and its
    /// client's frames (kept open until the end is recorded).
    async fn run(
        &self,
        events: &mut BoxStream<'static, RunEvent>,
        mut frames: Option<mpsc::Sender<String>>,
    ) -> (Option<&'static str>, Value, Option<mpsc::Sender<String>>) {
        let mut output = no_result();
        // Once the run's end is recorded, nothing stops it any more: a
        // cancel or a heartbeat's handover then would leave its stream
        // without an end.
        let mut recorded = false;
        let stop = loop {
            let next = match recorded {
                true => events.next().await.map_or(Next::End, Next::Event),
                false => self.next(events, &frames).await,
            };
            let event = match next {
                Next::Event(event) => event,
                Next::End => break None,
                Next::Stop(why) => break Some(why),
            };
            let data = match event {
                RunEvent::Event(name, data) => self.emit(name, data.to_string()),
                RunEvent::Done {
                    output: state,
                    next,
                    interrupts,
                } => {
                    output = with_interrupts(state.clone(), &interrupts);
                    if !self.finished(state, &next, &interrupts).await {
                        break Some(self.lost());
                    }
                    recorded = true;
                    continue;
                }
                RunEvent::Failed(error) => {
                    if !self.failed(&error).await {
                        break Some(self.lost());
                    }
                    recorded = true;
                    output = json!({ "__error__": &error });
                    self.emit("error", error.to_string())
                }
            };
            // A client that left (or stopped reading) no longer gets
            // frames; the run goes on unless it is to stop with the client.
            let Some(tx) = &frames else { continue };
            match self.deliver(tx, data, !recorded).await {
                Delivery::Sent => {}
                Delivery::Cancelled => break Some("cancelled"),
                Delivery::Gone => {
                    if self.cancel_on_disconnect && !recorded {
                        break Some("its client left");
                    }
                    frames = None;
                }
            }
        };
        (stop, output, frames)
    }

    /// Hands a frame to the run's client. A client that takes none for
    /// the server's read timeout (it stopped reading, its connection
    /// still open) is let go as one that left: the run never waits on
    /// it, and its frames held for it stay bounded. A cancel while
    /// waiting (when `cancellable`) stops the run.
    async fn deliver(
        &self,
        tx: &mpsc::Sender<String>,
        data: String,
        cancellable: bool,
    ) -> Delivery {
        let cancelled = async {
            match cancellable {
                true => self.cancel.notified().await,
                false => std::future::pending().await,
            }
        };
        tokio::select! {
            sent = tokio::time::timeout(self.app.read_timeout, tx.send(data)) => match sent {
                Ok(Ok(())) => Delivery::Sent,
                Ok(Err(_)) => Delivery::Gone,
                Err(_) => {
                    tracing::info!(run_id = %self.run_id, "its client stopped reading: let go");
                    Delivery::Gone
                }
            },
            () = cancelled => Delivery::Cancelled,
        }
    }

    /// Logs an event and frames it for the run's client: with its id when
    /// the stream is resumable.
    pub(crate) fn emit(&self, event: impl Into<Cow<'static, str>>, data: String) -> String {
        let event = event.into();
        let id = self.log.push(event.clone(), data);
        let framed = |data: &str| match self.resumable {
            true => frame_with_id(&event, data, id),
            false => frame(&event, data),
        };
        self.log.with_data(id, framed)
    }

    /// The thread, once its earlier runs are done (a local lock on
    /// SQLite, nothing to hold on PostgreSQL, where the runs table says
    /// whose turn it is).
    async fn wait_turn(&self, turn: Turn) -> Result<Option<Lease>, NoTurn> {
        let failed = |e: crate::store::StoreError| {
            tracing::error!(run_id = %self.run_id, error = %e, "could not take the thread");
            NoTurn::Failed(json!({"error": "Store", "message": "the thread could not be taken"}))
        };
        match turn {
            Turn::Held(lease) => Ok(Some(lease)),
            Turn::Wait => tokio::select! {
                lease = self.app.leases.take(&self.thread_id) => lease.map(Some).map_err(failed),
                () = self.cancel.notified() => Err(NoTurn::Cancelled),
            },
            #[cfg(feature = "postgres")]
            Turn::Claim => tokio::select! {
                own = crate::worker::wait_own(&self.app, &self.run_id) => match own {
                    Ok(true) => Ok(None),
                    Ok(false) => Err(NoTurn::Gone),
                    Err(e) => Err(failed(e)),
                },
                () = self.cancel.notified() => Err(NoTurn::Cancelled),
            },
            #[cfg(feature = "postgres")]
            Turn::Claimed => Ok(None),
        }
    }

    /// On PostgreSQL, records the thread's head before the run wrote, so
    /// a server that resumes the run knows whether it stored a step.
    async fn record_base(&self, base: &Base) {
        #[cfg(feature = "postgres")]
        if let (Some(db), Ok(Some(head))) = (self.app.store.pg(), base) {
            let head = head.map(|h| h.0.to_string()).unwrap_or_default();
            if let Err(e) = crate::queue::set_base(db, &self.run_id, &head).await {
                tracing::error!(run_id = %self.run_id, error = %e, "could not record the run's base");
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = base;
    }

    /// The run is no longer this server's: it ends here without a
    /// record (the server that has it writes it).
    async fn let_go(&self, done: &watch::Sender<Option<Value>>) {
        self.log.release().await;
        let output =
            json!({"__error__": {"error": "Moved", "message": "the run moved to another server"}});
        done.send_replace(Some(output));
        self.app.forget_run(&self.run_id);
    }

    /// The run could not start: it fails with `error`, which its client
    /// gets as its stream's last event.
    async fn unrunnable(
        &self,
        error: Value,
        frames: Option<mpsc::Sender<String>>,
        done: &watch::Sender<Option<Value>>,
    ) {
        self.failed(&error).await;
        let framed = self.emit("error", error.to_string());
        if let Some(tx) = frames {
            let _ = tx.send(framed).await;
        }
        self.finish(done, json!({ "__error__": error }), None, Ok(None))
            .await;
    }

    /// The run's next event, or why it is to stop.
    async fn next(
        &self,
        events: &mut BoxStream<'static, RunEvent>,
        frames: &Option<mpsc::Sender<String>>,
    ) -> Next {
        let watched = frames.as_ref().filter(|_| self.cancel_on_disconnect);
        let client_left = async {
            match watched {
                Some(tx) => tx.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.next() => event.map_or(Next::End, Next::Event),
            () = client_left => Next::Stop("its client left"),
            () = self.cancel.notified() => Next::Stop("cancelled"),
        }
    }

    /// The thread's head checkpoint now; `Err` when it cannot be read.
    async fn head(&self) -> Base {
        let head = self.app.saver.head(&self.thread_id).await;
        head.map(|h| Some(h.map(|h| h.meta.id))).map_err(|_| ())
    }

    /// A run stopped by a rollback: its steps are taken off the thread,
    /// which is again as it was at `base`, and its record is deleted.
    /// The checkpointer does it in one transaction: the checkpoints kept
    /// keep their ids, the ones taken off are never given out again, and
    /// a crash leaves the thread before or after the rollback.
    async fn rolled_back(&self, base: Base) {
        self.rewind(base).await;
        // Last: on PostgreSQL the thread is free once the run is gone.
        if let Err(e) = self.app.store.delete_run(&self.run_id).await {
            tracing::error!(run_id = %self.run_id, error = %e, "could not delete a rolled-back run");
        }
    }

    /// Takes the run's steps off the thread, back to `base`, and records
    /// the thread as it then is.
    async fn rewind(&self, base: Base) {
        let saver = &*self.app.saver;
        let rewound = match base {
            Ok(None) => return,
            Ok(Some(base)) => saver
                .truncate_after(&self.thread_id, base)
                .await
                .map_err(|e| e.to_string()),
            Err(()) => Err("its thread's head could not be read".to_owned()),
        };
        match rewound {
            Ok(steps) => tracing::info!(run_id = %self.run_id, steps, "run rolled back"),
            Err(error) => {
                tracing::error!(run_id = %self.run_id, %error, "could not roll a run back");
            }
        }
        let snapshot = self.graph.state(saver, &self.thread_id).await;
        match snapshot {
            Ok(s) if s.checkpoint.is_some() => {
                let paused = !s.next.is_empty();
                let status = if paused { "interrupted" } else { "idle" };
                let interrupts = by_node(&s.interrupts);
                self.update_thread(status, Some(s.values), None, interrupts)
                    .await;
            }
            _ => self.clear_thread().await,
        }
    }

    /// The thread has no checkpoint left: idle, with no values.
    async fn clear_thread(&self) {
        let store = &self.app.store;
        let Ok(Some(mut thread)) = store.thread(&self.thread_id).await else {
            return;
        };
        thread.values = None;
        thread.status = "idle".to_owned();
        thread.error = None;
        thread.interrupts = json!({});
        thread.updated_at = now();
        self.save_thread(&thread).await;
    }

    /// Records a run that was stopped, and its thread as the run left it.
    async fn stopped(&self, why: &str) {
        let snapshot = self.graph.state(&*self.app.saver, &self.thread_id).await;
        match snapshot {
            Ok(s) if s.checkpoint.is_some() => {
                let status = if s.next.is_empty() {
                    "idle"
                } else {
                    "interrupted"
                };
                self.update_thread(status, Some(s.values), None, json!({}))
                    .await;
            }
            _ => {
                self.update_thread("idle", None, None, json!({})).await;
            }
        }
        self.record_status("interrupted").await;
        tracing::info!(run_id = %self.run_id, why, "run stopped");
    }

    /// The run is over: its record, its thread, whoever waits for it.
    async fn finish(
        &self,
        done: &watch::Sender<Option<Value>>,
        mut output: Value,
        stop: Option<&str>,
        base: Base,
    ) {
        if stop.is_some() && self.handover.load(Ordering::SeqCst) {
            // Its events written first: the server that takes it numbers
            // on from the last one stored.
            self.log.release().await;
            self.hand_over().await;
            return self.let_go(done).await;
        }
        match stop {
            Some(_) if self.rollback.load(Ordering::SeqCst) => {
                self.rolled_back(base).await;
                output =
                    json!({"__error__": {"error": "NotFound", "message": "404: Run not found"}});
            }
            Some(why) => self.stopped(why).await,
            None => {}
        }
        if stop.is_some() {
            // A run that ended on its own did this before its status
            // freed the thread (`finished`, `failed`).
            self.tidy().await;
        }
        self.cleanup().await;
        self.log.close().await;
        done.send_replace(Some(output));
        self.app.forget_run(&self.run_id);
        self.wake_others().await;
    }

    /// Gives the run back to the queue, to resume on another server.
    async fn hand_over(&self) {
        #[cfg(feature = "postgres")]
        if let Some(db) = self.app.store.pg() {
            match crate::queue::release(db, self.app.store.owner(), &self.run_id).await {
                Ok(_) => tracing::info!(run_id = %self.run_id, "run handed over"),
                Err(e) => {
                    tracing::error!(run_id = %self.run_id, error = %e, "could not hand a run over: its lease will expire");
                }
            }
            self.wake_others().await;
        }
    }

    /// On PostgreSQL, tells every server the thread is free (the runs
    /// waiting for it, and the queue's workers).
    async fn wake_others(&self) {
        #[cfg(feature = "postgres")]
        if let Some(session) = self.app.leases.session() {
            if let Err(e) = session.send_wake().await {
                tracing::warn!(error = %e, "could not wake the other servers");
            }
        }
    }

    /// The thread's retention after a run (TTL restarted, checkpoints
    /// kept, landed writes collected), while the run still holds it: on
    /// PostgreSQL a run's final status lets the next one claim the thread.
    async fn tidy(&self) {
        if !self.temporary {
            crate::retention::after_run(&self.app, &*self.graph, &self.thread_id).await;
        }
    }

    /// Records the run's status; `false` when the run is no longer this
    /// server's (and nothing was written).
    async fn record_status(&self, status: &str) -> bool {
        match self.app.store.set_run_status(&self.run_id, status).await {
            Ok(ours) => ours,
            Err(e) => {
                tracing::error!(run_id = %self.run_id, error = %e, "could not record the run's status");
                true
            }
        }
    }

    /// The thread shows `busy` while the run runs: a run that ended as
    /// this one was admitted (before it was recorded, so not counted as
    /// still to run) may have left it `idle`.
    async fn mark_busy(&self) {
        let Ok(Some(mut thread)) = self.app.store.thread(&self.thread_id).await else {
            return;
        };
        if thread.status != "busy" {
            thread.status = "busy".to_owned();
            thread.updated_at = now();
            self.save_thread(&thread).await;
        }
    }

    /// Writes the thread as the run leaves it, while the run is still
    /// this server's (see [`Store::save_run_thread`](crate::store::Store::save_run_thread)).
    /// `false` when the run is no longer this server's (nothing written).
    async fn save_thread(&self, thread: &crate::store::ThreadRow) -> bool {
        match self.app.store.save_run_thread(thread, &self.run_id).await {
            Ok(ours) => ours,
            Err(e) => {
                tracing::error!(thread_id = %self.thread_id, error = %e, "could not record the thread");
                true
            }
        }
    }

    /// The run turned out to be another server's as it ended (its lease
    /// lapsed and it was taken over): it is let go as handed over, so its
    /// stream gets no end here and nothing else of it is recorded.
    fn lost(&self) -> &'static str {
        tracing::warn!(run_id = %self.run_id, "the run is no longer this server's: its end is left to its owner");
        self.handover.store(true, Ordering::SeqCst);
        "no longer this server's"
    }

    /// The run reached its end or paused: the thread holds its output.
    /// `false` when the run is no longer this server's.
    async fn finished(&self, values: Value, next: &[String], interrupts: &[Interrupt]) -> bool {
        let paused = !interrupts.is_empty() || !next.is_empty();
        let status = if paused { "interrupted" } else { "idle" };
        let thread = self.update_thread(status, Some(values), None, by_node(interrupts));
        if !thread.await {
            return false;
        }
        self.tidy().await;
        let ours = self.record_status("success").await;
        tracing::info!(run_id = %self.run_id, status, "run finished");
        ours
    }

    /// The run failed: the thread keeps its last state and shows the error.
    /// `false` when the run is no longer this server's.
    async fn failed(&self, error: &Value) -> bool {
        let thread = self.update_thread("error", None, Some(error.clone()), json!({}));
        if !thread.await {
            return false;
        }
        self.tidy().await;
        let ours = self.record_status("error").await;
        tracing::warn!(run_id = %self.run_id, %error, "run failed");
        ours
    }

    async fn update_thread(
        &self,
        status: &str,
        values: Option<Value>,
        error: Option<Value>,
        interrupts: Value,
    ) -> bool {
        let store = &self.app.store;
        let Ok(Some(mut thread)) = store.thread(&self.thread_id).await else {
            return true;
        };
        let stamp = now();
        if values.is_some() {
            thread.values = values;
        }
        // Runs still queued on the thread keep it busy, as on the
        // official server.
        let queued = store.has_other_runs(&self.thread_id, &self.run_id).await;
        thread.status = match queued {
            Ok(true) => "busy".to_owned(),
            _ => status.to_owned(),
        };
        thread.error = error;
        thread.interrupts = interrupts;
        thread.state_updated_at = stamp.clone();
        thread.updated_at = stamp;
        self.save_thread(&thread).await
    }

    /// A stateless run's thread goes once the run ends.
    async fn cleanup(&self) {
        if !self.temporary {
            return;
        }
        let _ = self.app.store.delete_thread(&self.thread_id).await;
        if let Err(e) = self.app.saver.delete_thread(&self.thread_id).await {
            tracing::error!(thread_id = %self.thread_id, error = %e, "could not delete a stateless run's thread");
        }
        self.app.drop_lock(&self.thread_id);
    }
}
