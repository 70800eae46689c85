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
//! `main` runs one invocation as seed 003 describes it: the input, the
//! `before_agent` hooks in registration order (each seeing the updates of
//! those before it), the system prompt the middleware inject, a model turn
//! whose three tool calls run as one step, and the result, flat, as
//! LangGraph returns it.
#![deny(missing_docs)]

use std::collections::BTreeMap;

use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::json;
use agent_state::{ai, tool, AgentState, HasPart, MessageType, StateError, StateUpdate, ToolCall};

/// What a middleware can do, reduced to the hooks this example needs
/// (LangChain v1's `before_agent` and the system-prompt half of
/// `wrap_model_call`). A middleware implements it for every state `S` that
/// has its part.
pub trait Middleware<S: AgentState> {
    /// The middleware's name.
    fn name(&self) -> &'static str;

    /// Runs once per invocation, before the model; may return an update.
    fn before_agent(&self, _state: &S) -> Option<S::Update> {
        None
    }

    /// What it adds to the system prompt, from the state it reads.
    fn instructions(&self, _state: &S) -> Option<String> {
        None
    }
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
    fn name(&self) -> &'static str {
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
    fn name(&self) -> &'static str {
        "language_detection"
    }

    fn before_agent(&self, state: &S) -> Option<S::Update> {
        let last = state
            .messages()
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Human)?;
        let lang = Self::detect(&last.text())?;
        let current = state
            .part::<LanguageDetectionState>()
            .detected_language
            .as_deref();
        (current != Some(lang))
            .then(|| S::lift(LanguageDetectionStateUpdate::new().detected_language(lang)))
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
    fn name(&self) -> &'static str {
        "skills"
    }

    fn before_agent(&self, _state: &S) -> Option<S::Update> {
        let skills = self
            .available
            .iter()
            .map(|(name, description)| SkillMetadata {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                path: format!("skills/{name}/SKILL.md"),
            });
        Some(S::lift(
            SkillsStateUpdate::new().skills_metadata(skills.collect::<Vec<_>>()),
        ))
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
    fn name(&self) -> &'static str {
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
    fn name(&self) -> &'static str {
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

fn main() -> Result<(), StateError> {
    type S = DeepAgentState;
    let middleware: Vec<Box<dyn Middleware<S>>> = vec![
        Box::new(BusinessIdeaTracker),
        Box::new(LanguageDetection),
        Box::new(Skills {
            available: vec![
                ("business-idea-evaluation", "Evaluate a business idea"),
                ("pitch-deck", "Draft a pitch deck"),
            ],
        }),
        Box::new(Filesystem),
        Box::new(TodoList),
    ];

    // The invocation's input. Middleware fields are omitted from input: a
    // caller that tries to set one is told so, and nothing is applied.
    let mut state = S::default();
    let err = state
        .apply_input_json(json!({"messages": "hi", "business_idea_complete": true}))
        .unwrap_err();
    println!("input rejected: {err}");
    state.apply_input_json(json!({
        "messages": [{"role": "user", "content": "I have a business idea: an app for students to plan their study time"}]
    }))?;

    // `before_agent`, in registration order, each seeing the updates of
    // those before it.
    for m in &middleware {
        if let Some(update) = m.before_agent(&state) {
            println!("before_agent {}: {}", m.name(), update.to_json());
            state.apply(update)?;
        }
    }

    // What the middleware inject into the system prompt.
    println!("\nsystem prompt:");
    for m in &middleware {
        if let Some(text) = m.instructions(&state) {
            println!("  [{}] {text}", m.name());
        }
    }

    // A model turn calling three tools; the tools run in parallel and their
    // updates apply as one step: each writes its own part, and their tool
    // messages fold into the conversation in order.
    let idea = "An app for students to plan their study time";
    let call = |name: &str, id: &str| ToolCall::new(name, Default::default(), id);
    state.apply(S::lift(
        MessagesStateUpdate::new().message(
            ai("")
                .with_tool_call(call("write_todos", "call-1"))
                .with_tool_call(call("write_file", "call-2"))
                .with_tool_call(call("mark_business_idea_complete", "call-3")),
        ),
    ))?;
    state.apply_all([
        write_todos::<S>(
            vec![
                Todo {
                    content: "Interview five students".into(),
                    status: TodoStatus::InProgress,
                },
                Todo {
                    content: "Sketch the weekly planner".into(),
                    status: TodoStatus::Pending,
                },
            ],
            "call-1",
        ),
        write_file::<S>("/idea.md", &format!("# Idea\n{idea}"), "call-2"),
        mark_business_idea_complete::<S>(idea, "call-3"),
    ])?;
    assert!(state.business_idea.business_idea_complete);
    assert_eq!(state.messages().len(), 5);

    println!("\nsystem prompt after the tools:");
    for m in &middleware {
        if let Some(text) = m.instructions(&state) {
            println!("  [{}] {text}", m.name());
        }
    }

    // The result, flat, as LangGraph returns it; the private skills list is
    // not in the output but stays in the checkpoint.
    assert!(state.to_output_json().get("skills_metadata").is_none());
    assert!(state.to_json().get("skills_metadata").is_some());
    let output = agent_state::serde_json::to_string_pretty(&state.output()).expect("JSON");
    println!("\nresult: {output}");
    println!("\n{}", S::reference_table());
    Ok(())
}
