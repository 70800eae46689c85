use agent_state::agent::{FnTool, ToolRuntime};
use agent_state::base::MessagesState;
use agent_state::serde::Deserialize;
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

// Deserialize only: the model would get no schema of the arguments.
#[derive(Deserialize)]
#[serde(crate = "agent_state::serde")]
struct Args {
    a: i64,
    b: i64,
}

fn main() {
    let _add = FnTool::sync("add", "Adds two numbers", |args: Args, _: &ToolRuntime<Chat>| {
        (args.a + args.b).to_string()
    });
}
