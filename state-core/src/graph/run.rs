//! One invocation of a graph: the superstep loop, with or without a
//! checkpointer.

use std::any::Any;
use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::context::{Interrupt, Resume, RunContext, TaskScope};
use super::edit::{snapshot_tasks, SnapshotTask};
use super::joins::JoinState;
use super::node::{NodeFn, NodeOutput};
use super::output::RunOutput;
use super::pending::{self, Pending};
use super::policy::CancelToken;
use super::resume::{resume_point, At};
use super::route_cache::{Hop, LastRoute};
use super::step::{
    fast_ended, fast_outcome, fast_path, run_step, Fast, Resumed, StepOut, StepPlan, Store,
};
use super::{trace, Graph, GraphError, GraphState, Routed, Task, START};
use crate::checkpoint::{
    BoxFuture, CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, HeldInput, NodeWrite,
    PendingWrite, Source, Thread,
};
use crate::error::StateError;
use crate::graph::stream::channel::{Channel, StepNews};
use crate::graph::stream::mode::{NodeSink, StreamMode};
use crate::graph::stream::returned;
use crate::state::{AgentState, StateUpdate, StepRule};

/// What a run starts from.
pub enum Input<S: AgentState> {
    /// A whole state (with its immutable fields set): a new thread's first
    /// state. Refused for a thread that exists.
    State(S),
    /// An update, stored as the run's input (an `input` checkpoint, then
    /// the update applied as a `loop` step). A new thread, or one whose
    /// last run finished, starts from `START` with it; a thread stopped
    /// midway (a breakpoint, `stop_after`, a failure, a crash) takes it and
    /// carries on where it stopped. A thread paused on interrupts refuses
    /// it ([`GraphError::Paused`]): answer them first.
    Update(S::Update),
    /// Nothing new: continue a thread from its last saved step (after a
    /// crash, a breakpoint or a [`stop_after`](Run::stop_after)). A
    /// finished thread stays as it is; nodes paused on interrupts run
    /// again and pause again. An input stored but not applied (a crash
    /// came between its `input` checkpoint and the step applying it) is
    /// applied first, and the run goes on as the interrupted one would.
    Resume,
    /// Continue a thread paused on interrupts with values for them
    /// (LangGraph's `Command(resume=..)`): the paused nodes run again from
    /// their start, and their `interrupt` calls return the values.
    ResumeWith(Resume),
}

/// What one step did, for progress display: LangGraph's `updates` and
/// `values` stream modes in one event.
pub struct StepEvent<'a, S: AgentState> {
    /// The step number, as LangGraph numbers it: a new thread's input is
    /// -1 (the state before it) and 0 (applied), its first node's step 1;
    /// a later run's input continues the numbering.
    pub step: i64,
    /// What made the step.
    pub source: Source,
    /// Each node's write (update and routing), in the order they applied.
    pub writes: &'a [NodeWrite<S::Update>],
    /// The state after the step.
    pub state: &'a S,
    /// The checkpoint the step was stored as, when running on a thread.
    pub checkpoint: Option<&'a CheckpointMeta>,
    /// The nodes that run next; empty when the run is over.
    pub next: &'a [String],
}

/// Per task of a step, its writes' gotos and `Send`s.
type Routing = Vec<(Vec<String>, Vec<super::Send>)>;

/// A step's writes as an observer is shown them, when there is one.
type Observed<S> = Option<Vec<NodeWrite<<S as AgentState>::Update>>>;

type Observer<'a, S> = Box<dyn FnMut(&StepEvent<'_, S>) + Send + 'a>;

/// A run being set up; `.await` it.
///
/// ```
/// # use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// # use agent_state::graph::{Input, StateGraph, END, START};
/// # use agent_state::AgentState;
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct S { n: u32 }
/// # let graph = StateGraph::<S>::new()
/// #     .add_node("inc", |s: &S| SUpdate::new().n(s.n + 1))
/// #     .add_edge(START, "inc")
/// #     .add_conditional_edges("inc", |s: &S| if s.n < 5 { "inc" } else { END })
/// #     .compile()?;
/// let saver = MemoryCheckpointer::new();
/// let mut seen = Vec::new();
/// let out = block_on(
///     graph
///         .run(Input::Update(SUpdate::new()))
///         .on_thread(&saver, "t-1")
///         .on_step(|e| seen.push(e.step))
///         .stop_after(3),
/// )?;
/// assert_eq!(out.state.n, 2);
/// assert_eq!(out.next, ["inc"]);
///
/// // Later, or in another process: carry on from the last saved step.
/// let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t-1"))?;
/// assert_eq!(out.state.n, 5);
/// assert!(out.next.is_empty());
/// # drop(out);
/// assert_eq!(seen, [-1, 0, 1, 2]);
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
pub struct Run<'a, S: AgentState, C: ?Sized = dyn Checkpointer> {
    graph: &'a Graph<S>,
    input: Input<S>,
    thread: Option<(&'a C, String)>,
    observer: Option<Observer<'a, S>>,
    stop_after: Option<usize>,
    cancel: Option<CancelToken>,
    from: Option<CheckpointId>,
    stream: Option<Arc<Channel<S>>>,
    durability: Durability,
    context: Option<RunContext>,
    /// The errors of the tasks that failed the run, kept with the thread's
    /// head when it ends.
    errors: Vec<PendingWrite>,
}

/// Where a run paused on interrupts, for what it returns.
struct Paused<S> {
    interrupts: Vec<Interrupt>,
    /// The paused step's state with the writes of its tasks that finished,
    /// when any did.
    state: Option<Arc<S>>,
    /// The tasks still to run.
    next: Vec<String>,
}

impl<S> Default for Paused<S> {
    fn default() -> Self {
        Self {
            interrupts: Vec::new(),
            state: None,
            next: Vec::new(),
        }
    }
}

