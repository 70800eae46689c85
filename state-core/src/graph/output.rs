//! What a run ends with: below the run and its stream, which both hand
//! it out.

use serde_json::{json, Value};

use super::context::Interrupt;
use crate::checkpoint::CheckpointMeta;
use crate::state::AgentState;

/// What a run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput<S> {
    /// The state. When the run paused on interrupts, with the writes of
    /// the paused step's tasks that finished (as LangGraph's `invoke`
    /// shows them; the thread keeps them as pending writes, applied with
    /// the step when it is resumed).
    pub state: S,
    /// The nodes that would run next (a node once per task): empty when the
    /// graph reached `END`, else the run paused (interrupts, a breakpoint,
    /// [`Run::stop_after`](super::Run::stop_after)) and can be resumed. On
    /// interrupts, only the tasks still to run: those that paused.
    pub next: Vec<String>,
    /// Supersteps this run took, the input step included.
    pub steps: usize,
    /// The thread's head after the run, when running on a thread.
    pub checkpoint: Option<CheckpointMeta>,
    /// The interrupts the run paused on, in task order; empty unless it
    /// paused on some.
    pub interrupts: Vec<Interrupt>,
}

impl<S: AgentState> RunOutput<S> {
    /// What LangGraph's `invoke` returns: the graph's output (the state
    /// without the fields omitted from output), with `"__interrupt__": [..]`
    /// when the run paused on interrupts (not at a breakpoint, which
    /// LangGraph's `invoke` does not mark).
    pub fn to_json(&self) -> Value {
        with_interrupts(self.state.to_output_json(), &self.interrupts)
    }
}

/// A state's JSON with `"__interrupt__": [..]` added when there are
/// interrupts, as LangGraph's `values` and `invoke` show a pause.
pub(crate) fn with_interrupts(mut state: Value, interrupts: &[Interrupt]) -> Value {
    if let (false, Value::Object(map)) = (interrupts.is_empty(), &mut state) {
        map.insert("__interrupt__".to_owned(), json!(interrupts));
    }
    state
}
