//! The agent: a model ↔ tools loop whose middleware own their state, as
//! LangChain v1's `create_agent`, compiled to a [`StateGraph`] so it
//! checkpoints, resumes and streams like any graph.
//!
//! * A [`ChatModel`] gets a [`ModelRequest`] (system prompt, messages, tool
//!   definitions with their JSON Schema, the state read-only, settings) and
//!   answers with an AI message (tool calls, usage); it may stream.
//! * A [`Tool`] declares typed arguments ([`FnTool`]: serde + `JsonSchema`)
//!   and answers with text, or a state update / [`Command`](crate::graph::Command) applied through
//!   the reducers ([`ToolOutput`]).
//! * An [`AgentMiddleware`] brings tools and hooks: `before_agent`,
//!   `before_model`, `wrap_model_call`, `after_model`, `wrap_tool_call`,
//!   `after_agent`, in LangChain's order, generic over any state with its
//!   part.
//! * A response format ([`AgentBuilder::response_format`]: a
//!   [`ToolStrategy`], [`ProviderStrategy`] or [`AutoStrategy`]) makes the
//!   final answer a typed value in the state's `structured_response`
//!   ([`StructuredResponse`]), as LangChain's `response_format`.
//!
//! The graph: `model` (one model call through the `wrap_model_call`
//! chain), `tools` (the pending tool calls of the last AI message, run
//! together and applied as one step), and one node per hook
//! (`<middleware>.before_model`, ...). Every node names where the loop goes
//! next, so a resumed thread goes on exactly where it stopped.
//!
//! ```
//! use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
//! use agent_state::base::{HasMessages, MessagesState};
//! use agent_state::checkpoint::block_on;
//! use agent_state::{ai, AgentState, ToolCall};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[state(flatten)]
//!     base: MessagesState,
//! }
//!
//! let call = ToolCall::new("add", serde_json::json!({"a": 2, "b": 3}).as_object().unwrap().clone(), "c1");
//! let model = ScriptedModel::new([ai("").with_tool_call(call), ai("2 + 3 = 5")]);
//! let add = FnTool::sync("add", "Adds two numbers", |args: Args, _: &ToolRuntime<Chat>| {
//!     (args.a + args.b).to_string()
//! });
//! # #[derive(serde::Deserialize, agent_state::json_schema::schemars::JsonSchema)]
//! # #[schemars(crate = "agent_state::json_schema::schemars")]
//! # struct Args { a: i64, b: i64 }
//! let agent = create_agent(model).system_prompt("You add.").tool(add).compile()?;
//! let out = block_on(agent.run(input::<Chat>("What is 2 + 3?")))?;
//! assert_eq!(out.state.messages()[2].text(), "5");
//! assert_eq!(out.state.messages().last().unwrap().text(), "2 + 3 = 5");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Writing a middleware
//!
//! A middleware declares its own state, a part the agent's state flattens,
//! and is written once, generic over any state with that part. This one
//! brings a `take_note` tool and tells the model what it noted so far:
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_state::agent::{
//!     create_agent, input, AgentMiddleware, FnTool, Hooks, ModelFuture, ModelHandler, ModelRequest,
//!     ScriptedModel, Tool, ToolOutput, ToolRuntime,
//! };
//! use agent_state::base::{HasMessages, MessagesState};
//! use agent_state::checkpoint::{block_on, MemoryCheckpointer};
//! use agent_state::json_schema::schemars::JsonSchema;
//! use agent_state::serde::Deserialize;
//! use agent_state::serde_json::json;
//! use agent_state::{ai, AgentState, HasPart, ToolCall};
//!
//! /// A middleware's own state: the notes its tool takes.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct NotesState {
//!     #[reducer(append)]
//!     #[state(omit_from_input)]
//!     pub notes: Vec<String>,
//! }
//!
//! /// The tool's arguments: serde reads them, their JSON Schema goes to the model.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "agent_state::serde")]
//! #[schemars(crate = "agent_state::json_schema::schemars")]
//! pub struct TakeNote {
//!     /// What to remember.
//!     pub text: String,
//! }
//!
//! /// Brings a `take_note` tool and tells the model what it noted so far.
//! pub struct Notes;
//!
//! impl<S: HasPart<NotesState> + HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Notes
//! where
//!     S::Update: Send,
//! {
//!     fn name(&self) -> &str {
//!         "notes"
//!     }
//!
//!     fn hooks(&self) -> Hooks {
//!         Hooks::WRAP_MODEL_CALL
//!     }
//!
//!     fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
//!         let take_note = FnTool::sync("take_note", "Remember something", |a: TakeNote, _: &ToolRuntime<S>| {
//!             // An answer for the model, and an update applied through the reducers.
//!             ToolOutput::update("noted", S::lift(NotesStateUpdate::new().note(a.text)))
//!         });
//!         vec![Arc::new(take_note)]
//!     }
//!
//!     fn wrap_model_call<'a>(
//!         &'a self,
//!         request: ModelRequest<S>,
//!         handler: ModelHandler<'a, S>,
//!     ) -> ModelFuture<'a> {
//!         let notes = request.state().part::<NotesState>().notes.join("; ");
//!         let prompt = format!("{}\nNotes: {notes}", request.system_prompt().unwrap_or_default());
//!         handler.call(request.with_system_prompt(prompt)) // the first middleware is outermost
//!     }
//! }
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Assistant {
//!     #[state(flatten)]
//!     pub base: MessagesState,
//!     #[state(flatten)]
//!     pub notes: NotesState,
//! }
//!
//! let args = json!({"text": "the user likes tea"}).as_object().cloned().unwrap();
//! let model = Arc::new(
//!     ScriptedModel::new([
//!         ai("").with_tool_call(ToolCall::new("take_note", args, "call-1")),
//!         ai("Noted: you like tea."),
//!         ai("Tea, then."),
//!     ])
//!     .recording(),
//! );
//! let agent = create_agent(Arc::clone(&model))
//!     .system_prompt("You are a helpful assistant.")
//!     .middleware(Notes)
//!     .compile()?;
//!
//! let saver = MemoryCheckpointer::new();
//! let out = block_on(agent.run(input::<Assistant>("I like tea")).on_thread(&saver, "user-1"))?;
//! assert_eq!(out.state.notes.notes, ["the user likes tea"]);
//! assert_eq!(out.state.messages().len(), 4); // human, AI calling the tool, tool, AI
//!
//! // The next invocation on the thread: the middleware tells the model.
//! block_on(agent.run(input::<Assistant>("What should I drink?")).on_thread(&saver, "user-1"))?;
//! let prompt = model.seen()[2].system_prompt.clone().unwrap();
//! assert!(prompt.ends_with("Notes: the user likes tea"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The parts of an agent
//!
//! * **Model**: `ChatModel<S>` takes a `ModelRequest` (system prompt,
//!   messages, tool definitions with their JSON Schema, the state read-only,
//!   settings) and returns an AI message with its tool calls and usage;
//!   `stream` yields chunks (default: the whole answer as one), which
//!   `.on_token(|chunk| ..)` receives as they arrive. `ScriptedModel` and
//!   `FnModel` are models without a provider.
//! * **OpenAI-compatible provider** (`openai` feature): `openai::OpenAiChat`
//!   (`from_env()`: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL`) talks
//!   to OpenAI, Groq, Ollama, vLLM and other chat-completions endpoints, tool
//!   calls and streaming included; a 429 is retried (honouring `Retry-After`)
//!   then reported as `ModelError::RateLimited`. It needs a Tokio runtime.
//! * **Anthropic** (`anthropic` feature): `anthropic::AnthropicChat`
//!   (`from_env()`: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`,
//!   `ANTHROPIC_MODEL`) speaks the Messages API natively: the system prompt
//!   as `system`, tool use and tool results as content blocks, SSE streaming,
//!   usage with cached tokens as LangChain's `ChatAnthropic` reports it;
//!   408/409/429/5xx (529 "overloaded") are retried, honouring
//!   `retry-after`. It needs a Tokio runtime.
//! * **MCP tools** (`mcp` feature, on the official SDK `rmcp`):
//!   `mcp::McpTools::connect(McpServer::stdio("cmd").args(..))` or
//!   `McpServer::http(url).header(..)` lists a server's tools and offers them
//!   to the model with their own schemas; a result is answered as LangChain's
//!   MCP adapters answer it, an `isError` result or a failed call (deadline,
//!   dead server) as an error the model sees. `.with_call_auth(|state, tool|
//!   ..)` sends each call's token from the state (an `Authorization: Bearer`
//!   header over HTTP, `_meta` over stdio). It needs a Tokio runtime.
//! * **Tools**: `FnTool::new` (async) / `FnTool::sync` over an argument type
//!   with `Deserialize` + `JsonSchema`. A tool returns text (a `ToolMessage`
//!   with the call's id), `ToolOutput::update(answer, update)`, or
//!   `ToolOutput::command(Command)` whose update carries its own
//!   `runtime.answer(..)`, as LangChain's tools return a `Command`. The tool
//!   calls of one model response run concurrently and their writes apply as
//!   one step with `apply_all`'s rules (two tools writing one plain field fail
//!   the step, naming it). An unknown tool, arguments that do not parse (the
//!   error names the field), a failing or panicking tool, or an update with no
//!   answer become an error `ToolMessage` the model sees; the thread goes on.
//! * **Middleware** (`AgentMiddleware<S>`, written generic over
//!   `S: HasPart<P>`): `before_agent`, `before_model`, `after_model`,
//!   `after_agent` (each its own step, may `jump` to model, tools or end),
//!   `wrap_model_call` and `wrap_tool_call` (change the request, call the
//!   handler zero, one or several times, change the response), and `tools()`.
//!   Order as LangChain v1: `before_*` first to last, `after_*` last to
//!   first, `wrap_*` with the first middleware outermost. `hooks()` lists
//!   the hooks a middleware implements; a hook left out is never called and
//!   costs nothing (the default, all six, is always right but makes a step of
//!   every no-op `before_*`/`after_*` hook).
//! * **Hooks and tools get the node's context** (`&NodeContext`, LangChain's
//!   `runtime`): a hook, a `wrap_*` (`request.node()`) or a tool
//!   (`runtime.interrupt(..)`) may pause the run for a person with a typed
//!   resume value, keep work `once`, write to the run's stream and read the
//!   run's context. A hook that awaits (a model call) overrides the
//!   `*_async` variant (`before_model_async`, LangChain's `abefore_model`).
//!   Tool calls of one step pause side by side, each resumed by its
//!   interrupt's id.
//! * **LangChain's built-in middleware** (`middleware`), each checked against
//!   langchain 1.4.7's own output for the same scripted run:
//!   `HumanInTheLoop` (per-tool `interrupt_on`; approve, edit, reject,
//!   respond), `Summarization`, `TodoList` (`write_todos`), `ModelCallLimit`,
//!   `ToolCallLimit`, `ModelFallback`, `ModelRetry`, `ToolRetry`,
//!   `LlmToolSelector`, `ContextEditing` and `Pii`. A middleware with state
//!   brings its part (`TodoListState`, `ModelCallLimitState`, ...) to flatten
//!   into yours. The repository's `agent_approval` example approves (or
//!   rejects, or edits) a tool call from a second process, on one SQLite
//!   file.
//! * **Structured output**: `.response_format(ToolStrategy::<Weather>::new())`
//!   (or `ProviderStrategy`, the provider's JSON-schema mode, or
//!   `AutoStrategy`) ends the loop with the answer as a typed value in the
//!   state's `StructuredResponse<Weather>` part (`structured_response` in
//!   JSON; not settable from the input); a value that does not parse is sent
//!   back to the model with LangChain's retry message.
//! * Node names are LangChain's (`model`, `tools`, `<name>.before_model`, ...);
//!   every node records where the loop goes next, so a thread stopped
//!   anywhere resumes with `Input::Resume` without re-running a finished tool
//!   call.

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
mod client_tools;
mod graph;
mod hooks;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod middleware;
mod model;
mod nodes;
#[cfg(feature = "openai")]
pub mod openai;
mod repair;
mod scripted;
mod structured;
mod tool;
mod tools_node;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

// The message model's own items, shown as re-exports (not inlined) so the
// docs have one `ToolCallChunk`, the one `MessageChunk` streams carry.
#[doc(no_inline)]
pub use crate::message::{invalid_tool_call, parse_args, ToolCallChunk};
pub use client_tools::ClientTools;
pub use hooks::{
    AgentMiddleware, HookFuture, HookOutput, HookResult, Hooks, Jump, ModelHandler,
    ToolCallRequest, ToolHandler,
};
pub use model::{
    ChatChunk, ChatModel, ModelError, ModelRequest, ModelResponse, ModelSettings, ResponseSchema,
    ToolChoice, ToolDefinition, Usage,
};
pub use nodes::TokenSink;
pub use structured::{
    AutoStrategy, ErrorHandler, HandleErrors, IntoResponseFormat, ProviderStrategy, ResponseFormat,
    ResponseValue, StructuredErrorKind, StructuredOutputError, StructuredResponse,
    StructuredResponseUpdate, ToolStrategy,
};

/// A boxed, sendable future (futures' `BoxFuture`): what the `wrap_*` hooks
/// and models return, re-exported so middleware need no futures dependency.
pub use futures::future::BoxFuture;

/// What a model call through the `wrap_model_call` chain returns.
pub type ModelFuture<'a> = BoxFuture<'a, Result<ModelResponse, ModelError>>;
pub use scripted::{FnModel, ScriptedModel, SeenRequest};
pub use tool::{
    schema_of, FnTool, IntoToolResult, Tool, ToolError, ToolFuture, ToolOutput, ToolRuntime,
    ToolSchema,
};

use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::{Graph, GraphError, Input, StateGraph, START};
use crate::message::Message;
use crate::HasPart;
use graph::{add_loop_nodes, hook_name, Chains};
use nodes::{AgentLoop, HookKind, ModelCore, ToolCore};

/// A run's input of one message (a bare string is a human message):
/// `graph.run(input::<MyState>("hi"))`.
pub fn input<S: HasMessages>(message: impl Into<Message>) -> Input<S> {
    Input::Update(S::lift(MessagesStateUpdate::new().message(message.into())))
}

/// Starts building an agent around `model` (LangChain's `create_agent`).
pub fn create_agent<S, M>(model: M) -> AgentBuilder<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send + Sync,
    M: ChatModel<S> + 'static,
{
    AgentBuilder::new(model)
}

/// Why an agent did not build.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentError {
    /// Two middleware share a name (LangChain requires unique names too).
    DuplicateMiddleware {
        /// The name.
        name: String,
    },
    /// Two tools (the agent's, its middleware's, or the structured output
    /// tool of a [`ToolStrategy`]) share a name: the model could not tell
    /// them apart.
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The graph did not compile.
    Graph(GraphError),
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateMiddleware { name } => {
                write!(f, "middleware `{name}` is added twice; middleware names must be unique")
            }
            Self::DuplicateTool { name } => write!(
                f,
                "two tools are named `{name}` (the agent's and its middleware's tools share one namespace)"
            ),
            Self::Graph(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Graph(error) => Some(error),
            _ => None,
        }
    }
}