/// When a run on a thread stores its steps (LangGraph's `durability`).
///
/// The default, [`Sync`](Durability::Sync), stores every step before the
/// next one runs: a step reported done survives a crash. The graph runtime
/// can also store each step while the next one runs, or only when the run
/// ends, as LangGraph's `"async"` and `"exit"` do: less waiting or fewer
/// writes, at the price of what a crash loses. Under either, a
/// [`StepEvent`]'s checkpoint is the last one stored when the step ended.
/// Without a thread, nothing is stored whichever is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Every step is stored before the next one runs (LangGraph's
    /// `"sync"`). A crash loses at most the step that was running; a
    /// resume runs it again.
    #[default]
    Sync,
    /// Each step is stored while the next one runs (LangGraph's
    /// `"async"`): its state is applied at once and its store started; the
    /// run waits for it before storing the next step, before a step that
    /// may leave pending writes, and before it returns, so a run that
    /// returned (or failed) has stored every step it applied. A crash of
    /// the process can lose the last step applied (whose store was under
    /// way) although the next step's nodes had run: a resume runs that step
    /// again. A failed store fails the run at that wait. Backends that store
    /// in this process as the call is made (memory, SQLite) finish the store
    /// before the next step starts, as under `Sync`; a networked one
    /// (PostgreSQL) overlaps the round trip with the next step.
    Async,
    /// The run stores its state once, when it ends: on completion, at an
    /// interrupt or breakpoint, at [`stop_after`](Run::stop_after), and
    /// when it fails (a node's error, a cancellation), as one checkpoint
    /// holding the state as a snapshot, its step number and the last
    /// step's writes; the steps in between are not in the thread's history
    /// (LangGraph's `"exit"`). A new thread's first state
    /// ([`Input::State`]) is stored when the run starts, as under `Sync`; a
    /// subgraph's own steps are stored as under `Sync`. A step that may leave pending writes
    /// (several tasks, a node taking a context, a retry policy, a join)
    /// first stores the state it starts from, so a pause or a failure
    /// inside it keeps what it keeps under `Sync`. A crash of the process
    /// (or a panic in a node) loses every step since the last stored one:
    /// the thread resumes from there and runs them again.
    Exit,
}

impl<S: GraphState> Graph<S> {
    /// Sets up a run from `input`; without [`on_thread`](Run::on_thread) it
    /// keeps nothing.
    pub fn run(&self, input: Input<S>) -> Run<'_, S> {
        Run {
            graph: self,
            input,
            thread: None,
            observer: None,
            stop_after: None,
            cancel: None,
            from: None,
            stream: None,
            durability: Durability::Sync,
            context: None,
            errors: Vec::new(),
        }
    }
}

impl<'a, S: AgentState, C: ?Sized> Run<'a, S, C> {
    /// Runs on thread `thread_id` of `saver`: the input applies to the
    /// thread's stored state and every step is checkpointed.
    pub fn on_thread<D: Checkpointer + ?Sized>(
        self,
        saver: &'a D,
        thread_id: impl Into<String>,
    ) -> Run<'a, S, D> {
        Run {
            graph: self.graph,
            input: self.input,
            thread: Some((saver, thread_id.into())),
            observer: self.observer,
            stop_after: self.stop_after,
            cancel: self.cancel,
            from: self.from,
            stream: self.stream,
            durability: self.durability,
            context: self.context,
            errors: self.errors,
        }
    }

    /// Calls `observer` after every step.
    #[must_use]
    pub fn on_step(mut self, observer: impl FnMut(&StepEvent<'_, S>) + Send + 'a) -> Self {
        self.observer = Some(Box::new(observer));
        self
    }

    /// Stops after `steps` supersteps (the input step included), as an
    /// interrupt would: the output's `next` says what would run, and
    /// [`Input::Resume`] continues.
    #[must_use]
    pub fn stop_after(mut self, steps: usize) -> Self {
        self.stop_after = Some(steps);
        self
    }

    /// When the run stores its steps on its thread: every step (the
    /// default) or once at the end ([`Durability`] says what a crash then
    /// loses). Without a thread, nothing is stored either way.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Gives the run's nodes `context`, read back by type with
    /// [`NodeContext::context`](super::NodeContext::context): what a run
    /// needs but is not state, such as the user it serves or a client
    /// (LangGraph's `context=` and `Runtime.context`). It is not stored:
    /// a resume is given it again. Subgraphs see their parent's.
    #[must_use]
    pub fn context<T: Any + Send + Sync>(mut self, context: T) -> Self {
        self.context = Some(Arc::new(context));
        self
    }

    /// The parent's context, handed to a subgraph's run as it is.
    pub(crate) fn shared_context(mut self, context: Option<RunContext>) -> Self {
        self.context = context;
        self
    }

    /// Stops the run with [`GraphError::Cancelled`] when `token` is
    /// cancelled, between steps or in the middle of one.
    #[must_use]
    pub fn cancel_on(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Time travel: continues the thread from its older checkpoint `id`
    /// (see [`Graph::state_history`]) rather than its head, as a fork: a
    /// `fork` checkpoint copying `id` becomes the head, the steps after
    /// `id` stay in the history, and the run goes on from there with this
    /// run's input (usually [`Input::Resume`]). Its interrupts are asked
    /// again.
    #[must_use]
    pub fn from_checkpoint(mut self, id: CheckpointId) -> Self {
        self.from = Some(id);
        self
    }
}

/// Where a run's state lives: in memory only, or in a thread of a store.
pub(crate) enum Sink<'c, S: AgentState, C: ?Sized> {
    Plain {
        state: Arc<S>,
        next_step: i64,
    },
    /// A thread, and the store of its last step while it is under way
    /// (`Durability::Async`).
    Saved(Thread<'c, S, C>, Option<Box<InFlight<'c>>>),
}

/// A step's store under way, with what its head will say.
pub(crate) struct InFlight<'c> {
    // In a mutex only so the sink stays `Sync`; never contended.
    future: std::sync::Mutex<BoxFuture<'c, Result<CheckpointMeta, CheckpointError>>>,
    log_bytes: u64,
    base_bytes: u64,
}

