//! Running the tasks of one superstep: sync nodes on threads of their own
//! (inline when there is one), async nodes polled together, each with its
//! retry policy and timeout; a finished task's writes kept as pending as
//! soon as it finishes (on a thread, when the step has several tasks), a
//! paused task's interrupt kept when it pauses, and each task's stream
//! events sent as it ends; cancellation honoured.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::Value;

use super::context::{NodeContext, PendingQueue, Signal, TaskCtx, TaskEnv, TaskScope};
use super::node::{NodeFn, NodeOutput, NodeResult};
use super::pending::{self, PausedTask, Pending};
use super::policy::{CancelToken, NodeTimeout, WithTimeout};
use super::tasks::task_error;
use super::{Graph, GraphError, Task};
use crate::checkpoint::{BoxFuture, CheckpointError, CheckpointId, Checkpointer, NodeWrite};
use crate::graph::stream::channel::{Channel, Ended, TaskAt};
use crate::graph::stream::mode::{NodeSink, ReturnedBy, StreamMode};
use crate::graph::stream::returned;
use crate::state::{AgentState, StateUpdate};

type TaskFuture<'r, U> = Pin<Box<dyn Future<Output = NodeResult<U>> + Send + 'r>>;

/// How one task ended.
pub(crate) enum TaskResult<U> {
    /// It finished: its writes (at least one).
    Writes(Vec<NodeWrite<U>>),
    /// It paused on interrupts.
    Paused(PausedTask),
    /// It failed; its step does not apply.
    Failed(GraphError),
}

/// Where a step keeps its pending writes: the thread and the checkpoint
/// the step runs on.
pub(crate) struct Store<'r> {
    pub(crate) saver: &'r dyn Checkpointer,
    pub(crate) thread_id: &'r str,
    pub(crate) checkpoint: CheckpointId,
}

/// What the first step of a resumed run picks up: the step's pending
/// writes from an earlier, unfinished attempt, and the resume values by
/// interrupt id.
pub(crate) struct Resumed<U> {
    pub(crate) pending: Pending<U>,
    pub(crate) answers: HashMap<String, Value>,
}

/// What a step runs with besides its tasks and state.
pub(crate) struct StepPlan<'r, S: AgentState> {
    pub(crate) step: i64,
    pub(crate) store: Option<Store<'r>>,
    pub(crate) resumed: Option<Resumed<S::Update>>,
    pub(crate) cancel: Option<CancelToken>,
    /// Where the tasks' events go, when the run is streamed.
    pub(crate) stream: Option<Arc<Channel<S>>>,
    /// The run's context and steps left, for every task.
    pub(crate) scope: TaskScope,
}

/// How a step's tasks ended, together.
pub(crate) struct StepOut<U> {
    /// The writes of the tasks that finished, in task order.
    pub(crate) writes: Vec<NodeWrite<U>>,
    /// The writes of task `k` are `writes[owners[k]..owners[k + 1]]`: none
    /// for a task that paused or failed (a finished one has one at least).
    pub(crate) owners: Vec<usize>,
    /// The interrupts of the tasks that paused, in task order.
    pub(crate) interrupts: Vec<super::Interrupt>,
    /// The first task (in task order) that failed.
    pub(crate) failed: Option<GraphError>,
    /// Each failed task, by its index, with its error as a snapshot shows
    /// it.
    pub(crate) errors: Vec<(usize, String)>,
}

impl<U> Default for StepOut<U> {
    fn default() -> Self {
        Self {
            writes: Vec::new(),
            owners: Vec::new(),
            interrupts: Vec::new(),
            failed: None,
            errors: Vec::new(),
        }
    }
}

impl<U> StepOut<U> {
    pub(crate) fn clear(&mut self) {
        self.writes.clear();
        self.owners.clear();
        self.interrupts.clear();
        self.failed = None;
        self.errors.clear();
    }

