//! Seed 003's agent: five middleware, each with its own state schema, each
//! written once and generic over any state that contains its part and the
//! conversation, composed into one agent state with `#[state(flatten)]`.
//!
//! | middleware | part | fields |
//! | --- | --- | --- |
//! | business idea tracker | `BusinessIdeaState` | `business_idea_complete`, `materialized_business_idea` |
//! | language detection | `LanguageDetectionState` | `detected_language` |
//! | skills | `SkillsState` | `skills_metadata` |
//! | filesystem | `FilesystemState` | `files` |
//! | todo list | `PlanningState` | `todos` |
//!
//! `main` runs one invocation of the agent graph as seed 003 describes it:
//! the input (fields omitted from input are refused), the `before_agent`
//! hooks in registration order (each a step that sees the updates of those
//! before it), the system prompt the middleware inject, a model turn whose
//! three tool calls run as one superstep (`mark_business_idea_complete`
//! returns a `Command`), the model's answer, and the result, flat, as
//! LangGraph returns it.
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
use agent_state::checkpoint::block_on;
use agent_state::graph::{
    BoxError, Command, Input, Middleware, Next, StateGraph, StepEvent, END, START,
};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::json;
use agent_state::{ai, tool, AgentState, HasPart, MessageType, StateInput, StateUpdate, ToolCall};

/// The system-prompt half of LangChain v1's `wrap_model_call`: what a
/// middleware tells the model, from the state it reads. The state hooks
/// (`before_agent`, `after_agent`) are the runtime's [`Middleware`] trait.
pub trait Instructions<S: AgentState>: Send + Sync {
    /// The middleware's name, as in the prompt.
    fn label(&self) -> &'static str;

    /// What it adds to the system prompt.
    fn instructions(&self, state: &S) -> Option<String>;
}

// --- BusinessIdeaTrackerMiddleware --------------------------------------

/// `BusinessIdeaTrackerMiddleware`'s schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct BusinessIdeaState {
    /// Whether a complete business idea has been identified.
    #[state(omit_from_input)]
    pub business_idea_complete: bool,
    /// The idea, once the model has materialized it.
    #[state(omit_from_input)]
    pub materialized_business_idea: Option<String>,
}

/// Tells the model whether to evaluate ideas; its tool marks one complete.
pub struct BusinessIdeaTracker;

impl<S: HasPart<BusinessIdeaState> + HasMessages> Middleware<S> for BusinessIdeaTracker {
    fn name(&self) -> &str {
        "business_idea_tracker"
    }

    fn has_before_agent(&self) -> bool {
        false
    }

    fn has_after_agent(&self) -> bool {
        false
    }
}

impl<S: HasPart<BusinessIdeaState> + HasMessages> Instructions<S> for BusinessIdeaTracker {
    fn label(&self) -> &'static str {
        "business_idea_tracker"
    }

    fn instructions(&self, state: &S) -> Option<String> {
        let idea: &BusinessIdeaState = state.part();
        Some(match &idea.materialized_business_idea {
            Some(summary) if idea.business_idea_complete => format!(
                "A complete business idea has been identified: {summary}. Do NOT use the business-idea-evaluation skill."
            ),
            _ => "No complete business idea yet: you may use the business-idea-evaluation skill.".to_owned(),
        })
    }
}

/// The `mark_business_idea_complete` tool.
pub fn mark_business_idea_complete<S>(summary: &str, call_id: &str) -> S::Update
where
    S: HasPart<BusinessIdeaState> + HasMessages,
{
    S::lift(
        BusinessIdeaStateUpdate::new()
            .business_idea_complete(true)
            .materialized_business_idea(summary),
    )
    .with(MessagesStateUpdate::new().message(tool(
        format!("Marked business idea as complete: {summary}"),
        call_id,
    )))
}

// --- LanguageDetectionMiddleware ----------------------------------------

/// `LanguageDetectionMiddleware`'s schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct LanguageDetectionState {
    /// The language of the user's last message (ISO 639-1).
    #[state(omit_from_input)]
    pub detected_language: Option<String>,
}

/// Detects the language of the user's last message.
pub struct LanguageDetection;

