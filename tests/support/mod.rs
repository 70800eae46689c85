//! States and helpers shared by the checkpointer tests.
#![allow(dead_code)] // each test binary uses its own share of this

pub mod conformance;
pub mod everything;
pub mod faulty;
pub mod flow;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod props;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use agent_state::checkpoint::{block_on, Checkpointer, Source, StepRecord, Thread};
use agent_state::graph::{BoxError, Graph, NodeContext, StateGraph, END, START};
use agent_state::{ai, AgentState, Messages};

/// The debate workflow's state, with an append-only log that shows any
/// update applied twice.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Debate {
    /// The transcript.
    #[reducer(messages)]
    pub messages: Messages,
    /// The round.
    pub round: u32,
    /// The subject.
    #[reducer(immutable)]
    pub topic: String,
    /// Every step's number, once each: doubled replays show here.
    #[reducer(append)]
    pub log: Vec<u64>,
    /// `running` until the debate ends.
    #[state(default = "running".to_owned())]
    pub status: String,
}

/// A path under the target directory, unique per call, for a SQLite file.
pub fn temp_db(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("checkpoints");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}-{n}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// A graph of one node, `count`, that loops until `round` reaches `to`:
/// the step that sets round `n` logs `n - 1`, so a step applied twice or
/// lost shows in `log`.
pub fn counting(to: u32) -> Graph<Debate> {
    StateGraph::<Debate>::new()
        .add_node("count", count)
        .add_edge(START, "count")
        .add_conditional_edges(
            "count",
            move |s: &Debate| {
                if s.round < to {
                    "count"
                } else {
                    END
                }
            },
        )
        .compile()
        .unwrap()
}

/// The node of [`counting`]: the next round, logging the one before.
pub fn count(s: &Debate) -> DebateUpdate {
    DebateUpdate::new()
        .round(s.round + 1)
        .add_log(s.round.into())
}

/// The records of `thread` in `saver`, oldest first (at most 1,000).
pub fn records<C: Checkpointer>(saver: &C, thread: &str) -> Vec<StepRecord<DebateUpdate>> {
    let t = block_on(Thread::<Debate, _>::open(saver, thread)).unwrap();
    let mut records = block_on(t.history(None, 1000)).unwrap();
    records.reverse();
    records
}

/// The thread's stored steps, oldest first: (step, source).
pub fn history<C: Checkpointer>(saver: &C, thread: &str) -> Vec<(i64, Source)> {
    records(saver, thread)
        .into_iter()
        .map(|r| (r.meta.step, r.meta.source))
        .collect()
}

/// A graph that counts (as [`counting`]) until `round` reaches `to`, then
/// asks "round N?" with an interrupt and adds the answer as the AI's
/// message.
pub fn asking(to: u32) -> Graph<Debate> {
    StateGraph::<Debate>::new()
        .add_node("count", count)
        .add_node(
            "ask",
            |s: &Debate, ctx: &NodeContext| -> Result<DebateUpdate, BoxError> {
                let answer: String = ctx.interrupt(format!("round {}?", s.round))?;
                Ok(DebateUpdate::new().message(ai(answer)))
            },
        )
        .add_edge(START, "count")
        .add_conditional_edges(
            "count",
            move |s: &Debate| if s.round < to { "count" } else { "ask" },
        )
        .add_edge("ask", END)
        .compile()
        .unwrap()
}
