//! LangChain's `SummarizationMiddleware`: when the conversation grows past
//! a trigger, a model summarises its older part, and the summary and the
//! newest messages replace the history.

use std::sync::Arc;

mod config;
mod input;
mod prompt;

pub use config::{ContextSize, SummarizationConfigError, TriggerClause};
pub use prompt::{DEFAULT_SUMMARY_PROMPT, SUMMARY_PREFIX};

use super::token_count::ApproximateTokenCounter;
use crate::agent::{
    AgentMiddleware, ChatModel, HookFuture, HookOutput, HookResult, Hooks, ModelError, ModelRequest,
};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::{BoxError, NodeContext};
use crate::message::{Message, MessageType};
use crate::RemoveMessage;
use config::Counter;
use input::{buffer_string_xml, trim_last};

/// Summarises the older part of the conversation before a model call once
/// it grows past a trigger, as LangChain's `SummarizationMiddleware`:
///
/// * **when**: any [`trigger`](Self::trigger) clause met (none: never),
///   counting tokens with LangChain's approximate counter (scaled by the
///   usage the model reported, as LangChain's default counter is) or
///   [your own](Self::token_counter); a token threshold is also met when
///   the last AI message reports that many `total_tokens` and names the
///   [provider](Self::model_provider) of the model.
/// * **what stays**: the last [`keep`](Self::keep) messages or tokens
///   (default 20 messages), the cut moved back to the AI message whose
///   tool calls the first kept tool messages answer, so a call and its
///   answers stay together.
/// * **the summary**: `model` is asked with the
///   [summary prompt](Self::summary_prompt) (default
///   [`DEFAULT_SUMMARY_PROMPT`]), whose `{messages}` becomes the messages
///   to summarise, newest kept within
///   [`trim_tokens_to_summarize`](Self::trim_tokens_to_summarize) tokens
///   (default 4,000), written as XML; a failed call is tried three times
///   in all (not a 4xx refusal), at once (LangChain waits between tries).
/// * **the update**: every message removed, then a human message
///   [`SUMMARY_PREFIX`] + the summary (`additional_kwargs.lc_source =
///   "summarization"`), then the kept messages.
///
/// The summary awaits a model, so the hook is
/// [`before_model_async`](AgentMiddleware::before_model_async), which the
/// agent calls; the sync `before_model` blocks on it.
///
/// ```
/// use agent_state::agent::middleware::{ContextSize, Summarization};
/// use agent_state::agent::{create_agent, input, ScriptedModel};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer};
/// use agent_state::{ai, AgentState};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
/// }
///
/// let summarizer = ScriptedModel::new([ai("They said hi twice.")]);
/// let summarize = Summarization::new(summarizer)
///     .trigger(ContextSize::Messages(3))?
///     .keep(ContextSize::Messages(1))?;
/// let model = ScriptedModel::new([ai("Hello!"), ai("Hello again!")]);
/// let agent = create_agent(model).middleware(summarize).compile()?;
/// let saver = MemoryCheckpointer::new();
/// block_on(agent.run(input::<Chat>("hi")).on_thread(&saver, "t"))?;
/// let out = block_on(agent.run(input::<Chat>("hi again")).on_thread(&saver, "t"))?;
/// let texts: Vec<String> = out.state.messages().iter().map(|m| m.text()).collect();
/// assert_eq!(texts, [
///     "Here is a summary of the conversation to date:\n\nThey said hi twice.",
///     "hi again",
///     "Hello again!",
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Summarization<M> {
    model: M,
    triggers: Vec<TriggerClause>,
    keep: ContextSize,
    counter: Counter,
    summary_prompt: String,
    trim_tokens_to_summarize: Option<u64>,
    max_input_tokens: Option<u64>,
    model_provider: Option<String>,
}

