//! [`HumanInTheLoop`]: a person approves, edits, rejects or answers the
//! model's tool calls before they run, as langchain 1.4.7's
//! `HumanInTheLoopMiddleware` does in its default (`batched`) mode.

mod config;
mod notice;
mod request;

use std::collections::BTreeMap;

pub use config::{DescribeFn, HitlError, InterruptOn, InterruptOnEntry, WhenFn};
pub use request::{
    Action, ActionRequest, Decision, DecisionType, HitlRequest, HitlResponse, HumanInTheLoopState,
    HumanInTheLoopStateUpdate, InterruptMode, ReviewConfig, ToolApprovalRequest,
};

use config::Describe;
use request::HumanInTheLoopStateUpdate as EditsUpdate;

use super::limits::last_ai;
use crate::agent::hooks::{
    AgentMiddleware, HookOutput, HookResult, Hooks, ToolCallRequest, ToolHandler,
};
use crate::agent::tool::{answer_message, ToolError, ToolFuture, ToolOutput};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::NodeContext;
use crate::message::{Message, ToolCall, ToolStatus};
use crate::pyrepr;
use crate::{HasPart, StateUpdate};
use serde_json::Value;

/// Pauses the run after a model turn whose tool calls include calls to
/// reviewed tools, until a person decides about each: LangChain's
/// `HumanInTheLoopMiddleware` (batched mode).
///
/// Its `after_model` hook interrupts the run ([`NodeContext::interrupt`])
/// with a [`HitlRequest`] listing the reviewed calls of the last AI message
/// (calls to tools not in `interrupt_on`, or whose [`when`](InterruptOn::when)
/// says no, run unreviewed), and is resumed with a [`HitlResponse`]: one
/// [`Decision`] per reviewed call, in order. Then:
///
/// * **approve**: the call runs;
/// * **edit**: the reviewer's call runs in its place (the AI message keeps
///   the model's; the tool's answer starts with the edit notice naming the
///   call that ran);
/// * **reject**: the call does not run; an error tool message tells the
///   model, with the reviewer's reason if given;
/// * **respond**: the call does not run; the reviewer's message is its
///   successful answer.
///
/// When every call is answered that way the loop goes back to the model,
/// else to the tools (LangChain makes no jump either: the routing after
/// the model sees the answers). A decision the tool does not allow, or a
/// count of decisions other than the count of reviewed calls, fails the
/// hook with a [`HitlError`] naming the tool or the counts.
///
/// The pause is an interrupt like any other: the run's checkpoint holds
/// it, and another process resumes it with
/// `Resume::value(HitlResponse { .. })`. The agent's state needs
/// [`HumanInTheLoopState`] (flattened), where edits wait for the tools.
///
/// With [`InterruptMode::PerCall`] each reviewed call pauses on its own as
/// it starts (a [`ToolApprovalRequest`], answered with one [`Decision`] by
/// the interrupt's id); a decision the tool does not allow, or an edit
/// naming another tool, is refused as a resume value of the wrong type
/// is (the run fails naming the interrupt, which waits for another
/// answer), as LangGraph refuses an answer that does not match the
/// interrupt's `response_schema`.
///
/// Differs from LangChain: per call, edited arguments are not checked
/// against the tool's schema before they are kept (the tool reads them
/// when it runs, and answers bad ones with its error); the description callable
/// and `when` get the call, the state and the hook's context (LangChain's:
/// the call, the state and the runtime; `when`: a `ToolCallRequest`); an
/// edit naming a tool the agent lacks is answered with the unknown-tool
/// error message (LangChain raises); arguments are shown with their keys
/// sorted (our argument maps are), where LangChain keeps the model's order.
///
/// ```
/// use agent_state::agent::middleware::{
///     Decision, DecisionType, HitlRequest, HitlResponse, HumanInTheLoop, HumanInTheLoopState,
///     InterruptOn,
/// };
/// use agent_state::agent::{create_agent, input, FnTool, ScriptedModel};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// use agent_state::graph::{Input, Resume};
/// use agent_state::{ai, AgentState, ToolCall};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
///     #[state(flatten)]
///     hitl: HumanInTheLoopState,
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let args = serde_json::json!({"path": "/tmp/x"}).as_object().unwrap().clone();
/// let model = ScriptedModel::new([
///     ai("").with_tool_call(ToolCall::new("delete_file", args, "call_1")),
///     ai("Kept it."),
/// ]);
/// let delete = FnTool::sync("delete_file", "Delete a file.", |_: serde_json::Value, _: &_| {
///     "deleted"
/// });
/// let review = HumanInTheLoop::new([(
///     "delete_file",
///     InterruptOn::allow([DecisionType::Approve, DecisionType::Reject]),
/// )])?;
/// let agent = create_agent(model).tool(delete).middleware(review).compile()?;
///
/// let saver = MemoryCheckpointer::new();
/// let out = block_on(agent.run(input::<Chat>("Delete /tmp/x")).on_thread(&saver, "t"))?;
/// let request: HitlRequest = serde_json::from_value(out.interrupts[0].value.clone())?;
/// assert_eq!(request.action_requests[0].name, "delete_file");
///
/// let no = HitlResponse { decisions: vec![Decision::Reject { message: Some("Keep it.".into()) }] };
/// let out = block_on(agent.run(Input::ResumeWith(Resume::value(no))).on_thread(&saver, "t"))?;
/// let answer = &out.state.messages()[2];
/// assert_eq!(answer.text(), "User rejected the tool call for `delete_file` with reason: Keep it.");
/// assert_eq!(out.state.messages()[3].text(), "Kept it.");
/// # Ok(()) }
/// ```
pub struct HumanInTheLoop<S> {
    interrupt_on: BTreeMap<String, InterruptOn<S>>,
    description_prefix: String,
    edit_notice: Option<String>,
    mode: InterruptMode,
}

