//! The debate state the apply benches share (`goals`, `memory`): a
//! history, the round, the topic, and the messages a history is built of.
//! Included with `#[path]`: each bench is a crate of its own.

use agent_state::{ai, human, AgentState, Message, Messages};

/// The debate state: a history, the round, the topic.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct DebateState {
    /// Complete conversation history.
    #[reducer(messages)]
    pub messages: Messages,
    /// Current round.
    pub round: u32,
    /// The debate subject.
    #[reducer(immutable)]
    pub topic: String,
}

/// The `i`-th argument of a history, without an id: alternating sides,
/// about 40 characters.
pub fn argument(i: usize) -> Message {
    if i.is_multiple_of(2) {
        human(format!("argument {i}: regulation protects people"))
    } else {
        ai(format!("argument {i}: regulation slows progress"))
    }
}
