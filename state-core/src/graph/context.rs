//! What a node that takes a context gets: where it runs, interrupts, and
//! values computed once per step.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::BoxError;
use crate::checkpoint::PendingWrite;
use crate::graph::stream::mode::NodeSink;
use crate::graph::stream::writer::StreamWriter;
use crate::store::Store;

/// A pause of a node, waiting for a value from outside: LangGraph's
/// `Interrupt`. A paused run returns them
/// ([`RunOutput::interrupts`](super::RunOutput::interrupts)); answer them
/// with [`Input::ResumeWith`](super::Input::ResumeWith).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Names the pause within the thread; resume values are given by it.
    /// Opaque: it changes when the thread is edited or forked, since the
    /// paused step then runs anew.
    pub id: String,
    /// The node that paused (inside a subgraph: the subgraph's node).
    pub node: String,
    /// What the node handed out: a question, a draft to approve, ...
    pub value: Value,
}

/// Values for a paused run's interrupts: LangGraph's `Command(resume=..)`.
///
/// ```
/// use agent_state::graph::Resume;
///
/// // The only pending interrupt gets `true`:
/// let one = Resume::value(true);
/// // Several: by id.
/// let many = Resume::new().answer("approve/3/0", true).answer("review[1]/3/0", "ok");
/// # let _ = (one, many);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    pub(crate) single: Option<Value>,
    pub(crate) by_id: BTreeMap<String, Value>,
    pub(crate) error: Option<String>,
}

impl Resume {
    /// No values yet: add them with [`answer`](Self::answer).
    pub fn new() -> Self {
        Self::default()
    }

    /// The value for the one pending interrupt (an error when several are
    /// pending: name them with [`answer`](Self::answer)).
    pub fn value(value: impl Serialize) -> Self {
        let mut resume = Self::default();
        match serde_json::to_value(value) {
            Ok(v) => resume.single = Some(v),
            Err(e) => resume.error = Some(e.to_string()),
        }
        resume
    }

    /// The value for interrupt `id`.
    #[must_use]
    pub fn answer(mut self, id: impl Into<String>, value: impl Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(v) => {
                self.by_id.insert(id.into(), v);
            }
            Err(e) => self.error = Some(e.to_string()),
        }
        self
    }
}

/// The error [`NodeContext::interrupt`] returns when the node is to stop:
/// return it (`?`). Whatever the node returns after it, the task counts as
/// paused (or, for a resume value of the wrong type, failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupted {
    id: String,
    reason: String,
}

impl Interrupted {
    /// The interrupt's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupt `{}`: {}", self.id, self.reason)
    }
}

impl std::error::Error for Interrupted {}

/// How a task's interrupt calls went: what the runtime reads after the
/// node returned.
#[derive(Debug, Clone, Default)]
pub(crate) enum Signal {
    #[default]
    None,
    /// The node paused (a subgraph: its child's interrupts).
    Paused(Vec<Interrupt>),
    /// A resume value did not read as the type the node asked for.
    BadResume {
        id: String,
        expected: &'static str,
        error: String,
    },
    /// The payload did not serialize.
    BadPayload { id: String, error: String },
}

/// The pending writes of a step waiting to be stored, filled by tasks as
/// they go and drained by the runtime.
#[derive(Default)]
pub(crate) struct PendingQueue {
    items: Mutex<Vec<PendingWrite>>,
    waker: Mutex<Option<Waker>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PendingQueue {
    pub(crate) fn push(&self, write: PendingWrite) {
        lock(&self.items).push(write);
        if let Some(waker) = lock(&self.waker).take() {
            waker.wake();
        }
    }

    pub(crate) fn take(&self) -> Vec<PendingWrite> {
        std::mem::take(&mut *lock(&self.items))
    }

    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.items).is_empty()
    }

    pub(crate) fn register(&self, waker: &Waker) {
        *lock(&self.waker) = Some(waker.clone());
    }
}