impl<S> HumanInTheLoop<S> {
    /// Reviews the calls of each tool in `interrupt_on` (name → `true`,
    /// `false` or an [`InterruptOn`]); tools not listed run unreviewed.
    /// A config allowing no decision is refused ([`HitlError::NoDecisions`]).
    pub fn new<N, E>(interrupt_on: impl IntoIterator<Item = (N, E)>) -> Result<Self, HitlError>
    where
        N: Into<String>,
        E: Into<InterruptOnEntry<S>>,
    {
        let mut configs = BTreeMap::new();
        for (tool, entry) in interrupt_on {
            let tool = tool.into();
            match entry.into() {
                InterruptOnEntry::Off => {}
                InterruptOnEntry::On(config) if config.allowed_decisions.is_empty() => {
                    return Err(HitlError::NoDecisions { tool });
                }
                InterruptOnEntry::On(config) => {
                    configs.insert(tool, config);
                }
            }
        }
        Ok(Self {
            interrupt_on: configs,
            description_prefix: "Tool execution requires approval".to_owned(),
            edit_notice: Some(notice::DEFAULT_NOTICE.to_owned()),
            mode: InterruptMode::Batched,
        })
    }

    /// One interrupt per turn (the default) or per reviewed call.
    #[must_use]
    pub fn interrupt_mode(mut self, mode: InterruptMode) -> Self {
        self.mode = mode;
        self
    }

    /// The first line of the default description (a tool's own
    /// description replaces it).
    #[must_use]
    pub fn description_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.description_prefix = prefix.into();
        self
    }

    /// The text put before the answer of an edited call (`None`: nothing).
    #[must_use]
    pub fn edit_notice(mut self, notice: Option<String>) -> Self {
        self.edit_notice = notice;
        self
    }

    /// The request entry and review config of one reviewed call.
    fn action_and_config(
        &self,
        call: &ToolCall,
        config: &InterruptOn<S>,
        state: &S,
        ctx: &NodeContext,
    ) -> (ActionRequest, ReviewConfig) {
        let description = match &config.description {
            Some(Describe::Text(text)) => text.clone(),
            Some(Describe::With(f)) => f(call, state, ctx),
            None => format!(
                "{}\n\nTool: {}\nArgs: {}",
                self.description_prefix,
                call.name,
                pyrepr::repr(&Value::Object(call.args.clone()))
            ),
        };
        let action = ActionRequest {
            name: call.name.clone(),
            args: call.args.clone(),
            description: Some(description),
        };
        let review = ReviewConfig {
            action_name: call.name.clone(),
            allowed_decisions: config.allowed_decisions.clone(),
        };
        (action, review)
    }
}

/// The reviewed calls of one AI message: their positions, and the request.
struct Review {
    positions: Vec<usize>,
    request: HitlRequest,
}