impl From<GraphError> for AgentError {
    fn from(error: GraphError) -> Self {
        Self::Graph(error)
    }
}

/// An agent being built: a model, tools, middleware, a system prompt.
pub struct AgentBuilder<S: crate::AgentState> {
    model: Arc<dyn ChatModel<S>>,
    system_prompt: Option<String>,
    tools: Vec<Arc<dyn Tool<S>>>,
    middleware: Vec<Arc<dyn AgentMiddleware<S>>>,
    settings: ModelSettings,
    sink: Option<TokenSink>,
    recursion_limit: usize,
    structured: Option<Arc<dyn structured::Binding<S>>>,
    store: Option<Arc<dyn crate::store::Store>>,
}

impl<S> AgentBuilder<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send + Sync,
{
    /// An agent around `model`, with no tools and no middleware yet.
    pub fn new<M: ChatModel<S> + 'static>(model: M) -> Self {
        Self {
            model: Arc::new(model),
            system_prompt: None,
            tools: Vec::new(),
            middleware: Vec::new(),
            settings: ModelSettings::default(),
            sink: None,
            recursion_limit: 10_000,
            structured: None,
            store: None,
        }
    }

    /// The system prompt of every model call (middleware may change it).
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool<T: Tool<S> + 'static>(mut self, tool: T) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    #[must_use]
    pub fn shared_tool(mut self, tool: Arc<dyn Tool<S>>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a middleware, after those added before it: its `before_*` hooks
    /// run after theirs, its `after_*` hooks before theirs, its `wrap_*`
    /// hooks inside theirs.
    #[must_use]
    pub fn middleware<M: AgentMiddleware<S> + 'static>(mut self, middleware: M) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// The model settings of every call (middleware may change them).
    #[must_use]
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Streams every model call: `sink` gets each chunk as it arrives,
    /// through [`ChatModel::stream`], in every run of the agent, then the
    /// empty chunk marked [`last`](crate::MessageChunk::last) that closes
    /// the message. A run
    /// streamed in the `messages` mode
    /// ([`Run::stream`](crate::graph::Run::stream)) gets them too, with the
    /// node and step, without a sink.
    #[must_use]
    pub fn on_token(mut self, sink: impl Fn(&ChatChunk) + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// The agent's final answer as a typed value (LangChain's
    /// `response_format`), written to the state's `structured_response`:
    /// the state flattens a [`StructuredResponse<T>`] for the strategy's
    /// `T`, which the compiler checks. A [`ToolStrategy`] ends the loop when
    /// the model calls the type's tool with arguments that parse, and
    /// retries (an error tool message, back to the model) when they do not;
    /// a [`ProviderStrategy`] reads the model's final JSON text; an
    /// [`AutoStrategy`] takes the provider's when the model
    /// [supports it](ChatModel::supports_structured_output). Set again, the
    /// last one counts.
    ///
    /// ```
    /// use agent_state::agent::{create_agent, input, ScriptedModel, StructuredResponse, ToolStrategy};
    /// use agent_state::base::MessagesState;
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::{ai, AgentState, ToolCall};
    /// # use agent_state::json_schema::schemars;
    ///
    /// /// The weather in a city.
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, Clone, PartialEq)]
    /// # #[schemars(crate = "agent_state::json_schema::schemars")]
    /// struct Weather {
    ///     city: String,
    ///     celsius: f64,
    /// }
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Chat {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    ///     #[state(flatten)]
    ///     answer: StructuredResponse<Weather>,
    /// }
    ///
    /// let args = serde_json::json!({"city": "Paris", "celsius": 21.5});
    /// let call = ToolCall::new("Weather", args.as_object().unwrap().clone(), "c1");
    /// let model = ScriptedModel::new([ai("").with_tool_call(call)]);
    /// let agent = create_agent(model)
    ///     .response_format(ToolStrategy::<Weather>::new())
    ///     .compile()?;
    /// let out = block_on(agent.run(input::<Chat>("Weather in Paris?")))?;
    /// let weather = out.state.answer.structured_response.as_ref().unwrap();
    /// assert_eq!(weather.celsius, 21.5);
    /// assert_eq!(out.state.to_output_json()["structured_response"]["city"], "Paris");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn response_format<F: IntoResponseFormat>(mut self, format: F) -> Self
    where
        S: HasPart<StructuredResponse<F::Value>>,
    {
        let native = self.model.supports_structured_output();
        let bound = structured::Bound::new(format.into_response_format(), native);
        self.structured = Some(Arc::new(bound));
        self
    }

    /// How many supersteps one run may take (default 10,000, as
    /// `create_agent`'s).
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// The store of the agent's runs (LangChain's `create_agent(store=..)`):
    /// memory across threads, read by tools ([`ToolRuntime::store`]),
    /// middleware hooks (`ctx.store()`, [`NodeContext::store`](crate::graph::NodeContext::store)),
    /// `wrap_model_call` ([`ModelRequest::store`]) and `wrap_tool_call`
    /// ([`ToolCallRequest::store`]). A run given its own
    /// ([`Run::store`](crate::graph::Run::store)) uses that one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::agent::{create_agent, ScriptedModel};
    /// use agent_state::base::MessagesState;
    /// use agent_state::store::MemoryStore;
    /// use agent_state::{ai, AgentState};
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Chat {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    /// }
    ///
    /// let agent = create_agent::<Chat, _>(ScriptedModel::new([ai("hi")]))
    ///     .store(Arc::new(MemoryStore::new()))
    ///     .compile()?;
    /// assert!(agent.store().is_some());
    /// # Ok::<(), agent_state::agent::AgentError>(())
    /// ```
    #[must_use]
    pub fn store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Builds the agent's graph, to compile, or to look at.
    pub fn into_state_graph(self) -> Result<StateGraph<S>, AgentError> {
        let mut names = HashSet::new();
        if let Some(m) = self.middleware.iter().find(|m| !names.insert(m.name())) {
            return Err(AgentError::DuplicateMiddleware {
                name: m.name().to_owned(),
            });
        }
        let tools = self.collect_tools()?;
        let chains = Chains::of(&self.middleware);
        // LangChain makes the tools node for a `wrap_tool_call` too: it may
        // answer calls of tools the agent does not have.
        let places = chains.places(!tools.is_empty() || !chains.wrap_tool.is_empty());
        let return_direct = tools.iter().any(|t| t.return_direct());
        let entry = chains.before_agent.first().map_or_else(
            || places.loop_entry.clone(),
            |m| hook_name(m, HookKind::BeforeAgent),
        );
        let definitions: Vec<ToolDefinition> =
            tools.iter().map(|t| t.definition().clone()).collect();
        let lp = Arc::new(AgentLoop {
            model: ModelCore {
                model: self.model,
                sink: self.sink,
                structured: self.structured.clone(),
            },
            tools: ToolCore {
                names: definitions.iter().map(|d| d.name.clone()).collect(),
                by_name: tools
                    .into_iter()
                    .map(|t| (t.definition().name.clone(), t))
                    .collect(),
            },
            definitions: Arc::from(definitions),
            system_prompt: self.system_prompt.map(Arc::from),
            settings: self.settings,
            wrap_model: chains.wrap_model.clone(),
            wrap_tool: chains.wrap_tool.clone(),
            places,
            structured: self.structured,
        });
        let mut graph = StateGraph::new()
            .with_recursion_limit(self.recursion_limit)
            .add_edge(START, entry);
        if let Some(store) = self.store {
            graph = graph.with_store(store);
        }
        let graph = add_loop_nodes(graph, &lp, return_direct);
        Ok(chains.add_hooks(graph, &self.middleware, &lp))
    }

    /// Builds and compiles the agent: run it as any graph
    /// (`agent.run(input("hi")).on_thread(&saver, "t-1").await`).
    pub fn compile(self) -> Result<Graph<S>, AgentError> {
        Ok(self.into_state_graph()?.compile()?)
    }

    /// The tools in LangChain's order: the middleware's (in the order the
    /// middleware were added), then the agent's own. The model is offered
    /// them in this order and an unknown-tool answer lists them in it. A
    /// tool strategy's tool comes last (added per call) and may share no
    /// name with them.
    fn collect_tools(&self) -> Result<Vec<Arc<dyn Tool<S>>>, AgentError> {
        let mut tools: Vec<Arc<dyn Tool<S>>> =
            self.middleware.iter().flat_map(|m| m.tools()).collect();
        tools.extend(self.tools.iter().cloned());
        let mut seen: HashMap<&str, ()> = HashMap::new();
        let structured = self.structured.as_ref().and_then(|b| b.tool());
        let names = tools
            .iter()
            .map(|t| t.definition())
            .chain(structured)
            .map(|d| &d.name);
        for name in names {
            if seen.insert(name, ()).is_some() {
                return Err(AgentError::DuplicateTool { name: name.clone() });
            }
        }
        Ok(tools)
    }
}

/// The first 200 characters of a provider's body, for an error message:
/// enough to name what went wrong, never a whole page.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn excerpt(body: &str) -> String {
    let mut text: String = body.chars().take(200).collect();
    if text.len() < body.len() {
        text.push('…');
    }
    text
}
