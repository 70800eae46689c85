//! What every handler shares: the registered graphs as assistants, the
//! store, the checkpointer, and which thread runs what.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_state::checkpoint::Checkpointer;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::ids::is_uuid;
use crate::lease::Leases;
use crate::served::ServedGraph;
use crate::store::{AssistantRow, Store};

/// An assistant a run or a route uses: the stored record's ids, config,
/// context and metadata, with the registered graph it names.
#[derive(Clone)]
pub(crate) struct Assistant {
    /// Its id: for a graph's own, derived from the graph's name, so it
    /// survives restarts.
    pub id: String,
    /// The graph's name.
    pub graph_id: String,
    /// The graph.
    pub graph: Arc<dyn ServedGraph>,
    /// Its input, output and state JSON Schemas, when registered with
    /// them.
    pub schemas: Option<Value>,
    /// Its `config` (a run's `configurable` is merged over its own).
    pub config: Value,
    /// Its `context` (a run's is merged over it).
    pub context: Value,
    /// Its metadata (under a run's own).
    pub metadata: Map<String, Value>,
}

impl Assistant {
    /// This graph entry as the stored assistant `row` (which names its
    /// graph).
    fn as_stored(&self, row: AssistantRow) -> Self {
        Assistant {
            id: row.assistant_id,
            graph_id: row.graph_id,
            graph: Arc::clone(&self.graph),
            schemas: self.schemas.clone(),
            config: row.config,
            context: row.context,
            metadata: row.metadata,
        }
    }
}

/// The shared state.
pub(crate) struct App {
    /// The registered graphs, each as its own assistant, by graph name.
    pub assistants: BTreeMap<String, Assistant>,
    /// Threads, runs and assistants.
    pub store: Store,
    /// The threads' checkpoints.
    pub saver: Arc<dyn Checkpointer>,
    /// The Store (LangGraph's memory across threads): served at `/store`
    /// and given to every run.
    pub items: Arc<dyn agent_state::store::Store>,
    /// How long a request's body may take to arrive.
    pub read_timeout: Duration,
    /// Threads' TTLs and how many checkpoints they keep.
    pub retention: crate::retention::Retention,
    /// One lock per thread: the run holding it is the thread's.
    pub leases: Leases,
    /// Where runs' events are kept for clients on other servers (on
    /// PostgreSQL), besides each run's memory.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub events: crate::log::Events,
    /// The runs of this process that have not ended, by id: what a join
    /// waits on.
    running: Mutex<HashMap<String, Running>>,
    /// Cancels of runs not (yet) running here, by run id (with the thread
    /// they were sent for, whether they roll back, and when they came): a run claimed from the queue
    /// a moment before is registered a moment after, and must not miss
    /// the cancel sent in between. Kept [`EARLY_CANCEL`] at most.
    early_cancels: Mutex<HashMap<String, EarlyCancel>>,
    /// Each thread's events in the thread protocol (`/threads/{id}/stream/events`).
    pub threadproto: crate::threadproto::Tapes,
    /// Tells the threads' join streams (`GET /threads/{id}/stream`) of
    /// each run that registers here.
    pub run_starts: crate::joined::RunStarts,
    /// This server's part in the run queue, on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub fleet: Option<crate::worker::Fleet>,
}

/// How long a cancel of a run not running here is kept for it (far more
/// than a claim takes to register its run).
const EARLY_CANCEL: Duration = Duration::from_secs(60);

/// A cancel kept for a run not running here yet: its thread, whether it
/// rolls back, when it came.
type EarlyCancel = (String, bool, Instant);

/// A run of this process that has not ended.
pub(crate) struct Running {
    /// Its thread.
    pub thread_id: String,
    /// Its output, once it ends.
    pub outcome: Outcome,
    /// Stops it.
    pub cancel: Arc<tokio::sync::Notify>,
    /// Set with a cancel that rolls it back: the run and what it wrote
    /// are deleted.
    pub rollback: Arc<std::sync::atomic::AtomicBool>,
    /// Its events so far, for clients that join its stream.
    pub log: Arc<crate::log::RunLog>,
    /// Set with a stop that hands the run over to another server (this
    /// one stops): its record is left for the one that resumes it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub handover: Arc<std::sync::atomic::AtomicBool>,
}