    /// Adds the next task's outcome.
    fn push(&mut self, result: TaskResult<U>) {
        self.owners.push(self.writes.len());
        match result {
            TaskResult::Writes(writes) => self.writes.extend(writes),
            TaskResult::Paused(paused) => self.interrupts.extend(paused.interrupts),
            TaskResult::Failed(error) => self.push_failure(error),
        }
    }

    /// Records the failure of the task whose owner was pushed last.
    fn push_failure(&mut self, error: GraphError) {
        let k = self.owners.len() - 1;
        self.errors.push((k, task_error(&error)));
        self.failed.get_or_insert(error);
    }

    /// The writes of task `k`; empty unless it finished.
    pub(crate) fn task_writes(&self, k: usize) -> &[NodeWrite<U>] {
        match (self.owners.get(k), self.owners.get(k + 1)) {
            (Some(&from), Some(&to)) => &self.writes[from..to],
            _ => &[],
        }
    }

    /// Closes the owners list once every task is in.
    fn close(&mut self) {
        self.owners.push(self.writes.len());
    }
}

/// Turns a node's raw result into the task's outcome, reading its
/// context's signals, queues what is to be kept, and streams the task's
/// events.
struct Finisher<'g, S: AgentState> {
    graph: &'g Graph<S>,
    tasks: &'g [Task],
    step: i64,
    /// Per task: its key and its context (when its node takes one).
    slots: Vec<Slot>,
    queue: Option<Arc<PendingQueue>>,
    /// Keep each finished task's writes (the step has several tasks).
    keep_done: bool,
    /// Where the tasks' events go, when the run is streamed.
    stream: Option<Arc<Channel<S>>>,
    /// The step's state, for the `values` of a paused task (only when
    /// streamed).
    state: Option<Arc<S>>,
}

impl<S: AgentState> Finisher<'_, S>
where
    S: Clone + Send + Sync,
    S::Update: Clone + Send,
{
    /// Task `i`'s outcome, and its events.
    fn finish(&self, i: usize, result: NodeResult<S::Update>) -> TaskResult<S::Update> {
        let outcome = self.outcome(i, result);
        if let Some(channel) = &self.stream {
            let cached = self.slots[i]
                .ctx
                .as_ref()
                .is_some_and(|c| c.inner.was_cached());
            let ended = match &outcome {
                TaskResult::Writes(writes) if cached => Ended::Cached(writes),
                TaskResult::Writes(writes) => Ended::Wrote(writes),
                TaskResult::Paused(paused) => Ended::Paused(&paused.interrupts),
                TaskResult::Failed(error) => Ended::Failed(error),
            };
            let at = TaskAt {
                step: self.step,
                task: &self.tasks[i],
            };
            channel.task_ended(self.graph, at, self.state.as_ref(), ended);
        }
        outcome
    }

    fn outcome(&self, i: usize, result: NodeResult<S::Update>) -> TaskResult<S::Update> {
        let name = &self.graph.names[self.tasks[i].node];
        if let Some(ctx) = &self.slots[i].ctx {
            if let Some(outcome) = self.signalled(ctx, name) {
                if let (TaskResult::Paused(paused), Some(queue)) = (&outcome, &self.queue) {
                    queue.push(pending::paused_entry(&self.slots[i].key, paused));
                }
                return outcome;
            }
        }
        let output = match result {
            Ok(output) => output,
            Err(error) => {
                return TaskResult::Failed(GraphError::Node {
                    node: name.clone(),
                    step: self.step,
                    error,
                })
            }
        };
        let mut writes = Vec::new();
        push_writes(name, output, &mut writes);
        let task = ReturnedBy {
            step: self.step,
            node: name,
            task: &self.slots[i].key,
        };
        let sink = self.stream.as_deref().map(|c| c as &dyn NodeSink);
        show_returned::<S>(sink, task, &mut writes);
        if let (true, Some(queue)) = (self.keep_done, &self.queue) {
            match pending::done_entry(&self.slots[i].key, self.step, S::VERSION, &mut writes) {
                Ok(entry) => queue.push(entry),
                Err(error) => return TaskResult::Failed(error),
            }
        }
        TaskResult::Writes(writes)
    }

    /// What the node's context says happened, if anything.
    fn signalled(&self, ctx: &NodeContext, node: &str) -> Option<TaskResult<S::Update>> {
        let node = node.to_owned();
        Some(match ctx.inner.signal() {
            Signal::None => return None,
            Signal::Paused(interrupts) => TaskResult::Paused(PausedTask {
                resume: ctx.inner.resume.clone(),
                interrupts,
                scoped: ctx.inner.scoped_resume.clone(),
            }),
            Signal::BadResume {
                id,
                expected,
                error,
            } => TaskResult::Failed(GraphError::ResumeType {
                id,
                node,
                expected,
                error,
            }),
            Signal::BadPayload { id, error } => {
                TaskResult::Failed(GraphError::InterruptPayload { node, id, error })
            }
        })
    }
}

