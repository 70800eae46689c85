//! The graphs the tests serve, and a server on a free port with a fresh
//! database.

#![allow(dead_code)]

pub mod db;
pub mod http;
#[cfg(feature = "postgres")]
pub mod node;
#[cfg(feature = "postgres")]
#[path = "../../../tests/support/pg.rs"]
pub mod pg;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_state::graph::{BoxError, NodeContext, StateGraph, END, START};
use agent_state::{ai, AgentState, MessageChunk, Messages};
use agent_state_server::Server;
use tokio::sync::oneshot;

#[allow(unused_imports)]
pub use db::{fresh_db, fresh_file, Db};

/// The serve example's `twin` graph: two nodes side by side, each paused
/// on an interrupt.
#[path = "../../examples/support/twin.rs"]
pub mod twin;

/// A draft a person approves: `draft` writes a custom event, `review`
/// pauses on an interrupt. A topic of `boom` fails the run.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Approval {
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<String>,
    pub approved: bool,
}

fn draft(s: &Approval, ctx: &NodeContext) -> Result<ApprovalUpdate, BoxError> {
    if s.topic == "boom" {
        return Err("the draft failed".into());
    }
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

/// A counter whose one node takes a while: a thread that stays busy.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Slow {
    pub n: u32,
}

async fn sleepy(s: Arc<Slow>) -> SlowUpdate {
    tokio::time::sleep(Duration::from_millis(1500)).await;
    SlowUpdate::new().n(s.n + 1)
}

/// A count down to zero, a step every 100 ms: a stream that keeps coming.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Countdown {
    pub n: u32,
}

async fn tick(s: Arc<Countdown>) -> CountdownUpdate {
    tokio::time::sleep(Duration::from_millis(100)).await;
    CountdownUpdate::new().n(s.n.saturating_sub(1))
}

/// A state with fields a client may not set, and its JSON Schemas.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
pub struct Guarded {
    pub topic: String,
    #[state(private)]
    pub token: String,
    #[state(omit_from_input)]
    pub language: Option<String>,
}

/// A chat whose one node streams its answer token by token, as the
/// official server's recording did with a fake chat model.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(messages)]
    pub messages: Messages,
}

fn talk(_: &Chat, ctx: &NodeContext) -> ChatUpdate {
    let pieces = ["hello", " ", "there", " ", "friend"];
    let writer = ctx.writer();
    for (i, piece) in pieces.iter().enumerate() {
        let mut chunk = MessageChunk::ai(*piece).with_id("m1");
        chunk.last = i + 1 == pieces.len();
        writer.write_message(chunk);
    }
    ChatUpdate::new().message(ai("hello there friend").with_id("m1"))
}

/// Two nodes one after the other, each appending to a log: the graph the
/// official server's `debug` and `events` streams were recorded from.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Pair {
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<String>,
}

/// A counter whose first node is a graph of its own (`child`, running
/// `inc`), then `done` multiplies: a run with a subgraph.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Count {
    pub n: u32,
}

/// The graph that runs `Count`'s subgraph: its state is the counter's.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Nest {
    #[state(flatten)]
    pub count: Count,
}

/// Multiplies, after a while: a run with a subgraph a client can join
/// while it is live.
async fn done(s: Arc<Nest>) -> NestUpdate {
    tokio::time::sleep(Duration::from_millis(300)).await;
    NestUpdate::new().count(CountUpdate::new().n(s.count.n * 10))
}

/// A graph two levels deep: `mid` runs `Nest`'s graph (whose `child`
/// runs `Count`'s), then `last` adds 100. What `xray`'s depth is drawn
/// against.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Deep {
    #[state(flatten)]
    pub nest: Nest,
}

fn deep() -> agent_state::graph::Graph<Deep> {
    StateGraph::<Deep>::new()
        .add_node("mid", nest())
        .add_node("last", |s: &Deep| {
            DeepUpdate::new()
                .nest(NestUpdate::new().count(CountUpdate::new().n(s.nest.count.n + 100)))
        })
        .add_edge(START, "mid")
        .add_edge("mid", "last")
        .compile()
        .expect("deep graph")
}

/// An answer a person gives inside a subgraph: its node pauses. Its
/// private field is never streamed.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Asked {
    pub answer: String,
    #[state(private)]
    #[state(default = 7)]
    pub secret: u32,
}

/// The graph that runs `Asked`'s subgraph.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Ask {
    #[state(flatten)]
    pub asked: Asked,
}

fn question(_: &Asked, ctx: &NodeContext) -> Result<AskedUpdate, BoxError> {
    let answer: String = ctx.interrupt(serde_json::json!({"question": "why?"}))?;
    Ok(AskedUpdate::new().answer(answer))
}

