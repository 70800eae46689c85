//! What a run's body asks beyond its input: `command.update` and
//! `command.goto`, a `checkpoint` to run from, `durability`, and
//! `interrupt_before` / `interrupt_after`; each read here, a bad value a
//! 422 naming the field, before anything is stored.

use agent_state::checkpoint::CheckpointId;
use agent_state::graph::Durability;
use serde_json::Value;

use crate::app::Assistant;
use crate::error::ApiError;
use crate::runs::RunCreate;

/// Where a `command.goto` sends the run: a node by name, or a node that
/// takes a `Send`'s input, with that input (`{"node", "input"}`).
#[derive(Debug, Clone)]
pub(crate) enum Goto {
    /// The node runs next on the state.
    Node(String),
    /// The node runs next on this input.
    Send(String, Value),
}

/// The run's control options, checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Control {
    /// `command.update`: written to the state before the run goes on.
    pub update: Option<Value>,
    /// `command.goto`: the nodes that run next.
    pub goto: Vec<Goto>,
    /// `checkpoint_id` (or `checkpoint.checkpoint_id`): the run forks the
    /// thread there.
    pub from: Option<CheckpointId>,
    /// `durability`: when the run stores its steps.
    pub durability: Durability,
    /// `interrupt_before`: the run pauses before these nodes.
    pub before: Vec<String>,
    /// `interrupt_after`: the run pauses after these nodes.
    pub after: Vec<String>,
    /// `config.recursion_limit` (the run's, or else its assistant's): the
    /// run's own limit in place of its graph's.
    pub recursion_limit: Option<usize>,
}

/// Reads the body's control options for a run of `a`'s graph.
pub(crate) fn read(body: &RunCreate, a: &Assistant) -> Result<Control, ApiError> {
    let nodes = a.graph.node_names();
    let command = body.command.as_ref();
    let update = command
        .and_then(|c| c.update.clone())
        .filter(|v| !v.is_null());
    let goto = command.and_then(|c| c.goto.as_ref());
    let targets = (nodes.as_slice(), a.graph.send_targets());
    let goto = goto.map_or(Ok(Vec::new()), |g| gotos(g, &targets))?;
    let resumes = command.is_some_and(|c| c.resume.as_ref().is_some_and(|v| !v.is_null()));
    if resumes && (update.is_some() || !goto.is_empty()) {
        return Err(ApiError::Invalid(
            "command: `resume` together with `update` or `goto` is not supported by this server yet; send them as two runs".to_owned(),
        ));
    }
    Ok(Control {
        update,
        goto,
        from: checkpoint(body)?,
        durability: durability(body.durability.as_ref())?,
        before: breakpoints("interrupt_before", body.interrupt_before.as_ref(), &nodes)?,
        after: breakpoints("interrupt_after", body.interrupt_after.as_ref(), &nodes)?,
        recursion_limit: recursion_limit(body.config.as_ref(), &a.config)?,
    })
}

/// `config.recursion_limit`: the run's, else its assistant's, else none
/// (the graph's own limit holds). The body's shape check already refused
/// one that is not a whole number of at least 1; an assistant's is
/// checked here.
fn recursion_limit(run: Option<&Value>, assistant: &Value) -> Result<Option<usize>, ApiError> {
    let given = run
        .and_then(|c| c.get("recursion_limit"))
        .filter(|v| !v.is_null())
        .or_else(|| assistant.get("recursion_limit").filter(|v| !v.is_null()));
    match given {
        None => Ok(None),
        Some(v) => match v.as_u64().filter(|n| *n >= 1) {
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Err(ApiError::Invalid(format!(
                "config.recursion_limit: expected an integer of at least 1, found `{v}`"
            ))),
        },
    }
}

/// The graph's nodes, and those of them that take a `Send`'s input.
type Targets<'a> = (&'a [String], Vec<String>);