/// `messages` mode: streams the whole messages a task returned in its
/// writes (those the stream has not shown), their ids fixed first as
/// storing them would, so the stream and the state agree.
pub(crate) fn show_returned<S: AgentState>(
    stream: Option<&dyn NodeSink>,
    task: ReturnedBy<'_>,
    writes: &mut [NodeWrite<S::Update>],
) {
    let Some(sink) = stream.filter(|s| s.modes().contains(StreamMode::Messages)) else {
        return;
    };
    let fields = returned::message_fields::<S>();
    if fields.is_empty() {
        return;
    }
    for write in writes {
        write.update.assign_message_ids();
        let (messages, overwritten) = returned::returned(&mut write.update, &fields);
        if !messages.is_empty() || !overwritten.is_empty() {
            sink.returned(task, messages, overwritten);
        }
    }
}

/// A node's output as the step's writes: one, or one per command of a
/// [`NodeOutput::Batch`] (at least one, so the node is on record as having
/// run and a resume routes from it).
pub(crate) fn push_writes<U: Default>(
    node: &str,
    output: NodeOutput<U>,
    writes: &mut Vec<NodeWrite<U>>,
) {
    let write = |c: super::Command<U>| NodeWrite {
        node: node.to_owned(),
        update: c.update.unwrap_or_default(),
        goto: c.goto,
        send: c.send,
    };
    // Room for exactly these writes (a task's own list is made for them).
    writes.reserve_exact(match &output {
        NodeOutput::Batch(commands) => commands.len().max(1),
        _ => 1,
    });
    match output {
        NodeOutput::Nothing => writes.push(NodeWrite::new(node, U::default())),
        NodeOutput::Update(u) => writes.push(NodeWrite::new(node, u)),
        NodeOutput::Command(c) => writes.push(write(c)),
        NodeOutput::Batch(commands) if commands.is_empty() => {
            writes.push(NodeWrite::new(node, U::default()));
        }
        NodeOutput::Batch(commands) => writes.extend(commands.into_iter().map(write)),
    }
}

