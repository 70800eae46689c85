pub use agent_state_core::__private::serde;
pub use agent_state_core::*;
pub use agent_state_derive::AgentState;
