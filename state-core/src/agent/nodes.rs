//! The agent's nodes: the model node, the hook nodes and where each routes.
//! The tools node is in `tools_node.rs`.
//!
//! Every node of the agent names where the loop goes next in its own
//! `Command` (the graph has no edges but the one from START), so a hook's
//! jump replaces the next node instead of adding to it, and a resumed
//! thread routes from the stored gotos exactly as the live run did.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::StreamExt;

use super::client_tools::ClientTools;
use super::hooks::{
    unknown_tool, AgentMiddleware, HookFuture, Jump, ModelExec, ModelHandler, ToolCallRequest,
    ToolExec,
};
use super::model::{
    ChatChunk, ChatModel, ModelError, ModelRequest, ModelResponse, ModelSettings, ToolDefinition,
    Usage,
};
use super::repair::repair_invalid_calls;
use super::structured::{Binding, Outcome};
use super::tool::{Tool, ToolFuture, ToolRuntime};
use crate::base::{HasMessages, MessagesState, MessagesStateUpdate};
use crate::graph::trace::Timed;
use crate::graph::{BoxError, Command, NodeContext, StreamMode, StreamWriter, END};
use crate::message::{Content, Message, MessageChunk, MessageType};
use crate::messages::RemoveMessage;
use crate::state::{AgentState, StateUpdate};
use tracing::Instrument;

/// Receives every chunk of every model call, as it streams.
pub type TokenSink = Arc<dyn Fn(&ChatChunk) + Send + Sync>;

/// The innermost model handler: calls the model, streaming when a sink
/// listens.
pub(crate) struct ModelCore<S: AgentState> {
    pub(crate) model: Arc<dyn ChatModel<S>>,
    pub(crate) sink: Option<TokenSink>,
    /// The response format: its tool or schema joins the request here,
    /// innermost, as LangChain binds it.
    pub(crate) structured: Option<Arc<dyn Binding<S>>>,
}

impl<S: AgentState + Send + Sync + 'static> ModelExec<S> for ModelCore<S> {
    fn run(&self, request: ModelRequest<S>) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
        let request = match &self.structured {
            Some(binding) => binding.bind(request),
            None => request,
        };
        Box::pin(async move {
            let writer = request
                .stream_writer()
                .filter(|w| w.is_on(StreamMode::Messages));
            let streaming = self.sink.is_some() || writer.is_some();
            let span = tracing::info_span!(
                "agent.model",
                streaming,
                input_tokens = tracing::field::Empty,
                output_tokens = tracing::field::Empty,
                duration_us = tracing::field::Empty,
            );
            let timed = Timed::new(span.clone());
            let model = request.model().unwrap_or(&self.model);
            let call = async {
                if streaming {
                    // Boxed: the streamed call's state is not carried by
                    // every plain call's future.
                    Box::pin(self.stream(model.as_ref(), &request, writer)).await
                } else {
                    model.invoke(&request).await
                }
            };
            let message = call.instrument(span).await?;
            if let Some(usage) = Usage::of(&message) {
                timed.span().record("input_tokens", usage.input_tokens);
                timed.span().record("output_tokens", usage.output_tokens);
            }
            Ok(ModelResponse::new(message))
        })
    }
}

