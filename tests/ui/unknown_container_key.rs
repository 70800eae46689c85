use agent_state::{AgentState, Messages};

#[derive(AgentState)]
#[state(flatten_all)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    pub round: u32,
}

fn main() {}
