use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(ephemeral, accumulate)]
    pub events: Vec<String>,
}

fn main() {}
