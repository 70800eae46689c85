//! The fast path of a plain run: steps of one plain sync node, called and
//! applied as by hand.

use super::*;

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// Runs the steps of one plain sync node (no retry, no `Send` input) of
    /// a plain run that shows nothing, while no `tracing` subscriber records
    /// its step and node spans: each node is called and its update applied
    /// in place, as by hand, with no span, write record or task list made.
    /// Stops before a step it does not run ([`Direct::Yield`]: the caller
    /// runs it), where the general loop would stop ([`Direct::Stopped`]),
    /// or after calling a node whose output is not a plain update (its
    /// writes or failure in `out`: [`Direct::Ran`]).
    pub(super) fn run_direct(
        &self,
        sink: &mut Sink<'a, S, C>,
        at: &mut Progress<S::Update>,
        out: &mut StepOut<S::Update>,
        routed: &mut Routed,
    ) -> Result<Direct, GraphError> {
        let graph = self.graph;
        let Sink::Plain { state, next_step } = sink else {
            return Ok(Direct::Yield);
        };
        let limits = self.direct_limits();
        let mut node = match self.direct_node(at, *next_step, limits)? {
            Ok(node) => node,
            Err(left) => return Ok(left),
        };
        // A plain run that shows nothing lends its state to no one while
        // the loop runs: it is made its own once, not at every step.
        let state = Arc::make_mut(state);
        let mut last = LastRoute::default();
        loop {
            let NodeFn::Sync(f) = &graph.fns[node] else {
                unreachable!("direct_node gives a plain sync node")
            };
            let step = *next_step;
            // Applied where the node's output lies: the update is not
            // moved out of it first.
            let applied = match f(state) {
                Ok(NodeOutput::Update(update)) => state.apply(update),
                Ok(NodeOutput::Nothing) => state.apply(S::Update::default()),
                other => {
                    fast_outcome(&graph.names[node], step, other, out);
                    return Ok(Direct::Ran);
                }
            };
            applied.map_err(|error| GraphError::InvalidUpdate {
                step,
                nodes: vec![graph.names[node].clone()],
                error,
            })?;
            *next_step += 1;
            at.steps += 1;
            at.resuming = false;
            self.direct_next(node, state, &mut last, at, routed)?;
            if self.breaks_after(node) && !at.tasks.is_empty() {
                return Ok(Direct::Stopped);
            }
            node = match self.direct_node(at, *next_step, limits)? {
                Ok(node) => node,
                Err(left) => return Ok(left),
            };
        }
    }

    /// What [`stop_before_step`](Self::stop_before_step) checks that does
    /// not change while [`run_direct`](Self::run_direct) runs: the step
    /// count it may not reach without a stop (`stop_after`) and whether any
    /// node has a breakpoint before it.
    pub(super) fn direct_limits(&self) -> (usize, bool) {
        let limit = self.stop_after.unwrap_or(usize::MAX);
        let run_breaks = self.breaks.before.contains(&true);
        (limit, run_breaks || self.graph.before.contains(&true))
    }

    /// The node of the next step if `run_direct` runs it (one plain sync
    /// node with no retry, while no span can be recorded, and the run
    /// does not stop before it), else where it leaves the loop.
    #[inline(always)]
    pub(super) fn direct_node(
        &self,
        at: &Progress<S::Update>,
        step: i64,
        (limit, breakpoints): (usize, bool),
    ) -> Result<Result<usize, Direct>, GraphError> {
        let graph = self.graph;
        let node = match at.tasks.as_slice() {
            [Task { node, send: None }] => *node,
            _ => return Ok(Err(Direct::Yield)),
        };
        let (NodeFn::Sync(_), None) = (&graph.fns[node], &graph.retry[node]) else {
            return Ok(Err(Direct::Yield));
        };
        if !trace::spans_off() {
            return Ok(Err(Direct::Yield));
        }
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(GraphError::Cancelled);
        }
        let may_stop = at.steps >= limit
            || step > at.stop
            || (breakpoints && self.breaks_before(node) && !at.resuming);
        if may_stop && self.stop_before_step(at, step)? {
            return Ok(Err(Direct::Stopped));
        }
        Ok(Ok(node))
    }

    /// The tasks after a direct step of `node`: its fixed next nodes, or
    /// where its router leads (a sole router's repeated answer through
    /// `last`), else its edges routed as the general loop routes them.
    pub(super) fn direct_next(
        &self,
        node: usize,
        state: &S,
        last: &mut LastRoute,
        at: &mut Progress<S::Update>,
        routed: &mut Routed,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        match graph.fixed_next(node) {
            Some(&[one]) => at.tasks[0].node = one,
            Some(fixed) => {
                at.tasks.clear();
                at.tasks
                    .extend(fixed.iter().map(|&node| Task { node, send: None }));
            }
            None => match graph.sole_router(node) {
                Some(r) => match graph.route_sole(node, r, state, last, routed)? {
                    Hop::One(Some(next)) => at.tasks[0].node = next,
                    Hop::One(None) => at.tasks.clear(),
                    Hop::Routed => graph.settle(routed, &mut at.tasks),
                },
                None => {
                    routed.clear();
                    graph.route_into(Some(node), &[], &[], state, routed)?;
                    graph.settle(routed, &mut at.tasks);
                }
            },
        }
        Ok(())
    }
}

/// Where [`Run::run_direct`] left the loop.
pub(super) enum Direct {
    /// The next step is not one it runs (or there is none).
    Yield,
    /// The run stops before its next step (a limit, a breakpoint, an
    /// `interrupt_after` node).
    Stopped,
    /// It called the node of the next step, whose output is not a plain
    /// update: the step goes on in the general loop from its writes.
    Ran,
}
