//! LangChain's approximate token counter (`count_tokens_approximately`),
//! counting as it does, so a conversation reaches a token threshold at the
//! same message here as in LangChain.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::message::{Content, Message, MessageType};
use crate::pyrepr;

/// A function counting the tokens of messages: what the middleware that
/// measure context (summarization, context editing) take instead of LangChain's
/// approximate count.
pub type TokenCounter = Arc<dyn Fn(&[Message]) -> u64 + Send + Sync>;

/// The approximate number of tokens of `messages`, as LangChain's
/// `count_tokens_approximately` with its defaults (see
/// [`ApproximateTokenCounter`]).
///
/// ```
/// use agent_state::agent::middleware::count_tokens_approximately;
/// use agent_state::human;
///
/// // "hello" (5) + "user" (4) = 9 characters: 3 tokens, plus 3.
/// assert_eq!(count_tokens_approximately(&[human("hello")]), 6);
/// ```
pub fn count_tokens_approximately(messages: &[Message]) -> u64 {
    ApproximateTokenCounter::default().count(messages)
}

/// How [`ApproximateTokenCounter`] counts: LangChain's parameters of
/// `count_tokens_approximately`, with its defaults.
///
/// Per message: the characters (Unicode scalar values, as Python's `len`)
/// of its text content, of `repr(tool_calls)` for an AI message with text
/// content, of a tool message's call id, of its OpenAI role and of its
/// name, divided by `chars_per_token` and rounded up, plus
/// `extra_tokens_per_message`; an image block counts `tokens_per_image`.
///
/// ```
/// use agent_state::agent::middleware::ApproximateTokenCounter;
/// use agent_state::{ai, human};
///
/// // "hello" + "user" = 9 chars → 3 tokens, + 3; "hi!" + "assistant" = 12 → 3, + 3.
/// let counter = ApproximateTokenCounter::default();
/// assert_eq!(counter.count(&[human("hello"), ai("hi!")]), 12);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ApproximateTokenCounter {
    /// Characters per token (4.0; LangChain uses 3.3 for Anthropic models).
    pub chars_per_token: f64,
    /// Tokens added per message (3.0).
    pub extra_tokens_per_message: f64,
    /// Whether a message's name counts (true).
    pub count_name: bool,
    /// Tokens per image block (85).
    pub tokens_per_image: u64,
    /// Whether to scale the count by the last AI message's reported
    /// `usage_metadata.total_tokens` over the count up to it (between 1
    /// and 1.25), when every AI message has the same
    /// `response_metadata.model_provider` (false; the summarization
    /// middleware's default counter sets it).
    pub use_usage_metadata_scaling: bool,
}

impl Default for ApproximateTokenCounter {
    fn default() -> Self {
        Self {
            chars_per_token: 4.0,
            extra_tokens_per_message: 3.0,
            count_name: true,
            tokens_per_image: 85,
            use_usage_metadata_scaling: false,
        }
    }
}

/// The usage-scaling bookkeeping over the AI messages counted so far.
#[derive(Default)]
struct Scaling {
    provider: Option<String>,
    mixed: bool,
    last_total: Option<u64>,
    count_at_last: f64,
}

impl ApproximateTokenCounter {
    /// The approximate number of tokens of `messages`.
    pub fn count(&self, messages: &[Message]) -> u64 {
        let mut tokens = 0.0;
        let mut scaling = Scaling::default();
        for message in messages {
            let (chars, images) = self.chars_of(message);
            tokens += images as f64 * self.tokens_per_image as f64;
            tokens += (chars as f64 / self.chars_per_token).ceil();
            tokens += self.extra_tokens_per_message;
            if self.use_usage_metadata_scaling && message.kind == MessageType::Ai {
                scaling.see(message, tokens);
            }
        }
        if self.use_usage_metadata_scaling && messages.len() > 1 {
            tokens *= scaling.factor();
        }
        tokens.ceil() as u64
    }

    /// A message's characters, and how many image blocks it has.
    fn chars_of(&self, message: &Message) -> (usize, usize) {
        let (mut chars, mut images) = (0, 0);
        match &message.content {
            Content::Text(text) => chars += text.chars().count(),
            Content::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Value::String(text) => chars += text.chars().count(),
                        Value::Object(map) => match map.get("type").and_then(Value::as_str) {
                            Some("image" | "image_url") => images += 1,
                            Some("text") => {
                                chars += map
                                    .get("text")
                                    .and_then(Value::as_str)
                                    .map_or(0, |t| t.chars().count())
                            }
                            _ => chars += pyrepr::repr(block).chars().count(),
                        },
                        other => chars += pyrepr::repr(other).chars().count(),
                    }
                }
            }
        }
        // An AI message with blocks carries its calls in them (Anthropic's shape).
        let text_content = matches!(message.content, Content::Text(_));
        if message.kind == MessageType::Ai && text_content && !message.tool_calls.is_empty() {
            chars += pyrepr::repr(&tool_calls_value(message)).chars().count();
        }
        if message.kind == MessageType::Tool {
            chars += message
                .tool_call_id
                .as_deref()
                .map_or(0, |id| id.chars().count());
        }
        chars += openai_role(message).chars().count();
        if self.count_name {
            chars += message.name.as_deref().map_or(0, |n| n.chars().count());
        }
        (chars, images)
    }
}

impl Scaling {
    /// Notes an AI message, counted up to `tokens` with it.
    fn see(&mut self, message: &Message, tokens: f64) {
        let provider = message
            .response_metadata
            .get("model_provider")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // LangChain's check: the first provider seen (even none) is kept
        // until a message with a provider fills it; a different one after
        // that disables scaling.
        if self.provider.is_none() {
            self.provider = provider;
        } else if provider != self.provider {
            self.mixed = true;
        }
        let total = message
            .usage_metadata
            .as_ref()
            .and_then(|u| u.get("total_tokens"));
        if let Some(total) = total.and_then(Value::as_u64) {
            self.last_total = Some(total);
            self.count_at_last = tokens;
        }
    }

    fn factor(&self) -> f64 {
        match self.last_total {
            Some(total) if !self.mixed && self.provider.is_some() && self.count_at_last > 0.0 => {
                (total as f64 / self.count_at_last).clamp(1.0, 1.25)
            }
            _ => 1.0,
        }
    }
}

/// An AI message's tool calls as LangChain's `ToolCall` dicts.
pub(crate) fn tool_calls_value(message: &Message) -> Value {
    let calls = message
        .tool_calls
        .iter()
        .map(|c| json!({"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"}));
    Value::Array(calls.collect())
}

/// The role OpenAI gives the message (what LangChain counts): a system
/// message's `__openai_role__` (`"developer"`) when it has one.
fn openai_role(message: &Message) -> &str {
    match message.kind {
        MessageType::Human => "user",
        MessageType::Ai => "assistant",
        MessageType::Tool => "tool",
        MessageType::System => message
            .additional_kwargs
            .get("__openai_role__")
            .and_then(Value::as_str)
            .unwrap_or("system"),
    }
}
