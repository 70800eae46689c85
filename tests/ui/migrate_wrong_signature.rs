use agent_state::serde_json::Value;
use agent_state::AgentState;

// A migration must take (from version, what is stored, the JSON) and may fail.
fn upgrade(value: Value) -> Value {
    value
}

#[derive(AgentState)]
#[state(version = 2, migrate = upgrade)]
struct State {
    n: u32,
}

fn main() {}
