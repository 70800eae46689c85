use agent_state::AgentState;

#[derive(AgentState)]
#[state(version = 0)]
struct State {
    n: u32,
}

fn main() {}
