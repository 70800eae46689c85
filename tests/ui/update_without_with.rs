use agent_state::{AgentState, Messages};
use std::collections::HashMap;

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(merge, update = u32)]
    pub facts: HashMap<String, String>,
}

fn main() {}
