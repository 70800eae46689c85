use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(topic = accumulate)]
    pub events: Vec<String>,
}

fn main() {}