impl LanguageDetection {
    /// A tiny stand-in for a real detector: a few stop words per language.
    fn detect(text: &str) -> Option<&'static str> {
        const WORDS: [(&str, &[&str]); 3] = [
            ("en", &["the", "an", "have", "for", "to"]),
            ("es", &["el", "una", "tengo", "para", "de"]),
            ("fr", &["le", "une", "j'ai", "pour", "des"]),
        ];
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        WORDS
            .iter()
            .map(|(lang, stop)| {
                (
                    lang,
                    words.iter().filter(|w| stop.contains(&w.as_str())).count(),
                )
            })
            .filter(|(_, hits)| *hits > 0)
            .max_by_key(|(_, hits)| *hits)
            .map(|(lang, _)| *lang)
    }
}

impl<S: HasPart<LanguageDetectionState> + HasMessages> Middleware<S> for LanguageDetection {
    fn name(&self) -> &str {
        "language_detection"
    }

    fn before_agent(&self, state: &S) -> Result<Option<S::Update>, BoxError> {
        let Some(last) = state
            .messages()
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Human)
        else {
            return Ok(None);
        };
        let Some(lang) = Self::detect(&last.text()) else {
            return Ok(None);
        };
        let current = state
            .part::<LanguageDetectionState>()
            .detected_language
            .as_deref();
        Ok((current != Some(lang))
            .then(|| S::lift(LanguageDetectionStateUpdate::new().detected_language(lang))))
    }

    fn has_after_agent(&self) -> bool {
        false
    }
}

impl<S: HasPart<LanguageDetectionState> + HasMessages> Instructions<S> for LanguageDetection {
    fn label(&self) -> &'static str {
        "language_detection"
    }

    fn instructions(&self, state: &S) -> Option<String> {
        let lang = state
            .part::<LanguageDetectionState>()
            .detected_language
            .as_deref()?;
        Some(format!("Answer in the user's language ({lang})."))
    }
}

// --- SkillsMiddleware ----------------------------------------------------

/// What the model is told about one skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct SkillMetadata {
    /// The skill's name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Where its `SKILL.md` lives.
    pub path: String,
}

/// `SkillsMiddleware`'s schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct SkillsState {
    /// The skills found for this invocation: internal, not an input or an
    /// output of the graph.
    #[state(private)]
    pub skills_metadata: Vec<SkillMetadata>,
}

/// Lists the available skills before each invocation.
pub struct Skills {
    /// The skills directory's contents, as `(name, description)`.
    pub available: Vec<(&'static str, &'static str)>,
}

impl<S: HasPart<SkillsState>> Middleware<S> for Skills {
    fn name(&self) -> &str {
        "skills"
    }

    fn before_agent(&self, _state: &S) -> Result<Option<S::Update>, BoxError> {
        let skills = self
            .available
            .iter()
            .map(|(name, description)| SkillMetadata {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                path: format!("skills/{name}/SKILL.md"),
            });
        Ok(Some(S::lift(
            SkillsStateUpdate::new().skills_metadata(skills.collect::<Vec<_>>()),
        )))
    }

    fn has_after_agent(&self) -> bool {
        false
    }
}

impl<S: HasPart<SkillsState>> Instructions<S> for Skills {
    fn label(&self) -> &'static str {
        "skills"
    }

    fn instructions(&self, state: &S) -> Option<String> {
        let skills = &state.part::<SkillsState>().skills_metadata;
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        Some(format!("Skills: {}.", names.join(", ")))
    }
}

// --- FilesystemMiddleware ------------------------------------------------

/// A file in the agent's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct FileData {
    /// The file's lines.
    pub content: Vec<String>,
}

/// `FilesystemMiddleware`'s schema.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct FilesystemState {
    /// Path → file; a write merges its files into the others.
    #[reducer(merge)]
    pub files: BTreeMap<String, FileData>,
}

/// Gives the model a filesystem kept in the state.
pub struct Filesystem;

impl<S: HasPart<FilesystemState>> Middleware<S> for Filesystem {
    fn name(&self) -> &str {
        "filesystem"
    }

    fn has_before_agent(&self) -> bool {
        false
    }

    fn has_after_agent(&self) -> bool {
        false
    }
}

