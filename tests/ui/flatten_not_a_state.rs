use agent_state::AgentState;

/// A plain struct: no `#[derive(AgentState)]`.
#[derive(Default)]
pub struct Settings {
    pub verbose: bool,
}

#[derive(AgentState)]
pub struct Agent {
    pub turns: u32,
    #[state(flatten)]
    pub settings: Settings,
}

fn main() {}
