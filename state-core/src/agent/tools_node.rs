//! The tools node: the pending tool calls of the last AI message, run
//! together, their answers and updates applied as one step.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::future::{join_all, lazy, FutureExt};
use tracing::Instrument;

use crate::graph::trace::Timed;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client_tools::ClientTools;
use super::hooks::{ToolCallRequest, ToolHandler};
use super::nodes::AgentLoop;
use super::tool::{add_message, answer_message, answers_call, OutputKind, ToolError, ToolOutput};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::{BoxError, Command, NodeContext, NodeOutput, END};
use crate::message::{Message, MessageType, ToolCall, ToolStatus};
use crate::state::{AgentState, StateUpdate};

/// A tool call's answer as kept while its step is unfinished: the write
/// (as JSON) and where it routes.
#[derive(Serialize, Deserialize)]
struct KeptAnswer {
    update: Value,
    goto: Vec<String>,
}

impl<S> AgentLoop<S>
where
    S: HasMessages + crate::graph::GraphState,
    S::Update: Send,
{
    /// The tools node's step: every pending call of the last AI message,
    /// concurrently, each through the `wrap_tool_call` chain with panics
    /// caught; one write per call, applied together (`apply_all`'s rules).
    /// On a thread each call's answer is kept as it comes (as
    /// `NodeContext::once_async` keeps values, by call id): when the step
    /// runs again after a crash, a cancellation or an interrupt, a call
    /// that had finished is not made again. Off a thread nothing could run
    /// the step again, so nothing is kept (no JSON round trip).
    pub(crate) async fn tools_step(
        &self,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> Result<NodeOutput<S::Update>, BoxError> {
        let mut calls = pending_calls(state.messages());
        // Calls of the caller's tools are left for the caller to answer:
        // once the agent's own are answered, the run ends.
        let for_caller = ctx.context::<ClientTools>().is_some_and(|client| {
            let before = calls.len();
            calls.retain(|c| !client.takes(c, &self.tools.names));
            calls.len() < before
        });
        if calls.is_empty() {
            let next = if for_caller {
                &self.places.exit
            } else {
                &self.places.loop_entry
            };
            return Ok(NodeOutput::Command(Command::goto(next.clone())));
        }
        let runs = calls.iter().map(|call| self.call_tool(call, &state, &ctx));
        let results = join_all(runs).await;
        // The structured value, or tools that all end the loop: out.
        let out = self.fresh(&state) || self.all_return_direct(&calls);
        let count = calls.len();
        drop(calls);
        drop(state);

        let mut commands = Vec::with_capacity(count);
        let mut jumps: Vec<String> = Vec::new();
        for result in results {
            let (update, goto) = result?;
            jumps.extend(goto);
            commands.push(Command::update(update));
        }
        let next = if !jumps.is_empty() {
            jumps
        } else if out || for_caller {
            vec![self.places.exit.clone()]
        } else {
            vec![self.places.loop_entry.clone()]
        };
        if let Some(last) = commands.last_mut() {
            last.goto = next;
        }
        Ok(NodeOutput::Batch(commands))
    }

    /// One call through the `wrap_tool_call` chain, its interrupts its own
    /// (each call is a task of its own in LangGraph: calls pause side by
    /// side): its write and where it routes, or the answer kept by an
    /// earlier run of the step. A call that pauses gets no answer and
    /// keeps nothing: resumed, the tool is called again.
    async fn call_tool(
        &self,
        call: &ToolCall,
        state: &Arc<S>,
        ctx: &NodeContext,
    ) -> Result<(S::Update, Vec<String>), BoxError> {
        let key = call.id.as_deref().unwrap_or_default();
        if let Some(kept) = ctx.kept::<KeptAnswer>(key)? {
            return Ok((S::Update::from_json(kept.update)?, kept.goto));
        }
        let scope = ctx.scoped(key);
        let request = ToolCallRequest {
            call: call.clone(),
            tool: self.tools.by_name.get(&call.name).cloned(),
            state: Arc::clone(state),
            node: scope.clone(),
        };
        let handler = ToolHandler {
            layers: &self.wrap_tool,
            core: &self.tools,
        };
        let span = tracing::info_span!(
            "agent.tool",
            tool = %call.name,
            call_id = %key,
            duration_us = tracing::field::Empty,
        );
        let timed = Timed::new(span.clone());
        let output = guarded(handler, request, &call.name).instrument(span).await;
        drop(timed);
        if output.as_ref().err().is_some_and(ToolError::is_interrupt) || scope.scope_paused() {
            return Err(Box::new(Paused(key.to_owned())) as BoxError);
        }
        let (update, goto) = self.answer(call, output);
        if ctx.keeps() {
            let kept = KeptAnswer {
                update: update.to_json(),
                goto: goto.clone(),
            };
            ctx.keep(key, &kept)?;
        }
        Ok((update, goto))
    }

    /// A call's write: its answer (or its update, which must carry one), or
    /// an error answer naming what went wrong.
    fn answer(
        &self,
        call: &ToolCall,
        result: Result<ToolOutput<S>, ToolError>,
    ) -> (S::Update, Vec<String>) {
        let id = call.id.as_deref().unwrap_or_default();
        let output = match result {
            Ok(output) => output,
            Err(error) => return (self.error_answer(call, &error), Vec::new()),
        };
        match output.kind {
            OutputKind::Answer(mut message) => {
                message.kind = MessageType::Tool;
                message.tool_call_id = Some(id.to_owned());
                message.name.get_or_insert_with(|| call.name.clone());
                message.status.get_or_insert(ToolStatus::Success);
                (lift_message::<S>(*message), Vec::new())
            }
            OutputKind::Update {
                mut update,
                answer,
                goto,
            } => {
                if let Some(content) = answer {
                    let message = answer_message(content, id, &call.name, ToolStatus::Success);
                    add_message::<S>(&mut update, message);
                }
                if !answers_call::<S>(&update, id) {
                    let error = ToolError::Unanswered {
                        tool: call.name.clone(),
                        call_id: id.to_owned(),
                    };
                    return (self.error_answer(call, &error), Vec::new());
                }
                let goto = goto
                    .into_iter()
                    .map(|g| {
                        if g == END {
                            self.places.exit.clone()
                        } else {
                            g
                        }
                    })
                    .collect();
                (update, goto)
            }
        }
    }

    fn error_answer(&self, call: &ToolCall, error: &ToolError) -> S::Update {
        tracing::warn!(tool = %call.name, call_id = ?call.id, %error, "tool call answered with an error");
        let id = call.id.as_deref().unwrap_or_default();
        let text = error.to_string();
        lift_message::<S>(answer_message(
            text.into(),
            id,
            &call.name,
            ToolStatus::Error,
        ))
    }

    /// Whether every call names a tool that ends the loop (LangChain's
    /// `return_direct`); calls to unknown tools do not count.
    fn all_return_direct(&self, calls: &[&ToolCall]) -> bool {
        let mut known = calls
            .iter()
            .filter_map(|c| self.tools.by_name.get(&c.name))
            .peekable();
        known.peek().is_some() && known.all(|t| t.return_direct())
    }
}

/// A call that paused on its interrupt: its step pauses (whatever the step
/// returns, the task counts as paused), and nothing is kept for it.
#[derive(Debug)]
struct Paused(String);

impl std::fmt::Display for Paused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tool call `{}` paused on an interrupt", self.0)
    }
}

