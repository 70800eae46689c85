//! A LangGraph debate workflow as a running graph: an optimist, a skeptic
//! and a moderator argue for a number of rounds, every step is checkpointed
//! to a SQLite file, and running the program again resumes the thread where
//! the last run stopped.
//!
//! The "model" is scripted (no network, no key), but its nodes are async,
//! as real model calls are.
//!
//! ```sh
//! cargo run -p debate                 # first run: stops after 2 rounds
//! cargo run -p debate                 # second run: resumes, finishes
//! cargo run -p debate -- --rounds 5 --db /tmp/debate.db --thread t2 --steps 100
//! cargo run -p debate -- --mermaid    # the graph drawn in Mermaid
//! ```
//!
//! Options (or environment variables): `--rounds N` (`DEBATE_ROUNDS`,
//! default 3), `--db PATH` (`DEBATE_DB`, default `debate.db` in the target
//! directory Cargo built the program into: `target/`, or where
//! `CARGO_TARGET_DIR` points; the program prints the path it uses),
//! `--thread ID` (`DEBATE_THREAD`, default `debate`), `--steps N` supersteps
//! per run before it stops as an interrupted run would (`DEBATE_STEPS`,
//! default 7: the input and two rounds).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_state::block_on;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::graph::{Graph, GraphError, Input, StateGraph, StepEvent, END, START};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::{ai, human, AgentState, Message, Messages};

/// Where the workflow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
pub enum DebateStatus {
    /// Rounds are still being argued.
    Running,
    /// The moderator closed the debate.
    Completed,
    /// Something went wrong.
    Error,
}

/// Why a status change was refused.
#[derive(Debug)]
pub struct StatusError(DebateStatus, DebateStatus);

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {:?} debate cannot become {:?}", self.0, self.1)
    }
}

/// The debate's status reducer, validating transitions: a finished
/// debate stays finished.
pub fn status_reducer(
    current: &DebateStatus,
    next: DebateStatus,
) -> Result<DebateStatus, StatusError> {
    match (current, next) {
        (DebateStatus::Running, next) => Ok(next),
        (done, next) if *done == next => Ok(next),
        (done, next) => Err(StatusError(*done, next)),
    }
}

/// State of the debate workflow.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct DebateState {
    /// Complete conversation history including user input and all agent responses.
    #[reducer(messages)]
    pub messages: Messages,
    /// Current debate round counter, 0-indexed.
    pub round: u32,
    /// The debate subject provided by the user.
    #[reducer(immutable)]
    pub topic: String,
    /// Maximum number of debate rounds before termination.
    #[reducer(immutable)]
    #[state(default = 3)]
    pub max_rounds: u32,
    /// Current workflow execution status.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    pub status: DebateStatus,
}

/// A scripted chat model: the same arguments every run, picked by role and
/// round, behind an async call like a real client's.
struct ScriptedModel;

impl ScriptedModel {
    async fn invoke(&self, role: &str, state: &DebateState) -> Message {
        let lines: &[&str] = match role {
            "optimist" => &[
                "Clear rules let good products ship faster: builders know where the lines are.",
                "Audits of high-risk systems catch failures before they reach patients and courts.",
                "Shared safety standards make it cheaper for small teams to compete with giants.",
                "Regulation done well is an accelerator, the way seat belts made cars sellable.",
            ],
            _ => &[
                "Rules written today will freeze yesterday's models into law.",
                "Compliance costs fall hardest on the small labs you want to protect.",
                "Regulators lack the expertise to audit systems that change every month.",
                "Badly scoped rules push research offshore without making anyone safer.",
            ],
        };
        let line = lines[state.round as usize % lines.len()];
        ai(format!("{line} ({} on \"{}\")", role, state.topic)).with_name(role)
    }
}

fn build_graph(model: Arc<ScriptedModel>) -> Result<Graph<DebateState>, GraphError> {
    let (for_optimist, for_skeptic) = (Arc::clone(&model), Arc::clone(&model));
    StateGraph::<DebateState>::new()
        .add_node("optimist", move |s: Arc<DebateState>| {
            let model = Arc::clone(&for_optimist);
            async move { DebateStateUpdate::new().message(model.invoke("optimist", &s).await) }
        })
        .add_node("skeptic", move |s: Arc<DebateState>| {
            let model = Arc::clone(&for_skeptic);
            async move {
                DebateStateUpdate::new()
                    .message(model.invoke("skeptic", &s).await)
                    .round(s.round + 1)
            }
        })
        .add_node("moderator", |s: &DebateState| {
            let done = s.round >= s.max_rounds;
            let text = if done {
                format!(
                    "Round {} of {} closed. The debate is over.",
                    s.round, s.max_rounds
                )
            } else {
                format!("Round {} of {} closed. Next round.", s.round, s.max_rounds)
            };
            let update = DebateStateUpdate::new().message(ai(text).with_name("moderator"));
            if done {
                update.status(DebateStatus::Completed)
            } else {
                update
            }
        })
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges_to(
            "moderator",
            |s: &DebateState| {
                if s.status == DebateStatus::Completed {
                    END
                } else {
                    "optimist"
                }
            },
            ["optimist", END],
        )
        .compile()
}

