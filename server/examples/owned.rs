//! Threads each user sees alone: the `approval` graph (a draft a person
//! approves, an interrupt answered with `command.resume`) served behind
//! custom auth. Bearer tokens `token-alice` and `token-bob` are two
//! users; each thread gets `{"owner": <user>}` in its metadata, and one
//! user's threads are not found, listed, run, resumed or cancelled by the
//! other. Each user's Store items live under a namespace of their own.
//!
//! `cargo run -p agent-state-server --example owned`, then, with the
//! Python SDK: `get_client(url="http://127.0.0.1:2024",
//! headers={"Authorization": "Bearer token-alice"})`.
//!
//! `--port N` and `--db PATH` change the address and the database file.

use agent_state::graph::{BoxError, Graph, GraphError, NodeContext, StateGraph, END, START};
use agent_state::AgentState;
use agent_state_server::auth::{Credentials, Identity, On, Refusal, Resource, Verdict};
use agent_state_server::Server;
use serde_json::{json, Value};

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
    let ok: bool = ctx.interrupt(json!({"question": "approve?"}))?;
    Ok(ApprovalUpdate::new()
        .log(vec!["review".to_owned()])
        .approved(ok))
}

fn approval() -> Result<Graph<Approval>, GraphError> {
    StateGraph::<Approval>::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile()
}

/// Who a bearer token is.
async fn who(req: Credentials) -> Result<Identity, Refusal> {
    match req.bearer() {
        Some("token-alice") => Ok(Identity::new("alice")),
        Some("token-bob") => Ok(Identity::new("bob")),
        Some(_) => Err(Refusal::unauthorized("Invalid token")),
        None => Err(Refusal::unauthorized("Missing bearer token")),
    }
}

/// The Store request's namespace, under the caller's name.
fn own_namespace(user: &str, value: &mut Value) {
    let mut mine = vec![json!(user)];
    mine.extend(value["namespace"].as_array().cloned().unwrap_or_default());
    value["namespace"] = Value::Array(mine);
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = arg("--port").unwrap_or_else(|| "2024".to_owned());
    let db = arg("--db").unwrap_or_else(|| "agent-state-owned.db".to_owned());
    let listening = Server::new()
        .database(db)
        .graph("approval", approval()?)
        .authenticate(who)
        .authorize(On::resource(Resource::Threads), |ctx, _| {
            Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
        })
        .authorize(On::resource(Resource::Store), |ctx, value| {
            own_namespace(&ctx.user.identity, value);
            Ok(Verdict::Allow)
        })
        .bind(format!("127.0.0.1:{port}"))
        .await?;
    println!("listening on http://{}", listening.local_addr());
    listening.serve().await?;
    Ok(())
}
