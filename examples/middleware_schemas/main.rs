//! A deep agent on the agent loop (a business-idea assistant): five
//! middleware, each with its own state schema, tools and hooks, each
//! written once and generic over any state that contains its part and the
//! conversation, composed into one agent state with `#[state(flatten)]`.
//!
//! | middleware | part | hooks | tools |
//! | --- | --- | --- | --- |
//! | business idea tracker | `BusinessIdeaState` | `wrap_model_call` (status from the state) | `mark_business_idea_complete` (a `Command`) |
//! | language detection | `LanguageDetectionState` | `before_agent`, `wrap_model_call` | — |
//! | skills | `SkillsState` | `before_agent`, `wrap_model_call` | — |
//! | filesystem | `FilesystemState` | `wrap_model_call` | `write_file` |
//! | todo list (LangChain's, built in) | `TodoListState` | `wrap_model_call`, `after_model` | `write_todos` |
//!
//! The example has no loop code: `create_agent` compiles the middleware
//! into a graph. Two invocations on one thread, as the original agent's
//! walk-through has them: the first marks the idea complete, so the second's system prompt
//! tells the model not to evaluate it again.
//!
//! Scripted model by default. With `OPENAI_API_KEY` set (and optionally
//! `OPENAI_BASE_URL`, `OPENAI_MODEL`) and the `openai` feature, a real
//! model answers instead:
//! `OPENAI_API_KEY=.. cargo run --example middleware_schemas --features openai`.
#![deny(missing_docs)]

mod agent;

use std::sync::Arc;

use agent::{agent, tool_calls, DeepAgentState, ALREADY_COMPLETE, RECORDED};
use agent_state::agent::{input, ScriptedModel};
use agent_state::base::HasMessages;
use agent_state::checkpoint::MemoryCheckpointer;
use agent_state::graph::{Graph, StepEvent};
use agent_state::serde_json::json;
use agent_state::{ai, AgentState, StateInput, StateUpdate};

type S = DeepAgentState;

const IDEA: &str = "An app for students to plan their study time";

/// The scripted model: the first turn calls the three tools at once, the
/// second answers; the second invocation answers from what it is told.
fn scripted() -> ScriptedModel {
    ScriptedModel::new([tool_calls(IDEA), ai(RECORDED), ai(ALREADY_COMPLETE)]).recording()
}

fn print_step(e: &StepEvent<'_, S>) {
    let nodes: Vec<&str> = e.writes.iter().map(|w| w.node.as_str()).collect();
    let next = if e.next.is_empty() {
        "END".to_owned()
    } else {
        e.next.join(", ")
    };
    println!(
        "step {} [{}]: {} -> {next}",
        e.step,
        e.source,
        nodes.join(" + ")
    );
    for w in e.writes.iter().filter(|w| !w.update.is_empty()) {
        println!("    writes {}", w.update.to_json());
    }
}

/// A real model when `OPENAI_API_KEY` is set and the `openai` feature is on.
#[cfg(feature = "openai")]
fn real_model() -> Option<agent_state::agent::openai::OpenAiChat> {
    std::env::var_os("OPENAI_API_KEY")?;
    Some(agent_state::agent::openai::OpenAiChat::from_env())
}

#[cfg(not(feature = "openai"))]
fn real_model() -> Option<ScriptedModel> {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        println!("OPENAI_API_KEY is set: build with `--features openai` to use a real model\n");
    }
    None
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The invocation's input. Middleware fields are omitted from input: a
    // caller that tries to set one is told so, and nothing is applied.
    let err = <S as AgentState>::Input::from_json(
        json!({"messages": "hi", "business_idea_complete": true}),
    )
    .unwrap_err();
    println!("input rejected: {err}\n");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if let Some(model) = real_model() {
        let graph = agent(model)?;
        let saver = MemoryCheckpointer::new();
        let out = runtime.block_on(invoke(&graph, &saver))?;
        println!(
            "\nresult: {}",
            agent_state::serde_json::to_string_pretty(&out.output())?
        );
        return Ok(());
    }

    let model = Arc::new(scripted());
    let graph = agent(Arc::clone(&model))?;
    let saver = MemoryCheckpointer::new();
    let state = runtime.block_on(invoke(&graph, &saver))?;
    for (k, request) in model.seen().iter().enumerate() {
        println!(
            "\nsystem prompt of model call {}:\n{}",
            k + 1,
            request.system_prompt.as_deref().unwrap_or("")
        );
    }
    check(&state, &model)?;

    // The result, flat, as LangGraph returns it; the private skills list is
    // not in the output but stays in the checkpoint.
    assert!(state.to_output_json().get("skills_metadata").is_none());
    assert!(state.to_json().get("skills_metadata").is_some());
    let output = agent_state::serde_json::to_string_pretty(&state.output())?;
    println!("\nresult: {output}");
    println!("\n{}", S::reference_table());
    Ok(())
}

/// Two invocations on one thread, as in the original agent's walk-through.
async fn invoke(
    graph: &Graph<S>,
    saver: &MemoryCheckpointer,
) -> Result<S, Box<dyn std::error::Error>> {
    let first = "I have a business idea: an app for students to plan their study time";
    println!("--- invocation 1: {first}");
    graph
        .run(input::<S>(first))
        .on_thread(saver, "thread-1")
        .on_step(print_step)
        .await?;
    let second = "Can you evaluate another idea for the students?";
    println!("--- invocation 2: {second}");
    let out = graph
        .run(input::<S>(second))
        .on_thread(saver, "thread-1")
        .on_step(print_step)
        .await?;
    Ok(out.state)
}

/// What the scripted run must have done.
fn check(state: &S, model: &ScriptedModel) -> Result<(), String> {
    let expect = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("expected {what}"))
        }
    };
    expect(
        state.business_idea.business_idea_complete,
        "the idea marked complete",
    )?;
    expect(
        state.business_idea.materialized_business_idea.as_deref() == Some(IDEA),
        "the idea's summary",
    )?;
    expect(
        state.language.detected_language.as_deref() == Some("en"),
        "English detected",
    )?;
    expect(state.planning.todos.len() == 2, "two todos")?;
    expect(
        state.filesystem.files.contains_key("/idea.md"),
        "/idea.md written",
    )?;
    expect(state.skills.skills_metadata.len() == 2, "two skills listed")?;
    // human, AI with 3 calls, 3 answers, AI; human, AI.
    expect(state.messages().len() == 8, "eight messages")?;
    let seen = model.seen();
    expect(seen.len() == 3, "three model calls")?;
    expect(
        seen[0].tools.len() == 3,
        "the middleware's three tools offered",
    )?;
    let before = seen[0].system_prompt.as_deref().unwrap_or_default();
    let after = seen[2].system_prompt.as_deref().unwrap_or_default();
    expect(
        before.contains("No complete business idea"),
        "the first prompt to allow evaluation",
    )?;
    expect(
        after.contains("Do NOT use the business-idea-evaluation skill"),
        "the last prompt to forbid it",
    )?;
    expect(
        after.contains("Answer in the user's language (en)."),
        "the language in the prompt",
    )?;
    expect(
        after.contains("Files: /idea.md."),
        "the files in the prompt",
    )?;
    Ok(())
}