impl<S: HasPart<FilesystemState>> Instructions<S> for Filesystem {
    fn label(&self) -> &'static str {
        "filesystem"
    }

    fn instructions(&self, state: &S) -> Option<String> {
        let files = &state.part::<FilesystemState>().files;
        Some(format!(
            "Files: {}.",
            files.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    }
}

/// The `write_file` tool.
pub fn write_file<S>(path: &str, text: &str, call_id: &str) -> S::Update
where
    S: HasPart<FilesystemState> + HasMessages,
{
    let file = FileData {
        content: text.lines().map(str::to_owned).collect(),
    };
    S::lift(FilesystemStateUpdate::new().files([(path.to_owned(), file)]))
        .with(MessagesStateUpdate::new().message(tool(format!("Updated file {path}"), call_id)))
}

// --- TodoListMiddleware --------------------------------------------------

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// `TodoListMiddleware`'s schema (LangChain's `PlanningState`).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct PlanningState {
    /// The plan, replaced whole by `write_todos`.
    #[state(omit_from_input)]
    pub todos: Vec<Todo>,
}

/// Keeps a plan and shows it to the model.
pub struct TodoList;

impl<S: HasPart<PlanningState>> Middleware<S> for TodoList {
    fn name(&self) -> &str {
        "todo_list"
    }

    fn has_before_agent(&self) -> bool {
        false
    }

    fn has_after_agent(&self) -> bool {
        false
    }
}

impl<S: HasPart<PlanningState>> Instructions<S> for TodoList {
    fn label(&self) -> &'static str {
        "todo_list"
    }

    fn instructions(&self, state: &S) -> Option<String> {
        let todos = &state.part::<PlanningState>().todos;
        let open = todos
            .iter()
            .filter(|t| t.status != TodoStatus::Completed)
            .count();
        Some(format!(
            "Plan: {open} of {} todos open; keep it current with write_todos.",
            todos.len()
        ))
    }
}

/// The `write_todos` tool.
pub fn write_todos<S: HasPart<PlanningState> + HasMessages>(
    todos: Vec<Todo>,
    call_id: &str,
) -> S::Update {
    let note = format!("Updated todo list to {} items", todos.len());
    S::lift(PlanningStateUpdate::new().todos(todos))
        .with(MessagesStateUpdate::new().message(tool(note, call_id)))
}

// --- the agent -----------------------------------------------------------

/// The agent's state: the base conversation and the five middleware
/// schemas, merged as LangGraph merges `state_schema`s, with clashes
/// caught at compile time.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct DeepAgentState {
    /// The conversation (LangChain's base `AgentState`).
    #[state(flatten)]
    pub base: MessagesState,
    /// `BusinessIdeaTrackerMiddleware`.
    #[state(flatten)]
    pub business_idea: BusinessIdeaState,
    /// `LanguageDetectionMiddleware`.
    #[state(flatten)]
    pub language: LanguageDetectionState,
    /// `SkillsMiddleware`.
    #[state(flatten)]
    pub skills: SkillsState,
    /// `FilesystemMiddleware`.
    #[state(flatten)]
    pub filesystem: FilesystemState,
    /// `TodoListMiddleware`.
    #[state(flatten)]
    pub planning: PlanningState,
}

const IDEA: &str = "An app for students to plan their study time";

fn skills() -> Skills {
    Skills {
        available: vec![
            ("business-idea-evaluation", "Evaluate a business idea"),
            ("pitch-deck", "Draft a pitch deck"),
        ],
    }
}

/// A scripted model: the first turn calls three tools, the next answers.
/// It prints the system prompt the middleware inject, as a real model call
/// would send it.
fn model(
    state: &DeepAgentState,
    prompt: &[Box<dyn Instructions<DeepAgentState>>],
) -> DeepAgentStateUpdate {
    println!("  system prompt for this model call:");
    for m in prompt {
        if let Some(text) = m.instructions(state) {
            println!("    [{}] {text}", m.label());
        }
    }
    let answered_tools = state.messages().iter().any(|m| m.kind == MessageType::Tool);
    let reply = if answered_tools {
        ai("Your idea is recorded, planned and written to /idea.md.")
    } else {
        let call = |name: &str, id: &str| ToolCall::new(name, Default::default(), id);
        ai("")
            .with_tool_call(call("write_todos", "call-1"))
            .with_tool_call(call("write_file", "call-2"))
            .with_tool_call(call("mark_business_idea_complete", "call-3"))
    };
    DeepAgentState::lift(MessagesStateUpdate::new().message(reply))
}