impl<'c, S, C> Sink<'c, S, C>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    fn shared(&self) -> Arc<S> {
        match self {
            Sink::Plain { state, .. } => Arc::clone(state),
            Sink::Saved(thread, _) => thread.shared_state(),
        }
    }

    pub(crate) fn state(&self) -> &S {
        match self {
            Sink::Plain { state, .. } => state,
            Sink::Saved(thread, _) => thread.state(),
        }
    }

    fn next_step(&self) -> i64 {
        match self {
            Sink::Plain { next_step, .. } => *next_step,
            Sink::Saved(thread, _) => thread.next_step(),
        }
    }

    fn head(&self) -> Option<&CheckpointMeta> {
        match self {
            Sink::Plain { .. } => None,
            Sink::Saved(thread, _) => thread.head(),
        }
    }

    /// Where the step being run keeps its pending writes.
    fn store(&self) -> Option<Store<'_>> {
        match self {
            Sink::Plain { .. } => None,
            Sink::Saved(thread, _) => thread.head().map(|head| Store {
                saver: thread.saver().as_dyn(),
                thread_id: thread.thread_id(),
                checkpoint: head.id,
            }),
        }
    }

    /// Applies (and stores) one step's writes as one. The updates are
    /// taken out of `writes`; the buffer stays the caller's.
    pub(crate) async fn apply(
        &mut self,
        source: Source,
        writes: &mut Vec<NodeWrite<S::Update>>,
        durability: Durability,
    ) -> Result<(), GraphError> {
        let step = self.next_step();
        match self {
            Sink::Plain { .. } => {
                let updates = writes.iter_mut().map(|w| std::mem::take(&mut w.update));
                self.apply_plain(updates)
                    .map_err(|error| GraphError::InvalidUpdate {
                        step,
                        nodes: writes.drain(..).map(|w| w.node).collect(),
                        error,
                    })
            }
            Sink::Saved(thread, in_flight) => {
                for send in writes.iter().flat_map(|w| &w.send) {
                    send.arg_json().map_err(|error| GraphError::SendArg {
                        node: send.node().to_owned(),
                        error,
                    })?;
                }
                let saved = match durability {
                    Durability::Sync => thread.save_writes(source, writes).await.map(|_| ()),
                    Durability::Async => {
                        Self::store_meanwhile(thread, in_flight, source, writes).await
                    }
                    Durability::Exit => thread.apply_unsaved(source, writes),
                };
                match saved {
                    Ok(()) => Ok(()),
                    Err(CheckpointError::Rejected(error)) => Err(GraphError::InvalidUpdate {
                        step,
                        nodes: writes.drain(..).map(|w| w.node).collect(),
                        error,
                    }),
                    Err(other) => Err(GraphError::Checkpoint(other)),
                }
            }
        }
    }

    /// Checks a run's input and makes the `input` checkpoint stored next
    /// hold it, so an input that cannot apply stores nothing (a plain run
    /// checks it as it applies it, and keeps nothing).
    fn hold_input(&mut self, writes: &mut [NodeWrite<S::Update>]) -> Result<(), GraphError>
    where
        S::Update: Clone,
    {
        let Sink::Saved(thread, _) = self else {
            return Ok(());
        };
        match thread.hold_input(writes) {
            Ok(()) => Ok(()),
            Err(CheckpointError::Rejected(error)) => Err(GraphError::InvalidUpdate {
                step: thread.next_step() + 1,
                nodes: writes.iter().map(|w| w.node.clone()).collect(),
                error,
            }),
            Err(other) => Err(GraphError::Checkpoint(other)),
        }
    }

    /// A plain run's step, applied in place (no future, nothing stored).
    fn apply_plain(
        &mut self,
        updates: impl IntoIterator<Item = S::Update>,
    ) -> Result<(), StateError> {
        let Sink::Plain { state, next_step } = self else {
            unreachable!("called on a plain run's sink")
        };
        let staged = state.stage(updates, StepRule::Superstep)?;
        Arc::make_mut(state).commit(staged);
        *next_step += 1;
        Ok(())
    }

    /// A plain run's step of one update (the fast paths), through the
    /// state's `apply` of one update: every field is staged before any is
    /// written, so an update that fails leaves the state as it was.
    fn apply_one_plain(&mut self, update: S::Update) -> Result<(), StateError> {
        let Sink::Plain { state, next_step } = self else {
            unreachable!("called on a plain run's sink")
        };
        Arc::make_mut(state).apply(update)?;
        *next_step += 1;
        Ok(())
    }

    /// Stores what is not stored yet: waits for the store under way (under
    /// [`Durability::Async`]), stores the steps applied but not stored
    /// (under [`Durability::Exit`]).
    async fn flush(&mut self) -> Result<(), GraphError> {
        match self {
            Sink::Plain { .. } => Ok(()),
            Sink::Saved(thread, in_flight) => {
                Self::settle(thread, in_flight).await?;
                Ok(thread.flush().await?)
            }
        }
    }

    /// Waits for the store under way, if any, and takes it as the head.
    async fn settle(
        thread: &mut Thread<'c, S, C>,
        in_flight: &mut Option<Box<InFlight<'c>>>,
    ) -> Result<(), CheckpointError> {
        let Some(in_flight) = in_flight.take() else {
            return Ok(());
        };
        let InFlight {
            future,
            log_bytes,
            base_bytes,
        } = *in_flight;
        let future = future
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        thread.stored(future.await?, log_bytes, base_bytes).await
    }

    /// Applies a step now and starts its store, polled once here (a backend
    /// that stores inside the call is done then) and waited for by the next
    /// [`flush`](Self::flush) (`Durability::Async`).
    async fn store_meanwhile(
        thread: &mut Thread<'c, S, C>,
        in_flight: &mut Option<Box<InFlight<'c>>>,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(), CheckpointError> {
        Self::settle(thread, in_flight).await?;
        thread.flush().await?;
        let record = thread.apply_for_storing(source, writes)?;
        let (log_bytes, base_bytes) = (record.log_bytes, record.base_bytes);
        let (saver, thread_id) = (thread.saver(), thread.thread_id().to_owned());
        let mut future: BoxFuture<'c, _> =
            Box::pin(async move { saver.append(&thread_id, record.parent, record).await });
        let polled = {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            future.as_mut().poll(&mut cx)
        };
        match polled {
            std::task::Poll::Ready(meta) => thread.stored(meta?, log_bytes, base_bytes).await,
            std::task::Poll::Pending => {
                *in_flight = Some(Box::new(InFlight {
                    future: std::sync::Mutex::new(future),
                    log_bytes,
                    base_bytes,
                }));
                Ok(())
            }
        }
    }

    /// Keeps `entries` as pending writes of the thread's head (nothing
    /// for a plain run).
    async fn keep_pending(&self, entries: Vec<PendingWrite>) -> Result<(), CheckpointError> {
        let Sink::Saved(thread, _) = self else {
            return Ok(());
        };
        let Some(head) = thread.head() else {
            return Ok(());
        };
        let (saver, thread_id) = (thread.saver(), thread.thread_id());
        saver.put_pending(thread_id, head.id, entries).await
    }

    /// Keeps the joins' progress with the head, for a resume.
    async fn keep_joins(
        &mut self,
        graph: &Graph<S>,
        joins: &JoinState,
        fired: &[usize],
    ) -> Result<(), GraphError> {
        if graph.joins.is_empty() {
            return Ok(());
        }
        // The progress is kept with a stored checkpoint.
        self.flush().await?;
        let Sink::Saved(thread, _) = &*self else {
            return Ok(());
        };
        let Some(head) = thread.head() else {
            return Ok(());
        };
        let entry = super::pending::joins_entry(&joins.entry(graph, fired));
        thread
            .saver()
            .put_pending(thread.thread_id(), head.id, vec![entry])
            .await?;
        Ok(())
    }
}

impl<'a, S, C> IntoFuture for Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    type Output = Result<RunOutput<S>, GraphError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.traced())
    }
}

/// Where the loop is: the tasks to run next and what the first of them
/// resumes from.
struct Progress<U> {
    tasks: Vec<Task>,
    joins: JoinState,
    steps: usize,
    /// The last step number a node step may have: past it, the recursion
    /// limit is hit (see [`recursion_stop`]).
    stop: i64,
    /// The first step resumes a pause: its breakpoints are passed.
    resuming: bool,
    /// What the first step picks up, when it resumes a pause.
    resumed: Option<Resumed<U>>,
}

