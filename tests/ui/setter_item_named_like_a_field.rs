use agent_state::{AgentState, Messages};

// The item setter of `messages` would be `message`, the setter of the
// `message` field.
#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    pub message: String,
}

fn main() {}
