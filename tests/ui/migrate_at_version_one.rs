use agent_state::serde_json::Value;
use agent_state::{AgentState, MigrationError, Stored};

fn upgrade(_from: u32, _stored: Stored, value: Value) -> Result<Value, MigrationError> {
    Ok(value)
}

#[derive(AgentState)]
#[state(version = 1, migrate = upgrade)]
struct State {
    n: u32,
}

fn main() {}