impl<S> HumanInTheLoop<S>
where
    S: HasPart<HumanInTheLoopState> + HasMessages + Send + Sync + 'static,
    S::Update: Send,
{
    /// The calls of `calls` to review, with what the reviewer is shown.
    fn review(&self, calls: &[ToolCall], state: &S, ctx: &NodeContext) -> Review {
        let mut review = Review {
            positions: Vec::new(),
            request: HitlRequest {
                action_requests: Vec::new(),
                review_configs: Vec::new(),
            },
        };
        for (at, call) in calls.iter().enumerate() {
            let Some(config) = self.interrupt_on.get(&call.name) else {
                continue;
            };
            if config
                .when
                .as_ref()
                .is_some_and(|when| !when(call, state, ctx))
            {
                continue;
            }
            let (action, config) = self.action_and_config(call, config, state, ctx);
            review.positions.push(at);
            review.request.action_requests.push(action);
            review.request.review_configs.push(config);
        }
        review
    }

    /// The update the decisions make: the AI message again (LangChain
    /// writes it back, its calls unchanged), the answers of rejected and
    /// responded calls, and the edits, replacing the last turn's.
    fn apply(
        &self,
        ai: &Message,
        positions: &[usize],
        decisions: Vec<Decision>,
    ) -> Result<S::Update, HitlError> {
        if decisions.len() != positions.len() {
            return Err(HitlError::DecisionCount {
                decisions: decisions.len(),
                calls: positions.len(),
            });
        }
        let mut answers = Vec::new();
        let mut edits = BTreeMap::new();
        for (&at, decision) in positions.iter().zip(decisions) {
            let call = &ai.tool_calls[at];
            allowed(&self.interrupt_on[&call.name], call, &decision)?;
            match decision {
                Decision::Approve => {}
                Decision::Edit { edited_action } => {
                    if let Some(id) = call.id.as_ref().filter(|id| !id.is_empty()) {
                        edits.insert(id.clone(), edited_action);
                    }
                }
                other => answers.push(answer_for(call, other)),
            }
        }
        let messages = MessagesStateUpdate::new()
            .message(ai.clone())
            .messages(answers);
        let edits = EditsUpdate::new().hitl_edited_tool_calls(edits);
        Ok(S::lift(messages).with(edits))
    }
}

