use agent_state::graph::{StateGraph, START};
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Review {
    #[reducer(append)]
    pub notes: Vec<String>,
}

// `Desk` does not flatten a `Review`, so a `Review` graph is no node of it.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Desk {
    pub done: bool,
}

fn main() {
    let child = StateGraph::<Review>::new()
        .add_node("read", |_: &Review| ReviewUpdate::new())
        .add_edge(START, "read")
        .compile()
        .unwrap();
    let _ = StateGraph::<Desk>::new().add_node("review", child);
}