/// The tools the model's last message called: they run together.
fn route_tools(state: &DeepAgentState) -> Next {
    let calls: Vec<String> = state
        .messages()
        .last()
        .map(|m| m.tool_calls.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    if calls.is_empty() {
        END.into()
    } else {
        calls.into()
    }
}

fn print_step(e: &StepEvent<'_, DeepAgentState>) {
    let nodes: Vec<&str> = e.writes.iter().map(|w| w.node.as_str()).collect();
    let written: Vec<String> = e
        .writes
        .iter()
        .filter(|w| !w.update.is_empty())
        .map(|w| w.update.to_json().to_string())
        .collect();
    println!(
        "step {} [{}]: {} -> {}{}",
        e.step,
        e.source,
        if nodes.is_empty() {
            "input".to_owned()
        } else {
            nodes.join(" + ")
        },
        if e.next.is_empty() {
            "END".to_owned()
        } else {
            e.next.join(", ")
        },
        if written.is_empty() {
            String::new()
        } else {
            format!("\n    writes {}", written.join("\n    writes "))
        }
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    type S = DeepAgentState;
    let prompt: Vec<Box<dyn Instructions<S>>> = vec![
        Box::new(BusinessIdeaTracker),
        Box::new(LanguageDetection),
        Box::new(skills()),
        Box::new(Filesystem),
        Box::new(TodoList),
    ];
    let prompt = Arc::new(prompt);
    let graph = StateGraph::<S>::new()
        .add_node("model", move |s: &S| model(s, &prompt))
        .add_node("write_todos", |_: &S| {
            let todos = vec![
                Todo {
                    content: "Interview five students".into(),
                    status: TodoStatus::InProgress,
                },
                Todo {
                    content: "Sketch the weekly planner".into(),
                    status: TodoStatus::Pending,
                },
            ];
            write_todos::<S>(todos, "call-1")
        })
        .add_node("write_file", |_: &S| {
            write_file::<S>("/idea.md", &format!("# Idea\n{IDEA}"), "call-2")
        })
        // Seed 003's tool returns a `Command`: an update, and where to go.
        .add_node("mark_business_idea_complete", |_: &S| {
            Command::update(mark_business_idea_complete::<S>(IDEA, "call-3")).and_goto("model")
        })
        .add_edge(START, "model")
        .add_conditional_edges("model", route_tools)
        .add_edge("write_todos", "model")
        .add_edge("write_file", "model")
        // Registration order is hook order.
        .add_middleware(BusinessIdeaTracker)
        .add_middleware(LanguageDetection)
        .add_middleware(skills())
        .add_middleware(Filesystem)
        .add_middleware(TodoList)
        .compile()?;

    // The invocation's input. Middleware fields are omitted from input: a
    // caller that tries to set one is told so, and nothing is applied.
    let err = <S as AgentState>::Input::from_json(
        json!({"messages": "hi", "business_idea_complete": true}),
    )
    .unwrap_err();
    println!("input rejected: {err}\n");
    let input = <S as AgentState>::Input::from_json(json!({
        "messages": [{"role": "user", "content": "I have a business idea: an app for students to plan their study time"}]
    }))?;

    let out = block_on(graph.run(Input::Update(input.into())).on_step(print_step))?;
    let state = out.state;
    assert!(state.business_idea.business_idea_complete);
    assert_eq!(state.language.detected_language.as_deref(), Some("en"));
    assert_eq!(state.messages().len(), 6);

    // The result, flat, as LangGraph returns it; the private skills list is
    // not in the output but stays in the checkpoint.
    assert!(state.to_output_json().get("skills_metadata").is_none());
    assert!(state.to_json().get("skills_metadata").is_some());
    let output = agent_state::serde_json::to_string_pretty(&state.output())?;
    println!("\nresult: {output}");
    println!("\n{}", S::reference_table());
    Ok(())
}
