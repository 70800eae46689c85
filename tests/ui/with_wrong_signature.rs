use agent_state::{AgentState, Messages};

fn count_up(current: &String, by: &str) -> Result<String, String> {
    Ok(format!("{current}{by}"))
}

#[derive(AgentState)]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    #[reducer(with = count_up)]
    pub tokens: u64,
}

fn main() {}
