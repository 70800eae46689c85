use agent_state::graph::StateGraph;
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
}

// A node reads the state by reference (or shared, when async), not by value.
fn bump(s: Count) -> CountUpdate {
    CountUpdate::new().n(s.n + 1)
}

fn main() {
    let _ = StateGraph::<Count>::new().add_node("bump", bump);
}
