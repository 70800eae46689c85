//! Streaming a run: LangGraph's stream modes as a [`futures::Stream`].
//!
//! [`Run::stream`] turns a run into a [`RunStream`]: the stream owns the
//! run's future and polls it when its consumer asks for the next event and
//! none is waiting, so no task is spawned and no runtime is needed. The run
//! sends its events into a bounded buffer; when the buffer is full it waits
//! for the consumer, so a slow consumer slows the run down. Dropping the
//! stream drops the run: nothing more is written, and the thread stays at
//! its last stored step.

mod channel;
mod event;
mod writer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

pub(crate) use channel::{Channel, NodeSink};
pub(crate) use event::NodeEvent;
pub use event::{
    CustomEvent, MessageEvent, StreamEvent, StreamMode, StreamModes, TaskOutcome, UnknownStreamMode,
};
pub use writer::StreamWriter;

use super::step::StepOut;
use super::{Graph, GraphError, GraphState, Input, Run, RunOutput, Task};
use crate::checkpoint::{CheckpointMeta, Checkpointer, NodeWrite, Source};
use crate::state::AgentState;

type RunFuture<'a, S> = Pin<Box<dyn Future<Output = Result<RunOutput<S>, GraphError>> + Send + 'a>>;

/// A run as a stream of [`StreamEvent`]s ([`Run::stream`]): it runs as it
/// is polled, and ends with [`StreamEvent::End`] (or the run's error).
///
/// ```
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// use agent_state::futures::StreamExt;
/// use agent_state::graph::{Input, StateGraph, StreamEvent, StreamMode, END, START};
/// use agent_state::AgentState;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Count { n: u32 }
///
/// let graph = StateGraph::<Count>::new()
///     .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
///     .add_edge(START, "inc")
///     .add_conditional_edges("inc", |s: &Count| if s.n < 3 { "inc" } else { END })
///     .compile()?;
/// let saver = MemoryCheckpointer::new();
/// let mut stream = graph
///     .run(Input::Update(CountUpdate::new()))
///     .on_thread(&saver, "t")
///     .stream([StreamMode::Values, StreamMode::Updates]);
/// let mut seen = Vec::new();
/// while let Some(event) = block_on(stream.next()) {
///     match event? {
///         StreamEvent::Values { state, .. } => seen.push(format!("n={}", state.n)),
///         StreamEvent::Updates { writes, .. } => seen.push(writes[0].node.clone()),
///         StreamEvent::End(out) => assert!(out.next.is_empty()),
///         _ => {}
///     }
/// }
/// assert_eq!(seen, ["__start__", "n=0", "inc", "n=1", "inc", "n=2", "inc", "n=3"]);
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
#[must_use = "a stream does nothing until polled"]
pub struct RunStream<'a, S: AgentState> {
    run: Option<RunFuture<'a, S>>,
    channel: Arc<Channel<S>>,
    error: Option<GraphError>,
}

impl<S: AgentState> std::fmt::Debug for RunStream<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream")
            .field("modes", &self.channel.modes())
            .field("running", &self.run.is_some())
            .finish()
    }
}

impl<'a, S: GraphState> RunStream<'a, S> {
    pub(crate) fn new(run: RunFuture<'a, S>, channel: Arc<Channel<S>>) -> Self {
        Self {
            run: Some(run),
            channel,
            error: None,
        }
    }

    /// How many events the stream holds before the run waits for its
    /// consumer (default 64; at least 1). Events written by sync code
    /// (`StreamWriter::write`) go in regardless; they are bounded by what
    /// one node writes in one call.
    pub fn buffer(self, events: usize) -> Self {
        self.channel.set_capacity(events);
        self
    }
}

impl<S: GraphState> RunStream<'static, S> {
    /// A stream that owns what its run borrows, for a response body or a
    /// spawned task: the graph and the checkpointer are shared (`Arc`), and
    /// `configure` sets the run up as [`Graph::run`] would
    /// (`|run| run.stop_after(10)`, or `|run| run` for nothing more).
    pub fn shared<C, F>(
        graph: Arc<Graph<S>>,
        saver: Arc<C>,
        thread_id: impl Into<String>,
        input: Input<S>,
        modes: impl Into<StreamModes>,
        configure: F,
    ) -> Self
    where
        C: Checkpointer + ?Sized + 'static,
        F: for<'r> FnOnce(Run<'r, S, C>) -> Run<'r, S, C> + Send + 'static,
    {
        let channel = Arc::new(Channel::new(modes.into()));
        let sink = Arc::clone(&channel);
        let thread_id = thread_id.into();
        let run = async move {
            let run = configure(graph.run(input).on_thread(&*saver, thread_id));
            run.streaming(sink).traced().await
        };
        Self::new(Box::pin(run), channel)
    }
}

