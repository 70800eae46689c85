use agent_state::{AgentState, Messages};
use std::collections::HashMap;

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(mergee)]
    pub facts: HashMap<String, String>,
}

fn main() {}
