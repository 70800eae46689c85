//! [`LlmToolSelector`]: a model call that picks the tools relevant to the
//! user's question before each main call (LangChain's
//! `LLMToolSelectorMiddleware`).

use std::fmt;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::agent::{
    AgentMiddleware, ChatModel, Hooks, ModelError, ModelFuture, ModelHandler, ModelRequest,
    ModelSettings, ToolChoice, ToolDefinition,
};
use crate::base::HasMessages;
use crate::message::{Message, MessageType};
use crate::pyrepr::repr as python_repr;
use crate::state::AgentState;

/// LangChain's default instructions of the selection call.
pub const DEFAULT_SELECTOR_PROMPT: &str =
    "Your goal is to select the most relevant tools for answering the user's query.";

/// The structured-output tool the selection model answers through.
const RESPONSE_TOOL: &str = "ToolSelectionResponse";

/// What to select when the selection model's answer stays malformed after
/// the retries: LangChain's `on_parsing_failure`.
#[derive(Clone)]
pub enum OnParsingFailure {
    /// Fail the model call with [`ToolSelectionError::Malformed`] (default).
    Error,
    /// No tools (but those always included).
    None,
    /// Every tool.
    All,
    /// These tools.
    Tools(Vec<String>),
    /// The tools this function picks from the malformed answer (the
    /// selection tool's arguments, if there were any).
    With(PickOnFailure),
}

/// Picks tools from a malformed selection answer (its arguments, if any).
pub type PickOnFailure = Arc<dyn Fn(Option<&Value>) -> Vec<String> + Send + Sync>;

impl fmt::Debug for OnParsingFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error => f.write_str("Error"),
            Self::None => f.write_str("None"),
            Self::All => f.write_str("All"),
            Self::Tools(names) => f.debug_tuple("Tools").field(names).finish(),
            Self::With(_) => f.write_str("With(..)"),
        }
    }
}

/// Why a tool selection failed; the model call fails with it (as
/// [`ModelError::Other`]), in LangChain's words.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolSelectionError {
    /// `always_include` names tools the request does not have.
    MissingAlwaysInclude {
        /// The names not found.
        missing: Vec<String>,
        /// The request's tools, sorted.
        available: Vec<String>,
    },
    /// The conversation has no human message to select for.
    NoUserMessage,
    /// The selection names tools that cannot be selected.
    InvalidTools {
        /// The names.
        names: Vec<String>,
    },
    /// The selection model's answer stayed malformed.
    Malformed {
        /// The retries made.
        retries: u32,
        /// The answer, as Python would print it.
        response: String,
    },
    /// Neither the middleware nor the request has a model to ask.
    NoModel,
}

fn py_list(names: &[String]) -> String {
    python_repr(&json!(names))
}

impl fmt::Display for ToolSelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingAlwaysInclude { missing, available } => write!(
                f,
                "Tools in always_include not found in request: {}. Available tools: {}",
                py_list(missing),
                py_list(available)
            ),
            Self::NoUserMessage => f.write_str("No user message found in request messages"),
            Self::InvalidTools { names } => {
                write!(f, "Model selected invalid tools: {}", py_list(names))
            }
            Self::Malformed { retries, response } => write!(
                f,
                "LLMToolSelectorMiddleware: selection model returned a malformed response after {retries} retries (expected a dict with a 'tools' list): {response}"
            ),
            Self::NoModel => f.write_str(
                "LLMToolSelectorMiddleware: no selection model, and the request names none",
            ),
        }
    }
}

impl std::error::Error for ToolSelectionError {}

