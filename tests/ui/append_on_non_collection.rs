use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub log: String,
}

fn main() {}
