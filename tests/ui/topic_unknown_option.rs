use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(topic(dedup))]
    pub events: Vec<String>,
}

fn main() {}
