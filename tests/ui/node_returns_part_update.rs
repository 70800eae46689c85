use agent_state::graph::StateGraph;
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Todos {
    #[reducer(append)]
    pub todos: Vec<String>,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Agent {
    pub turns: u32,
    #[state(flatten)]
    pub planning: Todos,
}

// The part's update, not the whole's: it must be lifted (`Agent::lift`).
fn plan(_: &Agent) -> TodosUpdate {
    TodosUpdate::new().todo("draft")
}

fn main() {
    let _ = StateGraph::<Agent>::new().add_node("plan", plan);
}
