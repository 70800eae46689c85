//! One invocation of a graph: the superstep loop, with or without a
//! checkpointer.

mod direct;
mod drive;
mod output;
mod sink;
mod start;

use direct::Direct;
use sink::Sink;

use std::any::Any;
use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::context::{Interrupt, Resume, RunContext, SharedStore, TaskScope};
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
use super::tasks::{snapshot_tasks, SnapshotTask};
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
    /// it ([`GraphError::Paused`]): answer them first. An update writing a
    /// field the input may not set (`omit_from_input`, `private`) is
    /// refused ([`GraphError::InvalidInput`]) before anything is stored.
    Update(S::Update),
    /// Nothing new: continue a thread from its last saved step (after a
    /// crash, a breakpoint or a [`stop_after`](Run::stop_after)). A
    /// finished thread stays as it is; nodes paused on interrupts run
    /// again and pause again. An input stored but not applied (a crash
    /// came between its `input` checkpoint and the step applying it) is
    /// applied first, and the run goes on as the interrupted one would.
    /// A thread never written is [`GraphError::NothingToResume`].
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

/// Every field, so a step can be printed with `{:?}` while debugging an
/// observer (`S` and its update are `Debug` when derived).
impl<S> std::fmt::Debug for StepEvent<'_, S>
where
    S: AgentState + std::fmt::Debug,
    S::Update: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepEvent")
            .field("step", &self.step)
            .field("source", &self.source)
            .field("writes", &self.writes)
            .field("state", &self.state)
            .field("checkpoint", &self.checkpoint)
            .field("next", &self.next)
            .finish()
    }
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
    /// The run's own store, over its graph's ([`Run::store`]).
    store: Option<SharedStore>,
    /// Breakpoints of this run on top of the graph's.
    breaks: RunBreaks,
    /// This run's recursion limit, in place of its graph's.
    recursion_limit: Option<usize>,
    /// The errors of the tasks that failed the run, kept with the thread's
    /// head when it ends.
    errors: Vec<PendingWrite>,
}

/// Breakpoints given to one run (LangGraph's `interrupt_before` /
/// `interrupt_after` passed to `invoke`), by node index; empty when the
/// run adds none. A name that is no node fails the run when it starts.
#[derive(Default)]
struct RunBreaks {
    before: Vec<bool>,
    after: Vec<bool>,
    unknown: Option<GraphError>,
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
    /// (PostgreSQL) overlaps the round trip with the next step, unless the
    /// run reports its checkpoints (a step callback, the `checkpoints` or
    /// `debug` stream modes): a reported checkpoint names its own step, so
    /// its store is waited for before it is reported.
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
            store: None,
            breaks: RunBreaks::default(),
            recursion_limit: None,
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
            store: self.store,
            breaks: self.breaks,
            recursion_limit: self.recursion_limit,
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

