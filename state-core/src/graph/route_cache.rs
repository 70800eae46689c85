//! A plain run's routing out of a node whose only edge is a router: an
//! answer naming the same static text as the last one goes to the node it
//! led to then, without looking the name up again.

use std::borrow::Cow;

use super::{Edge, Graph, GraphError, Next, Routed, Target};
use crate::state::AgentState;

/// The last name a run's router answered as a `&'static str`, by address
/// and length (static text never changes, so the same address and length
/// is the same name), and where it led. One run keeps its own, so runs of
/// one graph at once share nothing.
#[derive(Default)]
pub(crate) struct LastRoute(Option<(usize, usize, usize, Target)>);

/// Where a step's router led.
pub(crate) enum Hop {
    /// To this one node next, or to none (the run ends).
    One(Option<usize>),
    /// Elsewhere: the targets are in the `Routed` given, to settle.
    Routed,
}

impl<S: AgentState> Graph<S> {
    /// The router of node `from` when it is its only edge (a fallback
    /// counts: a plain step's write routes nowhere itself).
    pub(crate) fn sole_router(&self, from: usize) -> Option<usize> {
        match self.routes[from].as_slice() {
            [Edge::Router(r) | Edge::Fallback(r)] => Some(*r),
            _ => None,
        }
    }

    /// Routes a plain step of `from`, whose only edge is router `r`, as
    /// [`route_into`](Self::route_into) would: an answer of one static
    /// name it gave last time in this run (`last`) is not checked or
    /// looked up again; any other answer is routed into `out`.
    pub(crate) fn route_sole(
        &self,
        from: usize,
        r: usize,
        state: &S,
        last: &mut LastRoute,
        out: &mut Routed,
    ) -> Result<Hop, GraphError> {
        let next = (self.routers[r])(state);
        let Next::One(Cow::Borrowed(name)) = &next else {
            out.clear();
            self.route_next(Some(from), r, &next, out)?;
            return Ok(Hop::Routed);
        };
        let key = (r, name.as_ptr() as usize, name.len());
        let target = match last.0 {
            Some((kr, kp, kl, target)) if (kr, kp, kl) == key => target,
            _ => {
                if let Some(declared) = &self.router_ends[r] {
                    self.check_declared(Some(from), declared, &next)?;
                }
                let target = self.pull_target(name, &|| self.source_name(Some(from)))?;
                last.0 = Some((key.0, key.1, key.2, target));
                target
            }
        };
        Ok(Hop::One(self.pulled(Some(from), target)))
    }
}
