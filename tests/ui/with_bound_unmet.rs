use std::convert::Infallible;
use std::ops::Add;

use agent_state::AgentState;

// A generic reducer whose bound the field's type does not meet.
fn sum<T: Add<Output = T> + Clone>(current: &T, by: T) -> Result<T, Infallible> {
    Ok(current.clone() + by)
}

#[derive(AgentState)]
pub struct State {
    #[reducer(with = sum)]
    pub names: Vec<String>,
}

fn main() {}
