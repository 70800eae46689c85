//! A subgraph under a namespace: a research graph is a node of an editorial
//! graph; its state is a flattened part of the parent's; its steps are
//! checkpointed on a thread of its own, `<parent thread>|research/<step>`;
//! an interrupt inside it pauses the parent, and resuming the parent
//! resumes it.
//!
//! ```sh
//! cargo run --example subgraph
//! ```

use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer, Thread};
use agent_state::graph::{
    BoxError, Graph, GraphError, Input, NodeContext, Resume, StateGraph, END, START,
};
use agent_state::AgentState;

/// The research team's state: a part of the editorial state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Research {
    /// Sources found, in order.
    #[reducer(append)]
    pub sources: Vec<String>,
    /// The question, as the editor sharpened it.
    pub question: String,
}

/// The editorial state, with the research part flattened into it.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Editorial {
    /// The research part: what the subgraph reads and writes.
    #[state(flatten)]
    pub research: Research,
    /// The article.
    pub article: String,
}

fn research() -> Result<Graph<Research>, GraphError> {
    StateGraph::<Research>::new()
        .add_node("search", |_: &Research| {
            ResearchUpdate::new().sources(vec!["paper A".to_owned(), "blog B".to_owned()])
        })
        .add_node(
            "ask_editor",
            |s: &Research, ctx: &NodeContext| -> Result<ResearchUpdate, BoxError> {
                let question: String = ctx.interrupt(format!(
                    "{} sources found; sharpen the question?",
                    s.sources.len()
                ))?;
                Ok(ResearchUpdate::new()
                    .question(question)
                    .sources(vec!["report C".to_owned()]))
            },
        )
        .add_edge(START, "search")
        .add_edge("search", "ask_editor")
        .add_edge("ask_editor", END)
        .compile()
}

fn editorial() -> Result<Graph<Editorial>, GraphError> {
    StateGraph::<Editorial>::new()
        .add_node("research", research()?)
        .add_node("write", |s: &Editorial| {
            let article = format!(
                "On '{}', from {}.",
                s.research.question,
                s.research.sources.join(", ")
            );
            EditorialUpdate::new().article(article)
        })
        .add_edge(START, "research")
        .add_edge("research", "write")
        .add_edge("write", END)
        .compile()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let saver = MemoryCheckpointer::new();
    let graph = editorial()?;
    let out = block_on(
        graph
            .run(Input::Update(EditorialUpdate::new()))
            .on_thread(&saver, "issue-7"),
    )?;
    let pause = &out.interrupts[0];
    println!(
        "The editorial graph paused in the subgraph's `{}`: {}",
        pause.node, pause.value
    );
    println!("Interrupt id (namespaced): {}", pause.id);

    let child = "issue-7|research/1";
    let steps = block_on(Thread::<Research, _>::open(&saver, child))?;
    let history = block_on(steps.history(None, 10))?;
    println!(
        "Thread `{child}` holds the subgraph's {} checkpoints:",
        history.len()
    );
    for record in history.iter().rev() {
        let nodes: Vec<&str> = record.writes.iter().map(|w| w.node.as_str()).collect();
        println!(
            "  step {:>2} ({}): {:?}",
            record.meta.step, record.meta.source, nodes
        );
    }
    assert!(block_on(saver.head(child))?.is_some());

    let resume = Resume::new().answer(&pause.id, "What changed in 2024?");
    let done = block_on(
        graph
            .run(Input::ResumeWith(resume))
            .on_thread(&saver, "issue-7"),
    )?;
    println!("Article: {}", done.state.article);
    assert_eq!(done.state.research.sources.len(), 3);
    Ok(())
}
