use agent_state::AgentState;

// `news` less its final `s` is `new`, the update's constructor.
#[derive(AgentState)]
pub struct State {
    #[reducer(append)]
    pub news: Vec<String>,
}

fn main() {}