impl Running {
    /// Tells the run to stop (its flag first, so it reads it when it
    /// wakes).
    fn stop(&self, rollback: bool) {
        if rollback {
            self.rollback
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.cancel.notify_one();
    }
}

/// A run's final output (what `runs/wait` and `join` answer), `None`
/// until it ends.
pub(crate) type Outcome = tokio::sync::watch::Receiver<Option<Value>>;

impl App {
    pub(crate) fn new(
        assistants: BTreeMap<String, Assistant>,
        store: Store,
        saver: Arc<dyn Checkpointer>,
        leases: Leases,
        items: Arc<dyn agent_state::store::Store>,
    ) -> Self {
        App {
            assistants,
            store,
            saver,
            items,
            read_timeout: Duration::from_secs(30),
            retention: crate::retention::Retention::default(),
            leases,
            events: crate::log::Events::default(),
            running: Mutex::default(),
            early_cancels: Mutex::default(),
            threadproto: Default::default(),
            run_starts: Default::default(),
            #[cfg(feature = "postgres")]
            fleet: None,
        }
    }

    /// The assistant with this id, or of the graph of this name.
    pub(crate) fn find_assistant(&self, id: &str) -> Option<&Assistant> {
        self.assistants
            .get(id)
            .or_else(|| self.assistants.values().find(|a| a.id == id))
    }

    /// The assistant a run names: an unknown name is 422 listing the
    /// graphs, an unknown UUID 404.
    pub(crate) fn run_assistant(&self, id: &str) -> Result<&Assistant, ApiError> {
        match self.find_assistant(id) {
            Some(a) => Ok(a),
            None if is_uuid(id) => Err(ApiError::NotFound(
                "Thread or assistant not found.".to_owned(),
            )),
            None => {
                let names: Vec<&str> = self.assistants.keys().map(String::as_str).collect();
                Err(ApiError::Invalid(format!(
                    "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
                    names.join(", ")
                )))
            }
        }
    }

    /// The assistant a run names (a graph's name, or the id of a stored
    /// assistant, the graph's own or one a client created) as stored now:
    /// a name that is neither is 422 listing the graphs; an unknown or
    /// deleted one, or one whose graph is not served, 404.
    pub(crate) async fn resolve(&self, id: &str) -> Result<Assistant, ApiError> {
        let id = match self.assistants.get(id) {
            Some(graph) => graph.id.clone(),
            None => id.to_owned(),
        };
        if !is_uuid(&id) {
            return Err(self
                .run_assistant(&id)
                .err()
                .unwrap_or_else(|| ApiError::not_uuid("assistant")));
        }
        let missing = || ApiError::NotFound("Thread or assistant not found.".to_owned());
        let row = self.store.assistant(&id).await?.ok_or_else(missing)?;
        let graph = self.assistants.get(&row.graph_id).ok_or_else(missing)?;
        Ok(graph.as_stored(row))
    }

    /// The stored assistant a route's path names (a graph's name stands
    /// for the graph's own): 422 for an id that is no UUID, `missing` for
    /// one not stored, whose graph is not served, or outside the caller's
    /// filter.
    pub(crate) async fn path_record(
        &self,
        id: &str,
        scope: &crate::auth::Scope,
        missing: impl Fn(&str) -> ApiError,
    ) -> Result<(AssistantRow, &Assistant), ApiError> {
        let path_id = id;
        let id = self.assistants.get(id).map_or(id, |g| g.id.as_str());
        if !is_uuid(id) {
            return Err(ApiError::not_uuid("assistant"));
        }
        let row = self.store.assistant(id).await?;
        let row = row.filter(|r| scope.admits(&r.metadata));
        let found = row.and_then(|r| Some((self.assistants.get(&r.graph_id)?, r)));
        match found {
            Some((graph, row)) => Ok((row, graph)),
            None => {
                tracing::info!(assistant_id = %path_id, "refused: no such assistant");
                Err(missing(path_id))
            }
        }
    }