impl<S: AgentState> ModelCore<S> {
    /// One streamed model call: each chunk to the token sink and the run's
    /// `messages` stream as it comes, all of them added up into the
    /// message. Chunks without an id get the call's (`lc_run-<uuid>`, as
    /// LangChain names a run's chunks), so the pieces and the message they
    /// make share it. The loop closes the message itself, once, whatever
    /// the model: a model's own `last` marks are dropped, and after its
    /// last chunk comes an empty one marked last (LangChain's
    /// `chunk_position: "last"`), with the message's id.
    async fn stream(
        &self,
        model: &dyn ChatModel<S>,
        request: &ModelRequest<S>,
        writer: Option<&StreamWriter>,
    ) -> Result<Message, ModelError> {
        let id = format!("lc_run-{}", crate::new_message_id());
        let mut chunks = model.stream(request);
        let mut sum: Option<MessageChunk> = None;
        let mut blocks = false;
        while let Some(chunk) = chunks.next().await {
            let mut chunk = chunk?;
            chunk.id.get_or_insert_with(|| id.clone());
            chunk.last = false;
            blocks = matches!(chunk.content, Content::Blocks(_));
            self.emit(&chunk, writer).await;
            match &mut sum {
                None => sum = Some(chunk),
                Some(sum) => sum.add(chunk).map_err(|e| ModelError::InvalidResponse {
                    message: format!("the streamed chunks do not add up: {e}"),
                })?,
            }
        }
        let Some(sum) = sum else {
            // Nothing streamed, nothing to close (as LangChain).
            return Ok(MessageChunk::ai("").into_message());
        };
        let empty = if blocks {
            Content::Blocks(Vec::new())
        } else {
            Content::Text(String::new())
        };
        let mut end = MessageChunk::ai(empty).as_last();
        end.id.clone_from(&sum.id);
        self.emit(&end, writer).await;
        Ok(sum.into_message())
    }

    /// A chunk to the token sink and the run's stream.
    async fn emit(&self, chunk: &MessageChunk, writer: Option<&StreamWriter>) {
        if let Some(sink) = &self.sink {
            sink(chunk);
        }
        if let Some(writer) = writer {
            writer.message(chunk.clone()).await;
        }
    }
}

/// The innermost tool handler: finds the tool and runs it.
pub(crate) struct ToolCore<S: AgentState> {
    /// By name, hashed with foldhash (looked up for every call). The keys
    /// are the agent's own tool names, fixed when it is built; a model's
    /// names are only looked up, never inserted, so SipHash's resistance
    /// to chosen keys buys nothing here.
    pub(crate) by_name: HashMap<String, Arc<dyn Tool<S>>, foldhash::fast::RandomState>,
    pub(crate) names: Vec<String>,
}

impl<S> ToolExec<S> for ToolCore<S>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    fn run(&self, request: ToolCallRequest<S>) -> ToolFuture<'_, S> {
        let ToolCallRequest {
            call,
            tool,
            state,
            node,
        } = request;
        // The agent's own tool for the call (not one a wrapper put in its
        // place): called as it is, borrowed from here (no future around
        // its future).
        let own = self.by_name.get(&call.name);
        if let Some(own) = own.filter(|t| tool.as_ref().is_none_or(|given| Arc::ptr_eq(given, t))) {
            let runtime = ToolRuntime::new(state, call.id.unwrap_or_default(), call.name, node);
            return own.call(call.args, runtime);
        }
        // A wrapper that renamed the call (a reviewer's edit) runs the tool
        // the call now names.
        let tool = tool
            .filter(|t| t.definition().name == call.name)
            .or_else(|| self.by_name.get(&call.name).cloned());
        let Some(tool) = tool else {
            let error = unknown_tool(&call.name, &self.names);
            return Box::pin(futures::future::ready(Err(error)));
        };
        Box::pin(async move {
            let runtime = ToolRuntime::new(state, call.id.unwrap_or_default(), call.name, node);
            tool.call(call.args, runtime).await
        })
    }
}

/// Where the agent's nodes lead: LangChain's entry, loop entry and exit.
pub(crate) struct Places {
    /// The first `before_model` hook, else the model.
    pub(crate) loop_entry: String,
    /// The last registered middleware's `after_agent` hook, else END.
    pub(crate) exit: String,
    /// Where the model goes: the last registered `after_model` hook, if any.
    pub(crate) after_model: Option<String>,
    /// Whether the agent has a tools node.
    pub(crate) has_tools: bool,
}

/// Where a hook goes when it does not jump.
#[derive(Clone)]
pub(crate) enum Then {
    /// A node (or END).
    Node(String),
    /// Out of the model step: tools, back to the model, or the exit, by the
    /// conversation after the hook's update.
    Route,
}

/// Which hook a hook node calls.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookKind {
    BeforeAgent,
    BeforeModel,
    AfterModel,
    AfterAgent,
}

