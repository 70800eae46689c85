//! Streaming a run: LangGraph's stream modes as a [`futures::Stream`].
//!
//! [`Run::stream`] turns a run into a [`RunStream`]: the stream owns the
//! run's future and polls it when its consumer asks for the next event and
//! none is waiting, so no task is spawned and no runtime is needed. The run
//! sends its events into a bounded buffer; when the buffer is full it waits
//! for the consumer, so a slow consumer slows the run down. Dropping the
//! stream drops the run: nothing more is written, and the thread stays at
//! its last stored step.
//!
//! Layered one way: `mode` (the modes, a node's events, the sink a node
//! sends them to) and `writer` (a node's handle on the sink) sit below the
//! node context; `event` (the events of every mode) below the run;
//! `channel` (the bounded queue, and what a run sends after each step and
//! as each task ends) beside the run, which sends into it; `payload`
//! (LangGraph's JSON for task results and `debug`) beside `event`; this
//! module, the stream over a run, above the run.

pub(crate) mod channel;
pub(crate) mod child;
pub(crate) mod event;
pub(crate) mod mode;
pub(crate) mod payload;
pub(crate) mod returned;
pub(crate) mod writer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;

pub use child::SubgraphEvent;
pub use event::{StreamEvent, TaskInput, TaskOutcome};
pub use mode::{CustomEvent, MessageEvent, StreamMode, StreamModes, UnknownStreamMode};
pub use writer::StreamWriter;

use self::channel::Channel;
use crate::checkpoint::Checkpointer;
use crate::graph::output::RunOutput;
use crate::graph::run::{Input, Run};
use crate::graph::{Graph, GraphError, GraphState};
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
/// // The input is no update (as in LangGraph); its state is a value.
/// assert_eq!(seen, ["n=0", "inc", "n=1", "inc", "n=2", "inc", "n=3"]);
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

    /// Whether the events of subgraphs stream too (LangGraph's
    /// `stream(.., subgraphs=True)`; off by default): a subgraph's events,
    /// in every mode the stream has, come as [`StreamEvent::Subgraph`] as
    /// they happen, under the namespace of the task that ran it
    /// ([`StreamEvent::namespace`], `["node:task"]`, one entry per level
    /// for a subgraph's subgraphs), their interrupt ids those the run is
    /// resumed by. Set it before the stream is first polled.
    ///
    /// ```
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::futures::StreamExt;
    /// use agent_state::graph::{Input, StateGraph, StreamMode, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Count { n: u32 }
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Outer {
    ///     #[state(flatten)]
    ///     count: Count,
    /// }
    ///
    /// let child = StateGraph::<Count>::new()
    ///     .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
    ///     .add_edge(START, "inc")
    ///     .compile()?;
    /// let parent = StateGraph::<Outer>::new()
    ///     .add_node("child", child)
    ///     .add_edge(START, "child")
    ///     .compile()?;
    /// let stream = parent.run(Input::Update(OuterUpdate::new())).stream(StreamMode::Updates);
    /// let names: Vec<_> = block_on(stream.subgraphs(true).collect::<Vec<_>>())
    ///     .into_iter()
    ///     .map(|e| e.map(|e| e.sse_name().into_owned()))
    ///     .collect::<Result<_, _>>()?;
    /// // The child's node, then the parent's, then the end of the run.
    /// assert_eq!(names, ["updates|child:child", "updates", "end"]);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn subgraphs(self, on: bool) -> Self {
        self.channel.set_subgraphs(on);
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

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// Streams the run: its events in `modes` (LangGraph's
    /// `stream_mode=`), then [`StreamEvent::End`] with what
    /// [`.await`](std::future::IntoFuture) would have returned. The run
    /// goes as far as the stream is polled; dropping the stream cancels
    /// it, the thread staying at its last stored step. See [`RunStream`].
    pub fn stream(self, modes: impl Into<StreamModes>) -> RunStream<'a, S> {
        let channel = Arc::new(Channel::new(modes.into()));
        let run = self.streaming(Arc::clone(&channel));
        RunStream::new(Box::pin(run.traced()), channel)
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
