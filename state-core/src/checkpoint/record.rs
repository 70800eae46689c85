//! What a checkpoint is made of, as stored.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A checkpoint's id: allocated per thread, increasing, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CheckpointId(pub u64);

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What made a checkpoint, as LangGraph's `metadata.source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The graph's input, applied to a new or a stored state.
    Input,
    /// A step of the graph's loop: the nodes of one superstep.
    Loop,
    /// An update written from outside the graph (LangGraph's `update_state`).
    Update,
    /// A copy of an older checkpoint that the thread continues from.
    Fork,
}

impl Source {
    /// The stored spelling: `input`, `loop`, `update`, `fork`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::Loop => "loop",
            Source::Update => "update",
            Source::Fork => "fork",
        }
    }

    /// Reads the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "input" => Source::Input,
            "loop" => Source::Loop,
            "update" => Source::Update,
            "fork" => Source::Fork,
            _ => return None,
        })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a checkpoint sits in its thread, and when and how it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// The thread it belongs to.
    pub thread_id: String,
    /// Its id in the thread.
    pub id: CheckpointId,
    /// The checkpoint it continues from; `None` for a thread's first.
    pub parent: Option<CheckpointId>,
    /// The step number: -1 for a thread's first input, then 0, 1, ... as in
    /// LangGraph.
    pub step: i64,
    /// What made it.
    pub source: Source,
    /// The state's [`VERSION`](crate::AgentState::VERSION) it was written
    /// under.
    pub version: u32,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}

/// One node's write in a step: the node's name, its update, and where a
/// `Command` sent the graph next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeWrite<U> {
    /// The node (or input, or middleware hook) that returned the update.
    pub node: String,
    /// The update.
    pub update: U,
    /// The nodes a `Command` from this node routed to, kept so a resumed run
    /// knows what comes next. Left out of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goto: Vec<String>,
    /// The tasks with their own input a `Command` from this node started
    /// ([`Send`](crate::graph::Send)s), kept for the same reason. Left out
    /// of the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub send: Vec<crate::send::Send>,
}

impl<U> NodeWrite<U> {
    /// A write of `update` by `node`.
    pub fn new(node: impl Into<String>, update: U) -> Self {
        Self {
            node: node.into(),
            update,
            goto: Vec::new(),
            send: Vec::new(),
        }
    }
}

impl<N: Into<String>, U> From<(N, U)> for NodeWrite<U> {
    fn from((node, update): (N, U)) -> Self {
        Self::new(node, update)
    }
}

/// A write kept for a superstep that has not been saved as a step yet: a
/// finished task's writes while others still run, a paused task's
/// interrupt, a value a node computed once (LangGraph's pending writes).
///
/// Kept per checkpoint (the head the superstep runs on), so a run resumed
/// from that checkpoint, in this process or another, skips what finished
/// and answers what paused. The graph runtime writes and reads them; a
/// backend stores them as given, `value` as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingWrite {
    /// The task it belongs to: a node's name, or `node[k]` for the k-th
    /// `Send` of the step.
    pub task: String,
    /// What it is, unique within the task: `done`, `interrupt`,
    /// `once:<key>`, ...; a later write with the same task and key
    /// replaces the earlier one.
    pub key: String,
    /// The value, as JSON text.
    pub value: String,
}

/// A checkpoint as a backend stores it.
///
/// `writes` is the JSON text of the step's writes, `[{"node": .., "update":
/// {..}}, ..]`, with updates in [`StateUpdate::to_json`](crate::StateUpdate::to_json)
/// form. `log_bytes` and `base_bytes` let any process that continues the
/// thread keep to the [`SnapshotPolicy`] without reading the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// Where and when.
    pub meta: CheckpointMeta,
    /// The step's writes, as JSON text.
    pub writes: String,
    /// Bytes of writes a load replays to reach this checkpoint from its
    /// nearest snapshot (0 when it has one itself).
    pub log_bytes: u64,
    /// The size of that nearest snapshot (0 when there is none).
    pub base_bytes: u64,
    /// The whole state after this step, as JSON text, when one was taken
    /// (and asked for: [`Checkpointer::head`](super::Checkpointer::head) and
    /// [`list`](super::Checkpointer::list) leave it out).
    pub snapshot: Option<String>,
}

/// A checkpoint to store, given to [`Checkpointer::append`](super::Checkpointer::append);
/// the backend assigns its id and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheckpoint {
    /// The checkpoint it continues from.
    pub parent: Option<CheckpointId>,
    /// The step number.
    pub step: i64,
    /// What made it.
    pub source: Source,
    /// The state version it is written under.
    pub version: u32,
    /// The step's writes, as JSON text.
    pub writes: String,
    /// See [`StoredCheckpoint::log_bytes`].
    pub log_bytes: u64,
    /// See [`StoredCheckpoint::base_bytes`].
    pub base_bytes: u64,
    /// A snapshot stored with the record itself (a thread's initial state).
    pub snapshot: Option<String>,
}

/// When [`Thread`](super::Thread) snapshots the whole state.
///
/// A snapshot is taken after a step once the bytes of updates a load would
/// replay reach `ratio` times the size of the last snapshot, and at least
/// `min_bytes`. With the default ratio of 1, each snapshot is paid for by as
/// many bytes of log, and snapshot sizes grow geometrically with the state,
/// so snapshots add at most about twice the bytes of the updates (1.0–1.8×
/// measured by `cargo bench --bench checkpoint`): bytes written per step
/// stay flat however long the history grows, and a load reads at most about
/// twice the state's size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotPolicy {
    /// Bytes of log per byte of the last snapshot before the next one.
    pub ratio: f64,
    /// Never snapshot before this many bytes of log.
    pub min_bytes: u64,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            min_bytes: 16 * 1024,
        }
    }
}

impl SnapshotPolicy {
    /// Never snapshot: every load replays the whole log. For tests and for
    /// short-lived threads.
    pub fn never() -> Self {
        Self {
            ratio: f64::INFINITY,
            min_bytes: u64::MAX,
        }
    }

    /// Whether a checkpoint with this much log since a snapshot of
    /// `base_bytes` should get one.
    pub fn due(&self, log_bytes: u64, base_bytes: u64) -> bool {
        // Precision loss above 2^53 bytes is irrelevant here.
        #[allow(clippy::cast_precision_loss)]
        let threshold = base_bytes as f64 * self.ratio;
        log_bytes >= self.min_bytes && log_bytes as f64 >= threshold
    }
}
