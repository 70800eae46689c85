//! The superstep loop: run a step's tasks, apply their writes, route,
//! stop where the run stops.

use super::*;

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// The run's steps, from its input to where it ends: where it is then,
    /// and where it paused on interrupts, if it did.
    pub(super) async fn drive(
        &mut self,
        sink: &mut Sink<'a, S, C>,
    ) -> Result<(Progress<S::Update>, Paused<S>), GraphError> {
        let mut at = self.begin(sink).await?;
        let mut routed = Routed::default();
        let mut next: Vec<Task> = Vec::new();
        let mut out = StepOut::default();
        // A plain run that shows nothing and keeps no progress: its steps
        // of one plain sync node run by `run_direct`, as by hand.
        let plain = matches!(sink, Sink::Plain { .. }) && self.shows_nothing();
        let direct = plain && !self.graph.keeps_progress();
        while !at.tasks.is_empty() {
            let mut ran = false;
            if direct && at.resumed.is_none() {
                match self.run_direct(&mut *sink, &mut at, &mut out, &mut routed)? {
                    Direct::Stopped => break,
                    Direct::Ran => ran = true,
                    Direct::Yield if at.tasks.is_empty() => break,
                    Direct::Yield => {}
                }
            }
            if !ran && self.stop_before_step(&at, sink.next_step())? {
                if let (true, Some(channel)) = (self.at_breakpoint(&at), &self.stream) {
                    channel.at_breakpoint().await;
                }
                break;
            }
            let step = StepRun { ran, plain };
            let (routing, observed) = match self.one_step(sink, &mut at, step, &mut out).await? {
                Ok(done) => done,
                Err(paused) => return Ok((at, paused)),
            };
            let routes = (&routing, &mut routed, &mut next);
            // A direct run has nothing to keep or show after a step: it
            // routes without a future of its own.
            let stops = if direct {
                self.after_plain_step(&*sink, &mut at, routes)?
            } else {
                self.after_step(sink, &mut at, routes, observed).await?
            };
            if stops {
                break;
            }
        }
        Ok((at, Paused::default()))
    }

    /// The run's input applied (or its thread's resume point read), with
    /// its recursion limit; a `messages` stream told what the state holds.
    async fn begin(
        &mut self,
        sink: &mut Sink<'a, S, C>,
    ) -> Result<Progress<S::Update>, GraphError> {
        let input = std::mem::replace(&mut self.input, Input::Resume);
        let stop = recursion_stop(sink.next_step(), self.limit());
        let mut at = self.start(&mut *sink, input).await?;
        at.stop = stop;
        if let (true, Some(channel)) = (self.streams(StreamMode::Messages), &self.stream) {
            let fields = returned::message_fields::<S>();
            channel.seen(returned::state_ids(sink.state(), &fields));
        }
        Ok(at)
    }

    /// Runs one step's tasks (unless `run_direct` ran its node) and applies
    /// their writes: the step's routing and what an observer sees, or
    /// where it paused.
    async fn one_step(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        how: StepRun,
        out: &mut StepOut<S::Update>,
    ) -> Result<Result<(Routing, Observed<S>), Paused<S>>, GraphError> {
        let step = sink.next_step();
        if let Some(channel) = &self.stream {
            let state = sink.shared();
            channel
                .tasks_start(self.graph, step, &at.tasks, &state)
                .await;
        }
        let span = trace::Timed::new(trace::step_span(self.graph, step, &at.tasks));
        // A step of one plain sync node runs without a future of its own;
        // in a plain run that shows nothing, its update applies as it is.
        let fast = match at.resumed {
            _ if how.ran => Fast::Ran,
            None => span
                .span()
                .in_scope(|| fast_path(self.graph, &at.tasks, sink.state(), step, out, how.plain)),
            Some(_) => Fast::No,
        };
        let Fast::Update(update) = fast else {
            return self.finish_step(&mut *sink, at, fast, out, &span).await;
        };
        let node = at.tasks[0].node;
        sink.apply_one_plain(update)
            .map_err(|error| GraphError::InvalidUpdate {
                step,
                nodes: vec![self.graph.names[node].clone()],
                error,
            })?;
        Ok(Ok((Vec::new(), None)))
    }

    /// After a step applied: routes to the next step's tasks, keeps the
    /// joins' progress, reports the step. `true`: the run stops here (an
    /// `interrupt_after` node ran).
    async fn after_step(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        (routing, routed, next): (&Routing, &mut Routed, &mut Vec<Task>),
        observed: Observed<S>,
    ) -> Result<bool, GraphError> {
        let fired = self.route_step(&*sink, at, routing, routed, next)?;
        if self.graph.keeps_progress() {
            sink.keep_joins(self.graph, &at.joins, &fired).await?;
        }
        if !self.shows_nothing() {
            self.emit(sink, observed, next).await?;
        }
        if self.end_step(at, next) {
            if let Some(channel) = &self.stream {
                channel.at_breakpoint().await;
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// [`after_step`](Self::after_step) for a run that keeps no progress
    /// and shows nothing: routes, then moves on.
    fn after_plain_step(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        (routing, routed, next): (&Routing, &mut Routed, &mut Vec<Task>),
    ) -> Result<bool, GraphError> {
        self.route_step(sink, at, routing, routed, next)?;
        Ok(self.end_step(at, next))
    }

    /// Moves on to `next`'s tasks; `true`: the run stops here (an
    /// `interrupt_after` node ran and there is more to run).
    fn end_step(&self, at: &mut Progress<S::Update>, next: &mut Vec<Task>) -> bool {
        let after = at.tasks.iter().any(|t| self.breaks_after(t.node));
        std::mem::swap(&mut at.tasks, next);
        at.resuming = false;
        after && !at.tasks.is_empty()
    }

    /// A step the fast path did not apply: its tasks run (unless the fast
    /// path ran its one node) in the step's span, then its writes apply.
    /// `Ok(Err(..))`: the step paused on interrupts instead.
    pub(super) async fn finish_step(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        fast: Fast<S::Update>,
        out: &mut StepOut<S::Update>,
        span: &trace::Timed,
    ) -> Result<Result<(Routing, Observed<S>), Paused<S>>, GraphError> {
        let step = sink.next_step();
        if let Fast::No = fast {
            // What the step may leave pending is kept with a stored
            // checkpoint; any other step stays unsaved under `Exit`/`Async`.
            if self.graph.may_leave_pending(&at.tasks) {
                sink.flush().await?;
            }
            let plan = StepPlan {
                step,
                store: sink.store(),
                resumed: at.resumed.take(),
                cancel: self.cancel.clone(),
                stream: self.stream.clone(),
                scope: TaskScope {
                    context: self.context.clone(),
                    store: self.store.clone(),
                    remaining: self.limit().saturating_sub(at.steps),
                },
            };
            let running = run_step(self.graph, &at.tasks, sink.shared(), plan, out);
            // Nobody listening: the step's future is awaited as it is, not
            // moved into a span's wrapper.
            if span.span().is_disabled() {
                running.await?;
            } else {
                running.instrument(span.span().clone()).await?;
            }
        } else if let Some(channel) = &self.stream {
            fast_ended(
                self.graph,
                &at.tasks,
                step,
                Some(channel),
                &sink.shared(),
                out,
            );
        }
        if let Some(error) = out.failed.take() {
            self.keep_errors(sink, at, out);
            return Err(error);
        }
        if !out.interrupts.is_empty() {
            return self.pause(sink, at, out).await.map(Err);
        }
        // A plain run that shows nothing reads the writes' routing nowhere
        // else: it is moved out of them, not copied.
        let moves = matches!(sink, Sink::Plain { .. }) && self.shows_nothing();
        let routing = self.routing(out, moves)?;
        let observed = self.observed().then(|| out.writes.clone());
        // A plain run's writes apply without a future of their own.
        if let Sink::Plain { .. } = sink {
            sink.apply_plain_writes(&mut out.writes)?;
        } else {
            sink.apply(Source::Loop, &mut out.writes, self.durability)
                .await?;
        }
        Ok(Ok((routing, observed)))
    }

    /// A step some of whose tasks paused: what the run returns. Those that
    /// finished are kept (as pending writes, on a thread) for the resume;
    /// the output shows the state with their writes, and `next` only the
    /// tasks still to run, as LangGraph's `invoke` and `values` show them.
    pub(super) async fn pause(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &Progress<S::Update>,
        out: &mut StepOut<S::Update>,
    ) -> Result<Paused<S>, GraphError> {
        let step = sink.next_step();
        let next = (at.tasks.iter().enumerate())
            .filter(|&(k, _)| out.task_writes(k).is_empty())
            .map(|(_, t)| self.graph.names[t.node].clone())
            .collect();
        let interrupts = std::mem::take(&mut out.interrupts);
        if out.writes.is_empty() {
            let state = None;
            return Ok(Paused {
                interrupts,
                state,
                next,
            });
        }
        let wrote = out.writes.iter().any(|w| !StateUpdate::is_empty(&w.update));
        let mut state = sink.state().clone();
        let updates = out.writes.iter_mut().map(|w| std::mem::take(&mut w.update));
        let staged = state.stage(updates, StepRule::Superstep);
        let staged = staged.map_err(|error| GraphError::InvalidUpdate {
            step,
            nodes: out.writes.iter().map(|w| w.node.clone()).collect(),
            error,
        })?;
        state.commit(staged);
        let state = Arc::new(state);
        if let (true, Some(channel)) = (wrote, &self.stream) {
            channel
                .paused_with_writes(step - 1, Arc::clone(&state))
                .await;
        }
        Ok(Paused {
            interrupts,
            state: Some(state),
            next,
        })
    }

    /// Notes the errors of a step's failed tasks, to keep with the thread's
    /// head once the run has stored what it ran (a snapshot shows them).
    pub(super) fn keep_errors(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &Progress<S::Update>,
        out: &mut StepOut<S::Update>,
    ) {
        if let Sink::Saved(..) = sink {
            let graph = self.graph;
            self.errors = (out.errors.drain(..))
                .map(|(k, error)| pending::error_entry(&graph.task_key(&at.tasks[k]), &error))
                .collect();
        }
    }

    /// Whether the loop stops before running `at.tasks` as step `step`:
    /// cancelled (an error), at the step limit, at the recursion limit (an
    /// error), or at a breakpoint.
    pub(super) fn stop_before_step(
        &self,
        at: &Progress<S::Update>,
        step: i64,
    ) -> Result<bool, GraphError> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(GraphError::Cancelled);
        }
        if self.stop_after.is_some_and(|limit| at.steps >= limit) {
            return Ok(true);
        }
        if step > at.stop {
            return Err(GraphError::RecursionLimit {
                limit: self.limit(),
                next: self.graph.names_of(&at.tasks),
            });
        }
        Ok(self.at_breakpoint(at))
    }

    /// Whether `at.tasks` wait at a breakpoint (one passed by resuming it
    /// does not count).
    pub(super) fn at_breakpoint(&self, at: &Progress<S::Update>) -> bool {
        !at.resuming && at.tasks.iter().any(|t| self.breaks_before(t.node))
    }

    /// Tells the stream the state a stored thread resumes from, and its
    /// checkpoint with what an earlier attempt at its tasks left (that of
    /// a fork is reported as the fork).
    pub(super) async fn resumed(&mut self, sink: &Sink<'a, S, C>, at: &Progress<S::Update>) {
        let (Some(channel), Some(head)) = (&self.stream, sink.head()) else {
            return;
        };
        let none = Pending::default();
        let pending = at.resumed.as_ref().map_or(&none, |r| &r.pending);
        let tasks = match self.from {
            None => snapshot_tasks(self.graph, &at.tasks, pending, false),
            Some(_) => Vec::new(),
        };
        let forked = self.from.is_some();
        channel.resumed(head, sink.shared(), forked, tasks).await;
    }

    /// The gotos and `Send`s of each task's writes, checked; empty when
    /// no write has any (most steps: then nothing is copied). With
    /// `moves`, they are taken out of the writes instead of copied (for a
    /// run where nothing reads them after).
    pub(super) fn routing(
        &self,
        out: &mut StepOut<S::Update>,
        moves: bool,
    ) -> Result<Routing, GraphError> {
        let directed = out
            .writes
            .iter()
            .any(|w| !w.goto.is_empty() || !w.send.is_empty());
        if !directed {
            return Ok(Vec::new());
        }
        for w in &out.writes {
            self.graph.check_targets(&w.node, &w.goto, &w.send)?;
        }
        let StepOut { owners, writes, .. } = out;
        Ok(owners
            .windows(2)
            .map(|k| task_routing(&mut writes[k[0]..k[1]], moves))
            .collect())
    }

    /// Routes from an applied step: `next` gets the tasks of the following
    /// step. Returns the joins that fired, for keeping their progress.
    pub(super) fn route_step(
        &mut self,
        sink: &Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        routing: &Routing,
        routed: &mut Routed,
        next: &mut Vec<Task>,
    ) -> Result<Vec<usize>, GraphError> {
        let graph = self.graph;
        if let ([task], true) = (&at.tasks[..], routing.is_empty()) {
            if let Some(fixed) = graph.fixed_next(task.node) {
                next.clear();
                next.extend(fixed.iter().map(|&node| Task { node, send: None }));
                at.steps += 1;
                return Ok(Vec::new());
            }
        }
        let mut fired = at.joins.finish(graph, at.tasks.iter().map(|t| t.node));
        routed.clear();
        for (k, task) in at.tasks.iter().enumerate() {
            let (goto, send) = routing
                .get(k)
                .map_or((&[][..], &[][..]), |(g, s)| (g.as_slice(), s.as_slice()));
            graph.route_into(Some(task.node), goto, send, sink.state(), routed)?;
        }
        routed.pull.extend_from_slice(&fired);
        graph.settle(routed, next);
        // Kept as fired: a resume of this step runs them again.
        fired.extend(at.joins.hold_deferred(graph, next));
        at.steps += 1;
        Ok(fired)
    }
}

/// How the loop came to a step: whether `run_direct` already called its
/// node, and whether the run is plain (shows nothing, keeps nothing).
#[derive(Clone, Copy)]
struct StepRun {
    ran: bool,
    plain: bool,
}

/// One task's gotos and `Send`s, from its writes: taken out of them with
/// `moves` (the first write's lists as they are, later ones appended), else
/// copied.
fn task_routing<U>(ws: &mut [NodeWrite<U>], moves: bool) -> (Vec<String>, Vec<crate::send::Send>) {
    if !moves {
        let goto = ws.iter().flat_map(|w| w.goto.iter().cloned()).collect();
        let send = ws.iter().flat_map(|w| w.send.iter().cloned()).collect();
        return (goto, send);
    }
    let (mut goto, mut send) = (Vec::new(), Vec::new());
    for w in ws {
        append_taken(&mut goto, &mut w.goto);
        append_taken(&mut send, &mut w.send);
    }
    (goto, send)
}

/// Moves `from`'s items to the end of `to`: `from` itself when `to` is
/// empty (no allocation).
fn append_taken<T>(to: &mut Vec<T>, from: &mut Vec<T>) {
    if to.is_empty() {
        std::mem::swap(to, from);
    } else {
        to.append(from);
    }
}
