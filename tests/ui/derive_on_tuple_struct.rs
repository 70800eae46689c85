use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State(#[reducer(messages)] pub Messages, pub u32);

fn main() {}
