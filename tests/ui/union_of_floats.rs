use agent_state::{AgentState, UnionVec};

#[derive(AgentState)]
pub struct State {
    #[reducer(union)]
    pub scores: UnionVec<f64>,
}

fn main() {}
