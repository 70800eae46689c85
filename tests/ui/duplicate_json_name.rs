use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[state(rename = "x")]
    pub round: u32,
    #[state(rename = "x")]
    pub turn: u32,
}

fn main() {}
