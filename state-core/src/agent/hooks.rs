//! Agent middleware: hooks around the model ↔ tools loop, with LangChain
//! v1's order, and the handlers `wrap_*` hooks call.

use std::ops::BitOr;
use std::sync::Arc;

use super::model::ModelRequest;
use super::tool::{Tool, ToolError, ToolFuture};
use super::ModelFuture;
use crate::graph::{BoxError, NodeContext};
use crate::message::ToolCall;
use crate::state::AgentState;

/// Which hooks a middleware implements. A node hook not listed costs no
/// step, a `wrap_*` hook not listed no layer; the default lists them all,
/// which is always right but makes a step of every no-op hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hooks(u8);

impl Hooks {
    /// None.
    pub const NONE: Self = Self(0);
    /// `before_agent`.
    pub const BEFORE_AGENT: Self = Self(1);
    /// `before_model`.
    pub const BEFORE_MODEL: Self = Self(1 << 1);
    /// `after_model`.
    pub const AFTER_MODEL: Self = Self(1 << 2);
    /// `after_agent`.
    pub const AFTER_AGENT: Self = Self(1 << 3);
    /// `wrap_model_call`.
    pub const WRAP_MODEL_CALL: Self = Self(1 << 4);
    /// `wrap_tool_call`.
    pub const WRAP_TOOL_CALL: Self = Self(1 << 5);
    /// All six.
    pub const ALL: Self = Self(0b11_1111);

    /// Whether every hook of `other` is in `self`.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for Hooks {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Where a hook (or a tool) sends the loop, as LangChain's `jump_to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jump {
    /// Back to the model: the first `before_model` hook, else the model.
    Model,
    /// To the tools node (the pending tool calls of the last AI message).
    Tools,
    /// Out of the loop: the `after_agent` hooks, then the end (from an
    /// `after_agent` hook: the end).
    End,
}

/// What a node hook returns: an update (or none), and where to jump (or
/// nowhere: the next hook in order).
pub struct HookOutput<S: AgentState> {
    /// The update, applied as the hook's step.
    pub update: Option<S::Update>,
    /// Where to go instead of the next node in order.
    pub jump_to: Option<Jump>,
}

impl<S: AgentState> HookOutput<S> {
    /// No change, no jump.
    pub fn none() -> Self {
        Self {
            update: None,
            jump_to: None,
        }
    }

    /// An update, no jump.
    pub fn update(update: S::Update) -> Self {
        Self {
            update: Some(update),
            jump_to: None,
        }
    }

    /// A jump, no update.
    pub fn jump(to: Jump) -> Self {
        Self {
            update: None,
            jump_to: Some(to),
        }
    }

    /// Also jumps to `to`.
    #[must_use]
    pub fn and_jump(mut self, to: Jump) -> Self {
        self.jump_to = Some(to);
        self
    }
}

/// What a node hook returns, or its error (which stops the run with the
/// hook named; nothing of its step is applied).
pub type HookResult<S> = Result<HookOutput<S>, BoxError>;

/// What an async node hook returns.
pub type HookFuture<'a, S> = futures::future::BoxFuture<'a, HookResult<S>>;

/// A tool call on its way to the tool: LangChain's `ToolCallRequest`.
pub struct ToolCallRequest<S: AgentState> {
    /// The call (name, arguments, id); a `wrap_tool_call` may change it.
    pub call: ToolCall,
    /// The tool the call names, `None` when the agent has none by that name
    /// (a `wrap_tool_call` may answer it itself). A wrapper that renames the
    /// call need not change it: when it names another tool than the call,
    /// the agent's tool of the call's name runs.
    pub tool: Option<Arc<dyn Tool<S>>>,
    pub(crate) state: Arc<S>,
    pub(crate) node: NodeContext,
}

impl<S: AgentState> Clone for ToolCallRequest<S> {
    fn clone(&self) -> Self {
        Self {
            call: self.call.clone(),
            tool: self.tool.clone(),
            state: Arc::clone(&self.state),
            node: self.node.clone(),
        }
    }
}

impl<S: AgentState> ToolCallRequest<S> {
    /// The run's context of type `T` (`Run::context`, LangChain's
    /// `runtime.context`); `None` when absent or of another type.
    pub fn context<T: std::any::Any>(&self) -> Option<&T> {
        self.node.context()
    }

