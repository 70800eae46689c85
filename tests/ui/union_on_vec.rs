use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(union)]
    pub loaded_plugins: Vec<String>,
}

fn main() {}