/// Whether `config` allows `decision` about `call`.
fn allowed<S>(
    config: &InterruptOn<S>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<(), HitlError> {
    if config.allowed_decisions.contains(&decision.kind()) {
        return Ok(());
    }
    Err(HitlError::NotAllowed {
        tool: call.name.clone(),
        call_id: call.id.clone().unwrap_or_default(),
        decision: decision.kind(),
        allowed: config.allowed_decisions.clone(),
    })
}

impl<S> HumanInTheLoop<S>
where
    S: HasPart<HumanInTheLoopState> + HasMessages + Send + Sync + 'static,
    S::Update: Send,
{
    /// Per call: pauses a reviewed call with its [`ToolApprovalRequest`],
    /// then runs it, runs the reviewer's arguments, or answers it.
    async fn per_call(
        &self,
        mut request: ToolCallRequest<S>,
        handler: ToolHandler<'_, S>,
    ) -> Result<ToolOutput<S>, ToolError> {
        let call = request.call.clone();
        let Some(config) = self.interrupt_on.get(&call.name) else {
            return handler.call(request).await;
        };
        let (state, node) = (request.state(), request.node());
        if config
            .when
            .as_ref()
            .is_some_and(|when| !when(&call, state, node))
        {
            return handler.call(request).await;
        }
        let (action, _) = self.action_and_config(&call, config, state, node);
        let paused = |e: crate::graph::Interrupted| ToolError::Failed {
            tool: call.name.clone(),
            error: Box::new(e),
        };
        let decision: Decision = node
            .interrupt(ToolApprovalRequest {
                tool_call_id: call.id.clone().unwrap_or_default(),
                name: call.name.clone(),
                args: call.args.clone(),
                description: action.description.unwrap_or_default(),
            })
            .map_err(paused)?;
        if let Err(refused) = per_call_check(config, &call, &decision) {
            let expected = "a decision this tool allows";
            return Err(paused(node.refuse_answer(expected, refused.to_string())));
        }
        match decision {
            Decision::Approve => handler.call(request).await,
            Decision::Edit { edited_action } => {
                request.call.args.clone_from(&edited_action.args);
                let output = handler.call(request).await?;
                Ok(match &self.edit_notice {
                    Some(text) => notice::annotate(output, text, &edited_action),
                    None => output,
                })
            }
            other => Ok(ToolOutput::message(answer_for(&call, other))),
        }
    }
}

/// A per-call decision's check: allowed, and an edit keeps the tool (the
/// interrupt's answer is about this call's tool).
fn per_call_check<S>(
    config: &InterruptOn<S>,
    call: &ToolCall,
    decision: &Decision,
) -> Result<(), HitlError> {
    allowed(config, call, decision)?;
    match decision {
        Decision::Edit { edited_action } if edited_action.name != call.name => {
            Err(HitlError::EditRenames {
                tool: call.name.clone(),
                call_id: call.id.clone().unwrap_or_default(),
                to: edited_action.name.clone(),
            })
        }
        _ => Ok(()),
    }
}

/// The tool message answering a rejected or responded call.
fn answer_for(call: &ToolCall, decision: Decision) -> Message {
    let id = call.id.as_deref().unwrap_or_default();
    let (text, status) = match decision {
        Decision::Respond { message } => (message, ToolStatus::Success),
        Decision::Reject {
            message: Some(reason),
        } if !reason.is_empty() => (
            format!(
                "User rejected the tool call for `{}` with reason: {reason}",
                call.name
            ),
            ToolStatus::Error,
        ),
        _ => (
            format!(
                "User rejected the tool call for `{}` with id {id}. The tool was not \
                 executed. Do not retry this tool call unless the user explicitly requests it.",
                call.name
            ),
            ToolStatus::Error,
        ),
    };
    answer_message(text.into(), id, &call.name, status)
}

impl<S> AgentMiddleware<S> for HumanInTheLoop<S>
where
    S: HasPart<HumanInTheLoopState> + HasMessages + Send + Sync + 'static,
    S::Update: Send,
{
    fn name(&self) -> &str {
        "HumanInTheLoopMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::AFTER_MODEL | Hooks::WRAP_TOOL_CALL
    }

    /// Reviews the last AI message's calls to reviewed tools: pauses with
    /// the [`HitlRequest`], and on resume applies the decisions.
    fn after_model(&self, state: &S, ctx: &NodeContext) -> HookResult<S> {
        if self.mode == InterruptMode::PerCall {
            // Calls pause one by one, in `wrap_tool_call`.
            return Ok(HookOutput::none());
        }
        let Some(ai) = last_ai(state.messages()).filter(|m| !m.tool_calls.is_empty()) else {
            return Ok(HookOutput::none());
        };
        let Review { positions, request } = self.review(&ai.tool_calls, state, ctx);
        if positions.is_empty() {
            // No review this turn: an earlier turn's edits must not apply.
            let part: &HumanInTheLoopState = state.part();
            if part.hitl_edited_tool_calls.is_empty() {
                return Ok(HookOutput::none());
            }
            let clear = EditsUpdate::new().hitl_edited_tool_calls(BTreeMap::new());
            return Ok(HookOutput::update(S::lift(clear)));
        }
        let response: HitlResponse = ctx.interrupt(request)?;
        let update = self.apply(ai, &positions, response.decisions)?;
        Ok(HookOutput::update(update))
    }

    /// Runs the reviewer's call in place of an edited one, its answer led
    /// by the edit notice.
    fn wrap_tool_call<'a>(
        &'a self,
        mut request: ToolCallRequest<S>,
        handler: ToolHandler<'a, S>,
    ) -> ToolFuture<'a, S> {
        if self.mode == InterruptMode::PerCall {
            return Box::pin(self.per_call(request, handler));
        }
        let part: &HumanInTheLoopState = request.state().part();
        let Some(executed) = part.hitl_edited_tool_calls.get(request.call_id()).cloned() else {
            return handler.call(request);
        };
        if executed.name != request.call.name {
            // The tools node finds the tool the edited call names.
            request.tool = None;
        }
        request.call.name.clone_from(&executed.name);
        request.call.args.clone_from(&executed.args);
        Box::pin(async move {
            let output = notice::named(handler.call(request).await?, &executed.name);
            Ok(match &self.edit_notice {
                Some(text) => notice::annotate(output, text, &executed),
                None => output,
            })
        })
    }
}

impl<S> Clone for HumanInTheLoop<S> {
    fn clone(&self) -> Self {
        Self {
            interrupt_on: self.interrupt_on.clone(),
            description_prefix: self.description_prefix.clone(),
            edit_notice: self.edit_notice.clone(),
            mode: self.mode,
        }
    }
}

/// Shows the reviewed tools and the texts (the callables have no `Debug`).
impl<S> std::fmt::Debug for HumanInTheLoop<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanInTheLoop")
            .field(
                "interrupt_on",
                &self.interrupt_on.keys().collect::<Vec<_>>(),
            )
            .field("description_prefix", &self.description_prefix)
            .field("edit_notice", &self.edit_notice)
            .finish()
    }
}
