//! [`ModelFallback`]: other models to try, in order, when the agent's model
//! fails (LangChain's `ModelFallbackMiddleware`).

use std::sync::Arc;

use crate::agent::{AgentMiddleware, ChatModel, Hooks, ModelFuture, ModelHandler, ModelRequest};
use crate::state::AgentState;

/// Sends a failed model call to fallback models, in order, as LangChain's
/// `ModelFallbackMiddleware`: the request first goes to the model it names
/// (the agent's); on any error (interrupts excepted) it goes, unchanged but
/// for the model, to the first fallback, then the next; the first answer
/// wins, and when every model failed the last error is returned. Every
/// error falls through, as in LangChain (a bad request too: the fallback
/// may be a model that takes it).
///
/// Deliberate difference: LangChain also strips Anthropic's prompt-cache
/// settings from a request bound for another provider; our requests carry
/// no provider-specific settings, so there is nothing to strip.
///
/// ```
/// use agent_state::agent::middleware::ModelFallback;
/// use agent_state::agent::{create_agent, input, FnModel, ModelError, ScriptedModel};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::block_on;
/// # use agent_state::AgentState;
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat { #[state(flatten)] base: MessagesState }
/// use agent_state::ai;
///
/// let down = FnModel(|_: &_| Err(ModelError::Api { status: 503, message: "down".into() }));
/// let backup = ScriptedModel::new([ai("from the backup")]);
/// let agent = create_agent(down)
///     .middleware(ModelFallback::<Chat>::new(backup))
///     .compile()?;
/// let out = block_on(agent.run(input::<Chat>("hi")))?;
/// assert_eq!(out.state.messages().last().unwrap().text(), "from the backup");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ModelFallback<S> {
    models: Vec<Arc<dyn ChatModel<S>>>,
}

impl<S> ModelFallback<S> {
    /// Falls back to `model` (LangChain's `first_model`).
    pub fn new(model: impl ChatModel<S> + 'static) -> Self {
        Self {
            models: vec![Arc::new(model)],
        }
    }

    /// Then to `model`, when those before it failed too.
    #[must_use]
    pub fn then(mut self, model: impl ChatModel<S> + 'static) -> Self {
        self.models.push(Arc::new(model));
        self
    }

    /// Then to a shared `model`.
    #[must_use]
    pub fn then_shared(mut self, model: Arc<dyn ChatModel<S>>) -> Self {
        self.models.push(model);
        self
    }

    /// How many fallback models there are.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Always false: it is built with one model at least.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

impl<S: AgentState + Send + Sync + 'static> AgentMiddleware<S> for ModelFallback<S> {
    fn name(&self) -> &str {
        "ModelFallbackMiddleware"
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
            let mut last = match handler.call(request.clone()).await {
                Ok(response) => return Ok(response),
                Err(error) if error.is_interrupt() => return Err(error),
                Err(error) => error,
            };
            for (index, model) in self.models.iter().enumerate() {
                tracing::info!(fallback = index + 1, error = %last, "model call failed; trying a fallback model");
                let attempt = request.clone().with_model(Arc::clone(model));
                match handler.call(attempt).await {
                    Ok(response) => return Ok(response),
                    Err(error) if error.is_interrupt() => return Err(error),
                    Err(error) => last = error,
                }
            }
            Err(last)
        })
    }
}
