//! [`ToolRetry`]: retries failed tool calls with exponential backoff
//! (LangChain's `ToolRetryMiddleware`).

use std::sync::Arc;

use super::retry::{Backoff, GaveUp, OnFailure, RetryConfigError, RetryPolicy};
use crate::agent::{
    AgentMiddleware, Hooks, ToolCallRequest, ToolError, ToolFuture, ToolHandler, ToolOutput,
};
use crate::message::{Message, MessageType, ToolStatus};
use crate::state::AgentState;

/// Retries a failed tool call up to `max_retries` times, waiting an
/// exponential [`Backoff`] between attempts, as LangChain's
/// `ToolRetryMiddleware`; [`tools`](Self::tools) limits it to some tools.
///
/// By default it retries a tool's own failures ([`ToolError::Failed`],
/// [`ToolError::Panicked`]): the exceptions that reach LangChain's
/// middleware. Bad arguments, unknown tools and unanswered updates are not
/// retried (LangChain's tools node answers those itself; the same call
/// would fail the same way), nor interrupts. Once the attempts are spent it
/// answers, by default, with an error tool message in LangChain's words:
/// `Tool 'search' failed after 3 attempts with ToolError: timeout. Please
/// try again.`
///
/// Deliberate differences: the error's type is ours (`ToolError` for a
/// tool's error, `Panic` for a panic), where LangChain prints the Python
/// exception's class; and with [`OnFailure::Error`] the error goes back to
/// the agent, which answers the call with it as it answers every tool
/// error, where LangChain's run fails.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use agent_state::agent::middleware::{Backoff, ToolRetry};
/// use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::block_on;
/// # use agent_state::AgentState;
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat { #[state(flatten)] base: MessagesState }
/// use agent_state::{ai, ToolCall};
///
/// let tries = AtomicUsize::new(0);
/// let flaky = FnTool::sync("fetch", "Fetches", move |_: serde_json::Value, _: &ToolRuntime<Chat>| {
///     if tries.fetch_add(1, Ordering::SeqCst) < 2 { Err("timeout") } else { Ok("page") }
/// });
/// let call = ToolCall::new("fetch", Default::default(), "c1");
/// let model = ScriptedModel::new([ai("").with_tool_call(call), ai("done")]);
/// let retry = ToolRetry::new().backoff(Backoff::default().initial_delay(Duration::ZERO));
/// let agent = create_agent(model).tool(flaky).middleware(retry).compile()?;
/// let out = block_on(agent.run(input::<Chat>("go")))?;
/// assert_eq!(out.state.messages()[2].text(), "page");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ToolRetry {
    policy: RetryPolicy<ToolError>,
    tools: Option<Vec<String>>,
}

impl Default for ToolRetry {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a tool error is one LangChain's middleware would see raised:
/// the tool's own failure, not an interrupt it returned.
pub fn tool_failed(error: &ToolError) -> bool {
    match error {
        error @ ToolError::Failed { .. } => !error.is_interrupt(),
        ToolError::Panicked { .. } => true,
        _ => false,
    }
}

impl ToolRetry {
    /// LangChain's defaults: 2 retries, every tool, [`tool_failed`]
    /// errors, [`OnFailure::Continue`], [`Backoff::default`].
    pub fn new() -> Self {
        Self {
            policy: RetryPolicy::new(Arc::new(tool_failed)),
            tools: None,
        }
    }

    /// How many times to retry after the first attempt (0: never).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.policy.max_retries = retries;
        self
    }

    /// Retries only calls of these tools (by name); the others pass
    /// through untouched.
    #[must_use]
    pub fn tools<I: IntoIterator<Item = T>, T: Into<String>>(mut self, names: I) -> Self {
        self.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Retries the errors `retry_on` accepts (interrupts never).
    #[must_use]
    pub fn retry_on(
        mut self,
        retry_on: impl Fn(&ToolError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.policy.retry_on = Arc::new(retry_on);
        self
    }

    /// What to do once the attempts are spent.
    #[must_use]
    pub fn on_failure(mut self, on_failure: OnFailure<ToolError>) -> Self {
        self.policy.on_failure = on_failure;
        self
    }

    /// The waits between attempts.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.policy.backoff = backoff;
        self
    }

    /// Sets the backoff factor on the current backoff: an error naming it
    /// when negative.
    pub fn backoff_factor(mut self, factor: f64) -> Result<Self, RetryConfigError> {
        self.policy.backoff = self.policy.backoff.backoff_factor(factor)?;
        Ok(self)
    }

    fn covers(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool))
    }

    /// The answer once `attempts` attempts of `tool` failed with `error`.
    fn give_up<S: AgentState>(
        &self,
        tool: &str,
        error: ToolError,
        attempts: u32,
    ) -> Result<ToolOutput<S>, ToolError> {
        let text = self.policy.failure_text(error, attempts, |error, word| {
            format!(
                "Tool '{tool}' failed after {attempts} {word} with {}: {}. Please try again.",
                kind_name(error),
                own_message(error)
            )
        })?;
        let mut message = Message::new(MessageType::Tool, text);
        message.name = Some(tool.to_owned());
        message.status = Some(ToolStatus::Error);
        Ok(ToolOutput::message(message))
    }
}

/// The error's type, as the failure message names it.
fn kind_name(error: &ToolError) -> &'static str {
    match error {
        ToolError::Failed { .. } => "ToolError",
        ToolError::Panicked { .. } => "Panic",
        ToolError::UnknownTool { .. } => "UnknownTool",
        ToolError::InvalidArguments { .. } => "InvalidArguments",
        ToolError::Unanswered { .. } => "Unanswered",
    }
}

/// The error's own message, without the prefix the agent's answer adds.
fn own_message(error: &ToolError) -> String {
    match error {
        ToolError::Failed { error, .. } => error.to_string(),
        ToolError::Panicked { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

impl<S: AgentState + Send + Sync> AgentMiddleware<S> for ToolRetry
where
    S::Update: Send,
{
    fn name(&self) -> &str {
        "ToolRetryMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_TOOL_CALL
    }

    fn wrap_tool_call<'a>(
        &'a self,
        request: ToolCallRequest<S>,
        handler: ToolHandler<'a, S>,
    ) -> ToolFuture<'a, S> {
        if !self.covers(&request.call.name) {
            return handler.call(request);
        }
        Box::pin(async move {
            let tool = request.call.name.clone();
            let call = || handler.call(request.clone());
            match self.policy.run(ToolError::is_interrupt, &tool, call).await {
                Ok(output) => Ok(output),
                Err(GaveUp { error, spent: None }) => Err(error),
                Err(GaveUp {
                    error,
                    spent: Some(attempts),
                }) => self.give_up(&tool, error, attempts),
            }
        })
    }
}
