use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub struct State;

fn main() {
    let _: Messages = Messages::new();
}
