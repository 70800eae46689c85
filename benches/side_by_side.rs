//! The agent-state half of the side-by-side debate benchmark
//! (`bash benches/side_by_side.sh`): the same scripted three-agent debate as
//! `benches/langgraph/debate.py`, on our graph runtime, without a
//! checkpointer and with a SQLite-file checkpoint every step.
//!
//! Timing mirrors the Python side: one warm-up run at 10 rounds, then timed
//! runs until they add up to at least 1 s (or `--repeat K`), and the median
//! run time divided by the node steps (3 per round). Every run's final
//! state is checked. Output: `agent-state,<none|sqlite>,<rounds>,<us_per_step>`.
//!
//! `cargo bench --bench side_by_side -- [--rounds 10,100,1000] [--repeat K] [--modes none,sqlite]`

use std::time::{Duration, Instant};

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{block_on, Checkpointer};
use agent_state::graph::{Graph, Input, StateGraph, END, START};
use agent_state::{ai, human, AgentState, Messages};

const TOPIC: &str = "Should AI be regulated?";

/// The workload's state: what the Python side declares as a `TypedDict`.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct DebateState {
    #[reducer(messages)]
    messages: Messages,
    round: u32,
    #[reducer(immutable)]
    topic: String,
    #[reducer(immutable)]
    max_rounds: u32,
    #[state(default = "running".to_owned())]
    status: String,
}

fn graph() -> Graph<DebateState> {
    StateGraph::<DebateState>::new()
        .add_node("optimist", |s: &DebateState| {
            DebateStateUpdate::new().message(
                ai(format!(
                    "Optimist, round {}: {} brings more good than harm.",
                    s.round, s.topic
                ))
                .with_name("optimist"),
            )
        })
        .add_node("skeptic", |s: &DebateState| {
            DebateStateUpdate::new()
                .message(
                    ai(format!(
                        "Skeptic, round {}: {} carries risks we cannot ignore.",
                        s.round, s.topic
                    ))
                    .with_name("skeptic"),
                )
                .round(s.round + 1)
        })
        .add_node("moderator", |s: &DebateState| {
            let update = DebateStateUpdate::new().message(
                ai(format!(
                    "Moderator: round {} of {} closed.",
                    s.round, s.max_rounds
                ))
                .with_name("moderator"),
            );
            if s.round >= s.max_rounds {
                update.status("completed".to_owned())
            } else {
                update
            }
        })
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges("moderator", |s: &DebateState| {
            if s.status == "completed" {
                END
            } else {
                "optimist"
            }
        })
        .with_recursion_limit(usize::MAX)
        .compile()
        .expect("the debate graph compiles")
}

fn input(rounds: u32) -> Input<DebateState> {
    let mut state = DebateState {
        topic: TOPIC.to_owned(),
        max_rounds: rounds,
        ..DebateState::default()
    };
    state
        .apply(DebateStateUpdate::new().message(human(format!("Debate topic: {TOPIC}"))))
        .expect("the input applies");
    Input::State(state)
}

fn check(state: &DebateState, rounds: u32) {
    assert_eq!(state.messages.len(), 1 + 3 * rounds as usize);
    assert_eq!(state.round, rounds);
    assert_eq!(state.status, "completed");
}

/// One run's wall time.
fn run_once(
    graph: &Graph<DebateState>,
    rounds: u32,
    saver: Option<&SqliteCheckpointer>,
    n: usize,
) -> Duration {
    let thread = format!("bench-{rounds}-{n}");
    let start = Instant::now();
    let out = match saver {
        None => block_on(graph.run(input(rounds))),
        Some(saver) => block_on(graph.run(input(rounds)).on_thread(saver, thread.as_str())),
    }
    .expect("the debate runs");
    let took = start.elapsed();
    check(&out.state, rounds);
    if let Some(saver) = saver {
        // Outside the timing, as the Python side deletes its threads.
        block_on(saver.delete_thread(&thread)).expect("delete");
    }
    took
}

fn main() {
    let mut rounds: Vec<u32> = vec![10, 100, 1000];
    let mut repeat: Option<usize> = None;
    let mut modes: Vec<String> = vec!["none".into(), "sqlite".into()];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                let list = args.next().expect("--rounds takes a list");
                rounds = list
                    .split(',')
                    .map(|r| r.trim().parse().expect("a round count"))
                    .collect();
            }
            "--repeat" => {
                repeat = Some(
                    args.next()
                        .expect("--repeat takes a count")
                        .parse()
                        .expect("a count"),
                )
            }
            "--modes" => {
                let list = args.next().expect("--modes takes a list");
                modes = list.split(',').map(|m| m.trim().to_owned()).collect();
            }
            "--bench" => {}
            other => panic!("unknown argument `{other}`"),
        }
    }

    let graph = graph();
    let dir = std::env::temp_dir().join(format!("agent-state-side-by-side-{}", std::process::id()));
    let path = dir.join("debate.db");
    let saver = SqliteCheckpointer::open(&path).expect("the SQLite file opens");
    let mut n = 0;
    for (mode, saver) in [("none", None), ("sqlite", Some(&saver))] {
        if !modes.iter().any(|m| m == mode) {
            continue;
        }
        for &r in &rounds {
            run_once(&graph, 10, saver, n);
            n += 1;
            let mut times = Vec::new();
            let mut total = Duration::ZERO;
            loop {
                let t = run_once(&graph, r, saver, n);
                n += 1;
                total += t;
                times.push(t);
                let enough = match repeat {
                    Some(k) => times.len() >= k,
                    None => total >= Duration::from_secs(1) || times.len() >= 10_000,
                };
                if enough {
                    break;
                }
            }
            times.sort();
            let median = times[times.len() / 2];
            let per_step = median.as_secs_f64() * 1e6 / f64::from(3 * r);
            eprintln!(
                "agent-state {mode} {r} rounds: {} runs, median {median:?}",
                times.len()
            );
            println!("agent-state,{mode},{r},{per_step:.3}");
        }
    }
    drop(saver);
    let _ = std::fs::remove_dir_all(&dir);
}