/// Runs one superstep's tasks on `state`, their outcomes into `out`.
/// `Err` only when the run was cancelled or pending writes could not be
/// kept; a node's failure is in [`StepOut::failed`].
pub(crate) async fn run_step<'r, S>(
    graph: &'r Graph<S>,
    tasks: &'r [Task],
    state: Arc<S>,
    plan: StepPlan<'r, S>,
    out: &mut StepOut<S::Update>,
) -> Result<(), GraphError>
where
    S: AgentState + Clone + Send + Sync + 'static,
    S::Update: Clone + Send,
{
    out.clear();
    if plan.resumed.is_none() {
        if let Fast::Ran = fast_path(graph, tasks, &state, plan.step, out, false) {
            fast_ended(graph, tasks, plan.step, plan.stream.as_ref(), &state, out);
            return Ok(());
        }
    }
    let StepPlan {
        step,
        store,
        resumed,
        cancel,
        stream,
        scope,
    } = plan;
    let Resumed {
        mut pending,
        answers,
    } = resumed.unwrap_or_else(|| Resumed {
        pending: Pending::default(),
        answers: HashMap::new(),
    });
    let queue = store.as_ref().map(|_| Arc::new(PendingQueue::default()));
    let sink = stream.clone().map(|c| c as Arc<dyn NodeSink>);
    let new_ctx = |task: &Task, key: &Arc<str>| {
        let env = TaskEnv {
            thread_id: thread_id(&store),
            queue: queue.clone(),
            sink: sink.clone(),
            scope: scope.clone(),
        };
        let node = Arc::clone(graph.shared_name(task.node));
        TaskCtx::new(node, Arc::clone(key), step, env)
    };
    let done = Earlier {
        pending: &mut pending,
        answers: &answers,
        stream: stream.as_ref(),
        step,
    };
    let (mut results, slots) = prepare(graph, tasks, done, new_ctx);
    let finisher = Finisher {
        graph,
        tasks,
        step,
        slots,
        queue: queue.clone(),
        keep_done: tasks.len() > 1,
        state: stream.as_ref().map(|_| Arc::clone(&state)),
        stream,
    };
    run_sync_tasks(graph, tasks, &state, &finisher, &mut results);
    if let Some(i) = lone_task(&results, store.is_none() && cancel.is_none()) {
        // One task left, nothing to store or watch for: awaited as it is.
        let future = task_future(graph, &tasks[i], i, &state, &finisher, None);
        drop(state);
        results[i] = Some(finisher.finish(i, future.await));
    } else {
        let saver = store.as_ref().map(|s| s.saver);
        let futures = async_tasks(graph, tasks, &state, &finisher, &results, saver);
        drop(state);
        let drive = Drive {
            futures,
            finisher: &finisher,
            results,
            store,
            queue,
            in_flight: None,
            error: None,
            cancel,
        };
        results = drive.await?;
    }
    for result in results {
        out.push(result.expect("every task finished"));
    }
    out.close();
    Ok(())
}

/// The one task still to run, when there is exactly one and the step
/// neither stores what it leaves nor can be cancelled (`plain`): it needs
/// no [`Drive`].
fn lone_task<U>(results: &[Option<TaskResult<U>>], plain: bool) -> Option<usize> {
    let mut left = (0..results.len()).filter(|&i| results[i].is_none());
    match (plain, left.next(), left.next()) {
        (true, Some(i), None) => Some(i),
        _ => None,
    }
}

/// What an earlier attempt at a step left, as [`prepare`] reads it.
struct Earlier<'e, S: AgentState> {
    pending: &'e mut Pending<S::Update>,
    answers: &'e HashMap<String, Value>,
    stream: Option<&'e Arc<Channel<S>>>,
    step: i64,
}

/// A task's key, and its context when its node takes one.
struct Slot {
    key: Arc<str>,
    ctx: Option<NodeContext>,
}

/// Per task: its writes when an earlier attempt finished it (streamed as
/// cached), else nothing yet; and its key and context (one list: one
/// allocation a step).
#[allow(clippy::type_complexity)]
fn prepare<S>(
    graph: &Graph<S>,
    tasks: &[Task],
    earlier: Earlier<'_, S>,
    new_ctx: impl Fn(&Task, &Arc<str>) -> TaskCtx,
) -> (Vec<Option<TaskResult<S::Update>>>, Vec<Slot>)
where
    S: AgentState + Clone + Send + Sync,
    S::Update: Clone + Send,
{
    let mut results = Vec::with_capacity(tasks.len());
    let mut slots = Vec::with_capacity(tasks.len());
    for task in tasks {
        let key = graph.shared_task_key(task);
        // Most steps resume nothing: an empty map is not hashed into.
        let done = if earlier.pending.done.is_empty() {
            None
        } else {
            earlier.pending.done.remove(&*key)
        };
        if let Some(writes) = done {
            if let Some(channel) = earlier.stream {
                let at = TaskAt {
                    step: earlier.step,
                    task,
                };
                channel.task_ended(graph, at, None, Ended::Cached(&writes));
            }
            results.push(Some(TaskResult::Writes(writes)));
            slots.push(Slot { key, ctx: None });
            continue;
        }
        results.push(None);
        let ctx = graph.fns[task.node].wants_context().then(|| {
            let ctx = new_ctx(task, &key);
            task_context(ctx, &key, earlier.pending, earlier.answers)
        });
        slots.push(Slot { key, ctx });
    }
    (results, slots)
}

