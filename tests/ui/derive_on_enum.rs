use agent_state::{AgentState, Messages};

#[derive(AgentState)]
pub enum State {
    Idle,
    Chatting { messages: Messages },
}

fn main() {}