impl<U> Progress<U> {
    /// A run at its start: no task yet, no join waiting.
    fn new<S: AgentState>(graph: &Graph<S>) -> Self {
        Progress {
            tasks: Vec::new(),
            joins: JoinState::new(graph),
            steps: 0,
            stop: i64::MAX,
            resuming: false,
            resumed: None,
        }
    }
}

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// The run, sending its events into `channel`.
    pub(crate) fn streaming(mut self, channel: Arc<Channel<S>>) -> Self {
        self.stream = Some(channel);
        self
    }

    /// Whether the run streams `mode`.
    fn streams(&self, mode: StreamMode) -> bool {
        self.stream
            .as_ref()
            .is_some_and(|c| c.modes().contains(mode))
    }

    /// Whether nothing watches the run (no step callback, no stream): a
    /// plain run's step then applies its one node's update as it is.
    fn shows_nothing(&self) -> bool {
        self.observer.is_none() && self.stream.is_none()
    }

    /// Whether a step's writes are copied for the step callback (the
    /// `updates` stream gets each task's as it ends).
    fn observed(&self) -> bool {
        self.observer.is_some()
    }

    /// The run in its `graph.run` span (thread id, steps, duration), when
    /// a subscriber listens.
    pub(crate) async fn traced(self) -> Result<RunOutput<S>, GraphError> {
        let span = trace::run_span(self.thread.as_ref().map(|(_, id)| id.as_str()));
        if span.is_disabled() {
            return self.execute().await;
        }
        let timed = trace::Timed::new(span.clone());
        let out = self.execute().instrument(span).await;
        if let Ok(out) = &out {
            timed.span().record("steps", out.steps);
        }
        out
    }

    async fn execute(mut self) -> Result<RunOutput<S>, GraphError> {
        // Before the thread is opened, which stores a fork for time travel:
        // a refused input leaves nothing behind.
        if let Input::Update(update) = &self.input {
            update
                .check_input(false)
                .map_err(|error| GraphError::InvalidInput { error })?;
        }
        let mut sink = self.open().await?;
        let ran = self.drive(&mut sink).await;
        // However the run ends, what it applied is stored now (under
        // `Durability::Exit`; nothing is left to store under `Sync`). A
        // failure to store is the run's error unless it failed already.
        let flushed = sink.flush().await;
        if flushed.is_ok() && !self.errors.is_empty() {
            // The run fails with its task's error whether or not this is
            // kept: only what a snapshot shows is lost.
            if let Err(error) = sink.keep_pending(std::mem::take(&mut self.errors)).await {
                tracing::warn!(%error, "the errors of the failed tasks were not kept");
            }
        }
        let (at, paused) = ran?;
        flushed?;
        Ok(self.output(sink, &at, paused))
    }

    /// The run's steps, from its input to where it ends: where it is then,
    /// and where it paused on interrupts, if it did.
    async fn drive(
        &mut self,
        sink: &mut Sink<'a, S, C>,
    ) -> Result<(Progress<S::Update>, Paused<S>), GraphError> {
        let input = std::mem::replace(&mut self.input, Input::Resume);
        let stop = recursion_stop(sink.next_step(), self.graph.recursion_limit);
        let mut at = self.start(&mut *sink, input).await?;
        at.stop = stop;
        if let (true, Some(channel)) = (self.streams(StreamMode::Messages), &self.stream) {
            let fields = returned::message_fields::<S>();
            channel.seen(returned::state_ids(sink.state(), &fields));
        }
        let mut routed = Routed::default();
        let mut next: Vec<Task> = Vec::new();
        let mut out = StepOut::default();
        // A plain run that shows nothing and has no joins: its steps of one
        // plain sync node run by `run_direct`, as the nodes would by hand.
        let plain = matches!(sink, Sink::Plain { .. }) && self.shows_nothing();
        let direct = plain && self.graph.joins.is_empty();
        while !at.tasks.is_empty() {
            let mut ran = false;
            if direct && at.resumed.is_none() {
                match self.run_direct(&mut *sink, &mut at, &mut out, &mut routed)? {
                    Direct::Stopped => break,
                    Direct::Ran => ran = true,
                    Direct::Yield if at.tasks.is_empty() => break,
                    Direct::Yield => {}
                }
            }
            if !ran && self.stop_before_step(&at, sink.next_step())? {
                if let (true, Some(channel)) = (self.at_breakpoint(&at), &self.stream) {
                    channel.at_breakpoint().await;
                }
                break;
            }
            let step = sink.next_step();
            if let Some(channel) = &self.stream {
                let state = sink.shared();
                channel
                    .tasks_start(self.graph, step, &at.tasks, &state)
                    .await;
            }
            let span = trace::Timed::new(trace::step_span(self.graph, step, &at.tasks));
            // A step of one plain sync node runs without a future of its own;
            // in a plain run that shows nothing, its update applies as it is.
            let fast = match at.resumed {
                _ if ran => Fast::Ran,
                None => span.span().in_scope(|| {
                    fast_path(self.graph, &at.tasks, sink.state(), step, &mut out, plain)
                }),
                Some(_) => Fast::No,
            };
            let (routing, observed) = match fast {
                Fast::Update(update) => {
                    let node = at.tasks[0].node;
                    sink.apply_one_plain(update)
                        .map_err(|error| GraphError::InvalidUpdate {
                            step,
                            nodes: vec![self.graph.names[node].clone()],
                            error,
                        })?;
                    (Vec::new(), None)
                }
                fast => {
                    let done = self
                        .finish_step(&mut *sink, &mut at, fast, &mut out, &span)
                        .await?;
                    match done {
                        Ok(done) => done,
                        Err(paused) => return Ok((at, paused)),
                    }
                }
            };
            let fired = self.route_step(&*sink, &mut at, &routing, &mut routed, &mut next)?;
            if !self.graph.joins.is_empty() {
                sink.keep_joins(self.graph, &at.joins, &fired).await?;
            }
            if !self.shows_nothing() {
                self.emit(&*sink, observed, &next).await;
            }
            let after = at.tasks.iter().any(|t| self.graph.after[t.node]);
            std::mem::swap(&mut at.tasks, &mut next);
            at.resuming = false;
            if after && !at.tasks.is_empty() {
                if let Some(channel) = &self.stream {
                    channel.at_breakpoint().await;
                }
                break;
            }
        }
        Ok((at, Paused::default()))
    }

    /// Runs the steps of one plain sync node (no retry, no `Send` input) of
    /// a plain run that shows nothing, while no `tracing` subscriber records
    /// its step and node spans: each node is called and its update applied
    /// in place, as by hand, with no span, write record or task list made.
    /// Stops before a step it does not run ([`Direct::Yield`]: the caller
    /// runs it), where the general loop would stop ([`Direct::Stopped`]),
    /// or after calling a node whose output is not a plain update (its
    /// writes or failure in `out`: [`Direct::Ran`]).
    fn run_direct(
        &self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        out: &mut StepOut<S::Update>,
        routed: &mut Routed,
    ) -> Result<Direct, GraphError> {
        let graph = self.graph;
        let Sink::Plain { state, next_step } = sink else {
            return Ok(Direct::Yield);
        };
        let limits = self.direct_limits();
        let mut node = match self.direct_node(at, *next_step, limits)? {
            Ok(node) => node,
            Err(left) => return Ok(left),
        };
        // A plain run that shows nothing lends its state to no one while
        // the loop runs: it is made its own once, not at every step.
        let state = Arc::make_mut(state);
        let mut last = LastRoute::default();
        loop {
            let NodeFn::Sync(f) = &graph.fns[node] else {
                unreachable!("direct_node gives a plain sync node")
            };
            let step = *next_step;
            // Applied where the node's output lies: the update is not
            // moved out of it first.
            let applied = match f(state) {
                Ok(NodeOutput::Update(update)) => state.apply(update),
                Ok(NodeOutput::Nothing) => state.apply(S::Update::default()),
                other => {
                    fast_outcome(&graph.names[node], step, other, out);
                    return Ok(Direct::Ran);
                }
            };
            applied.map_err(|error| GraphError::InvalidUpdate {
                step,
                nodes: vec![graph.names[node].clone()],
                error,
            })?;
            *next_step += 1;
            at.steps += 1;
            at.resuming = false;
            self.direct_next(node, state, &mut last, at, routed)?;
            if graph.after[node] && !at.tasks.is_empty() {
                return Ok(Direct::Stopped);
            }
            node = match self.direct_node(at, *next_step, limits)? {
                Ok(node) => node,
                Err(left) => return Ok(left),
            };
        }
    }

    /// What [`stop_before_step`](Self::stop_before_step) checks that does
    /// not change while [`run_direct`](Self::run_direct) runs: the step
    /// count it may not reach without a stop (`stop_after`) and whether any
    /// node has a breakpoint before it.
    fn direct_limits(&self) -> (usize, bool) {
        let limit = self.stop_after.unwrap_or(usize::MAX);
        (limit, self.graph.before.contains(&true))
    }

    /// The node of the next step if `run_direct` runs it (one plain sync
    /// node with no retry, while no span can be recorded, and the run
    /// does not stop before it), else where it leaves the loop.
    #[inline(always)]
    fn direct_node(
        &self,
        at: &Progress<S::Update>,
        step: i64,
        (limit, breakpoints): (usize, bool),
    ) -> Result<Result<usize, Direct>, GraphError> {
        let graph = self.graph;
        let node = match at.tasks.as_slice() {
            [Task { node, send: None }] => *node,
            _ => return Ok(Err(Direct::Yield)),
        };
        let (NodeFn::Sync(_), None) = (&graph.fns[node], &graph.retry[node]) else {
            return Ok(Err(Direct::Yield));
        };
        if !trace::spans_off() {
            return Ok(Err(Direct::Yield));
        }
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(GraphError::Cancelled);
        }
        let may_stop = at.steps >= limit
            || step > at.stop
            || (breakpoints && graph.before[node] && !at.resuming);
        if may_stop && self.stop_before_step(at, step)? {
            return Ok(Err(Direct::Stopped));
        }
        Ok(Ok(node))
    }

    /// The tasks after a direct step of `node`: its fixed next nodes, or
    /// where its router leads (a sole router's repeated answer through
    /// `last`), else its edges routed as the general loop routes them.
    fn direct_next(
        &self,
        node: usize,
        state: &S,
        last: &mut LastRoute,
        at: &mut Progress<S::Update>,
        routed: &mut Routed,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        match graph.fixed_next(node) {
            Some(&[one]) => at.tasks[0].node = one,
            Some(fixed) => {
                at.tasks.clear();
                at.tasks
                    .extend(fixed.iter().map(|&node| Task { node, send: None }));
            }
            None => match graph.sole_router(node) {
                Some(r) => match graph.route_sole(node, r, state, last, routed)? {
                    Hop::One(Some(next)) => at.tasks[0].node = next,
                    Hop::One(None) => at.tasks.clear(),
                    Hop::Routed => graph.settle(routed, &mut at.tasks),
                },
                None => {
                    routed.clear();
                    graph.route_into(Some(node), &[], &[], state, routed)?;
                    graph.settle(routed, &mut at.tasks);
                }
            },
        }
        Ok(())
    }

    /// A step the fast path did not apply: its tasks run (unless the fast
    /// path ran its one node) in the step's span, then its writes apply.
    /// `Ok(Err(..))`: the step paused on interrupts instead.
    async fn finish_step(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        fast: Fast<S::Update>,
        out: &mut StepOut<S::Update>,
        span: &trace::Timed,
    ) -> Result<Result<(Routing, Observed<S>), Paused<S>>, GraphError> {
        let step = sink.next_step();
        if let Fast::No = fast {
            // What the step may leave pending is kept with a stored
            // checkpoint; any other step stays unsaved under `Exit`/`Async`.
            if self.graph.may_leave_pending(&at.tasks) {
                sink.flush().await?;
            }
            let plan = StepPlan {
                step,
                store: sink.store(),
                resumed: at.resumed.take(),
                cancel: self.cancel.clone(),
                stream: self.stream.clone(),
                scope: TaskScope {
                    context: self.context.clone(),
                    remaining: self.graph.recursion_limit.saturating_sub(at.steps),
                },
            };
            run_step(self.graph, &at.tasks, sink.shared(), plan, out)
                .instrument(span.span().clone())
                .await?;
        } else if let Some(channel) = &self.stream {
            fast_ended(
                self.graph,
                &at.tasks,
                step,
                Some(channel),
                &sink.shared(),
                out,
            );
        }
        if let Some(error) = out.failed.take() {
            self.keep_errors(sink, at, out);
            return Err(error);
        }
        if !out.interrupts.is_empty() {
            return self.pause(sink, at, out).await.map(Err);
        }
        let routing = self.routing(out)?;
        let observed = self.observed().then(|| out.writes.clone());
        sink.apply(Source::Loop, &mut out.writes, self.durability)
            .await?;
        Ok(Ok((routing, observed)))
    }

    /// A step some of whose tasks paused: what the run returns. Those that
    /// finished are kept (as pending writes, on a thread) for the resume;
    /// the output shows the state with their writes, and `next` only the
    /// tasks still to run, as LangGraph's `invoke` and `values` show them.
    async fn pause(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &Progress<S::Update>,
        out: &mut StepOut<S::Update>,
    ) -> Result<Paused<S>, GraphError> {
        let step = sink.next_step();
        let next = (at.tasks.iter().enumerate())
            .filter(|&(k, _)| out.task_writes(k).is_empty())
            .map(|(_, t)| self.graph.names[t.node].clone())
            .collect();
        let interrupts = std::mem::take(&mut out.interrupts);
        if out.writes.is_empty() {
            let state = None;
            return Ok(Paused {
                interrupts,
                state,
                next,
            });
        }
        let wrote = out.writes.iter().any(|w| !StateUpdate::is_empty(&w.update));
        let mut state = sink.state().clone();
        let updates = out.writes.iter_mut().map(|w| std::mem::take(&mut w.update));
        let staged = state.stage(updates, StepRule::Superstep);
        let staged = staged.map_err(|error| GraphError::InvalidUpdate {
            step,
            nodes: out.writes.iter().map(|w| w.node.clone()).collect(),
            error,
        })?;
        state.commit(staged);
        let state = Arc::new(state);
        if let (true, Some(channel)) = (wrote, &self.stream) {
            channel
                .paused_with_writes(step - 1, Arc::clone(&state))
                .await;
        }
        Ok(Paused {
            interrupts,
            state: Some(state),
            next,
        })
    }

    /// Notes the errors of a step's failed tasks, to keep with the thread's
    /// head once the run has stored what it ran (a snapshot shows them).
    fn keep_errors(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &Progress<S::Update>,
        out: &mut StepOut<S::Update>,
    ) {
        if let Sink::Saved(..) = sink {
            let graph = self.graph;
            self.errors = (out.errors.drain(..))
                .map(|(k, error)| pending::error_entry(&graph.task_key(&at.tasks[k]), &error))
                .collect();
        }
    }

    /// Whether the loop stops before running `at.tasks` as step `step`:
    /// cancelled (an error), at the step limit, at the recursion limit (an
    /// error), or at a breakpoint.
    fn stop_before_step(&self, at: &Progress<S::Update>, step: i64) -> Result<bool, GraphError> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(GraphError::Cancelled);
        }
        if self.stop_after.is_some_and(|limit| at.steps >= limit) {
            return Ok(true);
        }
        if step > at.stop {
            return Err(GraphError::RecursionLimit {
                limit: self.graph.recursion_limit,
                next: self.graph.names_of(&at.tasks),
            });
        }
        Ok(self.at_breakpoint(at))
    }

    /// Whether `at.tasks` wait at a breakpoint (one passed by resuming it
    /// does not count).
    fn at_breakpoint(&self, at: &Progress<S::Update>) -> bool {
        !at.resuming && at.tasks.iter().any(|t| self.graph.before[t.node])
    }

    /// Tells the stream the state a stored thread resumes from, and its
    /// checkpoint with what an earlier attempt at its tasks left (that of
    /// a fork is reported as the fork).
    async fn resumed(&mut self, sink: &Sink<'a, S, C>, at: &Progress<S::Update>) {
        let (Some(channel), Some(head)) = (&self.stream, sink.head()) else {
            return;
        };
        let none = Pending::default();
        let pending = at.resumed.as_ref().map_or(&none, |r| &r.pending);
        let tasks = match self.from {
            None => snapshot_tasks(self.graph, &at.tasks, pending, false),
            Some(_) => Vec::new(),
        };
        let forked = self.from.is_some();
        channel.resumed(head, sink.shared(), forked, tasks).await;
    }

    /// The gotos and `Send`s of each task's writes, checked; empty when
    /// no write has any (most steps: then nothing is copied).
    fn routing(&self, out: &StepOut<S::Update>) -> Result<Routing, GraphError> {
        let directed = out
            .writes
            .iter()
            .any(|w| !w.goto.is_empty() || !w.send.is_empty());
        if !directed {
            return Ok(Vec::new());
        }
        for w in &out.writes {
            self.graph.check_targets(&w.node, &w.goto, &w.send)?;
        }
        Ok(out
            .owners
            .windows(2)
            .map(|k| {
                let ws = &out.writes[k[0]..k[1]];
                let goto = ws.iter().flat_map(|w| w.goto.iter().cloned()).collect();
                let send = ws.iter().flat_map(|w| w.send.iter().cloned()).collect();
                (goto, send)
            })
            .collect())
    }

    /// Routes from an applied step: `next` gets the tasks of the following
    /// step. Returns the joins that fired, for keeping their progress.
    fn route_step(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        routing: &Routing,
        routed: &mut Routed,
        next: &mut Vec<Task>,
    ) -> Result<Vec<usize>, GraphError> {
        let graph = self.graph;
        if let ([task], true) = (&at.tasks[..], routing.is_empty()) {
            if let Some(fixed) = graph.fixed_next(task.node) {
                next.clear();
                next.extend(fixed.iter().map(|&node| Task { node, send: None }));
                at.steps += 1;
                return Ok(Vec::new());
            }
        }
        let fired = at.joins.finish(graph, at.tasks.iter().map(|t| t.node));
        routed.clear();
        for (k, task) in at.tasks.iter().enumerate() {
            let (goto, send) = routing
                .get(k)
                .map_or((&[][..], &[][..]), |(g, s)| (g.as_slice(), s.as_slice()));
            graph.route_into(Some(task.node), goto, send, sink.state(), routed)?;
        }
        routed.pull.extend_from_slice(&fired);
        graph.settle(routed, next);
        at.steps += 1;
        Ok(fired)
    }

    /// The thread (or none), forked first for time travel.
    async fn open(&mut self) -> Result<Sink<'a, S, C>, GraphError> {
        match (self.thread.take(), self.from) {
            (None, None) => Ok(Sink::Plain {
                state: Arc::new(S::default()),
                next_step: -1,
            }),
            (None, Some(_)) => Err(GraphError::NoThread {
                what: "time travel (`from_checkpoint`)",
            }),
            (Some((saver, id)), None) => Ok(Sink::Saved(Thread::open(saver, id).await?, None)),
            (Some((saver, id)), Some(from)) => {
                Ok(Sink::Saved(Thread::fork(saver, id, from).await?, None))
            }
        }
    }

    /// Applies the input and finds the first tasks.
    async fn start(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        input: Input<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let mut at = Progress::new(graph);
        match input {
            Input::State(state) => {
                self.start_state(sink, state).await?;
                self.start_fresh(sink, &mut at, None).await?;
            }
            Input::Update(update) => {
                self.report_fork(sink, graph).await?;
                if let Some(stopped) = self.stopped(sink).await? {
                    return self.continue_with(sink, stopped, update).await;
                }
                let mut writes = vec![NodeWrite::new(START, update)];
                let observed = self.observed().then(|| writes.clone());
                sink.hold_input(&mut writes)?;
                self.input_checkpoint(sink, self.durability).await?;
                sink.apply(Source::Loop, &mut writes, self.durability)
                    .await?;
                self.start_fresh(sink, &mut at, observed).await?;
            }
            Input::Resume => return self.start_resume(sink).await,
            Input::ResumeWith(resume) => {
                let Sink::Saved(thread, _) = &*sink else {
                    return Err(GraphError::NoThread {
                        what: "resuming with values",
                    });
                };
                let point = resume_point(graph, thread).await?;
                let pending = point.interrupts(graph);
                let answers = resolve(resume, &pending, thread.thread_id())?;
                at = progress_from(point);
                if let Some(resumed) = &mut at.resumed {
                    resumed.answers = answers;
                }
                self.resumed(sink, &at).await;
                self.report_fork(sink, graph).await?;
            }
        }
        Ok(at)
    }

    /// `Input::Resume`: an input stored but not applied is applied first;
    /// else the thread goes on with the tasks it stopped before. A thread
    /// never written has nothing to resume (LangGraph: `EmptyInputError`).
    async fn start_resume(
        &mut self,
        sink: &mut Sink<'a, S, C>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let Sink::Saved(thread, _) = &*sink else {
            return Err(GraphError::NoThread {
                what: "resuming (`Input::Resume`)",
            });
        };
        if thread.head().is_none() {
            return Err(GraphError::NothingToResume {
                thread_id: thread.thread_id().to_owned(),
            });
        }
        if let Some((_, held)) = thread.held_input().await? {
            self.report_fork(sink, graph).await?;
            return self.apply_held(sink, held).await;
        }
        let at = progress_from(resume_point(graph, thread).await?);
        self.resumed(sink, &at).await;
        self.report_fork(sink, graph).await?;
        Ok(at)
    }

    /// Time travel: tells the step callback and the `checkpoints` stream
    /// about the `fork` checkpoint the run stored (LangGraph streams it
    /// after the state it continues from; no `values` of its own).
    async fn report_fork(
        &mut self,
        sink: &Sink<'a, S, C>,
        graph: &Graph<S>,
    ) -> Result<(), GraphError> {
        let (Some(_), Sink::Saved(thread, _)) = (self.from, sink) else {
            return Ok(());
        };
        let Some(head) = thread.head().filter(|h| h.source == Source::Fork) else {
            return Ok(());
        };
        let at = resume_point(graph, thread).await?;
        let tasks = snapshot_tasks(graph, &at.tasks, &at.pending, false);
        self.report_checkpoint(sink, head.step, Source::Fork, Some(head), tasks)
            .await;
        Ok(())
    }

    /// Tells the step callback and the `checkpoints` stream (when it was
    /// stored) about a checkpoint that no node wrote (a fork, a run's
    /// input): its state and the tasks that run next; no writes, no
    /// `values`.
    async fn report_checkpoint(
        &mut self,
        sink: &Sink<'a, S, C>,
        step: i64,
        source: Source,
        checkpoint: Option<&CheckpointMeta>,
        tasks: Vec<SnapshotTask>,
    ) {
        let next: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
        if let Some(observer) = &mut self.observer {
            observer(&StepEvent {
                step,
                source,
                writes: &[],
                state: sink.state(),
                checkpoint,
                next: &next,
            });
        }
        if let (Some(channel), Some(head)) = (&self.stream, checkpoint) {
            channel.forked(head, sink.shared(), tasks).await;
        }
    }

    /// A run's input checkpoint, as LangGraph stores it: the state before
    /// the input applies (source `input`, no writes, `__start__` next);
    /// the step after it applies the input. Reported to the step callback
    /// and the `checkpoints` stream (no `values`: LangGraph streams the
    /// state with the input applied). Stored as `durability` stores steps.
    async fn input_checkpoint(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        durability: Durability,
    ) -> Result<(), GraphError> {
        // What it can refuse is the input it holds: `__start__`'s write.
        sink.apply(Source::Input, &mut Vec::new(), durability)
            .await
            .map_err(|e| match e {
                GraphError::InvalidUpdate { step, error, .. } => GraphError::InvalidUpdate {
                    step,
                    nodes: vec![START.to_owned()],
                    error,
                },
                other => other,
            })?;
        let step = sink.next_step() - 1;
        // LangGraph lists the input as a task of `__start__`.
        let start = SnapshotTask {
            id: START.to_owned(),
            name: START.to_owned(),
            error: None,
            interrupts: Vec::new(),
            result: None,
            state: None,
        };
        self.report_checkpoint(sink, step, Source::Input, sink.head(), vec![start])
            .await;
        Ok(())
    }

    /// A whole state as a new thread's (or a plain run's) first state.
    async fn start_state(&mut self, sink: &mut Sink<'a, S, C>, state: S) -> Result<(), GraphError> {
        match sink {
            Sink::Plain { .. } => {
                self.input_checkpoint(sink, Durability::Sync).await?;
                let Sink::Plain {
                    state: s,
                    next_step,
                } = sink
                else {
                    unreachable!("a plain sink stays plain")
                };
                *s = Arc::new(state);
                *next_step += 1;
            }
            Sink::Saved(thread, _) => {
                if thread.head().is_some() {
                    return Err(GraphError::ThreadExists {
                        thread_id: thread.thread_id().to_owned(),
                    });
                }
                let step = thread.next_step() + 1;
                let refused = |e| match e {
                    CheckpointError::Rejected(error) => GraphError::InvalidUpdate {
                        step,
                        nodes: vec![START.to_owned()],
                        error,
                    },
                    other => GraphError::Checkpoint(other),
                };
                let snapshot = Thread::<S, C>::encode(&state).map_err(refused)?;
                thread.hold_first_state(&snapshot);
                // A new thread's first state is stored as the run starts,
                // whatever its durability.
                self.input_checkpoint(sink, Durability::Sync).await?;
                Self::store_first_state(sink, state, snapshot)
                    .await
                    .map_err(refused)?;
            }
        }
        Ok(())
    }

    /// Stores a new thread's first state (its snapshot `snapshot`) as the
    /// step after its `input` checkpoint.
    async fn store_first_state(
        sink: &mut Sink<'a, S, C>,
        state: S,
        snapshot: String,
    ) -> Result<(), CheckpointError> {
        let Sink::Saved(thread, _) = sink else {
            unreachable!("a stored sink stays stored")
        };
        thread.save_state(Source::Loop, state, snapshot).await?;
        Ok(())
    }

    /// The first step of a run from START, once its input is applied.
    async fn start_fresh(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        observed: Option<Vec<NodeWrite<S::Update>>>,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        let mut routed = Routed::default();
        graph.route_into(None, &[], &[], sink.state(), &mut routed)?;
        graph.settle(&mut routed, &mut at.tasks);
        sink.keep_joins(graph, &at.joins, &[]).await?;
        at.steps = 1;
        self.emit(sink, observed, &at.tasks).await;
        Ok(())
    }

    /// Where a thread stopped midway, if it did: `None` for a plain run, a
    /// new thread, or a finished one.
    async fn stopped(
        &mut self,
        sink: &Sink<'a, S, C>,
    ) -> Result<Option<At<S::Update>>, GraphError> {
        let Sink::Saved(thread, _) = sink else {
            return Ok(None);
        };
        let point = resume_point(self.graph, thread).await?;
        if point.tasks.is_empty() {
            return Ok(None);
        }
        let pending = point.interrupts(self.graph);
        if !pending.is_empty() {
            return Err(GraphError::Paused {
                thread_id: thread.thread_id().to_owned(),
                pending: pending.into_iter().map(|i| i.id).collect(),
            });
        }
        Ok(Some(point))
    }

    /// Input for a thread stopped midway: stored as an input checkpoint,
    /// then a step whose routing is the tasks it stopped before, which
    /// then run.
    async fn continue_with(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        point: At<S::Update>,
        update: S::Update,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let mut write = NodeWrite::new(START, update);
        for task in &point.tasks {
            let name = &graph.names[task.node];
            match &task.send {
                None => write.goto.push(name.clone()),
                Some((_, arg)) => write.send.push(super::Send::from_arg(name, arg.clone())),
            }
        }
        let observed = self.observed().then(|| vec![write.clone()]);
        let mut writes = vec![write];
        sink.hold_input(&mut writes)?;
        self.input_checkpoint(sink, self.durability).await?;
        self.carry_on(sink, point, writes, observed).await
    }

    /// Applies the input `writes` of a thread stopped at `point` (their
    /// routing its tasks), which then run.
    async fn carry_on(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        point: At<S::Update>,
        mut writes: Vec<NodeWrite<S::Update>>,
        observed: Observed<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        sink.apply(Source::Loop, &mut writes, self.durability)
            .await?;
        let mut at = progress_from(point);
        at.resumed = None;
        at.resuming = true;
        at.steps = 1;
        sink.keep_joins(graph, &at.joins, &[]).await?;
        self.emit(sink, observed, &at.tasks).await;
        Ok(at)
    }

    /// A resume from a run's `input` checkpoint whose input was not
    /// applied (a crash came between the two): applies the input it holds
    /// and goes on as the interrupted run would have.
    async fn apply_held(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        held: HeldInput<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let mut at = Progress::new(self.graph);
        match held {
            HeldInput::State(state) => {
                let snapshot = Thread::<S, C>::encode(&state)?;
                Self::store_first_state(sink, state, snapshot).await?;
                self.start_fresh(sink, &mut at, None).await?;
            }
            HeldInput::Writes(mut writes) => {
                let observed = self.observed().then(|| writes.clone());
                // Where the thread was when the input came.
                if let Some(point) = self.stopped(sink).await? {
                    return self.carry_on(sink, point, writes, observed).await;
                }
                sink.apply(Source::Loop, &mut writes, self.durability)
                    .await?;
                self.start_fresh(sink, &mut at, observed).await?;
            }
        }
        Ok(at)
    }

    /// What the run returns: where it ended, or, paused on interrupts,
    /// the state with the finished tasks' writes and the tasks still to run.
    fn output(
        &self,
        sink: Sink<'a, S, C>,
        at: &Progress<S::Update>,
        paused: Paused<S>,
    ) -> RunOutput<S> {
        let checkpoint = sink.head().cloned();
        let unwrap = |state: Arc<S>| Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone());
        let next = match paused.interrupts.is_empty() {
            true => self.graph.names_of(&at.tasks),
            false => paused.next,
        };
        let state = match (paused.state, sink) {
            (Some(state), _) => unwrap(state),
            (None, Sink::Plain { state, .. }) => unwrap(state),
            (None, Sink::Saved(thread, _)) => thread.into_state(),
        };
        RunOutput {
            state,
            next,
            steps: at.steps,
            checkpoint,
            interrupts: paused.interrupts,
        }
    }

    /// Tells the step callback and the stream about the step just applied
    /// (its writes, when they were copied for the callback).
    async fn emit(
        &mut self,
        sink: &Sink<'a, S, C>,
        writes: Option<Vec<NodeWrite<S::Update>>>,
        next: &[Task],
    ) {
        let step = sink.next_step() - 1;
        if let Some(observer) = &mut self.observer {
            let names = self.graph.names_of(next);
            observer(&StepEvent {
                step,
                source: Source::Loop,
                writes: writes.as_deref().unwrap_or(&[]),
                state: sink.state(),
                checkpoint: sink.head(),
                next: &names,
            });
        }
        if let Some(channel) = &self.stream {
            let news = StepNews {
                step,
                state: sink.shared(),
                checkpoint: sink.head(),
                next,
            };
            channel.publish(self.graph, news).await;
        }
    }
}