/// A run's context ([`Run::context`](super::Run::context)), shared by its
/// tasks and subgraphs.
pub(crate) type RunContext = Arc<dyn Any + Send + Sync>;

/// A store as runs hold it: shared by the graph, its runs and their tasks.
pub(crate) type SharedStore = Arc<dyn Store>;

/// What every task of a step is given by its run.
#[derive(Clone, Default)]
pub(crate) struct TaskScope {
    pub(crate) context: Option<RunContext>,
    /// The run's store: its own ([`Run::store`](super::Run::store)), else
    /// its graph's.
    pub(crate) store: Option<SharedStore>,
    /// Supersteps the run may still take after this one.
    pub(crate) remaining: usize,
}

/// What a step gives each of its tasks' contexts: the thread, where
/// `once` values and answers are kept, the run's stream, the run's scope.
pub(crate) struct TaskEnv<'a> {
    pub(crate) thread_id: Option<&'a str>,
    pub(crate) queue: Option<Arc<PendingQueue>>,
    pub(crate) sink: Option<Arc<dyn NodeSink>>,
    pub(crate) scope: TaskScope,
}

/// One task's context, shared by the node's clones of it.
pub(crate) struct TaskCtx {
    pub(crate) thread_id: Option<String>,
    pub(crate) step: i64,
    /// The node's name and the task's key, shared with the graph (made
    /// every step: no strings copied).
    pub(crate) node: Arc<str>,
    pub(crate) task: Arc<str>,
    /// Answers for the task's interrupts, by call order.
    pub(crate) resume: Vec<Value>,
    /// Answers for a subgraph's child, by the child's interrupt ids.
    pub(crate) child_resume: BTreeMap<String, Value>,
    /// Answers for the interrupts of each scope ([`NodeContext::scoped`]),
    /// by call order within the scope.
    pub(crate) scoped_resume: BTreeMap<String, Vec<Value>>,
    calls: AtomicUsize,
    memos: Mutex<HashMap<String, Value>>,
    signal: Mutex<Signal>,
    queue: Option<Arc<PendingQueue>>,
    /// The node's way into the run's stream (sends nothing when the run
    /// is not streamed).
    writer: StreamWriter,
    pub(crate) scope: TaskScope,
    /// The node's output came from its cache (`cache.rs`).
    cached: AtomicBool,
}

impl TaskCtx {
    /// A task's context, made in one go (it is made for every task that
    /// takes one, every step: no builder moving it about).
    pub(crate) fn new(node: Arc<str>, task: Arc<str>, step: i64, env: TaskEnv<'_>) -> Self {
        let writer = StreamWriter::new(env.sink, step, &node, &task);
        Self {
            thread_id: env.thread_id.map(str::to_owned),
            step,
            node,
            task,
            resume: Vec::new(),
            child_resume: BTreeMap::new(),
            scoped_resume: BTreeMap::new(),
            calls: AtomicUsize::new(0),
            memos: Mutex::new(HashMap::new()),
            signal: Mutex::new(Signal::None),
            queue: env.queue,
            writer,
            scope: env.scope,
            cached: AtomicBool::new(false),
        }
    }

    /// Says the node's output came from its cache: its `updates` event is
    /// marked so, as LangGraph marks a cached task's.
    pub(crate) fn mark_cached(&self) {
        self.cached.store(true, Ordering::Relaxed);
    }

    pub(crate) fn was_cached(&self) -> bool {
        self.cached.load(Ordering::Relaxed)
    }

    pub(crate) fn with_memos(self, memos: HashMap<String, Value>) -> Self {
        *lock(&self.memos) = memos;
        self
    }

    /// The id of the task's interrupt number `index`.
    pub(crate) fn interrupt_id(&self, index: usize) -> String {
        format!("{}/{}/{index}", self.task, self.step)
    }

    /// The id of interrupt number `index` of scope `scope` of the task.
    pub(crate) fn scoped_interrupt_id(&self, scope: &str, index: usize) -> String {
        format!("{}/{}/{scope}:{index}", self.task, self.step)
    }