impl<M> Summarization<M> {
    /// Summaries by `model`, with LangChain's defaults: no trigger yet,
    /// keep 20 messages, the approximate token counter, the default
    /// prompt, 4,000 tokens of messages to summarise at most.
    pub fn new(model: M) -> Self {
        Self {
            model,
            triggers: Vec::new(),
            keep: ContextSize::Messages(20),
            counter: Counter::Approximate(ApproximateTokenCounter {
                use_usage_metadata_scaling: true,
                ..ApproximateTokenCounter::default()
            }),
            summary_prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
            trim_tokens_to_summarize: Some(4000),
            max_input_tokens: None,
            model_provider: None,
        }
    }

    /// The agent's model's maximum input tokens (LangChain reads it from
    /// the model's profile), which [`ContextSize::Fraction`] is a fraction
    /// of: set it before a fraction.
    #[must_use]
    pub fn max_input_tokens(mut self, tokens: u64) -> Self {
        self.max_input_tokens = Some(tokens);
        self
    }

    /// The provider of the agent's model (LangChain's `ls_provider`:
    /// `"openai"`, `"anthropic"`, ...): a token threshold is then also met
    /// by the `total_tokens` the last AI message reports, when its
    /// `response_metadata.model_provider` names that provider.
    #[must_use]
    pub fn model_provider(mut self, provider: impl Into<String>) -> Self {
        self.model_provider = Some(provider.into());
        self
    }

    /// Summarises when `size` is reached (or any other trigger is).
    pub fn trigger(self, size: ContextSize) -> Result<Self, SummarizationConfigError> {
        self.trigger_when(size.into())
    }

    /// Summarises when every threshold of `clause` is met (or any other
    /// trigger is).
    pub fn trigger_when(mut self, clause: TriggerClause) -> Result<Self, SummarizationConfigError> {
        if clause == TriggerClause::default() {
            return Err(SummarizationConfigError::EmptyClause);
        }
        let sizes = [
            clause.tokens.map(ContextSize::Tokens),
            clause.messages.map(ContextSize::Messages),
            clause.fraction.map(ContextSize::Fraction),
        ];
        for size in sizes.into_iter().flatten() {
            self.check(size, "trigger")?;
        }
        self.triggers.push(clause);
        Ok(self)
    }

    /// What stays after a summary (default 20 messages).
    pub fn keep(mut self, size: ContextSize) -> Result<Self, SummarizationConfigError> {
        self.check(size, "keep")?;
        self.keep = size;
        Ok(self)
    }

    /// Counts tokens with `counter` instead of the approximate counter.
    #[must_use]
    pub fn token_counter(
        mut self,
        counter: impl Fn(&[Message]) -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.counter = Counter::Custom(Arc::new(counter));
        self
    }

    /// Counts tokens with these approximate counter settings (LangChain
    /// uses 3.3 characters per token for Anthropic models).
    #[must_use]
    pub fn approximate_counter(mut self, counter: ApproximateTokenCounter) -> Self {
        self.counter = Counter::Approximate(counter);
        self
    }

    /// The summarising model's prompt; `{messages}` becomes the messages to
    /// summarise (LangChain formats it with `str.format`, so its other
    /// braces must be doubled there; here they are left as they are).
    #[must_use]
    pub fn summary_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.summary_prompt = prompt.into();
        self
    }

    /// At most this many tokens of messages are summarised, the newest
    /// (`None`: all).
    #[must_use]
    pub fn trim_tokens_to_summarize(mut self, tokens: Option<u64>) -> Self {
        self.trim_tokens_to_summarize = tokens;
        self
    }

    fn check(
        &self,
        size: ContextSize,
        parameter: &'static str,
    ) -> Result<(), SummarizationConfigError> {
        match size {
            ContextSize::Fraction(value) if !(value > 0.0 && value <= 1.0) => {
                Err(SummarizationConfigError::FractionOutOfRange { parameter, value })
            }
            ContextSize::Fraction(_) if self.max_input_tokens.is_none() => {
                Err(SummarizationConfigError::NoProfile)
            }
            ContextSize::Tokens(0) | ContextSize::Messages(0) => {
                Err(SummarizationConfigError::NotPositive { parameter })
            }
            _ => Ok(()),
        }
    }
}

