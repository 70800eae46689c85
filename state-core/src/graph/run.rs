//! One invocation of a graph: the superstep loop, with or without a
//! checkpointer.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use super::node::{JoinAll, NodeFn, NodeOutput, NodeResult};
use super::{Graph, GraphError, GraphState, END, START};
use crate::checkpoint::{CheckpointError, CheckpointMeta, Checkpointer, NodeWrite, Source, Thread};
use crate::state::{AgentState, StepRule};

/// What a run starts from.
pub enum Input<S: AgentState> {
    /// A whole state (with its immutable fields set): a new thread's first
    /// state. Refused for a thread that exists.
    State(S),
    /// An update, applied as the input step to the default state (a new
    /// thread) or to the stored state (an existing thread).
    Update(S::Update),
    /// Nothing new: continue a thread from its last saved step (after a
    /// crash or a [`stop_after`](Run::stop_after)). A finished thread stays
    /// as it is.
    Resume,
}

/// What one step did, for progress display: LangGraph's `updates` and
/// `values` stream modes in one event.
pub struct StepEvent<'a, S: AgentState> {
    /// The step number: -1 for a new thread's input, then 0, 1, ...
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

/// What a run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput<S> {
    /// The state.
    pub state: S,
    /// The nodes that would run next: empty when the graph reached `END`,
    /// else the run was stopped ([`Run::stop_after`]) and can be resumed.
    pub next: Vec<String>,
    /// Supersteps this run took, the input step included.
    pub steps: usize,
    /// The thread's head after the run, when running on a thread.
    pub checkpoint: Option<CheckpointMeta>,
}

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
/// assert_eq!(seen, [-1, 0, 1]);
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
pub struct Run<'a, S: AgentState, C: ?Sized = dyn Checkpointer> {
    graph: &'a Graph<S>,
    input: Input<S>,
    thread: Option<(&'a C, String)>,
    observer: Option<Observer<'a, S>>,
    stop_after: Option<usize>,
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
}

/// Where a run's state lives: in memory only, or in a thread of a store.
enum Sink<'c, S: AgentState, C: ?Sized> {
    Plain { state: Arc<S>, next_step: i64 },
    Saved(Thread<'c, S, C>),
}

