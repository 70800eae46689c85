//! Map-reduce with `Send`: a router fans out one task per subject to a node
//! that takes its own input (not the state); the tasks run in the same
//! superstep, concurrently, and their jokes reduce into the state's list in
//! `Send` order; a last node picks the best.
//!
//! ```sh
//! cargo run --example map_reduce
//! ```

use std::sync::Arc;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{
    self, Graph, GraphError, Input, Next, NodeContext, Sent, StateGraph, END, START,
};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::AgentState;

/// The overall state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Jokes {
    /// The theme to find subjects for.
    pub topic: String,
    /// The subjects, one task each.
    pub subjects: Vec<String>,
    /// Every task's joke: the reduce step (append).
    #[reducer(append)]
    pub jokes: Vec<String>,
    /// The chosen one.
    pub best: String,
}

/// What one task of the map step gets: its own input type.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct Subject {
    /// The subject of the joke.
    pub name: String,
}

fn graph() -> Result<Graph<Jokes>, GraphError> {
    StateGraph::<Jokes>::new()
        .add_node("subjects", |s: &Jokes| {
            let subjects = ["lions", "owls", "otters"].map(|a| format!("{a} and {}", s.topic));
            JokesUpdate::new().subjects(subjects.to_vec())
        })
        // Async, as a model call would be; once per Send, with its task name.
        .add_node(
            "joke",
            |Sent(subject): Sent<Subject>, ctx: NodeContext| async move {
                let line = format!(
                    "[{}] Why did the {}? Because it could.",
                    ctx.task(),
                    subject.name
                );
                JokesUpdate::new().jokes(vec![line])
            },
        )
        .add_node("best", |s: &Jokes| {
            let best = s
                .jokes
                .iter()
                .max_by_key(|j| j.len())
                .cloned()
                .unwrap_or_default();
            JokesUpdate::new().best(best)
        })
        .add_edge(START, "subjects")
        // The map step: one Send per subject.
        .add_conditional_edges("subjects", |s: &Jokes| {
            let tasks = s
                .subjects
                .iter()
                .map(|name| graph::Send::new("joke", Subject { name: name.clone() }));
            Next::send(tasks)
        })
        .add_edge("joke", "best")
        .add_edge("best", END)
        .compile()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let graph = graph()?;
    let saver = Arc::new(MemoryCheckpointer::new());
    let input = Input::Update(JokesUpdate::new().topic("programming".to_owned()));
    let out = block_on(
        graph
            .run(input)
            .on_thread(saver.as_ref(), "jokes")
            .on_step(|e| {
                println!("step {:>2}: next {:?}", e.step, e.next);
            }),
    )?;
    for joke in &out.state.jokes {
        println!("{joke}");
    }
    println!("Best: {}", out.state.best);
    assert_eq!(out.state.jokes.len(), 3);
    Ok(())
}
