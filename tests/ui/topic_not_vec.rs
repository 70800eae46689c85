use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(topic)]
    pub events: String,
}

fn main() {}