    /// The scope and index an interrupt id of this task's step names, for
    /// a scoped interrupt.
    pub(crate) fn parse_scoped_id<'a>(&self, id: &'a str) -> Option<(&'a str, usize)> {
        let rest = id.strip_prefix(&format!("{}/{}/", self.task, self.step))?;
        let (scope, index) = rest.rsplit_once(':')?;
        Some((scope, index.parse().ok()?))
    }

    /// The prefix of a subgraph child's interrupt ids in this task.
    pub(crate) fn child_prefix(&self) -> String {
        format!("{}/{}|", self.task, self.step)
    }

    pub(crate) fn signal(&self) -> Signal {
        lock(&self.signal).clone()
    }

    /// Records the first thing that stops the task; later ones are its
    /// consequences, but for more pauses: the scopes of a task
    /// ([`NodeContext::scoped`]) pause side by side, and the task waits on
    /// all their interrupts.
    pub(crate) fn set_signal(&self, signal: Signal) {
        let mut slot = lock(&self.signal);
        match (&mut *slot, signal) {
            (Signal::None, signal) => *slot = signal,
            (Signal::Paused(pending), Signal::Paused(more)) => pending.extend(more),
            _ => {}
        }
    }

    /// Forgets the last attempt's calls before a retry.
    pub(crate) fn reset_attempt(&self) {
        self.calls.store(0, Ordering::SeqCst);
        *lock(&self.signal) = Signal::None;
    }
}

/// What a node taking a context knows and can do: its thread, step, name
/// and task; [`interrupt`](Self::interrupt) to pause for a value from
/// outside; [`once`](Self::once) for work that must not run twice when the
/// node runs again. Cheap to clone; an async node keeps it across awaits.
///
/// ```
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// use agent_state::graph::{BoxError, Input, NodeContext, Resume, StateGraph, START};
/// use agent_state::AgentState;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Draft {
///     text: String,
///     approved: bool,
/// }
///
/// let graph = StateGraph::<Draft>::new()
///     .add_node("review", |s: &Draft, ctx: &NodeContext| -> Result<DraftUpdate, BoxError> {
///         // Pauses the run the first time; returns the answer when resumed.
///         let ok: bool = ctx.interrupt(format!("Publish {:?}?", s.text))?;
///         Ok(DraftUpdate::new().approved(ok))
///     })
///     .add_edge(START, "review")
///     .compile()?;
///
/// let saver = MemoryCheckpointer::new();
/// let input = Input::Update(DraftUpdate::new().text("hello".to_owned()));
/// let paused = block_on(graph.run(input).on_thread(&saver, "t"))?;
/// assert_eq!(paused.interrupts[0].value, "Publish \"hello\"?");
///
/// // Later, maybe in another process:
/// let done = block_on(graph.run(Input::ResumeWith(Resume::value(true))).on_thread(&saver, "t"))?;
/// assert!(done.state.approved);
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
#[derive(Clone)]
pub struct NodeContext {
    pub(crate) inner: Arc<TaskCtx>,
    /// The interrupt sequence this view's calls belong to; `None`: the
    /// task's own.
    scope: Option<Arc<InterruptScope>>,
}

/// A sequence of interrupts of its own within a task: its name, its calls
/// so far, and whether one of them paused.
struct InterruptScope {
    name: String,
    calls: AtomicUsize,
    paused: AtomicBool,
}

impl NodeContext {
    pub(crate) fn new(ctx: TaskCtx) -> Self {
        Self {
            inner: Arc::new(ctx),
            scope: None,
        }
    }

