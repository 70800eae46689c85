//! A run's task: waits for its thread, drives the run, frames each event
//! for the client while it listens, and records how the run ended.

use std::borrow::Cow;
use std::sync::Arc;

use agent_state::futures::stream::{BoxStream, StreamExt};
use agent_state::graph::Interrupt;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, watch, Mutex, Notify, OwnedMutexGuard};

use crate::app::App;
use crate::events::{state_interrupts, with_interrupts};
use crate::ids::now;
use crate::log::RunLog;
use crate::served::{RunEvent, ServedGraph};
use crate::sse::{frame, frame_with_id};

/// How the run gets its thread: it holds it already (`reject` found it
/// free), or waits its turn (`enqueue`).
pub(crate) enum Turn {
    Held(OwnedMutexGuard<()>),
    Wait(Arc<Mutex<()>>),
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
    /// Its events, for clients that join its stream.
    pub log: Arc<RunLog>,
    /// Whether its client's frames carry ids (`stream_resumable`).
    pub resumable: bool,
}

/// What the run does next.
enum Next {
    Event(RunEvent),
    End,
    Stop(&'static str),
}

/// The run's task: waits its turn, runs, frames each event for the
/// client while it listens, and records how the run ended.
pub(crate) async fn drive(
    job: Job,
    mut events: BoxStream<'static, RunEvent>,
    turn: Turn,
    mut frames: Option<mpsc::Sender<String>>,
    done: watch::Sender<Option<Value>>,
) {
    let mut output =
        json!({"__error__": {"error": "Cancelled", "message": "the run ended without a result"}});
    let Some(_turn) = job.wait_turn(turn).await else {
        job.finish(&done, output, Some("cancelled while queued"))
            .await;
        return;
    };
    job.record_status("running");
    let stop = loop {
        let event = match job.next(&mut events, &frames).await {
            Next::Event(event) => event,
            Next::End => break None,
            Next::Stop(why) => break Some(why),
        };
        let data = match event {
            RunEvent::Event(name, data) => job.emit(name, data.to_string()),
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
                let framed = job.emit("error", error.to_string());
                output = json!({ "__error__": error });
                framed
            }
        };
        // A client that left no longer gets frames; the run goes on
        // unless it is to stop with the client.
        let Some(tx) = &frames else { continue };
        if tx.send(data).await.is_err() {
            if job.cancel_on_disconnect {
                break Some("its client left");
            }
            frames = None;
        }
    };
    // Dropping the run's stream cancels it: the thread stays at its last
    // stored step.
    drop(events);
    job.finish(&done, output, stop).await;
}

impl Job {
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

    /// The thread, once its earlier runs are done; `None` when this run
    /// was cancelled while it waited.
    async fn wait_turn(&self, turn: Turn) -> Option<OwnedMutexGuard<()>> {
        match turn {
            Turn::Held(guard) => Some(guard),
            Turn::Wait(lock) => tokio::select! {
                guard = lock.lock_owned() => Some(guard),
                () = self.cancel.notified() => None,
            },
        }
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
                self.update_thread(status, Some(s.values), None, json!({}));
            }
            _ => self.update_thread("idle", None, None, json!({})),
        }
        self.record_status("interrupted");
        tracing::info!(run_id = %self.run_id, why, "run stopped");
    }

    /// The run is over: its record, its thread, whoever waits for it.
    async fn finish(&self, done: &watch::Sender<Option<Value>>, output: Value, stop: Option<&str>) {
        if let Some(why) = stop {
            self.stopped(why).await;
        }
        self.cleanup().await;
        self.log.close();
        done.send_replace(Some(output));
        self.app.forget_run(&self.run_id);
    }

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