impl HookKind {
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Self::BeforeAgent => "before_agent",
            Self::BeforeModel => "before_model",
            Self::AfterModel => "after_model",
            Self::AfterAgent => "after_agent",
        }
    }

    fn call<'a, S: AgentState + Sync>(
        self,
        m: &'a dyn AgentMiddleware<S>,
        state: &'a S,
        ctx: &'a NodeContext,
    ) -> HookFuture<'a, S> {
        match self {
            Self::BeforeAgent => m.before_agent_async(state, ctx),
            Self::BeforeModel => m.before_model_async(state, ctx),
            Self::AfterModel => m.after_model_async(state, ctx),
            Self::AfterAgent => m.after_agent_async(state, ctx),
        }
    }
}

/// Everything the agent's nodes share.
pub(crate) struct AgentLoop<S: AgentState> {
    pub(crate) model: ModelCore<S>,
    pub(crate) tools: ToolCore<S>,
    pub(crate) definitions: Arc<[ToolDefinition]>,
    pub(crate) system_prompt: Option<Arc<str>>,
    pub(crate) settings: ModelSettings,
    pub(crate) wrap_model: Vec<Arc<dyn AgentMiddleware<S>>>,
    pub(crate) wrap_tool: Vec<Arc<dyn AgentMiddleware<S>>>,
    pub(crate) places: Places,
    pub(crate) structured: Option<Arc<dyn Binding<S>>>,
}