struct Options {
    rounds: u32,
    db: String,
    thread: String,
    steps: usize,
}

fn options() -> Result<Options, String> {
    let env =
        |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_owned());
    let mut rounds = env("DEBATE_ROUNDS", "3");
    let mut db =
        std::env::var("DEBATE_DB").unwrap_or_else(|_| default_db().to_string_lossy().into_owned());
    let mut thread = env("DEBATE_THREAD", "debate");
    let mut steps = env("DEBATE_STEPS", "7");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--rounds" => &mut rounds,
            "--db" => &mut db,
            "--thread" => &mut thread,
            "--steps" => &mut steps,
            other => {
                return Err(format!(
                    "unknown option `{other}`; expected --rounds, --db, --thread or --steps"
                ))
            }
        };
        *slot = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
    }
    Ok(Options {
        rounds: rounds
            .parse()
            .map_err(|e| format!("--rounds `{rounds}`: {e}"))?,
        db,
        thread,
        steps: steps
            .parse()
            .map_err(|e| format!("--steps `{steps}`: {e}"))?,
    })
}

/// `debate.db` in the target directory Cargo built this program into: the
/// executable is `<target>/<profile>/debate`. So `cargo clean` removes it,
/// and a checkout whose builds go to `CARGO_TARGET_DIR` never finds a stale
/// `./target/debate.db`. Outside Cargo's layout, the `CARGO_TARGET_DIR`
/// the program was built with, else the workspace's `target/`.
fn default_db() -> PathBuf {
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        let profile = exe.parent()?;
        let target = profile.parent()?;
        let built_by_cargo = target.join("CACHEDIR.TAG").exists();
        built_by_cargo.then(|| target.to_path_buf())
    });
    from_exe
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("debate.db")
}

fn print_step(e: &StepEvent<'_, DebateState>) {
    let nodes: Vec<&str> = e.writes.iter().map(|w| w.node.as_str()).collect();
    let checkpoint = e
        .checkpoint
        .map_or_else(String::new, |c| format!(", checkpoint {}", c.id));
    let next = if e.next.is_empty() {
        "END".to_owned()
    } else {
        e.next.join(", ")
    };
    println!(
        "  step {:>3} [{}] {} -> {} ({} messages, round {}{checkpoint})",
        e.step,
        e.source,
        if nodes.is_empty() {
            "input".to_owned()
        } else {
            nodes.join(", ")
        },
        next,
        e.state.messages.len(),
        e.state.round,
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--mermaid") {
        print!("{}", build_graph(Arc::new(ScriptedModel))?.to_mermaid());
        return Ok(());
    }
    let opts = options()?;
    let saver = SqliteCheckpointer::open(&opts.db)?;
    let graph = build_graph(Arc::new(ScriptedModel))?;

    let head = block_on(saver_head(&saver, &opts.thread))?;
    let input = match head {
        None => {
            println!(
                "New debate on thread `{}` in {} ({} rounds).",
                opts.thread, opts.db, opts.rounds
            );
            let topic = "Should AI be regulated?".to_owned();
            let mut state = DebateState {
                topic: topic.clone(),
                max_rounds: opts.rounds,
                ..DebateState::default()
            };
            state
                .apply(DebateStateUpdate::new().message(human(format!("Debate topic: {topic}"))))?;
            Input::State(state)
        }
        Some(step) => {
            println!(
                "Resuming thread `{}` in {} from step {step}.",
                opts.thread, opts.db
            );
            Input::Resume
        }
    };

    println!("Steps:");
    let out = block_on(
        graph
            .run(input)
            .on_thread(&saver, opts.thread.clone())
            .on_step(print_step)
            .stop_after(opts.steps),
    )?;
    if out.steps == 0 {
        println!("  (none: this debate is already over)");
    }

    println!("\nTranscript:");
    for m in out.state.messages.iter() {
        let who = m.name.clone().unwrap_or_else(|| m.kind.as_str().to_owned());
        println!("  {who:>9}: {}", m.text());
    }

    println!("\nState:");
    let mut json = out.state.to_json();
    let messages = json["messages"].as_array().map_or(0, Vec::len);
    json["messages"] = agent_state::serde_json::json!(format!("[{messages} messages]"));
    println!("{}", agent_state::serde_json::to_string_pretty(&json)?);

    if out.next.is_empty() {
        println!("\nThe debate is over. Start another with `--thread <new id>`.");
    } else {
        println!(
            "\nStopped after {} steps (next: {}), as an interrupted run would. Run again to resume.",
            out.steps,
            out.next.join(", ")
        );
    }
    Ok(())
}

/// The thread's last step number, if it exists.
async fn saver_head(
    saver: &SqliteCheckpointer,
    thread: &str,
) -> Result<Option<i64>, agent_state::checkpoint::CheckpointError> {
    use agent_state::checkpoint::Checkpointer;
    Ok(saver.head(thread).await?.map(|h| h.meta.step))
}