/// The events of the one task of a step [`fast_path`] ran: the messages
/// it returned (`messages` mode), then how it ended.
pub(crate) fn fast_ended<S>(
    graph: &Graph<S>,
    tasks: &[Task],
    step: i64,
    stream: Option<&Arc<Channel<S>>>,
    state: &Arc<S>,
    out: &mut StepOut<S::Update>,
) where
    S: AgentState + Clone + Send + Sync,
    S::Update: Clone + Send,
{
    let Some(channel) = stream else { return };
    let task = &tasks[0];
    if channel.modes().contains(StreamMode::Messages) {
        let key = graph.task_key(task);
        let by = ReturnedBy {
            step,
            node: &graph.names[task.node],
            task: &key,
        };
        show_returned::<S>(Some(&**channel), by, &mut out.writes);
    }
    let ended = match &out.failed {
        Some(error) => Ended::Failed(error),
        None => Ended::Wrote(&out.writes),
    };
    channel.task_ended(graph, TaskAt { step, task }, Some(state), ended);
}

fn thread_id<'r>(store: &Option<Store<'r>>) -> Option<&'r str> {
    store.as_ref().map(|s| s.thread_id)
}

/// A task's context, with what an earlier attempt of the step left for
/// it: its memos, and the answers to the interrupts it paused on.
fn task_context<U>(
    ctx: TaskCtx,
    key: &str,
    pending: &mut Pending<U>,
    answers: &HashMap<String, Value>,
) -> NodeContext {
    if pending.memos.is_empty() && pending.paused.is_empty() && answers.is_empty() {
        // Most steps pick up nothing: the context as it was made, not
        // moved through `answer` (it would give it no answers).
        return NodeContext::new(ctx);
    }
    let mut ctx = ctx;
    if !pending.memos.is_empty() {
        if let Some(memos) = pending.memos.remove(key) {
            ctx = ctx.with_memos(memos);
        }
    }
    let paused = if pending.paused.is_empty() {
        PausedTask::default()
    } else {
        pending.paused.remove(key).unwrap_or_default()
    };
    NodeContext::new(answer(ctx, paused, answers))
}

/// What [`fast_path`] did.
pub(crate) enum Fast<U> {
    /// The step is not one it runs: nothing ran.
    No,
    /// The node ran; its writes (or its failure) are in the step's output.
    Ran,
    /// The node ran and returned an update (or nothing: the empty update),
    /// handed back as it is for a run that neither stores nor shows writes.
    Update(U),
}

/// The one-task step of a plain node with no policy (and nothing to pick
/// up from an earlier attempt): called directly, its writes straight into
/// `out`, nothing kept (the step itself is stored next). With `direct` (a
/// plain run, nothing observed), a plain update comes back as it is,
/// without a write around it.
pub(crate) fn fast_path<S: AgentState>(
    graph: &Graph<S>,
    tasks: &[Task],
    state: &S,
    step: i64,
    out: &mut StepOut<S::Update>,
    direct: bool,
) -> Fast<S::Update> {
    let [task] = tasks else { return Fast::No };
    let NodeFn::Sync(f) = &graph.fns[task.node] else {
        return Fast::No;
    };
    if graph.retry[task.node].is_some() {
        return Fast::No;
    }
    let name = &graph.names[task.node];
    let output = super::trace::in_span(super::trace::node_span(name, step), || f(state));
    match output {
        Ok(NodeOutput::Update(update)) if direct => return Fast::Update(update),
        Ok(NodeOutput::Nothing) if direct => return Fast::Update(S::Update::default()),
        _ => {}
    }
    fast_outcome(name, step, output, out);
    Fast::Ran
}

