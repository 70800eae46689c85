use agent_state::{AgentState, Messages};

fn count_up(current: &i32, by: i64) -> Result<i32, i64> {
    Ok(*current + by as i32)
}

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(with = count_up)]
    pub tokens: u64,
}

fn main() {}
