use agent_state::AgentState;

/// LangChain's todo-list middleware.
#[derive(AgentState)]
pub struct PlanningState {
    pub todos: Vec<String>,
}

/// Another middleware that also keeps `todos`.
#[derive(AgentState)]
pub struct TaskBoardState {
    pub columns: Vec<String>,
    pub todos: Vec<String>,
}

#[derive(AgentState)]
pub struct Agent {
    pub turns: u32,
    #[state(flatten)]
    pub planning: PlanningState,
    #[state(flatten)]
    pub board: TaskBoardState,
}

fn main() {}
