use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    pub room: Option<String>,
    pub clear_room: bool,
}

fn main() {}
