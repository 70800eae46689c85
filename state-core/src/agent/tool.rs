//! Tools: typed arguments with a JSON Schema, and what a tool returns (an
//! answer, or a state update that carries one).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::model::ToolDefinition;
use crate::base::HasMessages;
use crate::graph::{BoxError, Command, Interrupted, NodeContext};
use crate::message::{Content, Message, MessageType, ToolStatus};
use crate::messages::MessageOp;
use crate::state::AgentState;
use crate::write::FieldWrite;

/// What a tool gets besides its arguments: LangChain's `ToolRuntime` (the
/// state, read-only, the id of the call it answers, the run's context and
/// store, and the tools node's [`NodeContext`] to pause the run or stream
/// from).
pub struct ToolRuntime<S> {
    state: Arc<S>,
    call_id: String,
    tool: String,
    node: NodeContext,
}

impl<S> Clone for ToolRuntime<S> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            node: self.node.clone(),
        }
    }
}

impl<S> ToolRuntime<S> {
    pub(crate) fn new(state: Arc<S>, call_id: String, tool: String, node: NodeContext) -> Self {
        Self {
            state,
            call_id,
            tool,
            node,
        }
    }

    /// The run's context of type `T` (`Run::context`, LangChain's
    /// `ToolRuntime.context`): who the call is made for, a client; `None`
    /// when absent or of another type.
    pub fn context<T: std::any::Any>(&self) -> Option<&T> {
        self.node.context()
    }

    /// The run's store (LangChain's `ToolRuntime.store`, LangGraph's
    /// `InjectedStore`): the run's, else its graph's (the agent's
    /// [`store`](super::AgentBuilder::store)); `None` when neither has
    /// one. Memories a tool saves here outlive the thread.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
    /// use agent_state::base::MessagesState;
    /// use agent_state::checkpoint::block_on;
    /// use agent_state::store::{MemoryStore, Store, StoreExt};
    /// use agent_state::{ai, AgentState, ToolCall};
    /// # use agent_state::json_schema::schemars;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Chat {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    /// }
    ///
    /// /// A fact to remember.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # #[schemars(crate = "agent_state::json_schema::schemars")]
    /// struct Fact { text: String }
    ///
    /// let remember = FnTool::new("remember", "Saves a fact", |fact: Fact, rt: ToolRuntime<Chat>| async move {
    ///     let store = rt.store().ok_or("remember needs a store")?;
    ///     store.put(["facts"], rt.call_id(), serde_json::json!({ "text": fact.text })).await?;
    ///     Ok::<_, Box<dyn std::error::Error + Send + Sync>>("saved")
    /// });
    /// let args = serde_json::json!({ "text": "likes tea" });
    /// let call = ToolCall::new("remember", args.as_object().unwrap().clone(), "c1");
    /// let model = ScriptedModel::new([ai("").with_tool_call(call), ai("noted")]);
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// let agent = create_agent(model).tool(remember).store(Arc::clone(&store)).compile()?;
    /// block_on(agent.run(input::<Chat>("I like tea")))?;
    /// let fact = block_on(store.get(["facts"], "c1"))?.expect("saved");
    /// assert_eq!(fact.value["text"], "likes tea");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.node.store()
    }

    /// The tools node's context: the run's thread and step, its stream
    /// ([`writer`](NodeContext::writer), LangChain's
    /// `runtime.stream_writer`), work kept [`once`](NodeContext::once).
    pub fn node(&self) -> &NodeContext {
        &self.node
    }

    /// Pauses the run for a value from outside, as LangGraph's
    /// `interrupt()` called in a tool: the first time returns
    /// [`Interrupted`] (return it with `?`); when the run is resumed the
    /// tool is called again from its start and this returns the value read
    /// as `R` (see [`NodeContext::interrupt`]). Each tool call's interrupts
    /// are a sequence of their own, their ids naming the call: two calls of
    /// one AI message pause side by side, and each is answered by its id
    /// (`Resume::new().answer(id, value)`), as LangGraph runs each call as
    /// a task of its own.
    pub fn interrupt<R: serde::de::DeserializeOwned>(
        &self,
        payload: impl serde::Serialize,
    ) -> Result<R, Interrupted> {
        self.node.interrupt(payload)
    }

    /// The agent's state when the model made the call.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The id of the call (LangChain's `InjectedToolCallId`).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// A tool message answering this call, for a tool that returns a
    /// [`Command`] whose update must carry its answer.
    pub fn answer(&self, content: impl Into<Content>) -> Message {
        answer_message(
            content.into(),
            &self.call_id,
            &self.tool,
            ToolStatus::Success,
        )
    }
}

