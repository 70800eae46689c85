//! Errors of building and running a graph.

use std::error::Error;
use std::fmt;

use super::unknown::write_not_a_node;
use crate::checkpoint::CheckpointError;
use crate::error::StateError;

/// A node's error, boxed: nodes call models, tools and services whose errors
/// have nothing in common.
pub type BoxError = Box<dyn std::error::Error + std::marker::Send + Sync>;

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
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// An edge or a router leaves a node that does not exist.
    UnknownSource {
        /// The unknown name.
        name: String,
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// Nothing leaves `START`, so a run would not know where to begin.
    NoEntry,
    /// A router or a `Command` sent the graph to a node that does not exist.
    UnknownTarget {
        /// The node whose routing named it.
        from: String,
        /// The name.
        target: String,
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// A router declared with its targets
    /// ([`StateGraph::add_conditional_edges_to`](super::StateGraph::add_conditional_edges_to))
    /// named another.
    UndeclaredTarget {
        /// The node the router leaves.
        from: String,
        /// The name it gave.
        target: String,
        /// The targets it declared.
        declared: Vec<String>,
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
    /// The run hit its recursion limit without reaching `END` (LangGraph's
    /// `GraphRecursionError`): it ran `limit` node steps after its input
    /// (resuming a stored step, `limit` + 2, as LangGraph counts). Every
    /// step so far is applied (and stored).
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
    /// An edge or a router names a node that takes its input from `Send`s
    /// (its first argument is a [`Sent`](super::Sent)): only a
    /// [`Send`](super::Send) carries that input.
    EdgeToSendNode {
        /// The node.
        node: String,
        /// Where the edge or route comes from.
        from: String,
    },
    /// A [`Send`](super::Send) targets a node that reads the state: only a
    /// node whose first argument is a [`Sent`](super::Sent) takes a
    /// `Send`'s input.
    SendToStateNode {
        /// The node.
        node: String,
        /// The node whose routing made the `Send`.
        from: String,
    },
    /// A `Send`'s argument does not serialize, so its step cannot be
    /// stored.
    SendArg {
        /// The target node.
        node: String,
        /// Why.
        error: String,
    },
    /// A join (`add_edge([..], to)`) that cannot work.
    BadJoin {
        /// The join, as `join:<sources>:<target>`.
        join: String,
        /// Why.
        reason: String,
    },
    /// A breakpoint names a node that does not exist.
    UnknownPolicyNode {
        /// The name.
        name: String,
        /// `interrupt_before` or `interrupt_after`.
        what: &'static str,
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// A timeout on a sync node, which cannot be stopped midway.
    TimeoutOnSyncNode {
        /// The node.
        node: String,
    },
    /// A [`CachePolicy`](super::CachePolicy) on a subgraph: its output is
    /// its child's whole run, which is not cached.
    CacheOnSubgraph {
        /// The node.
        node: String,
    },
    /// An interrupt's payload does not serialize.
    InterruptPayload {
        /// The node.
        node: String,
        /// The interrupt.
        id: String,
        /// Why.
        error: String,
    },
    /// Resume values were given for a thread with nothing to run (never
    /// started, or finished). A thread with nodes to run but no interrupt
    /// pending (stopped at a breakpoint, or its paused step replaced by a
    /// state update) takes a single value: the first interrupt its next
    /// step raises gets it.
    NotInterrupted {
        /// The thread.
        thread_id: String,
    },
    /// A resume value names an interrupt the thread is not paused on.
    UnknownInterrupt {
        /// The id given.
        id: String,
        /// The ids of the pending interrupts.
        pending: Vec<String>,
    },
    /// [`Resume::value`](super::Resume::value) when several interrupts are
    /// pending: say which one with [`Resume::answer`](super::Resume::answer).
    AmbiguousResume {
        /// The ids of the pending interrupts.
        pending: Vec<String>,
    },
    /// A resume value does not read as the type the node asked for. The
    /// thread stays paused: resume again with a value of that type.
    ResumeType {
        /// The interrupt.
        id: String,
        /// The node.
        node: String,
        /// The type the node's `interrupt` call returns.
        expected: &'static str,
        /// Why the value does not read as one.
        error: String,
    },
    /// A resume value does not serialize.
    ResumeValue {
        /// Why.
        error: String,
    },
    /// New input for a thread paused on interrupts: answer them
    /// ([`Input::ResumeWith`](super::Input::ResumeWith)) or edit the thread
    /// ([`Graph::update_state`](super::Graph::update_state)) first.
    Paused {
        /// The thread.
        thread_id: String,
        /// The ids of the pending interrupts.
        pending: Vec<String>,
    },
    /// A stored step was written under a name that is not a node of the
    /// graph (a graph changed since, or an edit saved by hand): the run
    /// cannot tell what comes next.
    UnknownWriter {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint: u64,
        /// The name.
        node: String,
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// [`update_state`](super::Graph::update_state) with a node name the
    /// graph does not have.
    UnknownAsNode {
        /// The name.
        name: String,
        /// The graph's nodes, for the message's "did you mean".
        nodes: Vec<String>,
    },
    /// [`update_state`](super::Graph::update_state) without a node, when the
    /// thread's last step had several (or none): name one.
    AmbiguousUpdate {
        /// The nodes of the last step.
        nodes: Vec<String>,
    },
    /// [`Input::Resume`](super::Input::Resume) on a thread that has never
    /// been written: there is no step to continue from. Start the thread
    /// with [`Input::State`](super::Input::State) or
    /// [`Input::Update`](super::Input::Update).
    NothingToResume {
        /// The thread.
        thread_id: String,
    },
    /// The run's input was refused before anything ran or was stored: an
    /// [`Input::Update`](super::Input::Update) writing a field the graph's
    /// input may not set (the error's kind is
    /// [`ErrorKind::NotInput`](crate::ErrorKind::NotInput), naming it).
    InvalidInput {
        /// Why, naming the field.
        error: StateError,
    },
    /// What the run was asked for needs a thread: resume values, time
    /// travel, reading or editing a thread.
    NoThread {
        /// What was asked.
        what: &'static str,
    },
    /// The run was cancelled ([`CancelToken`](super::CancelToken)); the
    /// thread is at its last saved step.
    Cancelled,
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
            GraphError::UnknownNode { name, from, nodes } => {
                write!(f, "an edge from `{from}` goes to `{name}`, which is not a node")?;
                write_not_a_node(f, name, nodes)
            }
            GraphError::UnknownSource { name, nodes } => {
                write!(f, "an edge or router leaves `{name}`, which is not a node")?;
                write_not_a_node(f, name, nodes)
            }
            GraphError::NoEntry => {
                f.write_str("no edge leaves START: add one with `add_edge(START, \"node\")`")
            }
            GraphError::UnknownTarget {
                from,
                target,
                nodes,
            } => {
                write!(f, "node `{from}` routed to `{target}`, which is not a node")?;
                write_not_a_node(f, target, nodes)
            }
            GraphError::UndeclaredTarget {
                from,
                target,
                declared,
            } => write!(
                f,
                "the router after `{from}` went to `{target}`, which is not one of the targets it declared ({})",
                declared.join(", ")
            ),
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
                "recursion limit of {limit} supersteps reached without reaching END (next: {}); raise it with `with_recursion_limit` (or the run's `recursion_limit`) if the graph is meant to run longer",
                next.join(", ")
            ),
            GraphError::ThreadExists { thread_id } => write!(
                f,
                "thread `{thread_id}` already exists: give it an update or resume it, not a whole new state"
            ),
            GraphError::Checkpoint(error) => error.fmt(f),
            _ => self.fmt_build(f),
        }
    }
}

impl GraphError {
    /// The messages of errors `compile` finds in a graph's wiring and
    /// policies.
    fn fmt_build(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::EdgeToSendNode { node, from } => write!(
                f,
                "`{from}` routes to `{node}`, which takes its input from a Send: route to it with `Send::new(\"{node}\", input)`"
            ),
            GraphError::SendToStateNode { node, from } => write!(
                f,
                "`{from}` sent a Send to `{node}`, which reads the state: a Send's target takes `Sent<T>` as its first argument"
            ),
            GraphError::SendArg { node, error } => {
                write!(f, "the input of a Send to `{node}` does not serialize: {error}")
            }
            GraphError::BadJoin { join, reason } => write!(f, "join `{join}`: {reason}"),
            GraphError::UnknownPolicyNode { name, what, nodes } => {
                write!(f, "`{what}` names `{name}`, which is not a node")?;
                write_not_a_node(f, name, nodes)
            }
            GraphError::TimeoutOnSyncNode { node } => write!(
                f,
                "node `{node}` is sync and cannot be stopped midway: a timeout needs an async node"
            ),
            GraphError::CacheOnSubgraph { node } => write!(
                f,
                "node `{node}` is a subgraph, whose run is not cached: a cache policy needs a node function"
            ),
            _ => self.fmt_run(f),
        }
    }

    /// The messages of errors of a run's pauses, resumes and edits.
    fn fmt_run(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::InterruptPayload { node, id, error } => write!(
                f,
                "node `{node}`: the payload of interrupt `{id}` does not serialize: {error}"
            ),
            GraphError::NotInterrupted { thread_id } => write!(
                f,
                "thread `{thread_id}` has no interrupt pending and nothing to run: nothing to answer"
            ),
            GraphError::UnknownInterrupt { id, pending } => write!(
                f,
                "no pending interrupt `{id}`; pending: {}",
                list(pending)
            ),
            GraphError::AmbiguousResume { pending } => write!(
                f,
                "several interrupts are pending ({}): give each value with `Resume::answer(id, value)`",
                list(pending)
            ),
            GraphError::ResumeType {
                id,
                node,
                expected,
                error,
            } => write!(
                f,
                "the value resuming interrupt `{id}` of node `{node}` is not a `{expected}`: {error}; the thread is still paused"
            ),
            GraphError::ResumeValue { error } => {
                write!(f, "a resume value does not serialize: {error}")
            }
            GraphError::Paused { thread_id, pending } => write!(
                f,
                "thread `{thread_id}` is paused on interrupts {}: answer them with Input::ResumeWith, or edit the thread with update_state",
                list(pending)
            ),
            GraphError::UnknownWriter {
                thread_id,
                checkpoint,
                node,
                nodes,
            } => {
                write!(
                    f,
                    "thread `{thread_id}`, checkpoint {checkpoint} was written as `{node}`, which is not a node of this graph: the run cannot tell what comes next"
                )?;
                write_not_a_node(f, node, nodes)
            }
            GraphError::UnknownAsNode { name, nodes } => {
                write!(f, "update_state as `{name}`, which is not a node of this graph")?;
                write_not_a_node(f, name, nodes)
            }
            GraphError::AmbiguousUpdate { nodes } => write!(
                f,
                "update_state without a node is ambiguous after a step of {}: name the node",
                if nodes.is_empty() { "no node".to_owned() } else { list(nodes) }
            ),
            GraphError::NothingToResume { thread_id } => write!(
                f,
                "thread `{thread_id}` has never been written: there is nothing to resume; start it with Input::State or Input::Update"
            ),
            GraphError::InvalidInput { error } => {
                write!(f, "the run's input is refused, and nothing was run or stored: {error}")
            }
            GraphError::NoThread { what } => {
                write!(f, "{what} needs a thread: run it with `on_thread`")
            }
            GraphError::Cancelled => {
                f.write_str("the run was cancelled; the thread is at its last saved step")
            }
            _ => unreachable!("fmt handles the other variants"),
        }
    }
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Error for GraphError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            GraphError::Node { error, .. } => Some(error.as_ref()),
            GraphError::InvalidUpdate { error, .. } | GraphError::InvalidInput { error } => {
                Some(error)
            }
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
