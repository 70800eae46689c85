// A response format whose value the state has no place for: the state
// must flatten `StructuredResponse<Weather>`.
use agent_state::agent::{create_agent, ScriptedModel, ToolStrategy};
use agent_state::base::MessagesState;
use agent_state::AgentState;

#[derive(
    agent_state::serde::Serialize,
    agent_state::serde::Deserialize,
    agent_state::schemars::JsonSchema,
    Debug,
    Clone,
    PartialEq,
)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Weather {
    city: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

fn main() {
    let _ = create_agent::<Chat, _>(ScriptedModel::new([]))
        .response_format(ToolStrategy::<Weather>::new());
}
