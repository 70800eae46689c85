use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub union State {
    pub round: u32,
    pub tokens: u64,
}

fn main() {
    let _: Messages = Messages::new();
}