/// The outcome of the one task of a step run directly (its node's raw
/// result) as the step's output.
pub(crate) fn fast_outcome<U: Default>(
    name: &str,
    step: i64,
    output: NodeResult<U>,
    out: &mut StepOut<U>,
) {
    out.clear();
    out.owners.push(0);
    match output {
        // Into the step's buffer as it is: no allocation of its own.
        Ok(output) => push_writes(name, output, &mut out.writes),
        Err(error) => out.push_failure(GraphError::Node {
            node: name.to_owned(),
            step,
            error,
        }),
    }
    out.close();
}

/// A task's context with the answers it has: those it had before, plus
/// those given now for its pending interrupts: its own, in order; each
/// scope's (a tool call's, `NodeContext::scoped`), by id; a subgraph's,
/// those whose ids start with its prefix, for its child.
fn answer(mut ctx: TaskCtx, paused: PausedTask, answers: &HashMap<String, Value>) -> TaskCtx {
    ctx.resume = paused.resume;
    ctx.scoped_resume = paused.scoped;
    if answers.is_empty() {
        // Most steps resume nothing: no ids to make.
        return ctx;
    }
    let prefix = ctx.child_prefix();
    for (id, value) in answers {
        if let Some(child) = id.strip_prefix(&prefix) {
            ctx.child_resume.insert(child.to_owned(), value.clone());
        }
    }
    // Answers given at once to several of the task's own interrupts (a
    // node whose pauses were reported together) are taken in order.
    while let Some(value) = answers.get(&ctx.interrupt_id(ctx.resume.len())) {
        ctx.resume.push(value.clone());
    }
    for pending in &paused.interrupts {
        let Some((scope, index)) = ctx.parse_scoped_id(&pending.id) else {
            continue;
        };
        let scope = scope.to_owned();
        let answered = ctx.scoped_resume.entry(scope).or_default();
        if let (true, Some(value)) = (answered.len() == index, answers.get(&pending.id)) {
            answered.push(value.clone());
        }
    }
    ctx
}

/// Whether a task runs as a plain sync call (no retry: a retry waits, and
/// waiting is async).
fn runs_sync<S: AgentState>(graph: &Graph<S>, task: &Task) -> bool {
    graph.fns[task.node].is_sync() && graph.retry[task.node].is_none()
}

fn call_sync<S: AgentState>(
    f: &NodeFn<S, S::Update>,
    task: &Task,
    state: &S,
    ctx: Option<&NodeContext>,
) -> NodeResult<S::Update> {
    let ctx = || ctx.expect("a node taking a context has one");
    match f {
        NodeFn::Sync(f) => f(state),
        NodeFn::SyncCtx(f) => f(state, ctx()),
        NodeFn::SendSync(f) => {
            let (_, arg) = task.send.as_ref().expect("a Send task has its input");
            f(arg, ctx())
        }
        _ => unreachable!("only sync nodes are called here"),
    }
}

