use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(EphemeralValue)]
    pub handoff: String,
}

fn main() {}
