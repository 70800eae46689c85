// A union on a `Vec` compiles, with a warning that each item costs a scan
// of the list; denied here so the warning shows as the case's output.
#![deny(deprecated)]

use agent_state::AgentState;

#[derive(AgentState)]
pub struct State {
    #[reducer(union)]
    pub loaded_plugins: Vec<String>,
}

fn main() {}
