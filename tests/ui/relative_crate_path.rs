use agent_state::{AgentState, Messages};

#[derive(AgentState)]
#[state(crate = agent_state)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    pub round: u32,
}

fn main() {}