impl<S> AgentLoop<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send,
{
    /// The model node: one model call through the `wrap_model_call` chain;
    /// its messages are the step's update. Invalid tool calls left
    /// unanswered in the history are answered first (`repair.rs`): the
    /// model is sent the repaired history and the update replaces the
    /// conversation with it, as LangChain's model node does.
    pub(crate) async fn model_step(
        &self,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> Result<Command<S::Update>, BoxError> {
        let repaired = repair_invalid_calls(state.messages());
        // The caller's tools (a run's `ClientTools` context) after the
        // agent's own.
        let tools = match ctx.context::<ClientTools>() {
            Some(client) => client.offered(&self.definitions),
            None => Arc::clone(&self.definitions),
        };
        let mut request = ModelRequest::of_node(
            Arc::clone(&state),
            (self.system_prompt.clone(), tools),
            self.settings.clone(),
            ctx.clone(),
            Arc::clone(&self.model.model),
        );
        if let Some(history) = &repaired {
            request = request.with_messages(history.clone());
        }
        let handler = ModelHandler {
            layers: &self.wrap_model,
            core: &self.model,
        };
        let mut added = handler.call(request).await?.messages;
        give_call_ids(&mut added);
        let structured = self.structured_outcome(&mut added)?;
        let fresh = structured.as_ref().is_some_and(|o| o.fresh);
        let history = repaired.as_deref().unwrap_or(state.messages());
        let goto = match &self.places.after_model {
            Some(hook) => hook.clone(),
            None => self.route(history, &added, fresh),
        };
        let update = match repaired {
            None => MessagesStateUpdate::new().messages(added),
            Some(history) => MessagesStateUpdate::new()
                .message(RemoveMessage::all())
                .messages(history)
                .messages(added),
        };
        let update = match structured {
            None => S::lift(update),
            // The answers to structured calls are in `added` by now.
            Some(outcome) => outcome.update.with(update),
        };
        Ok(Command {
            update: Some(update),
            goto: vec![goto],
            send: Vec::new(),
        })
    }

    /// The response format on the model's answer (its last AI message):
    /// the value or its absence, the tool messages answering structured
    /// calls (appended to `added`), or the error that fails the step.
    fn structured_outcome(
        &self,
        added: &mut Vec<Message>,
    ) -> Result<Option<Outcome<S::Update>>, BoxError> {
        let Some(binding) = &self.structured else {
            return Ok(None);
        };
        let ai = added.iter().rev().find(|m| m.kind == MessageType::Ai);
        let mut outcome = binding.handle(ai)?;
        added.append(&mut outcome.answers);
        Ok(Some(outcome))
    }

    /// Whether the model's last turn gave the structured value: the model
    /// step writes it, or clears it, every turn.
    pub(crate) fn fresh(&self, state: &S) -> bool {
        self.structured
            .as_ref()
            .is_some_and(|b| b.has_response(state))
    }

    /// Whether a turn without the value goes back to the model when there
    /// are no tools (LangChain's model → model edge of a tool strategy).
    pub(crate) fn retries_structured(&self) -> bool {
        self.structured.as_ref().is_some_and(|b| b.tool().is_some())
    }

    /// A hook node's step: the hook's update, and where to go.
    pub(crate) async fn hook_step(
        &self,
        middleware: &dyn AgentMiddleware<S>,
        kind: HookKind,
        then: &Then,
        state: &S,
        ctx: &NodeContext,
    ) -> Result<Command<S::Update>, BoxError> {
        let out = kind.call(middleware, state, ctx).await?;
        let goto = match (out.jump_to, then) {
            (Some(jump), _) => self.jump(jump, kind == HookKind::AfterAgent),
            (None, Then::Node(name)) => name.clone(),
            (None, Then::Route) => self.route_after(state, out.update.as_ref()),
        };
        Ok(Command {
            update: out.update,
            goto: vec![goto],
            send: Vec::new(),
        })
    }

    /// Where a jump leads.
    pub(crate) fn jump(&self, jump: Jump, from_after_agent: bool) -> String {
        match jump {
            Jump::Model => self.places.loop_entry.clone(),
            Jump::Tools => "tools".to_owned(),
            Jump::End if from_after_agent => END.to_owned(),
            Jump::End => self.places.exit.clone(),
        }
    }

    /// Where the loop goes after the model step, by the conversation once
    /// `update` (a hook's) is applied: only a hook that writes messages
    /// makes this copy the conversation.
    fn route_after(&self, state: &S, update: Option<&S::Update>) -> String {
        let fresh = self.fresh(state);
        if let Some(part) = update.map(S::update_part_of).filter(|p| !p.is_empty()) {
            let mut conversation: MessagesState = state.part::<MessagesState>().clone();
            if conversation.apply(part.clone()).is_ok() {
                return self.route(&conversation.messages, &[], fresh);
            }
        }
        self.route(state.messages(), &[], fresh)
    }

    /// LangChain's model → tools edge on `history` followed by `added`: no
    /// AI message or no (valid) tool call leaves the loop, pending calls go
    /// to the tools, calls all answered go back to the model, unless the
    /// turn gave the structured value (`fresh`), which ends it. Without
    /// tools, a tool strategy's turn without the value goes back to the
    /// model (LangChain's model → model edge).
    pub(crate) fn route(&self, history: &[Message], added: &[Message], fresh: bool) -> String {
        if !self.places.has_tools {
            return if self.retries_structured() && !fresh {
                self.places.loop_entry.clone()
            } else {
                self.places.exit.clone()
            };
        }
        let mut answered: Vec<&str> = Vec::new();
        for message in added.iter().rev().chain(history.iter().rev()) {
            match message.kind {
                MessageType::Tool => answered.extend(message.tool_call_id.as_deref()),
                MessageType::Ai if message.tool_calls.is_empty() => {
                    return self.places.exit.clone();
                }
                MessageType::Ai => {
                    let pending = message
                        .tool_calls
                        .iter()
                        .any(|c| !answered.contains(&c.id.as_deref().unwrap_or_default()));
                    return if pending {
                        "tools".to_owned()
                    } else if fresh {
                        self.places.exit.clone()
                    } else {
                        self.places.loop_entry.clone()
                    };
                }
                _ => {}
            }
        }
        self.places.exit.clone()
    }
}

/// Gives every tool call of the response an id: the tool message that
/// answers it must name it.
fn give_call_ids(messages: &mut [Message]) {
    for message in messages.iter_mut().filter(|m| m.kind == MessageType::Ai) {
        for call in &mut message.tool_calls {
            call.id
                .get_or_insert_with(|| format!("call_{}", crate::new_message_id()));
        }
    }
}
