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
//! Without a checkpointer, each graph run alternates with the same debate
//! run by hand (the node functions called in turn, each update applied with
//! `state.apply`), and a line gives the graph step against that floor, a
//! ratio from one run, with the goal of a step (0.3 µs per step at 1,000
//! rounds).
//!
//! The SQLite mode stores every step before the next (`Durability::Sync`,
//! what LangGraph's side measures); `sqlite-async` and `sqlite-exit` (asked
//! for by name) run the same debate with LangGraph's weaker durability
//! modes: each step stored while the next runs, or the state stored once
//! when the run ends.
//!
//! `cargo bench --bench side_by_side -- [--rounds 10,100,1000] [--repeat K] [--modes none,sqlite,sqlite-async,sqlite-exit]`

use std::time::{Duration, Instant};

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::{block_on, Checkpointer};
use agent_state::graph::{Durability, Graph, Input, StateGraph, END, START};
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

fn optimist(s: &DebateState) -> DebateStateUpdate {
    DebateStateUpdate::new().message(
        ai(format!(
            "Optimist, round {}: {} brings more good than harm.",
            s.round, s.topic
        ))
        .with_name("optimist"),
    )
}

fn skeptic(s: &DebateState) -> DebateStateUpdate {
    DebateStateUpdate::new()
        .message(
            ai(format!(
                "Skeptic, round {}: {} carries risks we cannot ignore.",
                s.round, s.topic
            ))
            .with_name("skeptic"),
        )
        .round(s.round + 1)
}

fn moderator(s: &DebateState) -> DebateStateUpdate {
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
}

fn after_moderator(s: &DebateState) -> &'static str {
    if s.status == "completed" {
        END
    } else {
        "optimist"
    }
}

fn graph() -> Graph<DebateState> {
    StateGraph::<DebateState>::new()
        .add_node("optimist", optimist)
        .add_node("skeptic", skeptic)
        .add_node("moderator", moderator)
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges("moderator", after_moderator)
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
    durability: Durability,
    n: usize,
) -> Duration {
    let thread = format!("bench-{rounds}-{n}");
    let start = Instant::now();
    let out = match saver {
        None => block_on(graph.run(input(rounds))),
        Some(saver) => block_on(
            graph
                .run(input(rounds))
                .on_thread(saver, thread.as_str())
                .durability(durability),
        ),
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

/// The same debate without the graph: the node functions called in turn
/// and each update applied by hand (`state.apply`), as the run's floor.
fn by_hand_once(rounds: u32) -> Duration {
    let (took, state) = by_hand(rounds);
    check(&state, rounds);
    // Dropped outside the timing, as a graph run's output is.
    drop(state);
    took
}

#[inline(never)]
fn by_hand(rounds: u32) -> (Duration, DebateState) {
    let Input::State(mut state) = input(rounds) else {
        unreachable!("input() gives a state")
    };
    let start = Instant::now();
    loop {
        for node in [optimist, skeptic, moderator] {
            let update = node(&state);
            state.apply(update).expect("the update applies");
        }
        if after_moderator(&state) == END {
            break;
        }
    }
    (start.elapsed(), state)
}

/// What the command line asks for.
struct Args {
    rounds: Vec<u32>,
    repeat: Option<usize>,
    modes: Vec<String>,
}

fn args() -> Args {
    let mut out = Args {
        rounds: vec![10, 100, 1000],
        repeat: None,
        modes: vec!["none".into(), "sqlite".into()],
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                let list = args.next().expect("--rounds takes a list");
                out.rounds = list
                    .split(',')
                    .map(|r| r.trim().parse().expect("a round count"))
                    .collect();
            }
            "--repeat" => {
                out.repeat = Some(
                    args.next()
                        .expect("--repeat takes a count")
                        .parse()
                        .expect("a count"),
                )
            }
            "--modes" => {
                let list = args.next().expect("--modes takes a list");
                out.modes = list.split(',').map(|m| m.trim().to_owned()).collect();
            }
            "--bench" => {}
            other => panic!("unknown argument `{other}`"),
        }
    }
    out
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Times `run` (and, for the `none` mode, the debate by hand in turn with
/// it, so a slow spell on the machine lands on both) until the runs add up
/// to a second or `repeat` is reached; prints the CSV line, and for `none`
/// the ratio of a graph step to a step by hand.
fn measure(mode: &str, r: u32, repeat: Option<usize>, mut run: impl FnMut() -> Duration) {
    let hand = mode == "none";
    let (mut times, mut hand_times) = (Vec::new(), Vec::new());
    let mut total = Duration::ZERO;
    loop {
        let t = run();
        total += t;
        times.push(t);
        if hand {
            hand_times.push(by_hand_once(r));
        }
        let enough = match repeat {
            Some(k) => times.len() >= k,
            None => total >= Duration::from_secs(1) || times.len() >= 10_000,
        };
        if enough {
            break;
        }
    }
    let steps = f64::from(3 * r);
    let median_run = median(&mut times);
    let per_step = median_run.as_secs_f64() * 1e6 / steps;
    eprintln!(
        "agent-state {mode} {r} rounds: {} runs, median {median_run:?}",
        times.len()
    );
    println!("agent-state,{mode},{r},{per_step:.3}");
    if hand {
        let by_hand = median(&mut hand_times).as_secs_f64() * 1e6 / steps;
        let goal = if r == 1000 {
            format!(
                "; goal at 1,000 rounds: ≤ 0.3 µs ({})",
                if per_step <= 0.3 { "met" } else { "not met" }
            )
        } else {
            String::new()
        };
        println!(
            "graph step at {r} rounds: {per_step:.3} µs; the same nodes applied by hand: \
             {by_hand:.3} µs; graph ÷ by hand: {:.2}×{goal}",
            per_step / by_hand,
        );
    }
}

fn main() {
    let args = args();
    let graph = graph();
    let dir = std::env::temp_dir().join(format!("agent-state-side-by-side-{}", std::process::id()));
    let path = dir.join("debate.db");
    let saver = SqliteCheckpointer::open(&path).expect("the SQLite file opens");
    let mut n = 0;
    let modes = [
        ("none", None, Durability::Sync),
        ("sqlite", Some(&saver), Durability::Sync),
        ("sqlite-async", Some(&saver), Durability::Async),
        ("sqlite-exit", Some(&saver), Durability::Exit),
    ];
    for (mode, saver, durability) in modes {
        if !args.modes.iter().any(|m| m == mode) {
            continue;
        }
        for &r in &args.rounds {
            run_once(&graph, 10, saver, durability, n);
            n += 1;
            measure(mode, r, args.repeat, || {
                n += 1;
                run_once(&graph, r, saver, durability, n)
            });
        }
    }
    drop(saver);
    let _ = std::fs::remove_dir_all(&dir);
}
