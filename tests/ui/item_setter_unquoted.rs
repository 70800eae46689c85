use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(append)]
    #[state(item_setter = add_status)]
    pub status: Vec<String>,
}

fn main() {}
