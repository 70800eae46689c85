//! What a node streams and which modes are on: the part of a stream that
//! a node's context sees, without the state's type (LangGraph's
//! `stream_mode` names, the `messages` and `custom` events, the sink a
//! node's writer sends them to).

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;

use super::child::SubgraphEvent;
use super::returned::Seen;
use crate::message::{Message, MessageChunk};

/// One of LangGraph's stream modes (`stream_mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamMode {
    /// The whole state after each step, the input step included.
    Values,
    /// Each step's writes, node by node.
    Updates,
    /// Model tokens as they arrive, with the node that produced them.
    Messages,
    /// What nodes write through their [`StreamWriter`](super::StreamWriter).
    Custom,
    /// Each stored checkpoint (runs on a thread).
    Checkpoints,
    /// Each task as it starts and as it ends.
    Tasks,
    /// What `checkpoints` and `tasks` show, each event stamped and wrapped
    /// as LangGraph's `debug` mode wraps it
    /// ([`StreamEvent::Debug`](super::StreamEvent::Debug)).
    Debug,
}

impl StreamMode {
    const ALL: [StreamMode; 7] = [
        Self::Values,
        Self::Updates,
        Self::Messages,
        Self::Custom,
        Self::Checkpoints,
        Self::Tasks,
        Self::Debug,
    ];

    /// LangGraph's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Values => "values",
            Self::Updates => "updates",
            Self::Messages => "messages",
            Self::Custom => "custom",
            Self::Checkpoints => "checkpoints",
            Self::Tasks => "tasks",
            Self::Debug => "debug",
        }
    }

    fn bits(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for StreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a stream mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStreamMode(pub String);

impl fmt::Display for UnknownStreamMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = StreamMode::ALL.iter().map(|m| m.as_str()).collect();
        write!(
            f,
            "unknown stream mode `{}`; expected one of {}",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownStreamMode {}

impl FromStr for StreamMode {
    type Err = UnknownStreamMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| UnknownStreamMode(name.to_owned()))
    }
}

/// Several stream modes at once: `[StreamMode::Updates,
/// StreamMode::Messages].into()`, or one mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode: the stream yields only its last event,
    /// [`StreamEvent::End`](super::StreamEvent::End).
    pub const fn none() -> Self {
        Self(0)
    }

    /// Whether `mode` is on.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bits() == mode.bits()
    }

    /// The modes with `mode` on too.
    #[must_use]
    pub fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode.bits())
    }

    /// Reads a comma-separated list of mode names (`"updates,messages"`).
    pub fn parse_list(list: &str) -> Result<Self, UnknownStreamMode> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(Self::none(), |modes, name| Ok(modes.with(name.parse()?)))
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self::none().with(mode)
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().collect()
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes.iter().copied().collect()
    }
}

impl FromIterator<StreamMode> for StreamModes {
    fn from_iter<I: IntoIterator<Item = StreamMode>>(iter: I) -> Self {
        iter.into_iter().fold(Self::none(), Self::with)
    }
}

/// A piece of a message as a node produced it (`messages` mode): LangGraph
/// yields `(chunk, metadata)`, the metadata naming the node and the step.
/// A whole message a node returned in its update (and did not stream in
/// pieces) comes once too, as LangGraph yields it: then
/// [`message`](Self::message) holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageEvent {
    /// The step the node runs in.
    pub step: i64,
    /// The node that produced it.
    pub node: String,
    /// Its task (`node`, or `node[k]` for a `Send`).
    pub task: String,
    /// The piece; the pieces of one message share its id. For a returned
    /// message, the whole of it as one piece.
    pub chunk: MessageChunk,
    /// The whole message, when a node returned it in its update rather
    /// than streamed it in pieces (LangGraph yields the message itself,
    /// `AIMessage` rather than `AIMessageChunk`). Boxed: most events are
    /// pieces.
    pub message: Option<Box<Message>>,
}

/// What a node wrote to its [`StreamWriter`](super::StreamWriter)
/// (`custom` mode).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomEvent {
    /// The step the node runs in.
    pub step: i64,
    /// The node that wrote it.
    pub node: String,
    /// Its task.
    pub task: String,
    /// What it wrote.
    pub value: Value,
}

/// What a node's context streams, before it is a
/// [`StreamEvent`](super::StreamEvent).
// Unboxed as in `StreamEvent`, which it becomes: a box per token would cost
// more than the bytes a custom event leaves unused.
#[allow(clippy::large_enum_variant)]
pub(crate) enum NodeEvent {
    Message(MessageEvent),
    Custom(CustomEvent),
    /// An event of a subgraph the node runs.
    Subgraph(SubgraphEvent),
}

/// Where a node's context sends what it streams: the run's channel, seen
/// without its state type.
pub(crate) trait NodeSink: Send + Sync {
    /// The modes the consumer asked for.
    fn modes(&self) -> StreamModes;
    /// Whether the consumer asked for the events of subgraphs too.
    fn subgraphs(&self) -> bool;
    /// The message ids the run's `messages` stream has shown, shared with
    /// the subgraphs it streams: a message a subgraph streamed is not
    /// streamed again when its parent's node returns it.
    fn seen_ids(&self) -> Arc<Mutex<Seen>>;
    /// Queues a node's event whether or not there is room.
    fn push_node(&self, event: NodeEvent);
    /// Ready when there is room for one more event.
    fn poll_node_room(&self, cx: &mut Context<'_>) -> Poll<()>;
    /// Records message ids a node starts from: not streamed again.
    fn seen(&self, ids: Vec<String>);
    /// Queues the whole messages a task returned that the stream has not
    /// shown (by id), and records them and the `overwritten` ids as seen.
    fn returned(&self, task: ReturnedBy<'_>, messages: Vec<Message>, overwritten: Vec<String>);
}

/// The task that returned messages, for their metadata.
#[derive(Clone, Copy)]
pub(crate) struct ReturnedBy<'a> {
    pub(crate) step: i64,
    pub(crate) node: &'a str,
    pub(crate) task: &'a str,
}
