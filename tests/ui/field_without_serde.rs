use agent_state::AgentState;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub steps: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct State {
    pub round: u32,
    pub plan: Plan,
}

fn main() {}