impl<S: GraphState> Stream for RunStream<'_, S> {
    type Item = Result<StreamEvent<S>, GraphError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.channel.pop() {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(run) = &mut this.run else {
                return Poll::Ready(this.error.take().map(Err));
            };
            this.channel.register(cx.waker());
            match run.as_mut().poll(cx) {
                Poll::Ready(Ok(out)) => {
                    this.run = None;
                    this.channel.push(StreamEvent::End(out));
                }
                Poll::Ready(Err(error)) => {
                    this.run = None;
                    this.error = Some(error);
                }
                Poll::Pending if this.channel.is_empty() => return Poll::Pending,
                Poll::Pending => {}
            }
        }
    }
}

/// What a streamed run sends after a step (or its input): `values`,
/// `updates` and `checkpoints`, each if asked for.
pub(crate) struct StepNews<'s, S: AgentState> {
    pub(crate) step: i64,
    pub(crate) source: Source,
    pub(crate) writes: Option<Vec<NodeWrite<S::Update>>>,
    pub(crate) state: Arc<S>,
    pub(crate) checkpoint: Option<&'s CheckpointMeta>,
    pub(crate) next: &'s [Task],
}

impl<S: GraphState> Channel<S> {
    /// Sends a step's events, waiting for room for each.
    pub(crate) async fn publish(&self, graph: &Graph<S>, news: StepNews<'_, S>) {
        let modes = self.modes();
        if let (true, Some(writes)) = (modes.contains(StreamMode::Updates), news.writes) {
            let (step, source) = (news.step, news.source);
            self.send(StreamEvent::Updates {
                step,
                source,
                writes,
            })
            .await;
        }
        if modes.contains(StreamMode::Values) {
            let state = Arc::clone(&news.state);
            self.send(StreamEvent::Values {
                step: news.step,
                state,
            })
            .await;
        }
        if let (true, Some(meta)) = (modes.contains(StreamMode::Checkpoints), news.checkpoint) {
            self.send(StreamEvent::Checkpoint {
                checkpoint: meta.clone(),
                state: news.state,
                next: graph.names_of(news.next),
            })
            .await;
        }
        if modes.contains(StreamMode::Values) || modes.contains(StreamMode::Checkpoints) {
            self.hand_over().await;
        }
    }

    /// `tasks`: a step's tasks start.
    pub(crate) async fn tasks_start(&self, graph: &Graph<S>, step: i64, tasks: &[Task]) {
        for task in tasks {
            self.send(StreamEvent::TaskStart {
                step,
                task: graph.task_key(task),
                node: graph.names[task.node].clone(),
            })
            .await;
        }
    }

    /// `tasks`: how a step's tasks ended, read from the step's outcome:
    /// the failed task by its node, the paused ones by their interrupts,
    /// the others finished.
    pub(crate) async fn tasks_end(
        &self,
        graph: &Graph<S>,
        step: i64,
        tasks: &[Task],
        out: &StepOut<S::Update>,
    ) {
        for task in tasks {
            let key = graph.task_key(task);
            let node = graph.names[task.node].clone();
            let prefix = format!("{key}/{step}/");
            let paused: Vec<_> = out
                .interrupts
                .iter()
                .filter(|i| {
                    i.id.starts_with(&prefix) || i.id.starts_with(&format!("{key}/{step}|"))
                })
                .cloned()
                .collect();
            let outcome = match &out.failed {
                Some(GraphError::Node { node: n, error, .. }) if *n == node => {
                    TaskOutcome::Failed(error.to_string())
                }
                _ if !paused.is_empty() => TaskOutcome::Paused(paused),
                _ => TaskOutcome::Finished,
            };
            self.send(StreamEvent::TaskEnd {
                step,
                task: key,
                node,
                outcome,
            })
            .await;
        }
    }
}
