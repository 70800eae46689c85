//! Where a thread goes on from: the tasks its head step leads to, the
//! joins' progress, and what the unfinished step left pending.

use super::context::Interrupt;
use super::joins::JoinState;
use super::pending::{self, Pending};
use super::{Graph, GraphError, Routed, Task, END, START};
use crate::checkpoint::{CheckpointId, Checkpointer, Source, StepRecord, Thread};
use crate::state::AgentState;

/// A thread's resume point.
pub(crate) struct At<U> {
    /// The tasks of the next step; empty when the thread's run finished.
    pub(crate) tasks: Vec<Task>,
    /// The joins' progress.
    pub(crate) joins: JoinState,
    /// What an earlier attempt at the next step left.
    pub(crate) pending: Pending<U>,
}

impl<U> At<U> {
    /// The interrupts the thread is paused on.
    pub(crate) fn interrupts<S: AgentState<Update = U>>(&self, graph: &Graph<S>) -> Vec<Interrupt> {
        let keys: Vec<String> = self.tasks.iter().map(|t| graph.task_key(t)).collect();
        self.pending.interrupts(&keys)
    }

    /// The tasks still to run: those no earlier attempt finished.
    pub(crate) fn unfinished<S: AgentState<Update = U>>(&self, graph: &Graph<S>) -> Vec<Task> {
        self.tasks
            .iter()
            .filter(|t| !self.pending.done.contains_key(&graph.task_key(t)))
            .cloned()
            .collect()
    }
}

/// The resume point of a thread at its head: recomputed from the head step
/// (the nodes that wrote it, their `Command` gotos and `Send`s, the routers
/// on the stored state, the joins that fired), so nothing about the future
/// is stored but what cannot be recomputed.
pub(crate) async fn resume_point<S, C>(
    graph: &Graph<S>,
    thread: &Thread<'_, S, C>,
) -> Result<At<S::Update>, GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let at = At {
        tasks: Vec::new(),
        joins: JoinState::new(graph),
        pending: Pending::default(),
    };
    let Some(head) = thread.head() else {
        return Ok(at);
    };
    // A run's input not applied yet (a crash came after its `input`
    // checkpoint): the thread is where it was when the input came.
    if let Some((input, _)) = thread.held_input().await? {
        return match input.parent {
            Some(parent) => point_at(graph, thread, parent, at).await,
            None => Ok(at),
        };
    }
    point_at(graph, thread, head.id, at).await
}

/// The resume point of checkpoint `head_id`, whose state the thread holds.
async fn point_at<S, C>(
    graph: &Graph<S>,
    thread: &Thread<'_, S, C>,
    head_id: CheckpointId,
    mut at: At<S::Update>,
) -> Result<At<S::Update>, GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let mut record = thread.step(head_id).await?;
    let version = record.meta.version;
    // A fork continues from the step it copies.
    if record.meta.source == Source::Fork {
        if let Some(parent) = record.meta.parent {
            record = thread.step(parent).await?;
        }
    }
    at.pending = load_pending(thread, head_id, version).await?;
    let joins_entry = if record.meta.id == head_id {
        at.pending.joins.take()
    } else {
        load_pending::<S, C>(thread, record.meta.id, record.meta.version)
            .await?
            .joins
    };
    let fired = match joins_entry {
        Some(entry) => {
            let (joins, fired) = JoinState::from_entry(graph, &entry);
            at.joins = joins;
            fired
        }
        None if graph.joins.is_empty() => Vec::new(),
        None => {
            let (joins, fired) = recompute_joins(graph, thread, record.meta.id).await?;
            at.joins = joins;
            fired
        }
    };
    let mut routed = Routed::default();
    route_record(graph, thread, &record, &mut routed)?;
    routed.pull.extend(fired);
    graph.settle(&mut routed, &mut at.tasks);
    at.joins.hold_deferred(graph, &mut at.tasks);
    Ok(at)
}

/// The pending writes of checkpoint `id`, stored under state `version`.
async fn load_pending<S, C>(
    thread: &Thread<'_, S, C>,
    id: CheckpointId,
    version: u32,
) -> Result<Pending<S::Update>, GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let writes = thread.saver().pending(thread.thread_id(), id).await?;
    pending::decode::<S>(thread.thread_id(), id, version, writes)
}

/// Routes from a stored step's writes: START's edges for an input (or its
/// gotos and `Send`s, for input given to a thread stopped midway), each
/// node's edges, gotos and `Send`s otherwise; END goes nowhere.
fn route_record<S, C>(
    graph: &Graph<S>,
    thread: &Thread<'_, S, C>,
    record: &StepRecord<S::Update>,
    routed: &mut Routed,
) -> Result<(), GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let state = thread.state();
    if record.writes.iter().all(|w| w.node == START) {
        let directed = record
            .writes
            .iter()
            .any(|w| !w.goto.is_empty() || !w.send.is_empty());
        if !directed {
            return graph.route_into(None, &[], &[], state, routed);
        }
    }
    // A node's writes route together, as its task's did when it ran: a
    // goto in any of them is the node's.
    for ws in record.writes.chunk_by(|a, b| a.node == b.node) {
        let node = ws[0].node.as_str();
        let from = match node {
            END => continue,
            START => None,
            name => Some(
                *graph
                    .index
                    .get(name)
                    .ok_or_else(|| GraphError::UnknownWriter {
                        thread_id: thread.thread_id().to_owned(),
                        checkpoint: record.meta.id.0,
                        node: name.to_owned(),
                        nodes: graph.names.clone(),
                    })?,
            ),
        };
        let goto: Vec<String> = ws.iter().flat_map(|w| w.goto.iter().cloned()).collect();
        let send: Vec<super::Send> = ws.iter().flat_map(|w| w.send.iter().cloned()).collect();
        match from {
            Some(i) => graph.route_into(Some(i), &goto, &send, state, routed)?,
            None => graph.route_targets(None, &goto, &send, routed)?,
        }
    }
    Ok(())
}

/// The joins' progress at checkpoint `id` when it was not kept with it (a
/// crash between storing the step and storing its progress, or steps saved
/// outside the runtime): replayed from the nearest checkpoint that kept it,
/// through the nodes that wrote each step since.
async fn recompute_joins<S, C>(
    graph: &Graph<S>,
    thread: &Thread<'_, S, C>,
    id: CheckpointId,
) -> Result<(JoinState, Vec<usize>), GraphError>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    let mut records = Vec::new();
    let mut at = Some(id);
    let mut state = JoinState::new(graph);
    while let Some(current) = at {
        let record = thread.step(current).await?;
        if current != id {
            let version = record.meta.version;
            if let Some(entry) = load_pending::<S, C>(thread, current, version).await?.joins {
                state = JoinState::from_entry(graph, &entry).0;
                break;
            }
        }
        at = record.meta.parent.filter(|p| *p < current);
        records.push(record);
    }
    let mut fired = Vec::new();
    for record in records.iter().rev() {
        if record.meta.source == Source::Fork {
            continue;
        }
        let writers = record
            .writes
            .iter()
            .filter_map(|w| graph.index.get(&w.node).copied());
        fired = state.finish(graph, writers);
    }
    Ok((state, fired))
}
