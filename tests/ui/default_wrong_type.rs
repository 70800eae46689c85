use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[state(default = "three")]
    pub max_rounds: u32,
}

fn main() {}