impl<S, C> Sink<'_, S, C>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    fn shared(&self) -> Arc<S> {
        match self {
            Sink::Plain { state, .. } => Arc::clone(state),
            Sink::Saved(thread) => thread.shared_state(),
        }
    }

    fn state(&self) -> &S {
        match self {
            Sink::Plain { state, .. } => state,
            Sink::Saved(thread) => thread.state(),
        }
    }

    fn next_step(&self) -> i64 {
        match self {
            Sink::Plain { next_step, .. } => *next_step,
            Sink::Saved(thread) => thread.next_step(),
        }
    }

    fn head(&self) -> Option<&CheckpointMeta> {
        match self {
            Sink::Plain { .. } => None,
            Sink::Saved(thread) => thread.head(),
        }
    }

    /// Applies (and stores) one step's writes as one.
    async fn apply(
        &mut self,
        source: Source,
        mut writes: Vec<NodeWrite<S::Update>>,
    ) -> Result<(), GraphError> {
        let step = self.next_step();
        match self {
            Sink::Plain { state, next_step } => {
                // Updates move into staging; the names stay for an error.
                let updates = writes.iter_mut().map(|w| std::mem::take(&mut w.update));
                match state.stage(updates, StepRule::Superstep) {
                    Ok(staged) => {
                        Arc::make_mut(state).commit(staged);
                        *next_step += 1;
                        Ok(())
                    }
                    Err(error) => Err(GraphError::InvalidUpdate {
                        step,
                        nodes: writes.into_iter().map(|w| w.node).collect(),
                        error,
                    }),
                }
            }
            Sink::Saved(thread) => match thread.save_writes(source, &mut writes).await {
                Ok(_) => Ok(()),
                Err(CheckpointError::Rejected(error)) => Err(GraphError::InvalidUpdate {
                    step,
                    nodes: writes.into_iter().map(|w| w.node).collect(),
                    error,
                }),
                Err(other) => Err(GraphError::Checkpoint(other)),
            },
        }
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
        Box::pin(self.execute())
    }
}

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    async fn execute(mut self) -> Result<RunOutput<S>, GraphError> {
        let graph = self.graph;
        let mut steps = 0usize;
        let mut next: Vec<usize> = Vec::new();
        let mut sink: Sink<'a, S, C> = match self.thread.take() {
            None => Sink::Plain {
                state: Arc::new(S::default()),
                next_step: -1,
            },
            Some((saver, id)) => Sink::Saved(Thread::open(saver, id).await?),
        };

        // The input step, or where a resumed run left off.
        match std::mem::replace(&mut self.input, Input::Resume) {
            Input::State(state) => {
                match &mut sink {
                    Sink::Plain {
                        state: s,
                        next_step,
                    } => {
                        *s = Arc::new(state);
                        *next_step = 0;
                    }
                    Sink::Saved(thread) => {
                        if thread.head().is_some() {
                            return Err(GraphError::ThreadExists {
                                thread_id: thread.thread_id().to_owned(),
                            });
                        }
                        let saver = thread.saver();
                        let id = thread.thread_id().to_owned();
                        *thread = Thread::create(saver, id, state)
                            .await
                            .map_err(|e| match e {
                                CheckpointError::Rejected(error) => GraphError::InvalidUpdate {
                                    step: -1,
                                    nodes: vec![START.to_owned()],
                                    error,
                                },
                                other => GraphError::Checkpoint(other),
                            })?;
                    }
                }
                graph.route_into(None, &[], sink.state(), &mut next)?;
                graph.settle(&mut next);
                steps += 1;
                self.emit(&sink, Source::Input, &[], &next);
            }
            Input::Update(update) => {
                let writes = vec![NodeWrite::new(START, update)];
                let observed = self.observer.is_some().then(|| writes.clone());
                sink.apply(Source::Input, writes).await?;
                graph.route_into(None, &[], sink.state(), &mut next)?;
                graph.settle(&mut next);
                steps += 1;
                self.emit(
                    &sink,
                    Source::Input,
                    observed.as_deref().unwrap_or(&[]),
                    &next,
                );
            }
            Input::Resume => {
                if let Sink::Saved(thread) = &sink {
                    next = resume_point(graph, thread).await?;
                }
            }
        }

        let mut following: Vec<usize> = Vec::new();
        while !next.is_empty() {
            if self.stop_after.is_some_and(|limit| steps >= limit) {
                break;
            }
            if steps >= graph.recursion_limit {
                return Err(GraphError::RecursionLimit {
                    limit: graph.recursion_limit,
                    next: names_of(graph, &next),
                });
            }
            let step = sink.next_step();
            let results = run_nodes(graph, &next, sink.shared()).await;
            let mut writes: Vec<NodeWrite<S::Update>> = Vec::with_capacity(next.len());
            // The writes of `next[k]` are `writes[owners[k]..owners[k + 1]]`.
            let mut owners: Vec<usize> = Vec::with_capacity(next.len() + 1);
            for (&i, result) in next.iter().zip(results) {
                owners.push(writes.len());
                let output = result.map_err(|error| GraphError::Node {
                    node: graph.names[i].clone(),
                    step,
                    error,
                })?;
                push_writes(&graph.names[i], output, &mut writes);
            }
            owners.push(writes.len());
            // Routing needs the gotos after the writes are consumed; most
            // steps have none, and then nothing is copied.
            let gotos: Vec<Vec<String>> = if writes.iter().any(|w| !w.goto.is_empty()) {
                check_gotos(graph, &writes)?;
                writes.iter().map(|w| w.goto.clone()).collect()
            } else {
                Vec::new()
            };
            let observed = self.observer.is_some().then(|| writes.clone());
            sink.apply(Source::Loop, writes).await?;
            following.clear();
            let mut goto: Vec<String> = Vec::new();
            for (k, &i) in next.iter().enumerate() {
                goto.clear();
                if let Some(own) = gotos.get(owners[k]..owners[k + 1]) {
                    goto.extend(own.iter().flatten().cloned());
                }
                graph.route_into(Some(i), &goto, sink.state(), &mut following)?;
            }
            graph.settle(&mut following);
            std::mem::swap(&mut next, &mut following);
            steps += 1;
            self.emit(
                &sink,
                Source::Loop,
                observed.as_deref().unwrap_or(&[]),
                &next,
            );
        }

        let checkpoint = sink.head().cloned();
        let next = names_of(graph, &next);
        let state = match sink {
            Sink::Plain { state, .. } => Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone()),
            Sink::Saved(thread) => thread.into_state(),
        };
        Ok(RunOutput {
            state,
            next,
            steps,
            checkpoint,
        })
    }

    fn emit(
        &mut self,
        sink: &Sink<'a, S, C>,
        source: Source,
        writes: &[NodeWrite<S::Update>],
        next: &[usize],
    ) {
        if let Some(observer) = &mut self.observer {
            let names = names_of(self.graph, next);
            observer(&StepEvent {
                step: sink.next_step() - 1,
                source,
                writes,
                state: sink.state(),
                checkpoint: sink.head(),
                next: &names,
            });
        }
    }
}

