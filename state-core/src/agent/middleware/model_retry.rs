//! [`ModelRetry`]: retries failed model calls with exponential backoff
//! (LangChain's `ModelRetryMiddleware`).

use std::sync::Arc;

use super::retry::{Backoff, GaveUp, OnFailure, RetryConfigError, RetryPolicy};
use crate::agent::{
    AgentMiddleware, Hooks, ModelError, ModelFuture, ModelHandler, ModelRequest, ModelResponse,
};
use crate::message::ai;
use crate::state::AgentState;

/// Retries a failed model call up to `max_retries` times, waiting an
/// exponential [`Backoff`] between attempts, as LangChain's
/// `ModelRetryMiddleware`. By default it retries what
/// [`ModelError::is_retryable`] says (rate limits, 5xx, timeouts, an
/// unreachable provider, unreadable answers, other errors) and lets the
/// rest (a bad key, a bad request) fail at once; interrupts always pass.
/// Once the attempts are spent it answers, by default, with an AI message
/// in LangChain's words (`Model call failed after 3 attempts with
/// ModelRateLimitError: ...`) so the agent ends its turn instead of
/// failing; [`OnFailure::Error`] returns the error instead.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use agent_state::agent::middleware::{Backoff, ModelRetry};
/// use agent_state::agent::{create_agent, input, FnModel, ModelError};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::block_on;
/// # use agent_state::AgentState;
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat { #[state(flatten)] base: MessagesState }
/// use agent_state::ai;
///
/// let calls = AtomicUsize::new(0);
/// let flaky = FnModel(move |_: &_| match calls.fetch_add(1, Ordering::SeqCst) {
///     0 => Err(ModelError::RateLimited { message: "slow down".into(), retry_after: None }),
///     _ => Ok(ai("hello")),
/// });
/// let retry = ModelRetry::new().backoff(Backoff::default().initial_delay(Duration::ZERO));
/// let agent = create_agent(flaky).middleware(retry).compile()?;
/// let out = block_on(agent.run(input::<Chat>("hi")))?;
/// assert_eq!(out.state.messages().last().unwrap().text(), "hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ModelRetry {
    policy: RetryPolicy<ModelError>,
}

impl Default for ModelRetry {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelRetry {
    /// LangChain's defaults: 2 retries, [`ModelError::is_retryable`],
    /// [`OnFailure::Continue`], [`Backoff::default`] (1 s, ×2, ≤ 60 s,
    /// jitter).
    pub fn new() -> Self {
        Self {
            policy: RetryPolicy::new(Arc::new(ModelError::is_retryable)),
        }
    }

    /// How many times to retry after the first attempt (0: never).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.policy.max_retries = retries;
        self
    }

    /// Retries the errors `retry_on` accepts (interrupts never).
    #[must_use]
    pub fn retry_on(
        mut self,
        retry_on: impl Fn(&ModelError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.policy.retry_on = Arc::new(retry_on);
        self
    }

    /// What to do once the attempts are spent.
    #[must_use]
    pub fn on_failure(mut self, on_failure: OnFailure<ModelError>) -> Self {
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

    /// The answer once `attempts` attempts failed with `error`.
    fn give_up(&self, error: ModelError, attempts: u32) -> Result<ModelResponse, ModelError> {
        let text = self.policy.failure_text(error, attempts, |error, word| {
            format!(
                "Model call failed after {attempts} {word} with {}: {}",
                error.kind_name(),
                error.message()
            )
        })?;
        tracing::warn!(attempts, "model call failed; answering with a message");
        Ok(ModelResponse::new(ai(text)))
    }
}

impl<S: AgentState + Send + Sync> AgentMiddleware<S> for ModelRetry {
    fn name(&self) -> &str {
        "ModelRetryMiddleware"
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
            let call = || handler.call(request.clone());
            match self
                .policy
                .run(ModelError::is_interrupt, "model", call)
                .await
            {
                Ok(response) => Ok(response),
                Err(GaveUp { error, spent: None }) => Err(error),
                Err(GaveUp {
                    error,
                    spent: Some(attempts),
                }) => self.give_up(error, attempts),
            }
        })
    }
}