    /// The run's store (LangChain's `request.runtime.store`), through the
    /// tools node's context: a `wrap_tool_call` may log each call, or
    /// answer from what it remembers. `None` when neither the run nor its
    /// graph has one.
    ///
    /// ```
    /// use agent_state::agent::{AgentMiddleware, Hooks, ToolCallRequest, ToolFuture, ToolHandler};
    /// use agent_state::store::StoreExt;
    /// use agent_state::AgentState;
    ///
    /// /// Records every tool call under `["calls"]` when the run has a store.
    /// struct CallLog;
    ///
    /// impl<S: AgentState + Send + Sync> AgentMiddleware<S> for CallLog {
    ///     fn name(&self) -> &str { "call_log" }
    ///     fn hooks(&self) -> Hooks { Hooks::WRAP_TOOL_CALL }
    ///     fn wrap_tool_call<'a>(
    ///         &'a self,
    ///         request: ToolCallRequest<S>,
    ///         handler: ToolHandler<'a, S>,
    ///     ) -> ToolFuture<'a, S> {
    ///         Box::pin(async move {
    ///             if let Some(store) = request.store() {
    ///                 let entry = serde_json::json!({ "tool": request.call.name });
    ///                 let _ = store.put(["calls"], request.call_id(), entry).await;
    ///             }
    ///             handler.call(request).await
    ///         })
    ///     }
    /// }
    /// ```
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.node.store()
    }

    /// The tools node's context: a `wrap_tool_call` may
    /// [`interrupt`](NodeContext::interrupt) the run (to have a human
    /// approve the call, say), keep work [`once`](NodeContext::once) or
    /// write to the run's stream.
    pub fn node(&self) -> &NodeContext {
        &self.node
    }

    /// The agent's state when the model made the call.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        self.call.id.as_deref().unwrap_or_default()
    }
}

/// A middleware of an agent: state hooks (`before_agent`, `before_model`,
/// `after_model`, `after_agent`), wrappers of each model call and tool call
/// (`wrap_model_call`, `wrap_tool_call`), and tools of its own.
///
/// Order, as LangChain v1's `create_agent`: `before_*` hooks run first to
/// last (registration order), each its own step seeing the updates of those
/// before it; `after_*` hooks run last to first; `wrap_*` hooks nest with
/// the first middleware outermost. Write it generic over every state with
/// its part (`impl<S: HasPart<MyState> + HasMessages> AgentMiddleware<S>`),
/// and say which hooks it has in [`hooks`](Self::hooks).
pub trait AgentMiddleware<S: AgentState>: Send + Sync {
    /// Its name; unique within an agent. Hook nodes are named
    /// `<name>.before_model` and so on.
    fn name(&self) -> &str;

