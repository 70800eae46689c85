use agent_state::AgentState;

#[derive(AgentState)]
pub struct TodoState {
    pub todos: Vec<String>,
}

#[derive(AgentState)]
pub struct Agent {
    #[state(flatten)]
    pub mine: TodoState,
    #[state(flatten)]
    pub theirs: TodoState,
}

fn main() {}