    /// A view of the task's context whose interrupts are a sequence of
    /// their own, named `name`: their ids name it
    /// (`task/step/name:index`), they pause side by side with the other
    /// scopes' and are answered by id, each scope's answers matched by
    /// call order within it. The tools node gives each tool call one,
    /// named after the call's id, as LangGraph runs each call as a task.
    #[cfg(feature = "agent")]
    pub(crate) fn scoped(&self, name: &str) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            scope: Some(Arc::new(InterruptScope {
                name: name.to_owned(),
                calls: AtomicUsize::new(0),
                paused: AtomicBool::new(false),
            })),
        }
    }

    /// Whether an interrupt of this scoped view paused (or failed on its
    /// resume value): what the view's work returned is not its result.
    #[cfg(feature = "agent")]
    pub(crate) fn scope_paused(&self) -> bool {
        self.scope
            .as_ref()
            .is_some_and(|s| s.paused.load(Ordering::SeqCst))
    }

    /// The next interrupt's id, and its answer if it has one.
    fn next_interrupt(&self) -> (String, Option<Value>) {
        let ctx = &self.inner;
        match &self.scope {
            None => {
                let index = ctx.calls.fetch_add(1, Ordering::SeqCst);
                (ctx.interrupt_id(index), ctx.resume.get(index).cloned())
            }
            Some(scope) => {
                let index = scope.calls.fetch_add(1, Ordering::SeqCst);
                let answers = ctx.scoped_resume.get(&scope.name);
                let answer = answers.and_then(|a| a.get(index)).cloned();
                (ctx.scoped_interrupt_id(&scope.name, index), answer)
            }
        }
    }

    /// Refuses the answer this view's last [`interrupt`](Self::interrupt)
    /// returned, as a resume value of the wrong type is refused: the task
    /// fails naming the interrupt and `expected`, nothing of it is kept,
    /// and the interrupt waits for another answer. For checks serde cannot
    /// make (a decision a tool's config does not allow).
    #[cfg(feature = "agent")]
    pub(crate) fn refuse_answer(&self, expected: &'static str, error: String) -> Interrupted {
        let ctx = &self.inner;
        let last = |calls: &AtomicUsize| calls.load(Ordering::SeqCst).saturating_sub(1);
        let id = match &self.scope {
            None => ctx.interrupt_id(last(&ctx.calls)),
            Some(scope) => ctx.scoped_interrupt_id(&scope.name, last(&scope.calls)),
        };
        self.stop_scope();
        ctx.set_signal(Signal::BadResume {
            id: id.clone(),
            expected,
            error: error.clone(),
        });
        Interrupted { id, reason: error }
    }

    /// Marks this scoped view as stopped by its interrupt.
    fn stop_scope(&self) {
        if let Some(scope) = &self.scope {
            scope.paused.store(true, Ordering::SeqCst);
        }
    }

    /// The thread the run is on; `None` for a run without a checkpointer.
    pub fn thread_id(&self) -> Option<&str> {
        self.inner.thread_id.as_deref()
    }

    /// The step number of the superstep the node runs in.
    pub fn step(&self) -> i64 {
        self.inner.step
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The task: the node's name, or `node[k]` for the k-th [`Send`](super::Send)
    /// of the step.
    pub fn task(&self) -> &str {
        &self.inner.task
    }

    /// The run's context of type `T`, as given to
    /// [`Run::context`](super::Run::context) (LangGraph's
    /// `Runtime.context`); `None` when the run was given none, or one of
    /// another type.
    ///
    /// ```
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::graph::{Input, NodeContext, StateGraph, START};
    /// use agent_state::AgentState;
    ///
    /// /// Who the run serves: run context, not state.
    /// struct User { did: String }
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Chat { greeting: String }
    ///
    /// let graph = StateGraph::<Chat>::new()
    ///     .add_node("greet", |_: &Chat, ctx: &NodeContext| {
    ///         let did = ctx.context::<User>().map_or("nobody", |u| u.did.as_str());
    ///         ChatUpdate::new().greeting(format!("hello {did}"))
    ///     })
    ///     .add_edge(START, "greet")
    ///     .compile()?;
    /// let user = User { did: "did:plc:alice".to_owned() };
    /// let out = block_on(graph.run(Input::Update(ChatUpdate::new())).context(user))?;
    /// assert_eq!(out.state.greeting, "hello did:plc:alice");
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn context<T: Any>(&self) -> Option<&T> {
        self.inner.scope.context.as_deref()?.downcast_ref()
    }

    /// The run's store (LangGraph's `Runtime.store`, `get_store()`): the
    /// one given to the run ([`Run::store`](super::Run::store)), else the
    /// graph's ([`Graph::with_store`](super::Graph::with_store)); a
    /// subgraph's nodes get their parent's. `None` when neither has one.
    /// It is an `Arc` so an async node can clone it into work it spawns;
    /// [`StoreExt`](crate::store::StoreExt)'s futures are `Send`, so a
    /// node awaiting them stays `Send`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::graph::{BoxError, Input, NodeContext, StateGraph, START};
    /// use agent_state::store::{MemoryStore, StoreExt};
    /// use agent_state::AgentState;
    /// use serde_json::json;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Visit { count: u64 }
    ///
    /// let graph = StateGraph::<Visit>::new()
    ///     .add_node("count", |_: Arc<Visit>, ctx: NodeContext| async move {
    ///         let store = ctx.store().ok_or("this graph needs a store")?;
    ///         let seen = store.get(["visits"], "alice").await?;
    ///         let count = seen.map_or(0, |item| item.value["count"].as_u64().unwrap_or(0)) + 1;
    ///         store.put(["visits"], "alice", json!({ "count": count })).await?;
    ///         Ok::<_, BoxError>(VisitUpdate::new().count(count))
    ///     })
    ///     .add_edge(START, "count")
    ///     .compile()?
    ///     .with_store(Arc::new(MemoryStore::new()));
    /// block_on(graph.run(Input::Update(VisitUpdate::new())))?;
    /// let out = block_on(graph.run(Input::Update(VisitUpdate::new())))?;
    /// assert_eq!(out.state.count, 2);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.inner.scope.store.as_ref()
    }

    /// How many more supersteps the run may take after this one before
    /// its recursion limit stops it (LangGraph's `RemainingSteps`): a node
    /// that sees few left can wrap up instead of failing the run.
    pub fn remaining_steps(&self) -> usize {
        self.inner.scope.remaining
    }

    /// The node's way into the run's stream: values for the `custom` mode
    /// and message pieces for the `messages` mode (LangGraph's
    /// `get_stream_writer()`). When the run is not streamed, or not in
    /// that mode, what it is given goes nowhere.
    pub fn writer(&self) -> StreamWriter {
        self.inner.writer.clone()
    }

    /// Pauses the run for a value from outside, as LangGraph's
    /// `interrupt(payload)`: the first time, returns [`Interrupted`] (return
    /// it with `?`); the run stops with `payload` in its
    /// [`interrupts`](super::RunOutput::interrupts) and is kept in the
    /// checkpoint. Resumed with a value for it, the node runs again **from
    /// its start**, and this call returns that value read as `R`. Several
    /// calls in one node are matched by order. In a tool, each tool call's
    /// interrupts are a sequence of their own, whose ids name the call:
    /// calls of one AI message pause side by side, each answered by id.
    ///
    /// What the node did before the call happens again when it resumes:
    /// keep it free of side effects, or put them in [`once`](Self::once).
    /// A run without a checkpointer pauses too (as LangGraph's does): its
    /// output carries the interrupts, but it cannot be resumed, having
    /// kept nothing.
    pub fn interrupt<R: DeserializeOwned>(
        &self,
        payload: impl Serialize,
    ) -> Result<R, Interrupted> {
        let ctx = &self.inner;
        let (id, answer) = self.next_interrupt();
        if let Some(answer) = answer {
            return serde_json::from_value(answer).map_err(|e| {
                self.stop_scope();
                let expected = std::any::type_name::<R>();
                ctx.set_signal(Signal::BadResume {
                    id: id.clone(),
                    expected,
                    error: e.to_string(),
                });
                Interrupted {
                    id,
                    reason: format!("the resume value is not a `{expected}`: {e}"),
                }
            });
        }
        self.stop_scope();
        match serde_json::to_value(payload) {
            Ok(value) => {
                ctx.set_signal(Signal::Paused(vec![Interrupt {
                    id: id.clone(),
                    node: ctx.node.to_string(),
                    value,
                }]));
                let reason = "the run pauses here until resumed".to_owned();
                Err(Interrupted { id, reason })
            }
            Err(e) => {
                let error = e.to_string();
                ctx.set_signal(Signal::BadPayload {
                    id: id.clone(),
                    error: error.clone(),
                });
                Err(Interrupted { id, reason: error })
            }
        }
    }

    /// Runs `f` once for this task of this step and keeps its `Ok` value:
    /// when the node runs again (resumed after an interrupt, or after a
    /// crash or a retry), this returns the kept value without calling `f`.
    /// On a thread the value is stored with the step's pending writes, so
    /// this holds across processes. An `Err` is returned and not kept.
    /// `key` names the work within the node; in a tool call's context
    /// (`ToolRuntime::node`) within the call: two calls of one step keep
    /// their values apart.
    pub fn once<T, E, F>(&self, key: &str, f: F) -> Result<T, BoxError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: FnOnce() -> Result<T, E>,
    {
        let key = self.memo_key(key);
        if let Some(kept) = self.kept(&key)? {
            return Ok(kept);
        }
        let value = f().map_err(Into::into)?;
        self.keep(&key, &value)?;
        Ok(value)
    }

    /// [`once`](Self::once) for async work: `f` is called (and its future
    /// awaited) only when no value is kept for `key`.
    pub async fn once_async<T, E, F, Fut>(&self, key: &str, f: F) -> Result<T, BoxError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<BoxError>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let key = self.memo_key(key);
        if let Some(kept) = self.kept(&key)? {
            return Ok(kept);
        }
        let value = f().await.map_err(Into::into)?;
        self.keep(&key, &value)?;
        Ok(value)
    }

    /// A `once` key as kept: within a scope (a tool call), prefixed by the
    /// scope's name, so calls never share a value, nor take the tools
    /// node's own (kept under the bare call id).
    fn memo_key<'k>(&self, key: &'k str) -> std::borrow::Cow<'k, str> {
        match &self.scope {
            Some(scope) => format!("{}/{key}", scope.name).into(),
            None => key.into(),
        }
    }

    /// Whether values kept with [`keep`](Self::keep) outlive the process:
    /// the run is on a thread. Without one nothing can run the task again
    /// with them, so work kept only for that may skip keeping.
    #[cfg(feature = "agent")]
    pub(crate) fn keeps(&self) -> bool {
        self.inner.queue.is_some()
    }

    pub(crate) fn kept<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, BoxError> {
        let memos = lock(&self.inner.memos);
        match memos.get(key) {
            None => Ok(None),
            Some(value) => serde_json::from_value(value.clone())
                .map(Some)
                .map_err(|e| {
                    format!(
                        "the value kept for `once(\"{key}\")` in node `{}` is not a `{}`: {e}",
                        self.inner.node,
                        std::any::type_name::<T>()
                    )
                    .into()
                }),
        }
    }

    pub(crate) fn keep<T: Serialize>(&self, key: &str, value: &T) -> Result<(), BoxError> {
        let json = serde_json::to_value(value)?;
        if let Some(queue) = &self.inner.queue {
            queue.push(PendingWrite {
                task: self.inner.task.to_string(),
                key: format!("once:{key}"),
                value: json.to_string(),
            });
        }
        lock(&self.inner.memos).insert(key.to_owned(), json);
        Ok(())
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("thread_id", &self.inner.thread_id)
            .field("step", &self.inner.step)
            .field("task", &self.inner.task)
            .finish_non_exhaustive()
    }
}
