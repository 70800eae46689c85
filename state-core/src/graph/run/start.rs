//! Where a run starts: its thread (forked for time travel), its input
//! (a first state, an update, a resume), stored as LangGraph stores it.

use super::*;

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// The thread (or none), forked first for time travel.
    pub(super) async fn open(&mut self) -> Result<Sink<'a, S, C>, GraphError> {
        match (self.thread.take(), self.from) {
            (None, None) => Ok(Sink::Plain {
                state: Arc::new(S::default()),
                next_step: -1,
            }),
            (None, Some(_)) => Err(GraphError::NoThread {
                what: "time travel (`from_checkpoint`)",
            }),
            (Some((saver, id)), None) => Ok(Sink::Saved(Thread::open(saver, id).await?, None)),
            (Some((saver, id)), Some(from)) => {
                Ok(Sink::Saved(Thread::fork(saver, id, from).await?, None))
            }
        }
    }

    /// Applies the input and finds the first tasks.
    pub(super) async fn start(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        input: Input<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let mut at = Progress::new(graph);
        match input {
            Input::State(state) => {
                self.start_state(sink, state).await?;
                self.start_fresh(sink, &mut at, None).await?;
            }
            Input::Update(update) => {
                self.report_fork(sink, graph).await?;
                if let Some(stopped) = self.stopped(sink).await? {
                    return self.continue_with(sink, stopped, update).await;
                }
                let mut writes = vec![NodeWrite::new(START, update)];
                let observed = self.observed().then(|| writes.clone());
                sink.hold_input(&mut writes)?;
                self.input_checkpoint(sink, self.durability).await?;
                sink.apply(Source::Loop, &mut writes, self.durability)
                    .await?;
                self.start_fresh(sink, &mut at, observed).await?;
            }
            Input::Resume => return self.start_resume(sink).await,
            Input::ResumeWith(resume) => {
                let Sink::Saved(thread, _) = &*sink else {
                    return Err(GraphError::NoThread {
                        what: "resuming with values",
                    });
                };
                let point = resume_point(graph, thread).await?;
                let pending = point.interrupts(graph);
                let answers =
                    match pending.is_empty() && resume.error.is_none() {
                        true => unpaused(resume, &point, graph, thread.next_step()).ok_or_else(
                            || GraphError::NotInterrupted {
                                thread_id: thread.thread_id().to_owned(),
                            },
                        )?,
                        false => resolve(resume, &pending, thread.thread_id())?,
                    };
                at = progress_from(point);
                if let Some(resumed) = &mut at.resumed {
                    resumed.answers = answers;
                }
                self.resumed(sink, &at).await;
                self.report_fork(sink, graph).await?;
            }
        }
        Ok(at)
    }

    /// `Input::Resume`: an input stored but not applied is applied first;
    /// else the thread goes on with the tasks it stopped before. A thread
    /// never written has nothing to resume (LangGraph: `EmptyInputError`).
    pub(super) async fn start_resume(
        &mut self,
        sink: &mut Sink<'a, S, C>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let Sink::Saved(thread, _) = &*sink else {
            return Err(GraphError::NoThread {
                what: "resuming (`Input::Resume`)",
            });
        };
        if thread.head().is_none() {
            return Err(GraphError::NothingToResume {
                thread_id: thread.thread_id().to_owned(),
            });
        }
        if let Some((_, held)) = thread.held_input().await? {
            self.report_fork(sink, graph).await?;
            return self.apply_held(sink, held).await;
        }
        let at = progress_from(resume_point(graph, thread).await?);
        self.resumed(sink, &at).await;
        self.report_fork(sink, graph).await?;
        Ok(at)
    }

    /// Time travel: tells the step callback and the `checkpoints` stream
    /// about the `fork` checkpoint the run stored (LangGraph streams it
    /// after the state it continues from; no `values` of its own).
    pub(super) async fn report_fork(
        &mut self,
        sink: &Sink<'a, S, C>,
        graph: &Graph<S>,
    ) -> Result<(), GraphError> {
        let (Some(_), Sink::Saved(thread, _)) = (self.from, sink) else {
            return Ok(());
        };
        let Some(head) = thread.head().filter(|h| h.source == Source::Fork) else {
            return Ok(());
        };
        let at = resume_point(graph, thread).await?;
        let tasks = snapshot_tasks(graph, &at.tasks, &at.pending, false);
        self.report_checkpoint(sink, head.step, Source::Fork, Some(head), tasks)
            .await;
        Ok(())
    }

    /// Tells the step callback and the `checkpoints` stream (when it was
    /// stored) about a checkpoint that no node wrote (a fork, a run's
    /// input): its state and the tasks that run next; no writes, no
    /// `values`.
    pub(super) async fn report_checkpoint(
        &mut self,
        sink: &Sink<'a, S, C>,
        step: i64,
        source: Source,
        checkpoint: Option<&CheckpointMeta>,
        tasks: Vec<SnapshotTask>,
    ) {
        let next: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
        if let Some(observer) = &mut self.observer {
            observer(&StepEvent {
                step,
                source,
                writes: &[],
                state: sink.state(),
                checkpoint,
                next: &next,
            });
        }
        if let (Some(channel), Some(head)) = (&self.stream, checkpoint) {
            channel.forked(head, sink.shared(), tasks).await;
        }
    }

    /// A run's input checkpoint, as LangGraph stores it: the state before
    /// the input applies (source `input`, no writes, `__start__` next);
    /// the step after it applies the input. Reported to the step callback
    /// and the `checkpoints` stream (no `values`: LangGraph streams the
    /// state with the input applied). Stored as `durability` stores steps.
    pub(super) async fn input_checkpoint(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        durability: Durability,
    ) -> Result<(), GraphError> {
        // What it can refuse is the input it holds: `__start__`'s write.
        sink.apply(Source::Input, &mut Vec::new(), durability)
            .await
            .map_err(|e| match e {
                GraphError::InvalidUpdate { step, error, .. } => GraphError::InvalidUpdate {
                    step,
                    nodes: vec![START.to_owned()],
                    error,
                },
                other => other,
            })?;
        if self.shows_checkpoints() {
            sink.settle_now().await?;
        }
        let step = sink.next_step() - 1;
        // LangGraph lists the input as a task of `__start__`.
        let start = SnapshotTask {
            id: START.to_owned(),
            name: START.to_owned(),
            error: None,
            interrupts: Vec::new(),
            result: None,
            state: None,
        };
        self.report_checkpoint(sink, step, Source::Input, sink.head(), vec![start])
            .await;
        Ok(())
    }

    /// A whole state as a new thread's (or a plain run's) first state.
    pub(super) async fn start_state(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        state: S,
    ) -> Result<(), GraphError> {
        match sink {
            Sink::Plain { .. } => {
                self.input_checkpoint(sink, Durability::Sync).await?;
                let Sink::Plain {
                    state: s,
                    next_step,
                } = sink
                else {
                    unreachable!("a plain sink stays plain")
                };
                *s = Arc::new(state);
                *next_step += 1;
            }
            Sink::Saved(thread, _) => {
                if thread.head().is_some() {
                    return Err(GraphError::ThreadExists {
                        thread_id: thread.thread_id().to_owned(),
                    });
                }
                let step = thread.next_step() + 1;
                let refused = |e| match e {
                    CheckpointError::Rejected(error) => GraphError::InvalidUpdate {
                        step,
                        nodes: vec![START.to_owned()],
                        error,
                    },
                    other => GraphError::Checkpoint(other),
                };
                let snapshot = Thread::<S, C>::encode(&state).map_err(refused)?;
                thread.hold_first_state(&snapshot);
                // A new thread's first state is stored as the run starts,
                // whatever its durability.
                self.input_checkpoint(sink, Durability::Sync).await?;
                Self::store_first_state(sink, state, snapshot)
                    .await
                    .map_err(refused)?;
            }
        }
        Ok(())
    }

    /// Stores a new thread's first state (its snapshot `snapshot`) as the
    /// step after its `input` checkpoint.
    pub(super) async fn store_first_state(
        sink: &mut Sink<'a, S, C>,
        state: S,
        snapshot: String,
    ) -> Result<(), CheckpointError> {
        let Sink::Saved(thread, _) = sink else {
            unreachable!("a stored sink stays stored")
        };
        thread.save_state(Source::Loop, state, snapshot).await?;
        Ok(())
    }

    /// The first step of a run from START, once its input is applied.
    pub(super) async fn start_fresh(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        observed: Option<Vec<NodeWrite<S::Update>>>,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        let mut routed = Routed::default();
        graph.route_into(None, &[], &[], sink.state(), &mut routed)?;
        graph.settle(&mut routed, &mut at.tasks);
        sink.keep_joins(graph, &at.joins, &[]).await?;
        at.steps = 1;
        self.emit(sink, observed, &at.tasks).await?;
        Ok(())
    }

    /// Where a thread stopped midway, if it did: `None` for a plain run, a
    /// new thread, or a finished one.
    pub(super) async fn stopped(
        &mut self,
        sink: &Sink<'a, S, C>,
    ) -> Result<Option<At<S::Update>>, GraphError> {
        let Sink::Saved(thread, _) = sink else {
            return Ok(None);
        };
        let point = resume_point(self.graph, thread).await?;
        if point.tasks.is_empty() {
            return Ok(None);
        }
        let pending = point.interrupts(self.graph);
        if !pending.is_empty() {
            return Err(GraphError::Paused {
                thread_id: thread.thread_id().to_owned(),
                pending: pending.into_iter().map(|i| i.id).collect(),
            });
        }
        Ok(Some(point))
    }

    /// Input for a thread stopped midway: stored as an input checkpoint,
    /// then a step whose routing is the tasks it stopped before, which
    /// then run.
    pub(super) async fn continue_with(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        point: At<S::Update>,
        update: S::Update,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        let mut write = NodeWrite::new(START, update);
        for task in &point.tasks {
            let name = &graph.names[task.node];
            match &task.send {
                None => write.goto.push(name.clone()),
                Some((_, arg)) => write
                    .send
                    .push(crate::graph::Send::from_arg(name, arg.clone())),
            }
        }
        let observed = self.observed().then(|| vec![write.clone()]);
        let mut writes = vec![write];
        sink.hold_input(&mut writes)?;
        self.input_checkpoint(sink, self.durability).await?;
        self.carry_on(sink, point, writes, observed).await
    }

    /// Applies the input `writes` of a thread stopped at `point` (their
    /// routing its tasks), which then run.
    pub(super) async fn carry_on(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        point: At<S::Update>,
        mut writes: Vec<NodeWrite<S::Update>>,
        observed: Observed<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let graph = self.graph;
        sink.apply(Source::Loop, &mut writes, self.durability)
            .await?;
        let mut at = progress_from(point);
        at.resumed = None;
        at.resuming = true;
        at.steps = 1;
        sink.keep_joins(graph, &at.joins, &[]).await?;
        self.emit(sink, observed, &at.tasks).await?;
        Ok(at)
    }

    /// A resume from a run's `input` checkpoint whose input was not
    /// applied (a crash came between the two): applies the input it holds
    /// and goes on as the interrupted run would have.
    pub(super) async fn apply_held(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        held: HeldInput<S>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let mut at = Progress::new(self.graph);
        match held {
            HeldInput::State(state) => {
                let snapshot = Thread::<S, C>::encode(&state)?;
                Self::store_first_state(sink, state, snapshot).await?;
                self.start_fresh(sink, &mut at, None).await?;
            }
            HeldInput::Writes(mut writes) => {
                let observed = self.observed().then(|| writes.clone());
                // Where the thread was when the input came.
                if let Some(point) = self.stopped(sink).await? {
                    return self.carry_on(sink, point, writes, observed).await;
                }
                sink.apply(Source::Loop, &mut writes, self.durability)
                    .await?;
                self.start_fresh(sink, &mut at, observed).await?;
            }
        }
        Ok(at)
    }
}

