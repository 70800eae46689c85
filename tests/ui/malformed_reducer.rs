use agent_state::{AgentState, Messages};
use std::collections::HashMap;

#[derive(AgentState)]
pub struct State {
    #[reducer]
    pub messages: Messages,
    #[reducer = "merge"]
    pub facts: HashMap<String, String>,
}

fn main() {}
