//! `tracing` spans of a run: `graph.run` (thread id), `graph.step` (step,
//! nodes) and `graph.node` (node, task, step), each recording its
//! `duration_us` when it ends. With no subscriber listening, a span is a
//! check of the callsite's interest: no clock is read, no field formatted,
//! nothing allocated.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::{Graph, Task};
use crate::state::AgentState;

/// A span and when it started, if anyone listens: dropped, it records its
/// `duration_us`.
pub(crate) struct Timed {
    span: Span,
    started: Option<Instant>,
}

impl Timed {
    pub(crate) fn new(span: Span) -> Self {
        let started = (!span.is_disabled()).then(Instant::now);
        Self { span, started }
    }

    pub(crate) fn span(&self) -> &Span {
        &self.span
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        if let Some(started) = self.started {
            let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.span.record("duration_us", us);
        }
    }
}

/// The span of a run on `thread` (none for a run without a checkpointer).
pub(crate) fn run_span(thread: Option<&str>) -> Span {
    tracing::info_span!(
        "graph.run",
        thread_id = thread,
        steps = Empty,
        duration_us = Empty
    )
}

/// The names of a step's tasks, formatted only when a subscriber asks.
struct Nodes<'g, S: AgentState>(&'g Graph<S>, &'g [Task]);

impl<S: AgentState> fmt::Display for Nodes<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, task) in self.1.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&self.0.task_key(task))?;
        }
        Ok(())
    }
}

/// Whether no subscriber can record a step or node span (none listens at
/// the debug level): the check those spans' own macros make first, so a
/// step that skips them then behaves the same.
pub(crate) fn spans_off() -> bool {
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    tracing::Level::DEBUG > STATIC_MAX_LEVEL || tracing::Level::DEBUG > LevelFilter::current()
}

/// The span of step `step` running `tasks`.
pub(crate) fn step_span<S: AgentState>(graph: &Graph<S>, step: i64, tasks: &[Task]) -> Span {
    tracing::debug_span!("graph.step", step, nodes = %Nodes(graph, tasks), duration_us = Empty)
}

/// The span of one task of step `step`.
pub(crate) fn node_span(node: &str, step: i64) -> Span {
    tracing::debug_span!("graph.node", node, step, duration_us = Empty)
}

/// Runs `f` in `span`, recording its duration.
pub(crate) fn in_span<R>(span: Span, f: impl FnOnce() -> R) -> R {
    let timed = Timed::new(span);
    timed.span().in_scope(f)
}

/// A task's boxed future in `span`, recording its duration; the future as
/// it is when nobody listens (no new allocation).
pub(crate) fn traced<'r, T: 'r>(
    span: Span,
    future: Pin<Box<dyn Future<Output = T> + Send + 'r>>,
) -> Pin<Box<dyn Future<Output = T> + Send + 'r>> {
    if span.is_disabled() {
        return future;
    }
    Box::pin(async move {
        let timed = Timed::new(span.clone());
        let out = future.instrument(span).await;
        drop(timed);
        out
    })
}