impl std::error::Error for Paused {}

/// Runs a call through the chain with panics caught: the whole chain runs
/// inside the guarded future (the chain is entered on its first poll), so a
/// panic in a middleware's wrapper is caught too. `tool` (the call's name)
/// is named only when it panicked. A plain function, not an `async` one:
/// the request is held once, not as an argument and again as awaited.
fn guarded<'a, S: AgentState>(
    handler: ToolHandler<'a, S>,
    request: ToolCallRequest<S>,
    tool: &'a str,
) -> impl Future<Output = Result<ToolOutput<S>, ToolError>> + 'a {
    let run = AssertUnwindSafe(lazy(move |_| handler.call(request)).flatten());
    run.catch_unwind().map(move |result| match result {
        Ok(result) => result,
        Err(panic) => Err(ToolError::Panicked {
            tool: tool.to_owned(),
            message: panic_message(panic.as_ref()),
        }),
    })
}

fn lift_message<S: HasMessages>(message: Message) -> S::Update {
    S::lift(MessagesStateUpdate::new().message(message))
}

/// The tool calls of the last AI message that no later tool message
/// answers.
pub(crate) fn pending_calls(history: &[Message]) -> Vec<&ToolCall> {
    let Some(at) = history.iter().rposition(|m| m.kind == MessageType::Ai) else {
        return Vec::new();
    };
    // The answers are the tool messages after it: a handful, scanned in
    // place (no set to build each step).
    let after = &history[at + 1..];
    let answered = |id: &str| {
        after
            .iter()
            .any(|m| m.kind == MessageType::Tool && m.tool_call_id.as_deref() == Some(id))
    };
    history[at]
        .tool_calls
        .iter()
        .filter(|c| !answered(c.id.as_deref().unwrap_or_default()))
        .collect()
}

/// A panic's message, when it has one.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_owned()
    }
}
