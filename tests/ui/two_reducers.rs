use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(merge, union)]
    pub tags: Vec<String>,
}

fn main() {}
