use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(union)]
    #[reducer(append)]
    pub tags: Vec<String>,
}

fn main() {}
