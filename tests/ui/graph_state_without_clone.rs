use agent_state::checkpoint::block_on;
use agent_state::graph::{Input, StateGraph, END, START};
use agent_state::{ai, AgentState, Messages};

// No `Clone`: the runtime keeps the state shared and copies it on write.
#[derive(AgentState, Debug, PartialEq)]
struct Chat {
    #[reducer(messages)]
    messages: Messages,
}

fn main() {
    let graph = StateGraph::<Chat>::new()
        .add_node("bot", |_: &Chat| ChatUpdate::new().message(ai("hi")))
        .add_edge(START, "bot")
        .add_edge("bot", END)
        .compile()
        .unwrap();
    let _ = block_on(graph.run(Input::Update(ChatUpdate::new())));
}
