//! The deep agent of the `middleware_schemas` example (the same code)
//! on a scripted model that reads the conversation, so that every thread
//! gets the walk-through's answers whatever other threads asked before.

use agent_state::agent::{FnModel, ModelError, ModelRequest};
use agent_state::base::HasMessages;
use agent_state::graph::Graph;
use agent_state::{ai, Message, MessageType};

#[path = "../../middleware_schemas/agent.rs"]
pub mod deep;

pub use deep::DeepAgentState;

/// The answer to a request, as the example's script answers in order: a
/// first message gets the three tool calls on what the user said; the
/// tools' answers get [`deep::RECORDED`]; a later message, once the idea
/// is complete, [`deep::ALREADY_COMPLETE`].
fn answer(request: &ModelRequest<DeepAgentState>) -> Result<Message, ModelError> {
    let state = request.state();
    let last = state.messages().last();
    Ok(match last.map(|m| m.kind) {
        Some(MessageType::Tool) => ai(deep::RECORDED),
        Some(_) if state.business_idea.business_idea_complete => ai(deep::ALREADY_COMPLETE),
        Some(_) => deep::tool_calls(&last.map(|m| m.text()).unwrap_or_default()),
        None => return Err(ModelError::other("the agent was asked nothing")),
    })
}

/// The agent on its scripted model.
pub fn build_graph() -> Result<Graph<DeepAgentState>, Box<dyn std::error::Error>> {
    deep::agent(FnModel(answer))
}
