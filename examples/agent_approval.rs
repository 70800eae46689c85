//! An agent whose email tool waits for a person: the first process runs
//! the agent until the model asks to send an email, the
//! [`HumanInTheLoop`] middleware pauses the run with the call
//! (`after_model` interrupts), and the process exits; a second process
//! reads the pause from the SQLite file, approves, edits or rejects the
//! call, and the agent finishes.
//!
//! ```sh
//! cargo run --example agent_approval -- start --db /tmp/agent.db
//! cargo run --example agent_approval -- approve --db /tmp/agent.db
//! #  or: reject --message "Not yet." | edit --args '{"to": "ops@example.com", "body": "..."}'
//! ```
//!
//! `--db PATH` defaults to `agent_approval.db` in the current directory,
//! `--thread ID` to `release-1`. The model is a script that reads the
//! conversation, so the second process needs no memory of the first.

use agent_state::agent::middleware::{
    Action, Decision, HitlRequest, HitlResponse, HumanInTheLoop, HumanInTheLoopState,
};
use agent_state::agent::{create_agent, input, FnModel, FnTool, ModelRequest};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::block_on;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::graph::{Graph, Input, Resume};
use agent_state::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{self, json, Map, Value};
use agent_state::{ai, AgentState, Message, MessageType, ToolCall};

/// The agent's state: the conversation and the reviewer's edits.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Release {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    hitl: HumanInTheLoopState,
}

/// `send_email`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Email {
    /// Who gets it.
    to: String,
    /// What it says.
    body: String,
}

/// The model: asks to email the team, then reports what the tool said.
fn reply(request: &ModelRequest<Release>) -> Message {
    let last = request.messages().last();
    match last.map(|m| m.kind) {
        // The tool's last line: an edited call's answer starts with the
        // reviewer's notice.
        Some(MessageType::Tool) => {
            let text = last.map(Message::text).unwrap_or_default();
            ai(format!(
                "Finished: {}",
                text.lines().last().unwrap_or_default()
            ))
        }
        _ => {
            let args = json!({"to": "team@example.com", "body": "Version 2.0 is out."});
            let args = args.as_object().cloned().unwrap_or_default();
            ai("").with_tool_call(ToolCall::new("send_email", args, "call_email"))
        }
    }
}

/// The agent: the scripted model, `send_email`, and its review.
fn agent() -> Result<Graph<Release>, Box<dyn std::error::Error>> {
    let send = FnTool::sync("send_email", "Send an email.", |a: Email, _: &_| {
        format!("Email sent to {}: {}", a.to, a.body)
    });
    let review = HumanInTheLoop::new([("send_email", true)])?;
    let model = FnModel(|r: &ModelRequest<Release>| Ok(reply(r)));
    Ok(create_agent(model)
        .tool(send)
        .middleware(review)
        .compile()?)
}

/// The command line: a command, its value (`--message`, `--args`), the
/// file and the thread.
struct Options {
    command: String,
    db: String,
    thread: String,
    message: Option<String>,
    args: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let command = args.next().ok_or(
        "usage: agent_approval start|approve|reject|edit [--db PATH] [--thread ID] \
         [--message TEXT] [--args JSON]",
    )?;
    let mut opts = Options {
        command,
        db: "agent_approval.db".to_owned(),
        thread: "release-1".to_owned(),
        message: None,
        args: None,
    };
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        match flag.as_str() {
            "--db" => opts.db = value,
            "--thread" => opts.thread = value,
            "--message" => opts.message = Some(value),
            "--args" => opts.args = Some(value),
            other => {
                return Err(format!(
                    "unknown option `{other}`; expected --db, --thread, --message or --args"
                ))
            }
        }
    }
    Ok(opts)
}

/// The decision the command makes about the paused call.
fn decision(opts: &Options, paused: &HitlRequest) -> Result<Decision, Box<dyn std::error::Error>> {
    Ok(match opts.command.as_str() {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject {
            message: opts.message.clone(),
        },
        "edit" => {
            let text = opts.args.as_deref().ok_or("`edit` needs --args JSON")?;
            let args: Map<String, Value> = serde_json::from_str(text)
                .map_err(|e| format!("--args is not a JSON object: {e}"))?;
            let name = paused.action_requests[0].name.clone();
            Decision::Edit {
                edited_action: Action { name, args },
            }
        }
        other => {
            return Err(format!("unknown command `{other}`: start, approve, reject or edit").into())
        }
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = options()?;
    let saver = SqliteCheckpointer::open(&opts.db)?;
    let agent = agent()?;
    if opts.command == "start" {
        let run = agent.run(input::<Release>("Tell the team that 2.0 is out."));
        let out = block_on(run.on_thread(&saver, &opts.thread))?;
        let pause = out.interrupts.first().ok_or("the run did not pause")?;
        let request: HitlRequest = serde_json::from_value(pause.value.clone())?;
        for (action, review) in request.action_requests.iter().zip(&request.review_configs) {
            let allowed: Vec<String> = review
                .allowed_decisions
                .iter()
                .map(|d| d.to_string())
                .collect();
            println!(
                "Paused on `{}` {}",
                action.name,
                Value::Object(action.args.clone())
            );
            println!("{}", action.description.as_deref().unwrap_or_default());
            println!("Allowed: {}", allowed.join(", "));
        }
        println!("The process exits now; run `agent_approval approve` (or reject, edit) to go on.");
        return Ok(());
    }
    // Another process: what is the thread waiting for?
    let state = block_on(agent.get_state(&saver, &opts.thread))?;
    let pause = state.interrupts.first().ok_or("the thread is not paused")?;
    let request: HitlRequest = serde_json::from_value(pause.value.clone())?;
    let decision = decision(&opts, &request)?;
    println!(
        "Thread `{}`: {} `{}`",
        opts.thread, opts.command, request.action_requests[0].name
    );
    let resume = Resume::value(HitlResponse {
        decisions: vec![decision],
    });
    let out = block_on(
        agent
            .run(Input::ResumeWith(resume))
            .on_thread(&saver, &opts.thread),
    )?;
    let answer = out
        .state
        .messages()
        .last()
        .map(Message::text)
        .unwrap_or_default();
    println!("Answer: {answer}");
    Ok(())
}
