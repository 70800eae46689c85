use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[state(defualt = 1)]
    pub round: u32,
}

fn main() {}