/// Runs the step's sync tasks: inline when there is one, else each on a
/// scoped thread of its own (the first on this one), each finished (its
/// events streamed) on its thread as it returns, so they stream in the
/// order they finish.
fn run_sync_tasks<S>(
    graph: &Graph<S>,
    tasks: &[Task],
    state: &S,
    finisher: &Finisher<'_, S>,
    results: &mut [Option<TaskResult<S::Update>>],
) where
    S: AgentState + Clone + Send + Sync,
    S::Update: Clone + Send,
{
    let todo: Vec<usize> = (0..tasks.len())
        .filter(|&i| results[i].is_none() && runs_sync(graph, &tasks[i]))
        .collect();
    let run = |i: usize| {
        let f = &graph.fns[tasks[i].node];
        let span = super::trace::node_span(&graph.names[tasks[i].node], finisher.step);
        let result = super::trace::in_span(span, || {
            call_sync(f, &tasks[i], state, finisher.slots[i].ctx.as_ref())
        });
        finisher.finish(i, result)
    };
    match todo.as_slice() {
        [] => {}
        [one] => results[*one] = Some(run(*one)),
        [first, rest @ ..] => std::thread::scope(|scope| {
            let handles: Vec<_> = rest
                .iter()
                .map(|&i| (i, scope.spawn(move || run(i))))
                .collect();
            results[*first] = Some(run(*first));
            for (i, handle) in handles {
                match handle.join() {
                    Ok(result) => results[i] = Some(result),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        }),
    }
}

/// The futures of the step's async tasks (and sync tasks with a retry
/// policy), each with its retry policy and timeout.
fn async_tasks<'r, S>(
    graph: &'r Graph<S>,
    tasks: &'r [Task],
    state: &Arc<S>,
    finisher: &Finisher<'_, S>,
    results: &[Option<TaskResult<S::Update>>],
    saver: Option<&'r dyn Checkpointer>,
) -> Vec<(usize, TaskFuture<'r, S::Update>)>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    (0..tasks.len())
        .filter(|&i| results[i].is_none())
        .map(|i| (i, task_future(graph, &tasks[i], i, state, finisher, saver)))
        .collect()
}

/// Task `i`'s future, with its policies, in its span.
fn task_future<'r, S>(
    graph: &'r Graph<S>,
    task: &'r Task,
    i: usize,
    state: &Arc<S>,
    finisher: &Finisher<'_, S>,
    saver: Option<&'r dyn Checkpointer>,
) -> TaskFuture<'r, S::Update>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    let ctx = finisher.slots[i].ctx.clone();
    let fut = with_policies(graph, task, Arc::clone(state), ctx, saver);
    let span = super::trace::node_span(&graph.names[task.node], finisher.step);
    super::trace::traced(span, fut)
}

/// One attempt of a task, as a future.
fn attempt<'r, S>(
    graph: &'r Graph<S>,
    task: &'r Task,
    state: Arc<S>,
    ctx: Option<NodeContext>,
    saver: Option<&'r dyn Checkpointer>,
) -> TaskFuture<'r, S::Update>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    let f = &graph.fns[task.node];
    let ctx_of = |ctx: Option<NodeContext>| ctx.expect("a node taking a context has one");
    match f {
        NodeFn::Async(f) => f(state),
        NodeFn::AsyncCtx(f) => f(state, ctx_of(ctx)),
        NodeFn::SendAsync(f) => {
            let (_, arg) = task.send.as_ref().expect("a Send task has its input");
            f(arg, ctx_of(ctx))
        }
        NodeFn::Subgraph(runner) => runner.run(state, ctx_of(ctx), saver),
        _ => {
            let result = call_sync(f, task, &state, ctx.as_ref());
            Box::pin(async move { result })
        }
    }
}

/// A task's future with its timeout and retry policy.
fn with_policies<'r, S>(
    graph: &'r Graph<S>,
    task: &'r Task,
    state: Arc<S>,
    ctx: Option<NodeContext>,
    saver: Option<&'r dyn Checkpointer>,
) -> TaskFuture<'r, S::Update>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    let node = task.node;
    let timed = move |state: Arc<S>, ctx: Option<NodeContext>| -> TaskFuture<'r, S::Update> {
        let fut = attempt(graph, task, state, ctx, saver);
        match graph.timeout[node] {
            None => fut,
            Some(after) => Box::pin(WithTimeout {
                future: fut,
                sleep: super::timer::sleep(after),
                error: Some(NodeTimeout {
                    node: graph.names[node].clone(),
                    after,
                }),
            }),
        }
    };
    let Some(policy) = graph.retry[node].clone() else {
        return timed(state, ctx);
    };
    Box::pin(async move {
        let mut tries = 1;
        loop {
            let result = timed(Arc::clone(&state), ctx.clone()).await;
            let Err(error) = &result else { return result };
            let paused = ctx
                .as_ref()
                .is_some_and(|c| !matches!(c.inner.signal(), Signal::None));
            match policy.next_wait(tries, error) {
                Some(wait) if !paused => {
                    tracing_retry(&graph.names[node], tries, error);
                    super::timer::sleep(wait).await;
                    if let Some(ctx) = &ctx {
                        ctx.inner.reset_attempt();
                    }
                    tries += 1;
                }
                _ => return result,
            }
        }
    })
}