/// A tool message answering `call_id`.
pub(crate) fn answer_message(
    content: Content,
    call_id: &str,
    tool: &str,
    status: ToolStatus,
) -> Message {
    let mut message = Message::new(MessageType::Tool, content);
    message.tool_call_id = Some(call_id.to_owned());
    message.name = Some(tool.to_owned());
    message.status = Some(status);
    message
}

/// What a tool returns.
pub struct ToolOutput<S: AgentState> {
    pub(crate) kind: OutputKind<S>,
}

pub(crate) enum OutputKind<S: AgentState> {
    /// Becomes a tool message answering the call (boxed: a message is
    /// large next to most updates).
    Answer(Box<Message>),
    /// An update of the state; `answer`, when set, is added to the update as
    /// the call's tool message.
    Update {
        update: S::Update,
        answer: Option<Content>,
        goto: Vec<String>,
    },
}

impl<S: AgentState> ToolOutput<S> {
    /// Text (or content blocks): a tool message with the call's id.
    pub fn text(content: impl Into<Content>) -> Self {
        Self {
            kind: OutputKind::Answer(Box::new(Message::new(MessageType::Tool, content.into()))),
        }
    }

    /// A tool message of the tool's own (status, artifact, ...); its call
    /// id and name are set to the call's.
    pub fn message(message: Message) -> Self {
        Self {
            kind: OutputKind::Answer(Box::new(message)),
        }
    }

    /// JSON, as text: what LangChain sends for a tool returning a dict.
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }

    /// An answer and a state update, applied through the reducers with the
    /// step's other writes: the agent adds the answer to the update as the
    /// call's tool message.
    pub fn update(answer: impl Into<Content>, update: S::Update) -> Self {
        Self {
            kind: OutputKind::Update {
                update,
                answer: Some(answer.into()),
                goto: Vec::new(),
            },
        }
    }

    /// A [`Command`], as LangChain's tools return one: its update must carry
    /// the tool message answering the call ([`ToolRuntime::answer`]), else
    /// the call is answered with an error and the update is not applied.
    /// Its `goto`, when set, says where the loop goes next instead of back
    /// to the model (node names of the agent: `"model"`, `"tools"`, a hook,
    /// or [`END`](crate::graph::END)).
    pub fn command(command: Command<S::Update>) -> Self {
        Self {
            kind: OutputKind::Update {
                update: command.update.unwrap_or_default(),
                answer: None,
                goto: command.goto,
            },
        }
    }
}

impl<S: AgentState> fmt::Debug for ToolOutput<S>
where
    S::Update: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            OutputKind::Answer(message) => f.debug_tuple("Answer").field(message).finish(),
            OutputKind::Update {
                update,
                answer,
                goto,
            } => f
                .debug_struct("Update")
                .field("update", update)
                .field("answer", answer)
                .field("goto", goto)
                .finish(),
        }
    }
}

/// What a tool function may return: a [`ToolOutput`], text, a
/// [`Message`], JSON, or a `Result` of these (an `Err` answers the call
/// with an error message the model sees).
pub trait IntoToolResult<S: AgentState> {
    /// The output, or the tool's error.
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError>;
}

impl<S: AgentState> IntoToolResult<S> for ToolOutput<S> {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        Ok(self)
    }
}

impl<S: AgentState> IntoToolResult<S> for String {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        Ok(ToolOutput::text(self))
    }
}

impl<S: AgentState> IntoToolResult<S> for &str {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        Ok(ToolOutput::text(self))
    }
}

impl<S: AgentState> IntoToolResult<S> for Message {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        Ok(ToolOutput::message(self))
    }
}

impl<S: AgentState> IntoToolResult<S> for Value {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        Ok(match self {
            Value::String(text) => ToolOutput::text(text),
            other => ToolOutput::json(&other),
        })
    }
}

impl<S: AgentState, T: IntoToolResult<S>, E: Into<BoxError>> IntoToolResult<S> for Result<T, E> {
    fn into_tool_result(self) -> Result<ToolOutput<S>, BoxError> {
        self.map_err(Into::into)
            .and_then(IntoToolResult::into_tool_result)
    }
}

