//! Six graphs served over LangGraph's Agent Server API: `chat` (a
//! conversation whose answer streams word by word, what Agent Chat UI and
//! `useStream` show), `approval` (a draft a person approves: an interrupt
//! answered with `command.resume`), `countdown` (a step every 200 ms,
//! to watch a stream arrive), `nest` (a node that is a graph of its
//! own, whose events `stream_subgraphs` shows), `twin` (two nodes side by
//! side, each paused on an interrupt: see `support/twin.rs`) and
//! `assistant` (an agent
//! around a local model, no network needed: see `support/assistant.rs`),
//! which AG-UI clients reach at `POST /ag-ui/assistant`.
//!
//! `cargo run -p agent-state-server --example serve`, then point any
//! LangGraph client at `http://127.0.0.1:2024`.
//!
//! `--port N` and `--db PATH` change the address and the database file;
//! `--postgres URL` (built with `--features postgres`) keeps everything in
//! that PostgreSQL database instead, where several of these servers can
//! serve the same threads: background runs go through a queue every one
//! takes from, and `--max-runs N`, `--lease-ms MS` and `--grace-ms MS` set
//! how many it runs at once, how soon a killed server's runs are taken
//! over, and how long SIGTERM lets its runs finish before it hands them
//! over. `--read-timeout-ms MS` sets how long a client may take to send a
//! request's headers or body (30 s by default).

use std::sync::Arc;
use std::time::Duration;

use agent_state::graph::{BoxError, Graph, NodeContext, StateGraph, END, START};
use agent_state::{ai, new_message_id, AgentState, MessageChunk, Messages};
use agent_state_server::Server;

#[path = "support/assistant.rs"]
mod assistant;
#[path = "support/twin.rs"]
mod twin;

/// A draft that a person approves or not.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
struct Approval {
    /// What the draft is about.
    topic: String,
    /// What happened, in order.
    #[reducer(append)]
    log: Vec<String>,
    /// The person's answer.
    approved: bool,
}

fn draft(s: &Approval, ctx: &NodeContext) -> Result<ApprovalUpdate, BoxError> {
    // A `custom` stream event, for a client's progress display.
    ctx.writer()
        .write(serde_json::json!({"progress": "drafting"}))?;
    Ok(ApprovalUpdate::new().log(vec![format!("draft:{}", s.topic)]))
}

fn review(_: &Approval, ctx: &NodeContext) -> Result<ApprovalUpdate, BoxError> {
    let ok: bool = ctx.interrupt(serde_json::json!({"question": "approve?"}))?;
    Ok(ApprovalUpdate::new()
        .log(vec!["review".to_owned()])
        .approved(ok))
}

/// A conversation, in LangChain's message format.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
struct Chat {
    /// What was said, in order.
    #[reducer(messages)]
    messages: Messages,
}

/// Answers the last message by echoing it, a word every 50 ms, as a model
/// streams its tokens (a real model: the `agent` module's loop).
async fn echo(s: Arc<Chat>, ctx: NodeContext) -> ChatUpdate {
    let heard = s.messages.last().map(|m| m.text()).unwrap_or_default();
    let reply = format!("You said: {heard}");
    let id = new_message_id();
    let writer = ctx.writer();
    let words: Vec<&str> = reply.split_inclusive(' ').collect();
    for (i, word) in words.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut chunk = MessageChunk::ai(*word).with_id(id.clone());
        chunk.last = i + 1 == words.len();
        writer.message(chunk).await;
    }
    ChatUpdate::new().message(ai(reply).with_id(id))
}

fn chat() -> Result<Graph<Chat>, agent_state::graph::GraphError> {
    StateGraph::<Chat>::new()
        .add_node("echo", echo)
        .add_edge(START, "echo")
        .compile()
}

/// A count down to zero.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
struct Countdown {
    /// Steps left.
    n: u32,
}

async fn tick(s: Arc<Countdown>) -> CountdownUpdate {
    tokio::time::sleep(Duration::from_millis(200)).await;
    CountdownUpdate::new().n(s.n.saturating_sub(1))
}

fn countdown() -> Result<Graph<Countdown>, agent_state::graph::GraphError> {
    StateGraph::<Countdown>::new()
        .add_node("tick", tick)
        .add_edge(START, "tick")
        .add_conditional_edges_to(
            "tick",
            |s: &Countdown| if s.n > 0 { "tick" } else { END },
            ["tick", END],
        )
        .compile()
}

fn approval() -> Result<Graph<Approval>, agent_state::graph::GraphError> {
    StateGraph::<Approval>::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile()
}

/// A counter.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    /// The count.
    n: u32,
}

/// A graph whose first node, `child`, is a graph of its own over the
/// same counter (its node `inc` adds one); then `done` multiplies by ten.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Nest {
    /// The counter, shared with the subgraph.
    #[state(flatten)]
    count: Count,
}

fn nest() -> Result<Graph<Nest>, agent_state::graph::GraphError> {
    let child = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .compile()?;
    StateGraph::<Nest>::new()
        .add_node("child", child)
        .add_node("done", |s: &Nest| {
            NestUpdate::new().count(CountUpdate::new().n(s.count.n * 10))
        })
        .add_edge(START, "child")
        .add_edge("child", "done")
        .add_edge("done", END)
        .compile()
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

/// A number given as `name`, if any.
fn number(name: &str) -> Result<Option<u64>, Box<dyn std::error::Error>> {
    match arg(name) {
        None => Ok(None),
        Some(n) => Ok(Some(
            n.parse()
                .map_err(|_| format!("{name}: `{n}` is not a number"))?,
        )),
    }
}

/// The server on `--postgres URL` when given, with the queue's settings.
#[cfg(feature = "postgres")]
fn fleet(mut server: Server, url: String) -> Result<Server, Box<dyn std::error::Error>> {
    server = server.postgres(url);
    if let Some(n) = number("--max-runs")? {
        server = server.max_runs(usize::try_from(n)?);
    }
    if let Some(ms) = number("--lease-ms")? {
        server = server.lease(Duration::from_millis(ms));
    }
    if let Some(ms) = number("--grace-ms")? {
        server = server.shutdown_grace(Duration::from_millis(ms));
    }
    Ok(server)
}

/// The server on `--postgres URL` when given.
fn database(server: Server) -> Result<Server, Box<dyn std::error::Error>> {
    match arg("--postgres") {
        None => Ok(server),
        #[cfg(feature = "postgres")]
        Some(url) => fleet(server, url),
        #[cfg(not(feature = "postgres"))]
        Some(_) => Err("--postgres needs the example built with `--features postgres`".into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().init();
    let port = arg("--port").unwrap_or_else(|| "2024".to_owned());
    let db = arg("--db").unwrap_or_else(|| "agent-state-server.db".to_owned());
    let mut server = Server::new().database(db);
    if let Some(ms) = number("--read-timeout-ms")? {
        // How long a client may take to send its headers or its body.
        server = server.read_timeout(Duration::from_millis(ms));
    }
    let listening = database(server)?
        .graph_with_schemas("chat", chat()?)
        .graph_with_schemas("approval", approval()?)
        .graph_with_schemas("countdown", countdown()?)
        .graph("nest", nest()?)
        .graph_with_schemas("twin", twin::graph()?)
        .graph_with_schemas("assistant", assistant::graph()?)
        .bind(format!("127.0.0.1:{port}"))
        .await?;
    println!("listening on http://{}", listening.local_addr());
    // Until Ctrl-C or SIGTERM; on PostgreSQL the runs in progress then
    // finish or are handed over to the other servers.
    listening.serve().await?;
    Ok(())
}
