use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(operator.add)]
    pub field: Vec<String>,
}

fn main() {}