/// Why a tool call has no answer of its own; the agent answers it with an
/// error tool message naming what was wrong, and the loop goes on.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// The model called a tool the agent does not have.
    UnknownTool {
        /// The name it called.
        name: String,
        /// The tools there are, in the order the model is offered them.
        available: Vec<String>,
    },
    /// The arguments do not read as the tool's argument type.
    InvalidArguments {
        /// The tool.
        tool: String,
        /// The arguments as the model sent them.
        args: Value,
        /// What is wrong (serde's message, naming the field).
        error: String,
    },
    /// The tool returned an error.
    Failed {
        /// The tool.
        tool: String,
        /// Its error.
        error: BoxError,
    },
    /// The tool panicked.
    Panicked {
        /// The tool.
        tool: String,
        /// The panic's message.
        message: String,
    },
    /// The tool returned an update that carries no tool message answering
    /// the call (every call needs one); the update was not applied.
    Unanswered {
        /// The tool.
        tool: String,
        /// The call.
        call_id: String,
    },
}

impl ToolError {
    /// Whether this is the run's interrupt (the tool, or a
    /// `wrap_tool_call`, paused the run): the call is not answered, and
    /// middleware let it through untouched, as LangChain's let
    /// `GraphInterrupt` through.
    pub fn is_interrupt(&self) -> bool {
        matches!(self, Self::Failed { error, .. } if error.is::<Interrupted>())
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // LangChain's words, to the letter: a model prompted or tuned
            // on LangChain's agents reads them as it expects.
            Self::UnknownTool { name, available } => write!(
                f,
                "Error: {name} is not a valid tool, try one of [{}].",
                available.join(", ")
            ),
            Self::InvalidArguments { tool, args, error } => write!(
                f,
                "Error invoking tool `{tool}` with arguments {args}: {error}. Please fix the arguments and try again."
            ),
            Self::Failed { tool, error } => write!(f, "Error: tool `{tool}` failed: {error}"),
            Self::Panicked { tool, message } => write!(f, "Error: tool `{tool}` panicked: {message}"),
            Self::Unanswered { tool, call_id } => write!(
                f,
                "Error: tool `{tool}` returned a state update with no tool message answering call `{call_id}`, so the update was not applied; a tool returning a Command must add `runtime.answer(..)` to its messages"
            ),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// The future a tool call returns.
pub type ToolFuture<'a, S> = BoxFuture<'a, Result<ToolOutput<S>, ToolError>>;

/// A tool the model can call. Most tools are [`FnTool`]s (a function of
/// typed arguments); implement the trait for tools built at run time.
pub trait Tool<S: AgentState>: Send + Sync {
    /// The name, description and argument schema the model sees.
    fn definition(&self) -> &ToolDefinition;

    /// Whether the loop ends after this tool (LangChain's `return_direct`):
    /// when every tool of a step returns directly, the agent finishes
    /// instead of calling the model again.
    fn return_direct(&self) -> bool {
        false
    }

    /// Runs a call with its arguments.
    fn call(&self, args: Map<String, Value>, runtime: ToolRuntime<S>) -> ToolFuture<'_, S>;
}

/// The JSON Schema of a [`FnTool`]'s arguments, shown to the model:
/// implemented for every `schemars::JsonSchema` type. The tool's bound goes
/// through this trait so that a type without `JsonSchema` is told how to
/// derive it, the line a crate depending on `agent_state` alone needs
/// included.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's arguments: it does not implement `JsonSchema`, which gives the schema the model is shown",
    label = "a tool taking `{Self}`",
    note = "derive it: `#[derive(Deserialize, JsonSchema)]` on `{Self}`",
    note = "a crate that depends on `agent_state` alone (not on `schemars`) derives `agent_state::schemars::JsonSchema` and adds `#[schemars(crate = \"agent_state::schemars\")]` under the derive"
)]
pub trait ToolSchema: JsonSchema {}

impl<A: JsonSchema + ?Sized> ToolSchema for A {}

type Runner<S> = dyn Fn(Map<String, Value>, ToolRuntime<S>) -> ToolFuture<'static, S> + Send + Sync;

