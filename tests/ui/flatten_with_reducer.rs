use agent_state::AgentState;

#[derive(AgentState)]
pub struct TodoState {
    pub todos: Vec<String>,
}

#[derive(AgentState)]
pub struct Agent {
    #[state(flatten)]
    #[reducer(merge)]
    pub todo: TodoState,
}

fn main() {}