/// Where [`Run::run_direct`] left the loop.
enum Direct {
    /// The next step is not one it runs (or there is none).
    Yield,
    /// The run stops before its next step (a limit, a breakpoint, an
    /// `interrupt_after` node).
    Stopped,
    /// It called the node of the next step, whose output is not a plain
    /// update: the step goes on in the general loop from its writes.
    Ran,
}

/// The last step number a run that starts at step `first` (the next step
/// of its thread: -1 for a new one) may run a node step as, under recursion
/// limit `limit`: LangGraph's `stop = step + recursion_limit + 1`. A run
/// from an input thus runs `limit` node steps (its input takes two step
/// numbers); a run resuming a stored step, `limit` + 2, as LangGraph's.
fn recursion_stop(first: i64, limit: usize) -> i64 {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    first.saturating_add(limit).saturating_add(1)
}

fn progress_from<U>(point: At<U>) -> Progress<U> {
    Progress {
        tasks: point.tasks,
        joins: point.joins,
        steps: 0,
        stop: i64::MAX,
        resuming: true,
        resumed: Some(Resumed {
            pending: point.pending,
            answers: HashMap::new(),
        }),
    }
}

/// The answers by interrupt id, checked against the pending interrupts.
fn resolve(
    resume: Resume,
    pending: &[Interrupt],
    thread_id: &str,
) -> Result<HashMap<String, Value>, GraphError> {
    if let Some(error) = resume.error {
        return Err(GraphError::ResumeValue { error });
    }
    if pending.is_empty() {
        return Err(GraphError::NotInterrupted {
            thread_id: thread_id.to_owned(),
        });
    }
    let ids: Vec<String> = pending.iter().map(|i| i.id.clone()).collect();
    let mut answers: HashMap<String, Value> = HashMap::new();
    for (id, value) in resume.by_id {
        if !ids.contains(&id) {
            return Err(GraphError::UnknownInterrupt { id, pending: ids });
        }
        answers.insert(id, value);
    }
    if let Some(value) = resume.single {
        if ids.len() != 1 {
            return Err(GraphError::AmbiguousResume { pending: ids });
        }
        answers.insert(ids[0].clone(), value);
    }
    Ok(answers)
}
