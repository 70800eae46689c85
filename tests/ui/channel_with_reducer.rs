use agent_state::AgentState;

// A channel kind is how the field behaves across steps; it takes no other
// reducer.
#[derive(AgentState)]
pub struct State {
    #[reducer(ephemeral, append)]
    pub handoff: Vec<String>,
}

fn main() {}
