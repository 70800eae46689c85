//! A graph with a human approval, served over LangGraph's Agent Server
//! API: `cargo run -p agent-state-server --example serve`, then point any
//! LangGraph client at `http://127.0.0.1:2024` (graph `approval`).
//!
//! `--port N` and `--db PATH` change the address and the database file.

use agent_state::graph::{BoxError, NodeContext, StateGraph, END, START};
use agent_state::AgentState;
use agent_state_server::Server;

/// A draft that a person approves or not.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Approval {
    /// What the draft is about.
    topic: String,
    /// What happened, in order.
    #[reducer(append)]
    log: Vec<String>,
    /// The person's answer.
    approved: bool,
}

fn draft(s: &Approval) -> ApprovalUpdate {
    ApprovalUpdate::new().log(vec![format!("draft:{}", s.topic)])
}

fn review(_: &Approval, ctx: &NodeContext) -> Result<ApprovalUpdate, BoxError> {
    let ok: bool = ctx.interrupt(serde_json::json!({"question": "approve?"}))?;
    Ok(ApprovalUpdate::new()
        .log(vec!["review".to_owned()])
        .approved(ok))
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().init();
    let graph = StateGraph::<Approval>::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile()?;
    let port = arg("--port").unwrap_or_else(|| "2024".to_owned());
    let db = arg("--db").unwrap_or_else(|| "agent-state-server.db".to_owned());
    let listening = Server::new()
        .database(db)
        .graph("approval", graph)
        .bind(format!("127.0.0.1:{port}"))
        .await?;
    println!("listening on http://{}", listening.local_addr());
    listening.serve().await?;
    Ok(())
}
