//! Tools the caller executes: offered to the model beside the agent's own,
//! never run by the agent. A model call naming one ends the run with the
//! call unanswered, for the caller (a browser, say) to run; the next run's
//! input carries the tool message that answers it, and the loop goes on
//! from there. What AG-UI's frontend tools and CopilotKit's actions are.

use std::sync::Arc;

use super::model::ToolDefinition;
use crate::message::ToolCall;

/// Tools the caller of a run executes itself, given to the run as its
/// context (`graph.run(input).context(ClientTools::new(..))`): the agent
/// offers them to the model after its own tools, and a model call naming
/// one ends the run, its call left for the caller to answer. A tool whose
/// name one of the agent's tools already has is left out (the agent's
/// own is the one the model gets).
///
/// ```
/// use agent_state::agent::{create_agent, input, ClientTools, ScriptedModel, ToolDefinition};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// use agent_state::{ai, tool, AgentState, ToolCall};
/// use serde_json::json;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
/// }
///
/// let call = ToolCall::new("confirm", json!({"what": "pay"}).as_object().unwrap().clone(), "c1");
/// let model = ScriptedModel::new([ai("").with_tool_call(call), ai("Paid.")]);
/// let agent = create_agent::<Chat, _>(model).compile()?;
/// let confirm = ToolDefinition {
///     name: "confirm".into(),
///     description: "Asks the user to confirm".into(),
///     parameters: json!({"type": "object"}),
/// };
/// let saver = MemoryCheckpointer::new();
/// // The model calls the caller's tool: the run ends with the call pending.
/// let run = agent.run(input::<Chat>("Pay?")).context(ClientTools::new([confirm.clone()]));
/// let out = block_on(run.on_thread(&saver, "t"))?;
/// assert_eq!(out.state.messages().last().unwrap().tool_calls[0].name, "confirm");
/// // The caller answers it in the next run, and the agent goes on.
/// let answer = tool("yes", "c1");
/// let run = agent.run(input::<Chat>(answer)).context(ClientTools::new([confirm]));
/// let out = block_on(run.on_thread(&saver, "t"))?;
/// assert_eq!(out.state.messages().last().unwrap().text(), "Paid.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientTools {
    definitions: Arc<[ToolDefinition]>,
}

impl ClientTools {
    /// The caller's tools, in the order the model is offered them.
    pub fn new(definitions: impl IntoIterator<Item = ToolDefinition>) -> Self {
        Self {
            definitions: definitions.into_iter().collect(),
        }
    }

    /// The tools.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// Whether a call names one of them (and no tool of the agent's, whose
    /// `own` names say which it has).
    pub(crate) fn takes(&self, call: &ToolCall, own: &[String]) -> bool {
        !own.contains(&call.name) && self.definitions.iter().any(|d| d.name == call.name)
    }

    /// The agent's tools followed by those of the caller's that no tool of
    /// the agent's shadows.
    pub(crate) fn offered(&self, own: &Arc<[ToolDefinition]>) -> Arc<[ToolDefinition]> {
        let extra = self
            .definitions
            .iter()
            .filter(|d| !own.iter().any(|o| o.name == d.name));
        own.iter().chain(extra).cloned().collect()
    }
}
