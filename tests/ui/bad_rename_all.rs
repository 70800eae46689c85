use agent_state::{AgentState, Messages};

#[derive(AgentState)]
#[state(rename_all = "camelcase")]
pub struct State {
    #[reducer(messages)]
    pub messages: Messages,
    pub max_rounds: u32,
}

fn main() {}
