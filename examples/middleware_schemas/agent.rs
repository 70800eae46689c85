//! A deep agent that helps shape a business idea: five middleware, each
//! with its own state schema, tools and hooks, written once and generic
//! over any state that contains its part and the conversation, composed
//! into [`DeepAgentState`] with `#[state(flatten)]` and compiled by
//! [`agent`].
//!
//! Shared by the `middleware_schemas` example (which runs it) and the
//! debate server (which serves it as graph `agent`), so both run the same
//! agent.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_state::agent::middleware::{TodoList, TodoListState};
use agent_state::agent::{
    create_agent, AgentMiddleware, ChatModel, FnTool, HookOutput, HookResult, Hooks, ModelFuture,
    ModelHandler, ModelRequest, Tool, ToolOutput, ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
use agent_state::graph::{Command, Graph, NodeContext};
use agent_state::schemars::JsonSchema;
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::{json, Map, Value};
use agent_state::{ai, AgentState, HasPart, Message, MessageType, StateUpdate, ToolCall};

/// What every middleware here asks of the state: its part, the
/// conversation, and what the agent needs to run it on threads.
pub trait AgentOf<P: AgentState>: HasPart<P> + HasMessages + Send + Sync + 'static {}

impl<P: AgentState, S: HasPart<P> + HasMessages + Send + Sync + 'static> AgentOf<P> for S {}

/// The request with `section` added to its system prompt.
fn with_section<S>(request: ModelRequest<S>, section: &str) -> ModelRequest<S> {
    let prompt = match request.system_prompt() {
        Some(prompt) => format!("{prompt}\n\n{section}"),
        None => section.to_owned(),
    };
    request.with_system_prompt(prompt)
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

/// The arguments of `mark_business_idea_complete`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
pub struct MarkComplete {
    /// One paragraph summing up the idea.
    pub idea_summary: String,
}

/// Tells the model whether to evaluate ideas, from the state; its tool
/// marks one complete.
pub struct BusinessIdeaTracker;

impl<S: AgentOf<BusinessIdeaState>> AgentMiddleware<S> for BusinessIdeaTracker
where
    S::Update: Send,
{
    fn name(&self) -> &str {
        "business_idea_tracker"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        // The tracker's tool: a `Command` whose update sets the part and
        // carries the tool message answering the call.
        let tool = FnTool::sync(
            "mark_business_idea_complete",
            "Record that the user's business idea is complete, with its summary.",
            |args: MarkComplete, rt: &ToolRuntime<S>| {
                let summary = args.idea_summary;
                let answer = rt.answer(format!("Marked business idea as complete: {summary}"));
                let idea = BusinessIdeaStateUpdate::new()
                    .business_idea_complete(true)
                    .materialized_business_idea(summary);
                let update = S::lift(idea).with(MessagesStateUpdate::new().message(answer));
                ToolOutput::command(Command::update(update))
            },
        );
        vec![Arc::new(tool)]
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let idea: &BusinessIdeaState = request.state().part();
        let status = match &idea.materialized_business_idea {
            Some(summary) if idea.business_idea_complete => format!(
                "**Current Status**: A complete business idea has been identified:\n{summary}\n\n\
                 **Action**: Do NOT use the business-idea-evaluation skill. The idea is already materialized."
            ),
            _ => "**Current Status**: No complete business idea has been identified yet.\n\n\
                  **Action**: You may use the business-idea-evaluation skill to evaluate the user's input."
                .to_owned(),
        };
        handler.call(with_section(request, &status))
    }
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
        let hits = |stop: &[&str]| words.iter().filter(|w| stop.contains(&w.as_str())).count();
        WORDS
            .iter()
            .map(|(lang, stop)| (*lang, hits(stop)))
            .filter(|(_, hits)| *hits > 0)
            .max_by_key(|(_, hits)| *hits)
            .map(|(lang, _)| lang)
    }
}

impl<S: AgentOf<LanguageDetectionState>> AgentMiddleware<S> for LanguageDetection {
    fn name(&self) -> &str {
        "language_detection"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_AGENT | Hooks::WRAP_MODEL_CALL
    }

    fn before_agent(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let last_human = state
            .messages()
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Human);
        let Some(lang) = last_human.and_then(|m| Self::detect(&m.text())) else {
            return Ok(HookOutput::none());
        };
        let current = state
            .part::<LanguageDetectionState>()
            .detected_language
            .as_deref();
        if current == Some(lang) {
            return Ok(HookOutput::none());
        }
        let update = LanguageDetectionStateUpdate::new().detected_language(lang);
        Ok(HookOutput::update(S::lift(update)))
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let part: &LanguageDetectionState = request.state().part();
        match part.detected_language.clone() {
            Some(lang) => {
                let section = format!("Answer in the user's language ({lang}).");
                handler.call(with_section(request, &section))
            }
            None => handler.call(request),
        }
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

/// Lists the available skills before each invocation and shows them to
/// the model.
pub struct Skills {
    /// The skills directory's contents, as `(name, description)`.
    pub available: Vec<(&'static str, &'static str)>,
}

impl<S: AgentOf<SkillsState>> AgentMiddleware<S> for Skills {
    fn name(&self) -> &str {
        "skills"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_AGENT | Hooks::WRAP_MODEL_CALL
    }

    fn before_agent(&self, _state: &S, _: &NodeContext) -> HookResult<S> {
        let skills = self
            .available
            .iter()
            .map(|(name, description)| SkillMetadata {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                path: format!("skills/{name}/SKILL.md"),
            });
        let update = SkillsStateUpdate::new().skills_metadata(skills.collect::<Vec<_>>());
        Ok(HookOutput::update(S::lift(update)))
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let skills = &request.state().part::<SkillsState>().skills_metadata;
        let lines: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {} ({})", s.name, s.description, s.path))
            .collect();
        let section = format!("Skills:\n{}", lines.join("\n"));
        handler.call(with_section(request, &section))
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

/// The arguments of `write_file`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
pub struct WriteFile {
    /// Absolute path of the file.
    pub file_path: String,
    /// The whole new content.
    pub content: String,
}

/// Gives the model a filesystem kept in the state.
pub struct Filesystem;

impl<S: AgentOf<FilesystemState>> AgentMiddleware<S> for Filesystem
where
    S::Update: Send,
{
    fn name(&self) -> &str {
        "filesystem"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        let tool = FnTool::sync(
            "write_file",
            "Write a file of the agent's filesystem.",
            |args: WriteFile, _: &ToolRuntime<S>| {
                let file = FileData {
                    content: args.content.lines().map(str::to_owned).collect(),
                };
                let path = args.file_path;
                let update = S::lift(FilesystemStateUpdate::new().files([(path.clone(), file)]));
                ToolOutput::update(format!("Updated file {path}"), update)
            },
        );
        vec![Arc::new(tool)]
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let files = &request.state().part::<FilesystemState>().files;
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        let section = format!(
            "Files: {}.",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        );
        handler.call(with_section(request, &section))
    }
}

// --- TodoListMiddleware --------------------------------------------------

// LangChain's built-in: `agent_state::agent::middleware::TodoList`, whose
// part `TodoListState` (LangChain's `PlanningState`) holds the plan.

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
    /// `TodoListMiddleware` (the built-in).
    #[state(flatten)]
    pub planning: TodoListState,
}

/// The agent: the five middleware in the order the original agent
/// declares them, no loop code.
pub fn agent<M: ChatModel<DeepAgentState> + 'static>(
    model: M,
) -> Result<Graph<DeepAgentState>, Box<dyn std::error::Error>> {
    let skills = Skills {
        available: vec![
            ("business-idea-evaluation", "Evaluate a business idea"),
            ("pitch-deck", "Draft a pitch deck"),
        ],
    };
    Ok(create_agent(model)
        .system_prompt("You help founders shape their business ideas.")
        .middleware(BusinessIdeaTracker)
        .middleware(LanguageDetection)
        .middleware(skills)
        .middleware(Filesystem)
        .middleware(TodoList::new())
        .compile()?)
}

/// The model's first answer in the agent's walk-through: the three tools
/// called at once on `idea`, planning it, writing it to `/idea.md` and
/// marking it complete.
pub fn tool_calls(idea: &str) -> Message {
    let args =
        |value: Value| -> Map<String, Value> { value.as_object().cloned().unwrap_or_default() };
    let todos = json!({"todos": [
        {"content": "Interview five students", "status": "in_progress"},
        {"content": "Sketch the weekly planner", "status": "pending"},
    ]});
    let file = json!({"file_path": "/idea.md", "content": format!("# Idea\n{idea}")});
    ai("")
        .with_tool_call(ToolCall::new("write_todos", args(todos), "call-1"))
        .with_tool_call(ToolCall::new("write_file", args(file), "call-2"))
        .with_tool_call(ToolCall::new(
            "mark_business_idea_complete",
            args(json!({"idea_summary": idea})),
            "call-3",
        ))
}

/// What the model says once the tools of [`tool_calls`] have answered.
pub const RECORDED: &str = "Your idea is recorded, planned and written to /idea.md.";

/// What the model says when the idea was already marked complete.
pub const ALREADY_COMPLETE: &str = "Your idea is already complete: next, a pitch deck.";
