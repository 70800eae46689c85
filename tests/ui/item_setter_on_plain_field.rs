use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[state(item_setter = "add_status")]
    pub status: String,
}

fn main() {}
