use agent_state::serde::{Deserialize, Serialize};
use agent_state::{AgentState, UnionVec};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct Plugin {
    pub name: String,
}

#[derive(AgentState)]
pub struct State {
    #[reducer(union)]
    pub plugins: UnionVec<Plugin>,
}

fn main() {}
