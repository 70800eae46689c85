//! A subgraph's event as its parent's stream carries it, without the
//! subgraph's state type: below the node context (which forwards it) and
//! the events (which wrap it).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// An event of a subgraph's run as its parent's stream yields it
/// ([`StreamEvent::Subgraph`](super::StreamEvent::Subgraph)): the child's own event, typed by the child's
/// state (read it with [`event`](Self::event)), under its namespace.
#[derive(Clone)]
pub struct SubgraphEvent {
    pub(crate) namespace: Vec<String>,
    pub(crate) event: Arc<dyn ChildEvent>,
}

impl SubgraphEvent {
    /// The event seen one level up: under the task `entry` that ran the
    /// subgraph it came from, its interrupt ids with that task's `prefix`
    /// (the ids the level up resumes them by).
    pub(crate) fn nested(mut self, entry: &str, prefix: &str) -> Self {
        self.namespace.insert(0, entry.to_owned());
        if let Some(event) = self.event.with_id_prefix(prefix) {
            self.event = event;
        }
        self
    }

    /// Its namespace: `node:task` per level, outermost first.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// The mode that produced it, as [`StreamEvent::name`](super::StreamEvent::name).
    pub fn name(&self) -> &'static str {
        self.event.name()
    }

    /// Its payload, as [`StreamEvent::to_json`](super::StreamEvent::to_json).
    pub fn to_json(&self) -> Value {
        self.event.to_json()
    }

    /// Its payload as a client may see it: a `values` event's state
    /// through the subgraph's output view (no `private` or
    /// `omit_from_output` field, as LangGraph streams a subgraph's output
    /// channels); any other event as [`to_json`](Self::to_json).
    pub fn to_output_json(&self) -> Value {
        self.event.to_output_json()
    }
}

impl fmt::Debug for SubgraphEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubgraphEvent")
            .field("namespace", &self.namespace)
            .field("name", &self.name())
            .field("payload", &self.to_json())
            .finish()
    }
}

/// A subgraph's event without its state's type.
pub(crate) trait ChildEvent: std::marker::Send + Sync {
    fn name(&self) -> &'static str;
    fn to_json(&self) -> Value;
    fn to_output_json(&self) -> Value;
    fn as_any(&self) -> &dyn Any;
    /// A copy whose interrupt ids start with `prefix`; `None` when it
    /// carries no interrupt.
    fn with_id_prefix(&self, prefix: &str) -> Option<Arc<dyn ChildEvent>>;
}
