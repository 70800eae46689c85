//! The agent-state half of the agent-loop benchmark
//! (`bash benches/agent_side_by_side.sh`): the same scripted model ↔ tools
//! loop as `benches/langgraph/agent.py` (LangChain's `create_agent`), on
//! our agent.
//!
//! Workload: T turns from one human message; while the conversation has
//! k < T - 1 AI messages the model calls `lookup` twice (keys `k<k>a`,
//! `k<k>b`), then answers "done". Mode `bare`: the model and the tool.
//! Mode `middleware`: a `counter` middleware whose part counts model calls
//! in `before_model`, and a `prompt` middleware whose `wrap_model_call`
//! appends the turn to the system prompt. No checkpointer, no I/O.
//!
//! Timing mirrors the Python side: one warm-up run, then timed runs until
//! they add up to at least 1 s (or `--repeat K`); the median run divided by
//! T. Every run is checked. Output: `agent-state,<mode>,<turns>,<us_per_turn>`.
//!
//! `cargo bench --bench agent -- [--turns 10,100] [--repeat K]`

use std::time::{Duration, Instant};

use agent_state::agent::{
    create_agent, input, AgentMiddleware, FnModel, FnTool, HookOutput, HookResult, Hooks,
    ModelFuture, ModelHandler, ModelRequest, ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::block_on;
use agent_state::graph::{Graph, NodeContext};
use agent_state::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{Map, Value};
use agent_state::{ai, AgentState, Message, MessageType, ToolCall};

/// The counter middleware's part.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct CountState {
    model_calls: u32,
}

/// The agent's state: the conversation and the counter's part.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Bench {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    count: CountState,
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Lookup {
    /// The key.
    key: String,
}

fn ai_count(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| m.kind == MessageType::Ai)
        .count()
}

/// The script: two lookups per turn until the last.
fn reply(turns: usize, messages: &[Message]) -> Message {
    let k = ai_count(messages);
    if k + 1 >= turns {
        return ai("done");
    }
    ["a", "b"].iter().fold(ai(""), |m, s| {
        let mut args = Map::new();
        args.insert("key".to_owned(), Value::String(format!("k{k}{s}")));
        m.with_tool_call(ToolCall::new("lookup", args, format!("call_{k}_{s}")))
    })
}

struct Counter;

impl AgentMiddleware<Bench> for Counter {
    fn name(&self) -> &str {
        "counter"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_MODEL
    }

    fn before_model(&self, state: &Bench, _: &NodeContext) -> HookResult<Bench> {
        let calls = state.part::<CountState>().model_calls + 1;
        Ok(HookOutput::update(Bench::lift(
            CountStateUpdate::new().model_calls(calls),
        )))
    }
}

struct Prompt;

impl AgentMiddleware<Bench> for Prompt {
    fn name(&self) -> &str {
        "prompt"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<Bench>,
        handler: ModelHandler<'a, Bench>,
    ) -> ModelFuture<'a> {
        let turn = ai_count(request.messages());
        let prompt = format!(
            "{} (turn {turn})",
            request.system_prompt().unwrap_or_default()
        );
        handler.call(request.with_system_prompt(prompt))
    }
}

fn agent(mode: &str, turns: usize) -> Graph<Bench> {
    let model = FnModel(move |r: &ModelRequest<Bench>| Ok(reply(turns, r.messages())));
    let lookup = FnTool::sync(
        "lookup",
        "Looks a key up.",
        |a: Lookup, _: &ToolRuntime<Bench>| format!("value of {}", a.key),
    );
    let mut builder = create_agent(model)
        .system_prompt("You look things up.")
        .tool(lookup)
        .recursion_limit(usize::MAX);
    if mode == "middleware" {
        builder = builder.middleware(Counter).middleware(Prompt);
    }
    builder.compile().expect("the agent compiles")
}

fn check(state: &Bench, mode: &str, turns: usize) {
    let messages = state.messages();
    assert_eq!(messages.len(), 2 + 3 * (turns - 1));
    assert_eq!(messages.last().map(Message::text).as_deref(), Some("done"));
    if turns > 1 {
        assert_eq!(messages[2].text(), "value of k0a");
    }
    if mode == "middleware" {
        assert_eq!(state.count.model_calls as usize, turns);
    }
}

fn run_once(agent: &Graph<Bench>, mode: &str, turns: usize) -> Duration {
    let start = Instant::now();
    let out = block_on(agent.run(input::<Bench>("Look everything up."))).expect("the agent runs");
    let took = start.elapsed();
    check(&out.state, mode, turns);
    took
}

fn main() {
    let mut turns: Vec<usize> = vec![10, 100];
    let mut repeat: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--turns" => {
                let list = args.next().expect("--turns takes a list");
                turns = list
                    .split(',')
                    .map(|t| t.trim().parse().expect("a turn count"))
                    .collect();
            }
            "--repeat" => {
                repeat = Some(
                    args.next()
                        .expect("--repeat takes a count")
                        .parse()
                        .expect("a count"),
                );
            }
            "--bench" => {}
            other => panic!("unknown argument `{other}`"),
        }
    }
    for mode in ["bare", "middleware"] {
        for &t in &turns {
            let agent = agent(mode, t);
            run_once(&agent, mode, t);
            let mut times = Vec::new();
            let mut total = Duration::ZERO;
            loop {
                let took = run_once(&agent, mode, t);
                total += took;
                times.push(took);
                let enough = match repeat {
                    Some(k) => times.len() >= k,
                    None => total >= Duration::from_secs(1) || times.len() >= 100_000,
                };
                if enough {
                    break;
                }
            }
            times.sort();
            let median = times[times.len() / 2];
            let per_turn = median.as_secs_f64() * 1e6 / t as f64;
            eprintln!(
                "agent-state {mode} {t} turns: {} runs, median {median:?}",
                times.len()
            );
            println!("agent-state,{mode},{t},{per_turn:.3}");
        }
    }
}
