use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(messages)]
    pub ids: Vec<u32>,
}

fn main() {}
