//! `twin`: two nodes that run side by side from the start, each pausing on
//! an interrupt of its own, so a thread waits on two at once. A client
//! answers them together with `command.resume` as a map of interrupt ids
//! to values (LangGraph's `Command(resume={id: value, ..})`).

use agent_state::graph::{BoxError, Graph, GraphError, NodeContext, StateGraph, START};
use agent_state::AgentState;
use serde_json::{json, Value};

/// The answers the two nodes were given, in the order they landed.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct Twin {
    /// `left:<answer>` and `right:<answer>`.
    #[reducer(append)]
    pub answers: Vec<String>,
}

/// A node that asks `side` and records the answer it is given.
fn asker(side: &'static str) -> impl Fn(&Twin, &NodeContext) -> Result<TwinUpdate, BoxError> {
    move |_: &Twin, ctx: &NodeContext| {
        let said: Value = ctx.interrupt(json!({"ask": side}))?;
        let said = said
            .as_str()
            .map_or_else(|| said.to_string(), str::to_owned);
        Ok(TwinUpdate::new().answers(vec![format!("{side}:{said}")]))
    }
}

/// The graph: `left` and `right` both after `START`.
pub fn graph() -> Result<Graph<Twin>, GraphError> {
    StateGraph::<Twin>::new()
        .add_node("left", asker("left"))
        .add_node("right", asker("right"))
        .add_edge(START, "left")
        .add_edge(START, "right")
        .compile()
}