fn progress_from<U>(point: At<U>) -> Progress<U> {
    Progress {
        tasks: point.tasks,
        joins: point.joins,
        steps: 0,
        stop: i64::MAX,
        resuming: true,
        resumed: Some(Resumed {
            pending: point.pending,
            answers: HashMap::new(),
        }),
    }
}

/// A value given to a thread with tasks to run but no pending interrupt
/// (an `update_state` replaced the paused step): as LangGraph, the first
/// interrupt the next step raises takes it, here the first of its tasks'.
/// `None` when there is no such step, or the values name interrupts.
fn unpaused<S: AgentState>(
    resume: Resume,
    point: &At<S::Update>,
    graph: &Graph<S>,
    step: i64,
) -> Option<HashMap<String, Value>> {
    if !resume.by_id.is_empty() {
        return None;
    }
    let first = point.unfinished(graph).into_iter().next()?;
    let id = format!("{}/{step}/0", graph.task_key(&first));
    Some(HashMap::from([(id, resume.single?)]))
}

/// The answers by interrupt id, checked against the pending interrupts.
fn resolve(
    resume: Resume,
    pending: &[Interrupt],
    thread_id: &str,
) -> Result<HashMap<String, Value>, GraphError> {
    if let Some(error) = resume.error {
        return Err(GraphError::ResumeValue { error });
    }
    if pending.is_empty() {
        return Err(GraphError::NotInterrupted {
            thread_id: thread_id.to_owned(),
        });
    }
    let ids: Vec<String> = pending.iter().map(|i| i.id.clone()).collect();
    let mut answers: HashMap<String, Value> = HashMap::new();
    for (id, value) in resume.by_id {
        if !ids.contains(&id) {
            return Err(GraphError::UnknownInterrupt { id, pending: ids });
        }
        answers.insert(id, value);
    }
    if let Some(value) = resume.single {
        if ids.len() != 1 {
            return Err(GraphError::AmbiguousResume { pending: ids });
        }
        answers.insert(ids[0].clone(), value);
    }
    Ok(answers)
}