/// `command.goto`: a node's name, a `Send` (`{"node", "input"}`) to a node
/// that takes one, or a list of either; every node one of the graph's.
fn gotos(value: &Value, targets: &Targets<'_>) -> Result<Vec<Goto>, ApiError> {
    let items: Vec<&Value> = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(list) => list.iter().collect(),
        one => vec![one],
    };
    items.into_iter().map(|item| goto(item, targets)).collect()
}

fn goto(item: &Value, (nodes, sends): &Targets<'_>) -> Result<Goto, ApiError> {
    let field = "command.goto";
    match item {
        Value::String(node) => known(node, nodes, field).map(|()| Goto::Node(node.clone())),
        Value::Object(send) => {
            let Some(Value::String(node)) = send.get("node") else {
                return Err(ApiError::Invalid(format!(
                    "{field}: a Send needs `node` (a node's name) and `input`"
                )));
            };
            known(node, nodes, field)?;
            if !sends.contains(node) {
                return Err(ApiError::Invalid(format!(
                    "{field}: node `{node}` reads the state, not a Send's input; the nodes that take a Send are: {}",
                    sends.join(", ")
                )));
            }
            let input = send.get("input").cloned().unwrap_or(Value::Null);
            Ok(Goto::Send(node.clone(), input))
        }
        other => Err(ApiError::Invalid(format!(
            "{field}: `{other}` is not a node's name, a Send or a list of them"
        ))),
    }
}

/// A 422 naming `node` when it is not one of the graph's nodes.
fn known(node: &str, nodes: &[String], field: &str) -> Result<(), ApiError> {
    if nodes.iter().any(|n| n == node) {
        return Ok(());
    }
    Err(ApiError::Invalid(format!(
        "{field}: `{node}` is not a node of this graph; its nodes are {}",
        nodes.join(", ")
    )))
}

/// `interrupt_before` / `interrupt_after`: `"*"` (every node) or a list of
/// nodes.
fn breakpoints(
    field: &str,
    value: Option<&Value>,
    nodes: &[String],
) -> Result<Vec<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(all)) if all == "*" => Ok(nodes.to_vec()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| match v.as_str() {
                Some(node) => known(node, nodes, field).map(|()| node.to_owned()),
                None => Err(ApiError::Invalid(format!(
                    "{field}: `{v}` is not a node's name"
                ))),
            })
            .collect(),
        Some(other) => Err(ApiError::Invalid(format!(
            "{field}: `{other}` is neither \"*\" nor a list of nodes"
        ))),
    }
}

/// `checkpoint_id`, or `checkpoint.checkpoint_id` (what `useStream` sends).
pub(crate) fn checkpoint(body: &RunCreate) -> Result<Option<CheckpointId>, ApiError> {
    let nested = body
        .checkpoint
        .as_ref()
        .and_then(|c| c.get("checkpoint_id"));
    let id = match (body.checkpoint_id.as_ref(), nested) {
        (Some(v), _) if !v.is_null() => ("checkpoint_id", v),
        (_, Some(v)) if !v.is_null() => ("checkpoint.checkpoint_id", v),
        _ => return Ok(None),
    };
    match id.1.as_str().and_then(|s| s.parse().ok()) {
        Some(n) => Ok(Some(CheckpointId(n))),
        None => Err(ApiError::Invalid(format!(
            "{}: `{}` is not a checkpoint id of this server (ids are as `/history` lists them)",
            id.0, id.1
        ))),
    }
}

/// `durability`: `"sync"`, `"async"` (the default, as the official
/// server's) or `"exit"`.
fn durability(value: Option<&Value>) -> Result<Durability, ApiError> {
    match value.and_then(Value::as_str) {
        None if value.is_none_or(Value::is_null) => Ok(Durability::Async),
        Some("async") => Ok(Durability::Async),
        Some("sync") => Ok(Durability::Sync),
        Some("exit") => Ok(Durability::Exit),
        _ => Err(ApiError::Invalid(format!(
            "durability: `{}` is not one of \"sync\", \"async\", \"exit\"",
            value.cloned().unwrap_or_default()
        ))),
    }
}
