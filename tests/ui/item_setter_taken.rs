use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    pub round: u32,
    #[reducer(append)]
    #[state(item_setter = "round")]
    pub rounds: Vec<u32>,
}

fn main() {}
