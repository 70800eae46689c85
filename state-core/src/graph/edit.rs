//! Reading and editing a thread from outside a run: LangGraph's
//! `get_state`, `update_state` and `get_state_history`.

use super::node::NodeFn;
use super::resume::{resume_point, At};
use super::tasks::{snapshot_tasks, StateSnapshot};
use super::{Graph, GraphError, END, START};
use crate::checkpoint::{
    CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, NodeWrite, Source, Thread,
};
use crate::state::{AgentState, StepRule};

impl<S> Graph<S>
where
    S: AgentState + Default + Clone + Send + Sync + 'static,
    S::Update: Clone + Send + Sync,
{
    /// The thread's latest state, what runs next and what it is paused on
    /// (LangGraph's `get_state`). An unknown thread reads as the default
    /// state with nothing next.
    pub async fn get_state<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let thread = Thread::<S, C>::open(saver, thread_id).await?;
        self.snapshot(thread, true).await
    }

    /// [`get_state`](Self::get_state), each task of a subgraph node with
    /// the subgraph's own snapshot in its [`state`](super::SnapshotTask::state),
    /// and so on down (LangGraph's `get_state(config, subgraphs=True)`): a
    /// subgraph paused inside shows where, with what it has written so
    /// far. A subgraph the task has not started yet shows its default
    /// state with nothing next and no checkpoint.
    ///
    /// ```
    /// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
    /// use agent_state::graph::{BoxError, Input, NodeContext, StateGraph, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Review { approved: bool }
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Post {
    ///     #[state(flatten)]
    ///     review: Review,
    /// }
    ///
    /// let child = StateGraph::<Review>::new()
    ///     .add_node("ask", |_: &Review, ctx: &NodeContext| -> Result<ReviewUpdate, BoxError> {
    ///         Ok(ReviewUpdate::new().approved(ctx.interrupt("ok?")?))
    ///     })
    ///     .add_edge(START, "ask")
    ///     .compile()?;
    /// let parent = StateGraph::<Post>::new()
    ///     .add_node("review", child)
    ///     .add_edge(START, "review")
    ///     .compile()?;
    /// let saver = MemoryCheckpointer::new();
    /// block_on(parent.run(Input::Update(PostUpdate::new())).on_thread(&saver, "t"))?;
    ///
    /// let snapshot = block_on(parent.get_state_with_subgraphs(&saver, "t"))?;
    /// let inside = snapshot.tasks[0].state.as_ref().expect("a subgraph's task");
    /// assert_eq!(inside.next, ["ask"]);
    /// // The interrupt, by the id the parent is resumed with.
    /// assert_eq!(inside.interrupts[0].id, snapshot.interrupts[0].id);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub async fn get_state_with_subgraphs<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let mut snapshot = self.get_state(saver, thread_id).await?;
        // The step the tasks run in, whose number names their subgraphs'
        // threads.
        let step = snapshot.checkpoint.as_ref().map_or(0, |c| c.step + 1);
        for task in &mut snapshot.tasks {
            let Some(&node) = self.index.get(&task.name) else {
                continue;
            };
            let NodeFn::Subgraph(runner) = &self.fns[node] else {
                continue;
            };
            let prefix = format!("{}/{step}|", task.id);
            let child_thread = format!("{thread_id}|{}", prefix.trim_end_matches('|'));
            let inside = runner
                .snapshot(saver.as_dyn(), child_thread, prefix)
                .await?;
            task.state = Some(Box::new(inside));
        }
        Ok(snapshot)
    }

    /// The thread at checkpoint `id`, as a record of its step: the state
    /// it holds, every task of the step after it (`next`, finished ones
    /// included) and every interrupt they raised.
    pub async fn get_state_at<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
        id: CheckpointId,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let thread = Thread::<S, C>::open_at(saver, thread_id, id).await?;
        self.snapshot(thread, false).await
    }

    /// Up to `limit` of the thread's checkpoints, newest first, each as
    /// [`get_state_at`](Self::get_state_at) reads it (LangGraph's
    /// `get_state_history`). Run from one with
    /// [`Run::from_checkpoint`](super::Run::from_checkpoint).
    pub async fn state_history<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
        limit: usize,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let thread = Thread::<S, C>::open(saver, thread_id).await?;
        let records = thread.history(None, limit).await?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            out.push(self.get_state_at(saver, thread_id, record.meta.id).await?);
        }
        Ok(out)
    }

    /// The snapshot of the thread at its checkpoint: `live`, as it is now
    /// (finished tasks' writes applied, only what is still to run),
    /// otherwise as a record of the step.
    async fn snapshot<C: Checkpointer + ?Sized>(
        &self,
        thread: Thread<'_, S, C>,
        live: bool,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let at = resume_point(self, &thread).await?;
        let tasks = snapshot_tasks(self, &at.tasks, &at.pending, live);
        let interrupts = tasks.iter().flat_map(|t| t.interrupts.clone()).collect();
        // A run's `input` checkpoint holds the state before its input: what
        // runs next is `__start__`, as LangGraph shows it (an input not
        // applied yet, or a fork of one; not a thread stored before, whose
        // `input` checkpoint applied its input).
        let start_next = match thread.head() {
            Some(_) if thread.held_input().await?.is_some() => true,
            Some(head) if head.source == Source::Input => {
                thread.step(head.id).await?.writes.is_empty()
            }
            _ => false,
        };
        let next = match (start_next, live) {
            (true, _) => vec![START.to_owned()],
            (false, true) => self.names_of(&at.unfinished(self)),
            (false, false) => self.names_of(&at.tasks),
        };
        let checkpoint = thread.head().cloned();
        let step = checkpoint.as_ref().map_or(0, |c| c.step + 1);
        let mut values = thread.into_state();
        if live {
            self.apply_finished(&mut values, &at, step)?;
        }
        Ok(StateSnapshot {
            next,
            interrupts,
            checkpoint,
            values,
            tasks,
        })
    }

    /// Applies to `state` the writes of the tasks of step `step` that
    /// finished (kept as pending writes), in task order, as the step would
    /// apply them; writes that cannot apply together fail, naming their
    /// tasks, as they would fail the step.
    fn apply_finished(
        &self,
        state: &mut S,
        at: &At<S::Update>,
        step: i64,
    ) -> Result<(), GraphError> {
        let keys: Vec<String> = at.tasks.iter().map(|t| self.task_key(t)).collect();
        let done: Vec<&NodeWrite<S::Update>> = keys
            .iter()
            .filter_map(|k| at.pending.done.get(k))
            .flatten()
            .collect();
        if done.is_empty() {
            return Ok(());
        }
        let updates = done.iter().map(|w| w.update.clone());
        let staged = state.stage(updates, StepRule::Superstep).map_err(|error| {
            GraphError::InvalidUpdate {
                step,
                nodes: done.iter().map(|w| w.node.clone()).collect(),
                error,
            }
        })?;
        state.commit(staged);
        Ok(())
    }

    /// Edits the thread as if node `as_node` had written `update`
    /// (LangGraph's `update_state`): the update goes through the reducers
    /// as a step of its own (source `update`), and the thread then goes on
    /// where that node's routing leads on the new state. [`START`] routes
    /// as an input does, [`END`] leaves nothing to run. Without a node:
    /// the node that wrote the thread's last step, if one did (an input
    /// counts as [`START`]); several is [`GraphError::AmbiguousUpdate`].
    /// A name that is not a node is [`GraphError::UnknownAsNode`]; an
    /// update the state refuses changes nothing.
    ///
    /// The step the thread was paused in (interrupts included) runs anew
    /// on the edited state, under new interrupt ids.
    pub async fn update_state<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<CheckpointMeta, GraphError> {
        let thread = Thread::<S, C>::open(saver, thread_id).await?;
        self.update_opened(saver, thread, update, as_node).await
    }

    /// [`update_state`](Self::update_state) at an older checkpoint `id`
    /// (LangGraph's `update_state` with a `checkpoint_id` in the config):
    /// the update is applied to the state at `id` as a step whose parent is
    /// `id`, numbered `id`'s plus one; it becomes the thread's head, and
    /// the thread goes on from it. The checkpoints after `id` stay in the
    /// history. `as_node`, or the node that wrote `id`, routes as there.
    pub async fn update_state_at<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        thread_id: &str,
        id: CheckpointId,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<CheckpointMeta, GraphError> {
        let thread = Thread::<S, C>::branch(saver, thread_id, id).await?;
        self.update_opened(saver, thread, update, as_node).await
    }

    async fn update_opened<C: Checkpointer + ?Sized>(
        &self,
        saver: &C,
        mut thread: Thread<'_, S, C>,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<CheckpointMeta, GraphError> {
        let thread_id = thread.thread_id().to_owned();
        let thread_id = thread_id.as_str();
        let node = match as_node {
            Some(name) if name == START || name == END || self.index.contains_key(name) => {
                name.to_owned()
            }
            Some(name) => {
                return Err(GraphError::UnknownAsNode {
                    name: name.to_owned(),
                    nodes: self.names.clone(),
                })
            }
            None => self.last_writer(&thread).await?,
        };
        let mut joins = resume_point(self, &thread).await?.joins;
        let step = thread.step_for(Source::Update);
        let mut writes = [NodeWrite::new(node.clone(), update)];
        let meta = match thread.save_writes(Source::Update, &mut writes).await {
            Ok(meta) => meta.clone(),
            Err(CheckpointError::Rejected(error)) => {
                return Err(GraphError::InvalidUpdate {
                    step,
                    nodes: vec![node],
                    error,
                })
            }
            Err(other) => return Err(other.into()),
        };
        if self.keeps_progress() {
            let fired = joins.finish(self, self.index.get(&node).copied());
            let entry = super::pending::joins_entry(&joins.entry(self, &fired));
            saver.put_pending(thread_id, meta.id, vec![entry]).await?;
        }
        Ok(meta)
    }

    /// The node `update_state` without a node writes as.
    async fn last_writer<C: Checkpointer + ?Sized>(
        &self,
        thread: &Thread<'_, S, C>,
    ) -> Result<String, GraphError> {
        let Some(head) = thread.head() else {
            return Ok(START.to_owned());
        };
        let mut record = thread.step(head.id).await?;
        if record.meta.source == Source::Fork {
            if let Some(parent) = record.meta.parent {
                record = thread.step(parent).await?;
            }
        }
        let mut nodes: Vec<String> = record.writes.iter().map(|w| w.node.clone()).collect();
        nodes.sort_unstable();
        nodes.dedup();
        match nodes.as_slice() {
            [] => Ok(START.to_owned()),
            [one] if one == START || one == END || self.index.contains_key(one) => Ok(one.clone()),
            [one] => Err(GraphError::UnknownAsNode {
                name: one.clone(),
                nodes: self.names.clone(),
            }),
            _ => Err(GraphError::AmbiguousUpdate { nodes }),
        }
    }
}
