//! The approval example's graph: a writer drafts a post, a review node
//! pauses the run with the draft (`NodeContext::interrupt`) until a person
//! answers with a [`Verdict`].
//!
//! Shared by the `approval` example (which pauses in one process and
//! answers in another) and the debate server (which serves it as graph
//! `approval`, answered with `command.resume`).

use agent_state::graph::{BoxError, Graph, GraphError, NodeContext, StateGraph, END, START};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::json;
use agent_state::AgentState;

/// A post on its way to publication.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Post {
    /// What the post is about.
    pub topic: String,
    /// The text, once drafted.
    pub draft: String,
    /// `published` or `rejected` at the end.
    pub status: String,
    /// The reviewer's comment.
    pub comment: String,
}

/// What the reviewer answers: the interrupt's typed resume value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct Verdict {
    /// Whether to publish.
    pub approve: bool,
    /// Why.
    pub comment: String,
}

/// The graph: `write` drafts the post, `review` pauses for a [`Verdict`].
pub fn graph() -> Result<Graph<Post>, GraphError> {
    StateGraph::<Post>::new()
        .add_node("write", |s: &Post| {
            PostUpdate::new().draft(format!("Five things to know about {}.", s.topic))
        })
        // Pauses until a person answers. It runs again from its start when
        // resumed, so it does nothing before the interrupt that must not
        // happen twice.
        .add_node(
            "review",
            |s: &Post, ctx: &NodeContext| -> Result<PostUpdate, BoxError> {
                let verdict: Verdict = ctx.interrupt(json!({
                    "question": "Publish this draft?",
                    "draft": s.draft,
                }))?;
                let status = if verdict.approve {
                    "published"
                } else {
                    "rejected"
                };
                Ok(PostUpdate::new()
                    .status(status.to_owned())
                    .comment(verdict.comment))
            },
        )
        .add_edge(START, "write")
        .add_edge("write", "review")
        .add_edge("review", END)
        .compile()
}