fn ask() -> agent_state::graph::Graph<Ask> {
    let inner = StateGraph::<Asked>::new()
        .add_node("question", question)
        .add_edge(START, "question")
        .compile()
        .expect("question graph");
    StateGraph::<Ask>::new()
        .add_node("child", inner)
        .add_edge(START, "child")
        .compile()
        .expect("ask graph")
}

/// A chat whose node returns its answer whole, streaming nothing.
fn reply() -> agent_state::graph::Graph<Chat> {
    StateGraph::<Chat>::new()
        .add_node("say", |_: &Chat| {
            ChatUpdate::new().message(ai("done").with_id("m2"))
        })
        .add_edge(START, "say")
        .compile()
        .expect("reply graph")
}

fn pair() -> agent_state::graph::Graph<Pair> {
    StateGraph::<Pair>::new()
        .add_node("first", |s: &Pair| {
            PairUpdate::new().log(vec![format!("first:{}", s.topic)])
        })
        .add_node("second", |_: &Pair| {
            PairUpdate::new().log(vec!["second".to_owned()])
        })
        .add_edge(START, "first")
        .add_edge("first", "second")
        .add_edge("second", END)
        .compile()
        .expect("pair graph")
}

fn nest() -> agent_state::graph::Graph<Nest> {
    let inner = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .compile()
        .expect("inner graph");
    StateGraph::<Nest>::new()
        .add_node("child", inner)
        .add_node("done", done)
        .add_edge(START, "child")
        .add_edge("child", "done")
        .add_edge("done", END)
        .compile()
        .expect("nest graph")
}

/// The server of the test graphs on `db`.
pub fn server(db: &Db) -> Server {
    let approval = StateGraph::<Approval>::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile()
        .expect("approval graph");
    let slow = StateGraph::<Slow>::new()
        .add_node("sleepy", sleepy)
        .add_edge(START, "sleepy")
        .compile()
        .expect("slow graph");
    let guarded = StateGraph::<Guarded>::new()
        .add_node("echo", |s: &Guarded| {
            GuardedUpdate::new().topic(s.topic.to_uppercase())
        })
        .add_edge(START, "echo")
        .compile()
        .expect("guarded graph");
    let chat = StateGraph::<Chat>::new()
        .add_node("talk", talk)
        .add_edge(START, "talk")
        .compile()
        .expect("chat graph");
    let countdown = StateGraph::<Countdown>::new()
        .add_node("tick", tick)
        .add_edge(START, "tick")
        .add_conditional_edges_to(
            "tick",
            |s: &Countdown| if s.n > 0 { "tick" } else { END },
            ["tick", END],
        )
        .compile()
        .expect("countdown graph");
    db.configure(Server::new())
        .graph("countdown", countdown)
        .graph("pair", pair())
        .graph("twin", twin::graph().expect("twin graph"))
        .graph("ask", ask())
        .graph("reply", reply())
        .graph("nest", nest())
        .graph("deep", deep())
        .graph("chat", chat)
        .graph("approval", approval)
        .graph("slow", slow)
        .graph_with_schemas("guarded", guarded)
}

/// A running server: its base URL, and a way to stop it.
pub struct Running {
    pub base: String,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the server and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// Starts the test server on a free port of 127.0.0.1.
pub async fn start(db: &Db) -> Running {
    start_with(db, |s| s).await
}

/// Starts the test server, set up by `configure`.
pub async fn start_with(db: &Db, configure: impl FnOnce(Server) -> Server) -> Running {
    db.create().await;
    let listening = configure(server(db))
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listening.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let until = async {
            let _ = stopped.await;
        };
        listening.serve_until(until).await.expect("serve");
    });
    Running {
        base: format!("http://{addr}"),
        addr,
        stop: Some(stop),
        task,
    }
}

/// `POST url` with `body`, the answer's server-sent events as [`frames`].
pub async fn post_frames(
    c: &reqwest::Client,
    url: String,
    body: &serde_json::Value,
) -> Vec<(String, serde_json::Value)> {
    let r = c.post(url).json(body).send().await.unwrap();
    frames(&r.text().await.unwrap())
}

/// The `(event, data)` pairs of an SSE body framed with `\r\n`.
pub fn frames(body: &str) -> Vec<(String, serde_json::Value)> {
    body.split("\r\n\r\n")
        // Comments (`: heartbeat`, sent when a run is slow to say
        // anything) are not events, as SSE clients ignore them.
        .filter(|f| !f.trim().is_empty() && !f.starts_with(':'))
        .map(|f| {
            let mut lines = f.split("\r\n");
            let event = lines.next().unwrap_or_default();
            let data = lines.next().unwrap_or_default();
            let event = event
                .strip_prefix("event: ")
                .expect("event line")
                .to_owned();
            let data = data.strip_prefix("data: ").expect("data line");
            (event, serde_json::from_str(data).expect("data is JSON"))
        })
        .collect()
}