/// The `ls_provider`s whose models tag their messages with another
/// `model_provider` (LangChain's aliases).
const PROVIDER_ALIASES: [(&str, &[&str]); 3] = [
    ("amazon_bedrock", &["bedrock", "bedrock_converse"]),
    ("openai-mantle", &["openai"]),
    ("anthropic-mantle", &["anthropic"]),
];

impl<M> Summarization<M> {
    /// `fraction` of the model's maximum input tokens (at least 1).
    fn of_max(&self, fraction: f64) -> Option<u64> {
        self.max_input_tokens
            .map(|max| ((max as f64 * fraction) as u64).max(1))
    }

    /// Whether a trigger is met by `messages`, of `total` tokens.
    fn should_summarize(&self, messages: &[Message], total: u64) -> bool {
        let tokens_met =
            |threshold: u64| total >= threshold || self.reported_at_least(messages, threshold);
        self.triggers.iter().any(|clause| {
            clause.messages.is_none_or(|m| messages.len() >= m)
                && clause.tokens.is_none_or(tokens_met)
                && clause
                    .fraction
                    .is_none_or(|f| self.of_max(f).is_some_and(tokens_met))
        })
    }

    /// Whether the last AI message reports at least `threshold` tokens
    /// and comes from the model's provider.
    fn reported_at_least(&self, messages: &[Message], threshold: u64) -> bool {
        let Some(provider) = self.model_provider.as_deref() else {
            return false;
        };
        let Some(last) = messages.iter().rev().find(|m| m.kind == MessageType::Ai) else {
            return false;
        };
        let reported = last
            .usage_metadata
            .as_ref()
            .and_then(|u| u.get("total_tokens"));
        let reported = reported.and_then(serde_json::Value::as_u64).unwrap_or(0);
        let from = last
            .response_metadata
            .get("model_provider")
            .and_then(serde_json::Value::as_str);
        let matches = |from: &str| {
            from == provider
                || PROVIDER_ALIASES
                    .iter()
                    .any(|(p, aliases)| *p == provider && aliases.contains(&from))
        };
        reported > 0 && reported >= threshold && from.is_some_and(matches)
    }

    /// Where the kept messages start (0: nothing to summarise).
    fn cutoff(&self, messages: &[Message]) -> usize {
        let target = match self.keep {
            ContextSize::Messages(keep) if messages.len() <= keep => return 0,
            ContextSize::Messages(keep) => return safe_cutoff(messages, messages.len() - keep),
            ContextSize::Tokens(tokens) => tokens,
            ContextSize::Fraction(f) => self.of_max(f).unwrap_or(1),
        };
        self.token_cutoff(messages, target.max(1))
    }

