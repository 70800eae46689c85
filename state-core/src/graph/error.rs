//! Errors of building and running a graph.

use std::error::Error;
use std::fmt;

use super::node::BoxError;
use crate::checkpoint::CheckpointError;
use crate::error::StateError;

/// Why a graph did not build or a run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum GraphError {
    /// Two nodes (or a node and a middleware hook) share a name.
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// Two middleware share a name (LangChain requires unique names too).
    DuplicateMiddleware {
        /// The name.
        name: String,
    },
    /// A node is named like one of the reserved endpoints.
    ReservedName {
        /// The name.
        name: String,
    },
    /// An edge names a node that does not exist.
    UnknownNode {
        /// The unknown name.
        name: String,
        /// The edge's source.
        from: String,
    },
    /// An edge or a router leaves a node that does not exist.
    UnknownSource {
        /// The unknown name.
        name: String,
    },
    /// Nothing leaves `START`, so a run would not know where to begin.
    NoEntry,
    /// A router or a `Command` sent the graph to a node that does not exist.
    UnknownTarget {
        /// The node whose routing named it.
        from: String,
        /// The name.
        target: String,
    },
    /// A node returned an error. The step's writes were not applied.
    Node {
        /// The node.
        node: String,
        /// The step it ran in.
        step: i64,
        /// Its error.
        error: BoxError,
    },
    /// The writes of a step do not apply (two nodes wrote one plain field,
    /// a removal named a missing message, a reducer refused a value, ...).
    /// The state is unchanged and nothing was stored.
    InvalidUpdate {
        /// The step.
        step: i64,
        /// The nodes whose writes the step carried.
        nodes: Vec<String>,
        /// The error, naming the field.
        error: StateError,
    },
    /// The run took `limit` supersteps without reaching `END` (LangGraph's
    /// `GraphRecursionError`). Every step so far is applied (and stored).
    RecursionLimit {
        /// The limit.
        limit: usize,
        /// The nodes that would have run next.
        next: Vec<String>,
    },
    /// A new run was given a whole state for a thread that already exists.
    ThreadExists {
        /// The thread.
        thread_id: String,
    },
    /// The checkpointer failed.
    Checkpoint(CheckpointError),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::DuplicateNode { name } => write!(f, "node `{name}` is added twice"),
            GraphError::DuplicateMiddleware { name } => {
                write!(f, "middleware `{name}` is added twice; middleware names must be unique")
            }
            GraphError::ReservedName { name } => {
                write!(f, "`{name}` is reserved for the graph's endpoints; name the node otherwise")
            }
            GraphError::UnknownNode { name, from } => {
                write!(f, "an edge from `{from}` goes to `{name}`, which is not a node")
            }
            GraphError::UnknownSource { name } => {
                write!(f, "an edge or router leaves `{name}`, which is not a node")
            }
            GraphError::NoEntry => {
                f.write_str("no edge leaves START: add one with `add_edge(START, \"node\")`")
            }
            GraphError::UnknownTarget { from, target } => {
                write!(f, "node `{from}` routed to `{target}`, which is not a node")
            }
            GraphError::Node { node, step, error } => {
                write!(f, "node `{node}` failed in step {step}: {error}")
            }
            GraphError::InvalidUpdate { step, nodes, error } => write!(
                f,
                "the writes of step {step} (nodes {}) do not apply: {error}",
                nodes.join(", ")
            ),
            GraphError::RecursionLimit { limit, next } => write!(
                f,
                "recursion limit of {limit} supersteps reached without reaching END (next: {}); raise it with `with_recursion_limit` if the graph is meant to run longer",
                next.join(", ")
            ),
            GraphError::ThreadExists { thread_id } => write!(
                f,
                "thread `{thread_id}` already exists: give it an update or resume it, not a whole new state"
            ),
            GraphError::Checkpoint(error) => error.fmt(f),
        }
    }
}

impl Error for GraphError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            GraphError::Node { error, .. } => Some(error.as_ref()),
            GraphError::InvalidUpdate { error, .. } => Some(error),
            GraphError::Checkpoint(error) => Some(error),
            _ => None,
        }
    }
}

impl From<CheckpointError> for GraphError {
    fn from(error: CheckpointError) -> Self {
        GraphError::Checkpoint(error)
    }
}
