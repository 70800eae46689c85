use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(union)]
    pub count: u32,
}

fn main() {}
