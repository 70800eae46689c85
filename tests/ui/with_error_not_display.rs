use agent_state::AgentState;

#[derive(Debug)]
pub struct TooBig;

// The error of a reducer is shown to the user, so it must be `Display`.
fn bounded(current: &u64, by: u64) -> Result<u64, TooBig> {
    current.checked_add(by).ok_or(TooBig)
}

#[derive(AgentState)]
pub struct State {
    #[reducer(with = bounded)]
    pub tokens: u64,
}

fn main() {}