/// Before each model call, asks a model which tools matter for the last
/// user message and sends the main call only those, as LangChain's
/// `LLMToolSelectorMiddleware`. The selection call gets the selection
/// prompt (plus, with `max_tools`, LangChain's ordering instruction) as
/// system prompt, the last human message, and one tool,
/// `ToolSelectionResponse`, whose `tools` argument lists the candidates
/// (name and description), with a tool call required: LangChain's
/// structured output by function calling. The first `max_tools` valid
/// names are kept; the main call gets them in the agent's order, then the
/// `always_include` tools. A reply without the call (or without a `tools`
/// list) is asked again `max_retries` times, then handled by
/// [`OnParsingFailure`]; a name that is no candidate fails the call.
///
/// ```
/// use agent_state::agent::middleware::LlmToolSelector;
/// use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
/// use agent_state::base::MessagesState;
/// use agent_state::checkpoint::block_on;
/// use agent_state::{ai, AgentState, ToolCall};
/// use std::sync::Arc;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
/// }
///
/// let tool = |name: &str| {
///     FnTool::sync(name, "A tool.", |_: serde_json::Value, _: &ToolRuntime<Chat>| "ok")
/// };
/// let args = serde_json::json!({"tools": ["weather", "email"]});
/// let pick = ToolCall::new("ToolSelectionResponse", args.as_object().unwrap().clone(), "s1");
/// // Selects with the agent's own model unless given another.
/// let model = Arc::new(ScriptedModel::new([ai("").with_tool_call(pick), ai("done")]).recording());
/// let agent = create_agent(Arc::clone(&model))
///     .tool(tool("weather"))
///     .tool(tool("email"))
///     .tool(tool("search"))
///     .middleware(LlmToolSelector::new().max_tools(1).always_include(["search"]))
///     .compile()?;
/// block_on(agent.run(input::<Chat>("weather in Paris?")))?;
/// let seen = model.seen();
/// assert_eq!(seen[0].tools, ["ToolSelectionResponse"]);
/// assert_eq!(seen[1].tools, ["weather", "search"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LlmToolSelector<S> {
    model: Option<Arc<dyn ChatModel<S>>>,
    system_prompt: String,
    max_tools: Option<usize>,
    always_include: Vec<String>,
    max_retries: u32,
    on_parsing_failure: OnParsingFailure,
}

impl<S> Default for LlmToolSelector<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> LlmToolSelector<S> {
    /// LangChain's defaults: the agent's model, its prompt, no limit, none
    /// always included, 1 retry, [`OnParsingFailure::Error`].
    pub fn new() -> Self {
        Self {
            model: None,
            system_prompt: DEFAULT_SELECTOR_PROMPT.to_owned(),
            max_tools: None,
            always_include: Vec::new(),
            max_retries: 1,
            on_parsing_failure: OnParsingFailure::Error,
        }
    }

    /// Selects with `model` (a small, cheap one) instead of the agent's.
    #[must_use]
    pub fn model(mut self, model: impl ChatModel<S> + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The selection call's instructions.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Keeps at most `n` selected tools (the first named).
    #[must_use]
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = Some(n);
        self
    }

    /// Tools always sent, never offered for selection.
    #[must_use]
    pub fn always_include<I: IntoIterator<Item = T>, T: Into<String>>(mut self, names: I) -> Self {
        self.always_include = names.into_iter().map(Into::into).collect();
        self
    }

    /// How often to ask again after a malformed answer (default 1).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// What to select when the answer stays malformed.
    #[must_use]
    pub fn on_parsing_failure(mut self, on_failure: OnParsingFailure) -> Self {
        self.on_parsing_failure = on_failure;
        self
    }
}

/// The candidates of one selection and what the selection call is sent.
struct Selection<'r> {
    candidates: Vec<&'r ToolDefinition>,
    prompt: String,
    question: Message,
}