/// A tool made of a function whose argument type declares the JSON Schema
/// the model sees (`schemars::JsonSchema`) and reads the model's arguments
/// (`serde::Deserialize`).
pub struct FnTool<S: AgentState> {
    definition: ToolDefinition,
    return_direct: bool,
    run: Box<Runner<S>>,
}

impl<S> FnTool<S>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    /// An async tool: `f(args, runtime)` returns a future of anything
    /// [`IntoToolResult`].
    pub fn new<A, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + ToolSchema,
        F: Fn(A, ToolRuntime<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult<S>,
    {
        let definition = ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters: schema_of::<A>(),
        };
        // Shared with each call's future: named only when the call fails.
        let tool: Arc<str> = Arc::from(definition.name.as_str());
        let run =
            move |args: Map<String, Value>, runtime: ToolRuntime<S>| -> ToolFuture<'static, S> {
                match read_args::<A>(&tool, args) {
                    Ok(args) => {
                        let tool = Arc::clone(&tool);
                        f(args, runtime)
                            .map(move |r| {
                                r.into_tool_result().map_err(|error| ToolError::Failed {
                                    tool: tool.to_string(),
                                    error,
                                })
                            })
                            .boxed()
                    }
                    Err(error) => futures::future::ready(Err(error)).boxed(),
                }
            };
        Self {
            definition,
            return_direct: false,
            run: Box::new(run),
        }
    }

    /// A tool that answers without waiting on anything: `f(args, &runtime)`
    /// returns anything [`IntoToolResult`].
    pub fn sync<A, F, R>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        A: DeserializeOwned + ToolSchema,
        F: Fn(A, &ToolRuntime<S>) -> R + Send + Sync + 'static,
        R: IntoToolResult<S>,
    {
        let f = Arc::new(f);
        Self::new(
            name,
            description,
            move |args: A, runtime: ToolRuntime<S>| {
                futures::future::ready(f(args, &runtime).into_tool_result())
            },
        )
    }

    /// Ends the agent's loop after this tool (see [`Tool::return_direct`]).
    #[must_use]
    pub fn return_direct(mut self) -> Self {
        self.return_direct = true;
        self
    }
}

impl<S> Tool<S> for FnTool<S>
where
    S: AgentState + Send + Sync,
    S::Update: Send,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn return_direct(&self) -> bool {
        self.return_direct
    }

    fn call(&self, args: Map<String, Value>, runtime: ToolRuntime<S>) -> ToolFuture<'_, S> {
        (self.run)(args, runtime)
    }
}

/// The JSON Schema of a tool's argument type, as a tool definition carries
/// it (no `$schema` key).
pub fn schema_of<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}

/// The model's arguments as the tool's type. Arguments that read are read
/// once, plainly; those that do not are read again with their path tracked
/// (`serde_path_to_error`), for an error that says where they went wrong:
/// a valid call does not pay for the tracking.
fn read_args<A: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<A, ToolError> {
    let value = Value::Object(args);
    if let Ok(args) = A::deserialize(&value) {
        return Ok(args);
    }
    serde_path_to_error::deserialize(&value).map_err(|error| {
        let path = error.path().to_string();
        let error = if path == "." {
            error.into_inner().to_string()
        } else {
            format!("at `{path}`: {}", error.into_inner())
        };
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            args: value.clone(),
            error,
        }
    })
}

/// Whether `update`'s conversation carries a tool message answering
/// `call_id`.
pub(crate) fn answers_call<S: HasMessages>(update: &S::Update, call_id: &str) -> bool {
    let part = S::update_part_of(update);
    let ops = match &part.messages {
        Some(FieldWrite::Reduce(ops)) => &ops.0[..],
        Some(FieldWrite::Overwrite(messages)) => {
            return messages.iter().any(|m| is_answer(m, call_id));
        }
        None => return false,
    };
    ops.iter().any(|op| match op {
        MessageOp::Upsert(m) => is_answer(m, call_id),
        _ => false,
    })
}

fn is_answer(message: &Message, call_id: &str) -> bool {
    message.kind == MessageType::Tool && message.tool_call_id.as_deref() == Some(call_id)
}

/// Adds `message` to the conversation part of `update`.
pub(crate) fn add_message<S: HasMessages>(update: &mut S::Update, message: Message) {
    let part = S::update_part_of_mut(update);
    let taken = std::mem::take(part);
    *part = taken.message(message);
}
