//! The reference graphs the recordings were taken with
//! (`server/tests/python/reference/graphs.py`), as the serve example
//! writes them: `chat` (an echo streamed word by word), `approval` (a
//! draft, then an interrupt), `countdown` (a step every 200 ms) and
//! `nest` (a subgraph node, then ×10).

use std::sync::Arc;
use std::time::Duration;

use agent_state::graph::{BoxError, Graph, NodeContext, StateGraph, END, START};
use agent_state::{ai, new_message_id, AgentState, MessageChunk, Messages};
use agent_state_server::Server;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Approval {
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<String>,
    pub approved: bool,
}

fn draft(s: &Approval, ctx: &NodeContext) -> Result<ApprovalUpdate, BoxError> {
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

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(messages)]
    pub messages: Messages,
}

async fn echo(s: Arc<Chat>, ctx: NodeContext) -> ChatUpdate {
    let heard = s.messages.last().map(|m| m.text()).unwrap_or_default();
    let reply = format!("You said: {heard}");
    let id = new_message_id();
    let writer = ctx.writer();
    let words: Vec<&str> = reply.split_inclusive(' ').collect();
    for (i, word) in words.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut chunk = MessageChunk::ai(*word).with_id(id.clone());
        chunk.last = i + 1 == words.len();
        writer.message(chunk).await;
    }
    ChatUpdate::new().message(ai(reply).with_id(id))
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Countdown {
    pub n: u32,
}

async fn tick(s: Arc<Countdown>) -> CountdownUpdate {
    tokio::time::sleep(Duration::from_millis(200)).await;
    CountdownUpdate::new().n(s.n.saturating_sub(1))
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Count {
    pub n: u32,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Nest {
    #[state(flatten)]
    pub count: Count,
}

fn nest() -> Graph<Nest> {
    let child = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .compile()
        .expect("child graph");
    StateGraph::<Nest>::new()
        .add_node("child", child)
        .add_node("done", |s: &Nest| {
            NestUpdate::new().count(CountUpdate::new().n(s.count.n * 10))
        })
        .add_edge(START, "child")
        .add_edge("child", "done")
        .add_edge("done", END)
        .compile()
        .expect("nest graph")
}

/// A graph whose one node fails (not a reference graph: for the
/// `failed` lifecycle).
pub fn fail() -> Graph<Countdown> {
    StateGraph::<Countdown>::new()
        .add_node(
            "boom",
            |_: &Countdown| -> Result<CountdownUpdate, BoxError> { Err("boom".into()) },
        )
        .add_edge(START, "boom")
        .compile()
        .expect("fail graph")
}

/// `server` with the four reference graphs.
pub fn reference(server: Server) -> Server {
    let chat = StateGraph::<Chat>::new()
        .add_node("echo", echo)
        .add_edge(START, "echo")
        .compile()
        .expect("chat graph");
    let approval = StateGraph::<Approval>::new()
        .add_node("draft", draft)
        .add_node("review", review)
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile()
        .expect("approval graph");
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
    server
        .graph("chat", chat)
        .graph("approval", approval)
        .graph("countdown", countdown)
        .graph("nest", nest())
}