/// A node's output as the step's writes: one, or one per command of a
/// [`NodeOutput::Batch`] (at least one, so the node is on record as having
/// run and a resume routes from it).
fn push_writes<U: Default>(node: &str, output: NodeOutput<U>, writes: &mut Vec<NodeWrite<U>>) {
    let write = |update: Option<U>, goto: Vec<String>| NodeWrite {
        node: node.to_owned(),
        update: update.unwrap_or_default(),
        goto,
    };
    match output {
        NodeOutput::Nothing => writes.push(write(None, Vec::new())),
        NodeOutput::Update(u) => writes.push(write(Some(u), Vec::new())),
        NodeOutput::Command(c) => writes.push(write(c.update, c.goto)),
        NodeOutput::Batch(commands) if commands.is_empty() => {
            writes.push(write(None, Vec::new()));
        }
        NodeOutput::Batch(commands) => {
            writes.extend(commands.into_iter().map(|c| write(c.update, c.goto)));
        }
    }
}

/// Refuses a step whose `Command`s route to a node that does not exist,
/// before it is stored: stored, it would fail every resume the same way.
fn check_gotos<S: AgentState>(
    graph: &Graph<S>,
    writes: &[NodeWrite<S::Update>],
) -> Result<(), GraphError> {
    for write in writes {
        if let Some(target) = write
            .goto
            .iter()
            .find(|t| *t != END && !graph.index.contains_key(t.as_str()))
        {
            return Err(GraphError::UnknownTarget {
                from: write.node.clone(),
                target: target.clone(),
            });
        }
    }
    Ok(())
}

fn names_of<S: AgentState>(graph: &Graph<S>, nodes: &[usize]) -> Vec<String> {
    nodes.iter().map(|&i| graph.names[i].clone()).collect()
}

/// Runs the nodes of one superstep on the same state; sync nodes inline,
/// async ones together.
async fn run_nodes<S: AgentState>(
    graph: &Graph<S>,
    nodes: &[usize],
    state: Arc<S>,
) -> Vec<NodeResult<S::Update>> {
    let all_sync = nodes
        .iter()
        .all(|&i| matches!(graph.fns[i], NodeFn::Sync(_)));
    if all_sync {
        return nodes
            .iter()
            .map(|&i| match &graph.fns[i] {
                NodeFn::Sync(f) => f(&state),
                NodeFn::Async(_) => unreachable!("checked above"),
            })
            .collect();
    }
    let futures = nodes
        .iter()
        .map(|&i| match &graph.fns[i] {
            NodeFn::Sync(f) => Err(f(&state)),
            NodeFn::Async(f) => Ok(f(Arc::clone(&state))),
        })
        .collect();
    drop(state);
    JoinAll::new(futures).await
}

/// The nodes a thread's next run continues with: recomputed from its head
/// step (the nodes that ran, their `Command` gotos, and the routers on the
/// stored state), so nothing about the future needs storing.
async fn resume_point<S, C>(
    graph: &Graph<S>,
    thread: &Thread<'_, S, C>,
) -> Result<Vec<usize>, GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let Some(head) = thread.head() else {
        return Ok(Vec::new());
    };
    let mut record = thread.step(head.id).await?;
    // A fork continues from the step it copies.
    if record.meta.source == Source::Fork {
        if let Some(parent) = record.meta.parent {
            record = thread.step(parent).await?;
        }
    }
    let mut next = Vec::new();
    if record.meta.source == Source::Input && record.writes.iter().all(|w| w.node == START) {
        graph.route_into(None, &[], thread.state(), &mut next)?;
    } else {
        for w in &record.writes {
            if let Some(&i) = graph.index.get(&w.node) {
                graph.route_into(Some(i), &w.goto, thread.state(), &mut next)?;
            }
        }
    }
    graph.settle(&mut next);
    Ok(next)
}