fn tracing_retry(node: &str, attempt: u32, error: &super::BoxError) {
    tracing::warn!(node, attempt, %error, "node failed; retrying");
}

/// Polls a step's async tasks together with the storing of what they
/// leave pending, and watches for cancellation. Ready when every task is
/// done and everything queued is stored.
struct Drive<'r, 'f, S: AgentState> {
    futures: Vec<(usize, TaskFuture<'r, S::Update>)>,
    finisher: &'f Finisher<'r, S>,
    results: Vec<Option<TaskResult<S::Update>>>,
    store: Option<Store<'r>>,
    queue: Option<Arc<PendingQueue>>,
    in_flight: Option<BoxFuture<'r, Result<(), CheckpointError>>>,
    error: Option<GraphError>,
    cancel: Option<CancelToken>,
}

impl<S: AgentState> Unpin for Drive<'_, '_, S> {}

impl<S> Drive<'_, '_, S>
where
    S: AgentState + Clone + Send + Sync,
    S::Update: Clone + Send,
{
    /// Advances the storing; whether anything moved.
    fn poll_store(&mut self, cx: &mut Context<'_>) -> bool {
        let (Some(store), Some(queue)) = (&self.store, &self.queue) else {
            return false;
        };
        let mut moved = false;
        loop {
            if let Some(fut) = &mut self.in_flight {
                match fut.as_mut().poll(cx) {
                    Poll::Pending => return moved,
                    Poll::Ready(result) => {
                        self.in_flight = None;
                        moved = true;
                        if let Err(e) = result {
                            self.error.get_or_insert(GraphError::Checkpoint(e));
                        }
                    }
                }
            }
            let batch = queue.take();
            if batch.is_empty() {
                queue.register(cx.waker());
                if !queue.is_empty() {
                    continue;
                }
                return moved;
            }
            self.in_flight = Some(store.saver.put_pending(
                store.thread_id,
                store.checkpoint,
                batch,
            ));
        }
    }

    /// Polls the tasks; whether any finished.
    fn poll_tasks(&mut self, cx: &mut Context<'_>) -> bool {
        let mut moved = false;
        let mut k = 0;
        while k < self.futures.len() {
            let (i, fut) = &mut self.futures[k];
            match fut.as_mut().poll(cx) {
                Poll::Pending => k += 1,
                Poll::Ready(result) => {
                    let i = *i;
                    let outcome = self.finisher.finish(i, result);
                    self.results[i] = Some(outcome);
                    drop(self.futures.swap_remove(k));
                    moved = true;
                }
            }
        }
        moved
    }
}

impl<S> Future for Drive<'_, '_, S>
where
    S: AgentState + Clone + Send + Sync,
    S::Update: Clone + Send,
{
    type Output = Result<Vec<Option<TaskResult<S::Update>>>, GraphError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(token) = &this.cancel {
            if token.poll_cancelled(cx).is_ready() {
                return Poll::Ready(Err(GraphError::Cancelled));
            }
        }
        loop {
            let tasks_moved = this.poll_tasks(cx);
            let store_moved = this.poll_store(cx);
            if !tasks_moved && !store_moved {
                break;
            }
        }
        let stored = this.in_flight.is_none() && this.queue.as_ref().is_none_or(|q| q.is_empty());
        if !this.futures.is_empty() || !stored {
            return Poll::Pending;
        }
        if let Some(error) = this.error.take() {
            return Poll::Ready(Err(error));
        }
        // Every task finished: each slot is filled.
        Poll::Ready(Ok(std::mem::take(&mut this.results)))
    }
}