    /// The hooks it implements (default: all six).
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    /// Its tools, added to the agent's: the model is offered the
    /// middleware's tools first (in the order the middleware were added),
    /// then the agent's own, as LangChain's `create_agent` offers them.
    fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        Vec::new()
    }

    /// Once per invocation, before the loop. `ctx` is the hook node's: it
    /// may [`interrupt`](NodeContext::interrupt) the run for a value from
    /// outside (the hook runs again from its start when resumed), keep work
    /// [`once`](NodeContext::once), write to the run's stream, read the
    /// run's [`context`](NodeContext::context) (LangChain's `runtime`) and
    /// its [`store`](NodeContext::store) (`runtime.store`: memory across
    /// threads, for a hook that recalls what it knows of the user).
    fn before_agent(&self, state: &S, ctx: &NodeContext) -> HookResult<S> {
        let _ = (state, ctx);
        Ok(HookOutput::none())
    }

    /// Before every model call (`ctx` as in
    /// [`before_agent`](Self::before_agent)).
    fn before_model(&self, state: &S, ctx: &NodeContext) -> HookResult<S> {
        let _ = (state, ctx);
        Ok(HookOutput::none())
    }

    /// After every model response (its AI message is in the state; `ctx`
    /// as in [`before_agent`](Self::before_agent)): where a human approves
    /// the tool calls it asks for.
    fn after_model(&self, state: &S, ctx: &NodeContext) -> HookResult<S> {
        let _ = (state, ctx);
        Ok(HookOutput::none())
    }

    /// Once per invocation, after the loop (`ctx` as in
    /// [`before_agent`](Self::before_agent)).
    fn after_agent(&self, state: &S, ctx: &NodeContext) -> HookResult<S> {
        let _ = (state, ctx);
        Ok(HookOutput::none())
    }

    /// [`before_agent`](Self::before_agent) for a hook that awaits (a model
    /// call, a database): LangChain's `abefore_agent`. The agent calls
    /// this one; by default it calls the sync hook.
    fn before_agent_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S>
    where
        S: Sync,
    {
        Box::pin(async move { self.before_agent(state, ctx) })
    }

    /// [`before_model`](Self::before_model) for a hook that awaits (a
    /// summary by a model, say); by default calls the sync hook.
    fn before_model_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S>
    where
        S: Sync,
    {
        Box::pin(async move { self.before_model(state, ctx) })
    }

    /// [`after_model`](Self::after_model) for a hook that awaits; by
    /// default calls the sync hook.
    fn after_model_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S>
    where
        S: Sync,
    {
        Box::pin(async move { self.after_model(state, ctx) })
    }

    /// [`after_agent`](Self::after_agent) for a hook that awaits; by
    /// default calls the sync hook.
    fn after_agent_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S>
    where
        S: Sync,
    {
        Box::pin(async move { self.after_agent(state, ctx) })
    }

    /// Around every model call: change the request (system prompt,
    /// messages, tools, settings), call `handler` zero times
    /// (short-circuit), once, or several times (retry), change the response.
    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        handler.call(request)
    }

    /// Around every tool call, as [`wrap_model_call`](Self::wrap_model_call)
    /// around model calls.
    fn wrap_tool_call<'a>(
        &'a self,
        request: ToolCallRequest<S>,
        handler: ToolHandler<'a, S>,
    ) -> ToolFuture<'a, S> {
        handler.call(request)
    }
}

/// The rest of the chain a `wrap_model_call` wraps: the middleware after it,
/// then the model. Call it as often as you like.
pub struct ModelHandler<'a, S> {
    pub(crate) layers: &'a [Arc<dyn AgentMiddleware<S>>],
    pub(crate) core: &'a dyn ModelExec<S>,
}

impl<S> Clone for ModelHandler<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ModelHandler<'_, S> {}

impl<'a, S: AgentState> ModelHandler<'a, S> {
    /// Runs the request through the rest of the chain.
    pub fn call(&self, request: ModelRequest<S>) -> ModelFuture<'a> {
        match self.layers.split_first() {
            Some((first, rest)) => first.wrap_model_call(
                request,
                ModelHandler {
                    layers: rest,
                    core: self.core,
                },
            ),
            None => self.core.run(request),
        }
    }
}

/// The rest of the chain a `wrap_tool_call` wraps: the middleware after it,
/// then the tool. Call it as often as you like.
pub struct ToolHandler<'a, S> {
    pub(crate) layers: &'a [Arc<dyn AgentMiddleware<S>>],
    pub(crate) core: &'a dyn ToolExec<S>,
}

impl<S> Clone for ToolHandler<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ToolHandler<'_, S> {}

impl<'a, S: AgentState> ToolHandler<'a, S> {
    /// Runs the call through the rest of the chain.
    pub fn call(&self, request: ToolCallRequest<S>) -> ToolFuture<'a, S> {
        match self.layers.split_first() {
            Some((first, rest)) => first.wrap_tool_call(
                request,
                ToolHandler {
                    layers: rest,
                    core: self.core,
                },
            ),
            None => self.core.run(request),
        }
    }
}

/// The tools' error for a call, as its answer would say it.
pub(crate) fn unknown_tool(name: &str, available: &[String]) -> ToolError {
    ToolError::UnknownTool {
        name: name.to_owned(),
        available: available.to_vec(),
    }
}

/// The innermost model handler, as the handlers see it (so a handler's
/// `call` needs no bounds of its own).
pub(crate) trait ModelExec<S>: Sync {
    fn run(
        &self,
        request: ModelRequest<S>,
    ) -> futures::future::BoxFuture<'_, Result<super::model::ModelResponse, super::model::ModelError>>;
}

/// The innermost tool handler, as the handlers see it.
pub(crate) trait ToolExec<S: AgentState>: Sync {
    fn run(&self, request: ToolCallRequest<S>) -> ToolFuture<'_, S>;
}