    /// Notes a run that started.
    pub(crate) fn register_run(&self, run_id: &str, run: Running) {
        let early = self.early().remove(run_id);
        if let Some((thread_id, rollback, _)) = early {
            // Only a cancel sent for the run's own thread.
            if thread_id == run.thread_id {
                run.stop(rollback);
            }
        }
        self.run_starts.started(crate::joined::StartedRun {
            thread_id: run.thread_id.clone(),
            run_id: run_id.to_owned(),
            log: Arc::clone(&run.log),
        });
        self.running().insert(run_id.to_owned(), run);
    }

    /// Forgets a run that ended.
    pub(crate) fn forget_run(&self, run_id: &str) {
        self.running().remove(run_id);
    }

    /// The outcome of a run of this process on `thread_id` that has not
    /// ended (a run of another thread is none: the path's thread is what
    /// the authorize hooks checked).
    pub(crate) fn running_run(&self, thread_id: &str, run_id: &str) -> Option<Outcome> {
        let running = self.running();
        let run = running.get(run_id).filter(|r| r.thread_id == thread_id);
        run.map(|r| r.outcome.clone())
    }

    /// The events of a run of this process on `thread_id` that has not
    /// ended.
    pub(crate) fn running_log(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Option<Arc<crate::log::RunLog>> {
        let running = self.running();
        let run = running.get(run_id).filter(|r| r.thread_id == thread_id);
        run.map(|r| Arc::clone(&r.log))
    }

    /// Stops a run of the thread that has not ended, and with `rollback`
    /// deletes it and what it wrote; `false` when there is none by that id.
    /// One that is not running here yet is stopped as it registers (see
    /// `early_cancels`).
    pub(crate) fn cancel_run(&self, thread_id: &str, run_id: &str, rollback: bool) -> bool {
        let running = self.running();
        let run = running.get(run_id).filter(|r| r.thread_id == thread_id);
        let found = run.inspect(|r| r.stop(rollback)).is_some();
        if !found {
            let mut early = self.early();
            early.retain(|_, (_, _, at)| at.elapsed() < EARLY_CANCEL);
            let entry = (thread_id.to_owned(), rollback, Instant::now());
            early.insert(run_id.to_owned(), entry);
        }
        found
    }

    fn early(&self) -> std::sync::MutexGuard<'_, HashMap<String, EarlyCancel>> {
        self.early_cancels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops every run of the thread that has not ended (the `interrupt`
    /// and, with `rollback`, `rollback` strategies): how many.
    pub(crate) fn cancel_thread_runs(&self, thread_id: &str, rollback: bool) -> usize {
        let running = self.running();
        let mine = running.values().filter(|r| r.thread_id == thread_id);
        mine.inspect(|r| r.stop(rollback)).count()
    }

    /// The ids of the runs of this process that have not ended.
    #[cfg(feature = "postgres")]
    pub(crate) fn running_ids(&self) -> std::collections::HashSet<String> {
        self.running().keys().cloned().collect()
    }

    /// How many runs of this process have not ended.
    #[cfg(feature = "postgres")]
    pub(crate) fn running_count(&self) -> usize {
        self.running().len()
    }

    /// Stops every run of this process to hand it over to another server
    /// (this one stops): how many.
    #[cfg(feature = "postgres")]
    pub(crate) fn hand_over_all(&self) -> usize {
        self.hand_over_where(|_| true)
    }

    /// Stops, as handed over, the runs whose id `which` picks: how many.
    #[cfg(feature = "postgres")]
    pub(crate) fn hand_over_where(&self, which: impl Fn(&str) -> bool) -> usize {
        let running = self.running();
        let picked = running.iter().filter(|(id, _)| which(id));
        let mut count = 0;
        for (_, run) in picked {
            run.handover
                .store(true, std::sync::atomic::Ordering::SeqCst);
            run.cancel.notify_one();
            count += 1;
        }
        count
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets a deleted thread's lock.
    pub(crate) fn drop_lock(&self, thread_id: &str) {
        self.leases.forget(thread_id);
    }
}
