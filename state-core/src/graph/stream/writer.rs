//! What a node streams: custom values and message pieces, through the
//! writer its context hands out.

use std::future::{poll_fn, Future};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::mode::{CustomEvent, MessageEvent, NodeEvent, NodeSink, StreamMode};
use crate::message::MessageChunk;

/// A node's way into the run's stream (LangGraph's `get_stream_writer()`),
/// from [`NodeContext::writer`](crate::graph::NodeContext::writer). When
/// nobody streams the mode, every call does nothing (and serializes
/// nothing). Cheap to clone; an async node keeps it across awaits.
///
/// The `send` and `message` methods wait while the stream's buffer is
/// full, so a slow consumer slows the node down; `write` and
/// `write_message` (for sync code, which cannot wait) never wait, their
/// events held until the consumer takes them.
///
/// ```
/// use agent_state::checkpoint::block_on;
/// use agent_state::graph::{Input, NodeContext, StateGraph, StreamEvent, StreamMode, START};
/// use agent_state::futures::StreamExt;
/// use agent_state::AgentState;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Job { done: bool }
///
/// let graph = StateGraph::<Job>::new()
///     .add_node("work", |_: &Job, ctx: &NodeContext| {
///         ctx.writer().write(serde_json::json!({"progress": 0.5})).unwrap();
///         JobUpdate::new().done(true)
///     })
///     .add_edge(START, "work")
///     .compile()?;
///
/// let events: Vec<_> = block_on(graph.run(Input::Update(JobUpdate::new())).stream(StreamMode::Custom).collect());
/// let StreamEvent::Custom(progress) = events[0].as_ref().unwrap() else { panic!() };
/// assert_eq!((progress.node.as_str(), &progress.value["progress"]), ("work", &serde_json::json!(0.5)));
/// # Ok::<(), agent_state::graph::GraphError>(())
/// ```
#[derive(Clone, Default)]
pub struct StreamWriter {
    /// Where its events go and whose they are; `None` when the run is
    /// not streamed.
    target: Option<Arc<Target>>,
}

/// A task's place in the stream.
struct Target {
    sink: Arc<dyn NodeSink>,
    step: i64,
    node: String,
    task: String,
}

impl std::fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamWriter")
            .field("node", &self.target.as_ref().map(|t| &t.node))
            .field("streaming", &self.target.is_some())
            .finish()
    }
}

impl StreamWriter {
    /// The writer of task `task` (of node `node`) in step `step`, sending
    /// to `sink`; one that sends nothing without a sink.
    pub(crate) fn new(sink: Option<Arc<dyn NodeSink>>, step: i64, node: &str, task: &str) -> Self {
        let target = sink.map(|sink| {
            Arc::new(Target {
                sink,
                step,
                node: node.to_owned(),
                task: task.to_owned(),
            })
        });
        Self { target }
    }

    /// The stream it sends to, when the run is streamed.
    pub(crate) fn sink(&self) -> Option<&Arc<dyn NodeSink>> {
        self.target.as_ref().map(|t| &t.sink)
    }

    /// Whether the run's consumer asked for `mode`: a node may skip the
    /// work of making what nobody reads.
    pub fn is_on(&self, mode: StreamMode) -> bool {
        self.target
            .as_ref()
            .is_some_and(|t| t.sink.modes().contains(mode))
    }

    /// Streams `value` in `custom` mode without waiting.
    pub fn write(&self, value: impl Serialize) -> Result<(), serde_json::Error> {
        if self.is_on(StreamMode::Custom) {
            let value = serde_json::to_value(value)?;
            self.push(|t| t.custom(value));
        }
        Ok(())
    }

    /// Streams `value` in `custom` mode, waiting for room in the buffer.
    pub fn send(
        &self,
        value: impl Serialize,
    ) -> impl Future<Output = Result<(), serde_json::Error>> + Send + '_ {
        let value = match self.is_on(StreamMode::Custom) {
            true => serde_json::to_value(value).map(Some),
            false => Ok(None),
        };
        async move {
            if let Some(value) = value? {
                self.room().await;
                self.push(|t| t.custom(value));
            }
            Ok(())
        }
    }

    /// Streams a piece of a message in `messages` mode, waiting for room:
    /// what a node that calls a model does with each token.
    pub async fn message(&self, chunk: MessageChunk) {
        if self.is_on(StreamMode::Messages) {
            self.room().await;
            self.push(|t| t.message(chunk));
        }
    }

    /// Streams a piece of a message without waiting.
    pub fn write_message(&self, chunk: MessageChunk) {
        if self.is_on(StreamMode::Messages) {
            self.push(|t| t.message(chunk));
        }
    }

    async fn room(&self) {
        if let Some(target) = &self.target {
            poll_fn(|cx| target.sink.poll_node_room(cx)).await;
        }
    }

    /// Sends what `make` makes of the target, if there is one.
    fn push(&self, make: impl FnOnce(&Target) -> NodeEvent) {
        if let Some(target) = &self.target {
            target.sink.push_node(make(target));
        }
    }
}

impl Target {
    fn custom(&self, value: Value) -> NodeEvent {
        NodeEvent::Custom(CustomEvent {
            step: self.step,
            node: self.node.clone(),
            task: self.task.clone(),
            value,
        })
    }

    fn message(&self, chunk: MessageChunk) -> NodeEvent {
        NodeEvent::Message(MessageEvent {
            step: self.step,
            node: self.node.clone(),
            task: self.task.clone(),
            chunk,
            message: None,
        })
    }
}