impl<S: HasMessages + AgentState> LlmToolSelector<S> {
    /// The selection to make, or `None` when there is nothing to select.
    fn prepare<'r>(
        &self,
        request: &'r ModelRequest<S>,
    ) -> Result<Option<Selection<'r>>, ToolSelectionError> {
        let tools = request.tools();
        if tools.is_empty() {
            return Ok(None);
        }
        let missing: Vec<String> = self
            .always_include
            .iter()
            .filter(|n| !tools.iter().any(|t| &t.name == *n))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let mut available: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            available.sort();
            return Err(ToolSelectionError::MissingAlwaysInclude { missing, available });
        }
        let candidates: Vec<&ToolDefinition> = tools
            .iter()
            .filter(|t| !self.always_include.contains(&t.name))
            .collect();
        if candidates.is_empty() {
            return Ok(None);
        }
        let mut prompt = self.system_prompt.clone();
        if let Some(n) = self.max_tools {
            prompt.push_str(&format!("\nIMPORTANT: List the tool names in order of relevance, with the most relevant first. If you exceed the maximum number of tools, only the first {n} will be used."));
        }
        let question = request
            .messages()
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Human)
            .cloned()
            .ok_or(ToolSelectionError::NoUserMessage)?;
        Ok(Some(Selection {
            candidates,
            prompt,
            question,
        }))
    }

    /// Asks the selection model, again while the answer is malformed: the
    /// `tools` list, or the last answer's arguments when it stayed
    /// malformed.
    async fn ask(
        &self,
        request: &ModelRequest<S>,
        selection: &Selection<'_>,
    ) -> Result<Result<Vec<Value>, Option<Value>>, ModelError> {
        let model = self
            .model
            .as_ref()
            .or(request.model())
            .ok_or_else(|| ModelError::other(ToolSelectionError::NoModel))?;
        let ask = ModelRequest::new(Arc::clone(request.shared_state()))
            .with_system_prompt(selection.prompt.clone())
            .with_messages(vec![selection.question.clone()])
            .with_tools(vec![response_tool(&selection.candidates)])
            .with_settings(ModelSettings {
                tool_choice: Some(ToolChoice::Required),
                ..ModelSettings::default()
            });
        let mut answer = None;
        for _ in 0..=self.max_retries {
            let reply = model.invoke(&ask).await?;
            answer = reply
                .tool_calls
                .iter()
                .find(|c| c.name == RESPONSE_TOOL)
                .map(|c| Value::Object(c.args.clone()));
            if let Some(Value::Array(names)) = answer.as_ref().and_then(|a| a.get("tools")) {
                return Ok(Ok(names.clone()));
            }
        }
        Ok(Err(answer))
    }

    /// The names to fall back to once the answer stayed malformed.
    fn fallback(
        &self,
        answer: Option<Value>,
        candidates: &[&ToolDefinition],
    ) -> Result<Vec<Value>, ToolSelectionError> {
        let names = match &self.on_parsing_failure {
            OnParsingFailure::Error => {
                return Err(ToolSelectionError::Malformed {
                    retries: self.max_retries,
                    response: answer
                        .as_ref()
                        .map_or_else(|| "None".to_owned(), python_repr),
                })
            }
            OnParsingFailure::None => Vec::new(),
            OnParsingFailure::All => candidates.iter().map(|t| t.name.clone()).collect(),
            OnParsingFailure::Tools(names) => names.clone(),
            OnParsingFailure::With(f) => f(answer.as_ref()),
        };
        Ok(names.into_iter().map(Value::String).collect())
    }

    /// The tools the main call gets: the valid selected names (the first
    /// `limit`) in the request's order, then the always-included ones.
    fn chosen(
        &self,
        picked: &[Value],
        candidates: &[&ToolDefinition],
        all: &[ToolDefinition],
        limit: Option<usize>,
    ) -> Result<Vec<ToolDefinition>, ToolSelectionError> {
        let mut selected: Vec<&str> = Vec::new();
        let mut invalid: Vec<String> = Vec::new();
        for name in picked {
            let text = name.as_str();
            match text.filter(|n| candidates.iter().any(|t| t.name == *n)) {
                None => invalid.push(text.map_or_else(|| python_repr(name), str::to_owned)),
                Some(n) if !selected.contains(&n) && limit.is_none_or(|l| selected.len() < l) => {
                    selected.push(n);
                }
                Some(_) => {}
            }
        }
        if !invalid.is_empty() {
            return Err(ToolSelectionError::InvalidTools { names: invalid });
        }
        let mut tools: Vec<ToolDefinition> = candidates
            .iter()
            .filter(|t| selected.contains(&t.name.as_str()))
            .map(|t| (*t).clone())
            .collect();
        tools.extend(
            all.iter()
                .filter(|t| self.always_include.contains(&t.name))
                .cloned(),
        );
        Ok(tools)
    }

    /// The request with only the selected tools.
    async fn select(&self, request: ModelRequest<S>) -> Result<ModelRequest<S>, ModelError> {
        let Some(selection) = self.prepare(&request).map_err(ModelError::other)? else {
            return Ok(request);
        };
        let (picked, limit) = match self.ask(&request, &selection).await? {
            Ok(picked) => (picked, self.max_tools),
            Err(answer) => (
                self.fallback(answer, &selection.candidates)
                    .map_err(ModelError::other)?,
                None,
            ),
        };
        let tools = self
            .chosen(&picked, &selection.candidates, request.tools(), limit)
            .map_err(ModelError::other)?;
        Ok(request.clone().with_tools(tools))
    }
}

/// The selection tool: its `tools` argument lists the candidates, each
/// with its description, as LangChain's pydantic schema does.
fn response_tool(candidates: &[&ToolDefinition]) -> ToolDefinition {
    let choices: Vec<Value> = candidates
        .iter()
        .map(|t| json!({"const": t.name, "description": t.description, "type": "string"}))
        .collect();
    let items = match choices.as_slice() {
        [one] => one.clone(),
        _ => json!({"anyOf": choices}),
    };
    ToolDefinition {
        name: RESPONSE_TOOL.to_owned(),
        description: "Use to select relevant tools.".to_owned(),
        parameters: json!({
            "properties": {"tools": {
                "description": "Tools to use. Place the most relevant tools first.",
                "items": items,
                "title": "Tools",
                "type": "array",
            }},
            "required": ["tools"],
            "type": "object",
        }),
    }
}

impl<S> AgentMiddleware<S> for LlmToolSelector<S>
where
    S: HasMessages + AgentState + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        "LLMToolSelectorMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        Box::pin(async move {
            let request = self.select(request).await?;
            handler.call(request).await
        })
    }
}
