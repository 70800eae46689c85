use agent_state::AgentState;

#[derive(AgentState)]
pub struct Cache {
    pub hits: u32,
}

// A part is stored through its own fields: mark those untracked instead.
#[derive(AgentState)]
pub struct State {
    #[state(flatten)]
    #[reducer(untracked)]
    pub cache: Cache,
}

fn main() {}
