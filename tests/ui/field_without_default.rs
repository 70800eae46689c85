use agent_state::serde::{Deserialize, Serialize};
use agent_state::AgentState;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub enum Phase {
    Planning,
    Done,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct State {
    pub round: u32,
    pub phase: Phase,
}

fn main() {}
