//! Joins (`add_edge(["a", "b"], "c")`, LangGraph's `NamedBarrierValue`):
//! which sources have finished since each join's target last ran.

use super::pending::JoinEntry;
use super::{Graph, Task};
use crate::state::AgentState;

/// Per join, a bit per source that finished since the target last ran;
/// and the deferred nodes reached, waiting for nothing else to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JoinState {
    waiting: Vec<u64>,
    deferred: Vec<usize>,
}

impl JoinState {
    /// No source has finished yet.
    pub(crate) fn new<S: AgentState>(graph: &Graph<S>) -> Self {
        Self {
            waiting: vec![0; graph.joins.len()],
            deferred: Vec::new(),
        }
    }

    /// Takes the deferred nodes out of the next step's `tasks` and holds
    /// them; when nothing else is left to run, they are the step (once
    /// each, in node-name order). Returns the nodes it lets run.
    pub(crate) fn hold_deferred<S: AgentState>(
        &mut self,
        graph: &Graph<S>,
        tasks: &mut Vec<Task>,
    ) -> Vec<usize> {
        if !graph.has_deferred {
            return Vec::new();
        }
        let held = &mut self.deferred;
        tasks.retain(|t| {
            let defer = t.send.is_none() && graph.deferred[t.node];
            if defer && !held.contains(&t.node) {
                held.push(t.node);
            }
            !defer
        });
        if !tasks.is_empty() || held.is_empty() {
            return Vec::new();
        }
        let mut released = std::mem::take(held);
        released.sort_unstable_by_key(|&i| graph.rank[i]);
        tasks.extend(released.iter().map(|&node| Task { node, send: None }));
        released
    }

    /// Records that `writers` finished a step; returns the targets of the
    /// joins whose sources have now all finished (they run next), and
    /// starts those joins over.
    pub(crate) fn finish<S: AgentState>(
        &mut self,
        graph: &Graph<S>,
        writers: impl IntoIterator<Item = usize>,
    ) -> Vec<usize> {
        if graph.joins.is_empty() {
            return Vec::new();
        }
        for node in writers {
            for &(j, bit) in &graph.join_of[node] {
                self.waiting[j] |= 1 << bit;
            }
        }
        let mut fired = Vec::new();
        for (j, join) in graph.joins.iter().enumerate() {
            let all = if join.sources.len() == 64 {
                u64::MAX
            } else {
                (1u64 << join.sources.len()) - 1
            };
            if self.waiting[j] == all {
                self.waiting[j] = 0;
                fired.push(join.target);
            }
        }
        fired
    }

    /// The progress as a checkpoint keeps it, with the targets that fired
    /// in its step.
    pub(crate) fn entry<S: AgentState>(&self, graph: &Graph<S>, fired: &[usize]) -> JoinEntry {
        let mut entry = JoinEntry::default();
        for (j, join) in graph.joins.iter().enumerate() {
            if self.waiting[j] == 0 {
                continue;
            }
            let names = join
                .sources
                .iter()
                .enumerate()
                .filter(|(bit, _)| self.waiting[j] & (1 << bit) != 0)
                .map(|(_, &s)| graph.names[s].clone())
                .collect();
            entry.waiting.insert(join.key.clone(), names);
        }
        entry.fired = fired.iter().map(|&t| graph.names[t].clone()).collect();
        entry.deferred = self
            .deferred
            .iter()
            .map(|&t| graph.names[t].clone())
            .collect();
        entry
    }

    /// Reads a kept entry: the progress, and the targets that fired.
    /// Joins or nodes the graph no longer has are left out.
    pub(crate) fn from_entry<S: AgentState>(
        graph: &Graph<S>,
        entry: &JoinEntry,
    ) -> (Self, Vec<usize>) {
        let mut state = Self::new(graph);
        for (j, join) in graph.joins.iter().enumerate() {
            let Some(names) = entry.waiting.get(&join.key) else {
                continue;
            };
            for (bit, &source) in join.sources.iter().enumerate() {
                if names.iter().any(|n| *n == graph.names[source]) {
                    state.waiting[j] |= 1 << bit;
                }
            }
        }
        let known = |names: &[String]| -> Vec<usize> {
            names
                .iter()
                .filter_map(|n| graph.index.get(n).copied())
                .collect()
        };
        state.deferred = known(&entry.deferred);
        (state, known(&entry.fired))
    }
}
