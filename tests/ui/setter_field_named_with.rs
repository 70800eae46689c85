use agent_state::AgentState;

// A setter `with` would shadow `StateUpdate::with` for every caller.
#[derive(AgentState)]
pub struct State {
    pub with: u32,
}

fn main() {}