    /// The earliest start whose messages fit in `target` tokens (LangChain's
    /// binary search, as many steps as it takes), made safe.
    fn token_cutoff(&self, messages: &[Message], target: u64) -> usize {
        let n = messages.len();
        if n == 0 || self.counter.full(messages) <= target {
            return 0;
        }
        let (mut left, mut right, mut candidate) = (0, n, n);
        let steps = usize::BITS - n.leading_zeros() + 1;
        for _ in 0..steps {
            if left >= right {
                break;
            }
            let mid = (left + right) / 2;
            if self.counter.partial(&messages[mid..]) <= target {
                candidate = mid;
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        if candidate == n {
            candidate = left;
        }
        if candidate >= n {
            if n == 1 {
                return 0;
            }
            candidate = n - 1;
        }
        safe_cutoff(messages, candidate)
    }

    /// The summarising model's prompt for `old`, or the summary itself
    /// when there is nothing to ask (LangChain's two fixed texts).
    fn prompt(&self, old: &[Message]) -> Result<String, &'static str> {
        if old.is_empty() {
            return Err("No previous conversation history.");
        }
        let trimmed = match self.trim_tokens_to_summarize {
            Some(max) => trim_last(old, max, &|m: &[Message]| self.counter.full(m)),
            None => old.to_vec(),
        };
        if trimmed.is_empty() {
            return Err("Previous conversation was too long to summarize.");
        }
        let prompt = self
            .summary_prompt
            .replace("{messages}", &buffer_string_xml(&trimmed));
        Ok(prompt.trim_end().to_owned())
    }
}

/// `cutoff` moved so that it does not fall between an AI message and the
/// tool messages answering it: back to that AI message, or, when there is
/// none, past the tool messages.
fn safe_cutoff(messages: &[Message], cutoff: usize) -> usize {
    let is_tool = |i: usize| messages.get(i).is_some_and(|m| m.kind == MessageType::Tool);
    if !is_tool(cutoff) {
        return cutoff;
    }
    let mut end = cutoff;
    let mut ids: Vec<&str> = Vec::new();
    while is_tool(end) {
        ids.extend(messages[end].tool_call_id.as_deref());
        end += 1;
    }
    let answers = |m: &Message| {
        m.kind == MessageType::Ai
            && m.tool_calls
                .iter()
                .any(|c| c.id.as_deref().is_some_and(|id| ids.contains(&id)))
    };
    messages[..cutoff].iter().rposition(answers).unwrap_or(end)
}

/// Whether a failed summary call is worth another try: not a refusal of
/// the request itself (a 4xx other than timeout, conflict, rate limit),
/// nor the run's interrupt.
fn retryable(error: &ModelError) -> bool {
    let refused = matches!(error, ModelError::Api { status, .. } if (400..500).contains(status) && ![408, 409, 429].contains(status));
    !refused && !error.is_interrupt()
}

impl<M> Summarization<M> {
    /// The summary of `old`, by the model (tried three times in all).
    async fn summarize<S>(&self, state: &S, old: &[Message]) -> Result<String, ModelError>
    where
        M: ChatModel<S>,
        S: HasMessages + Clone,
    {
        let prompt = match self.prompt(old) {
            Ok(prompt) => prompt,
            Err(fixed) => return Ok(fixed.to_owned()),
        };
        let request = ModelRequest::new(Arc::new(state.clone()))
            .with_messages(vec![Message::new(MessageType::Human, prompt)]);
        let mut attempt = 1;
        loop {
            match self.model.invoke(&request).await {
                Ok(reply) => return Ok(reply.text().trim().to_owned()),
                Err(e) if attempt < 3 && retryable(&e) => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The hook's work: the update replacing the history, if it is due.
    async fn replace_history<S>(&self, state: &S) -> Result<Option<S::Update>, BoxError>
    where
        M: ChatModel<S>,
        S: HasMessages + Clone,
    {
        let messages: &[Message] = state.messages();
        let total = self.counter.full(messages);
        if !self.should_summarize(messages, total) {
            return Ok(None);
        }
        let cutoff = self.cutoff(messages);
        if cutoff == 0 {
            return Ok(None);
        }
        let (old, kept) = messages.split_at(cutoff);
        let summary = self.summarize(state, old).await?;
        let mut message = Message::new(MessageType::Human, format!("{SUMMARY_PREFIX}{summary}"));
        message
            .additional_kwargs
            .insert("lc_source".into(), "summarization".into());
        let update = MessagesStateUpdate::new()
            .message(RemoveMessage::all())
            .message(message)
            .messages(kept.to_vec());
        Ok(Some(S::lift(update)))
    }
}

impl<S, M> AgentMiddleware<S> for Summarization<M>
where
    S: HasMessages + Clone + Send + Sync,
    M: ChatModel<S>,
{
    fn name(&self) -> &str {
        "SummarizationMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_MODEL
    }

    /// Refuses: the hook awaits its model, and blocking on it here could
    /// stall the runtime the model needs. The agent calls
    /// [`before_model_async`](Self::before_model_async).
    fn before_model(&self, _: &S, _: &NodeContext) -> HookResult<S> {
        Err("Summarization's before_model awaits its model: call before_model_async".into())
    }

    fn before_model_async<'a>(&'a self, state: &'a S, _: &'a NodeContext) -> HookFuture<'a, S>
    where
        S: Sync,
    {
        Box::pin(async move {
            Ok(match self.replace_history(state).await? {
                Some(update) => HookOutput::update(update),
                None => HookOutput::none(),
            })
        })
    }
}