    /// Bounds this run at `limit` node steps, in place of its graph's
    /// [`with_recursion_limit`](super::StateGraph::with_recursion_limit):
    /// LangGraph's `config={"recursion_limit": n}` given to one `invoke`.
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = Some(limit);
        self
    }

    /// The recursion limit this run keeps to.
    fn limit(&self) -> usize {
        self.recursion_limit.unwrap_or(self.graph.recursion_limit)
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

    /// Gives this run `store` instead of its graph's
    /// ([`Graph::with_store`]): what a server does to give every graph it
    /// serves one store, or a test to look at what a run wrote. Its nodes
    /// read it with [`NodeContext::store`](super::NodeContext::store);
    /// subgraphs get it too.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::graph::{BoxError, Input, NodeContext, StateGraph, START};
    /// use agent_state::store::{MemoryStore, Store, StoreExt};
    /// use agent_state::AgentState;
    /// use serde_json::json;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { note: String }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("note", |s: Arc<S>, ctx: NodeContext| async move {
    ///         let store = ctx.store().ok_or("no store")?;
    ///         store.put(["notes"], "last", json!({ "text": s.note })).await?;
    ///         Ok::<_, BoxError>(SUpdate::new())
    ///     })
    ///     .add_edge(START, "note")
    ///     .compile()?;
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// let input = Input::Update(SUpdate::new().note("hi".to_owned()));
    /// block_on(graph.run(input).store(Arc::clone(&store)))?;
    /// let item = block_on(store.get(["notes"], "last")).unwrap().unwrap();
    /// assert_eq!(item.value["text"], "hi");
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The parent's store handed to a subgraph's run; without one, the
    /// subgraph's own graph's (if any) stays.
    pub(crate) fn shared_store(mut self, store: Option<SharedStore>) -> Self {
        if store.is_some() {
            self.store = store;
        }
        self
    }

    /// Stops the run with [`GraphError::Cancelled`] when `token` is
    /// cancelled, between steps or in the middle of one.
    #[must_use]
    pub fn cancel_on(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Pauses this run before a superstep that would run one of `nodes`,
    /// on top of the graph's own breakpoints (LangGraph's
    /// `interrupt_before` given to one run); [`Input::Resume`] continues.
    /// A name that is not a node fails the run when it starts
    /// ([`GraphError::UnknownPolicyNode`]).
    ///
    /// ```
    /// # use agent_state::checkpoint::{block_on, MemoryCheckpointer};
    /// # use agent_state::graph::{Input, StateGraph, START};
    /// # use agent_state::AgentState;
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct S { n: u32 }
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("a", |s: &S| SUpdate::new().n(s.n + 1))
    ///     .add_node("b", |s: &S| SUpdate::new().n(s.n * 10))
    ///     .add_edge(START, "a")
    ///     .add_edge("a", "b")
    ///     .compile()?;
    /// let saver = MemoryCheckpointer::new();
    /// let run = graph.run(Input::Update(SUpdate::new().n(1)));
    /// let out = block_on(run.on_thread(&saver, "t").interrupt_before(["b"]))?;
    /// assert_eq!((out.state.n, out.next.as_slice()), (2, ["b".to_owned()].as_slice()));
    /// let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t"))?;
    /// assert_eq!(out.state.n, 20);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn interrupt_before<I, N>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let marks = self.mark(nodes, "interrupt_before");
        self.breaks.before = marks;
        self
    }

    /// Pauses this run after a superstep that ran one of `nodes`, once its
    /// step is stored, on top of the graph's own breakpoints (LangGraph's
    /// `interrupt_after` given to one run). A name that is not a node fails
    /// the run when it starts.
    #[must_use]
    pub fn interrupt_after<I, N>(mut self, nodes: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let marks = self.mark(nodes, "interrupt_after");
        self.breaks.after = marks;
        self
    }

    /// The nodes named, by index; an unknown name is kept as the run's
    /// error.
    fn mark<I, N>(&mut self, nodes: I, what: &'static str) -> Vec<bool>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let mut marks = vec![false; self.graph.names.len()];
        for name in nodes {
            match self.graph.index.get(name.as_ref()) {
                Some(&i) => marks[i] = true,
                None if self.breaks.unknown.is_none() => {
                    self.breaks.unknown = Some(GraphError::UnknownPolicyNode {
                        name: name.as_ref().to_owned(),
                        what,
                        nodes: self.graph.names.clone(),
                    });
                }
                None => {}
            }
        }
        marks
    }

    /// Whether the run pauses before node `i` (the graph's breakpoint or
    /// this run's).
    pub(super) fn breaks_before(&self, i: usize) -> bool {
        self.graph.before[i] || self.breaks.before.get(i) == Some(&true)
    }

    /// Whether the run pauses after node `i`.
    pub(super) fn breaks_after(&self, i: usize) -> bool {
        self.graph.after[i] || self.breaks.after.get(i) == Some(&true)
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

    /// Whether a step's checkpoint is reported (to the step callback, or
    /// in `checkpoints` / `debug`): then its store is waited for first,
    /// so the report names it.
    fn shows_checkpoints(&self) -> bool {
        let streamed = self.stream.as_ref().is_some_and(|c| {
            let modes = c.modes();
            modes.contains(StreamMode::Checkpoints) || modes.contains(StreamMode::Debug)
        });
        streamed || self.observer.is_some()
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
        if let Some(unknown) = self.breaks.unknown.take() {
            return Err(unknown);
        }
        // Before the thread is opened, which stores a fork for time travel:
        // a refused input leaves nothing behind.
        if let Input::Update(update) = &self.input {
            update
                .check_input(false)
                .map_err(|error| GraphError::InvalidInput { error })?;
        }
        if self.store.is_none() {
            self.store.clone_from(&self.graph.store);
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
