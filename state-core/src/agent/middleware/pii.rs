//! [`Pii`]: finds personal data in the conversation and redacts, masks,
//! hashes or blocks it (LangChain's `PIIMiddleware`).

use std::fmt;

use serde_json::Value;

use super::pii_detect::{
    apply_strategy, builtin_detector, pattern_detector, Detector, PiiMatch, PiiStrategy,
    BUILTIN_PII,
};
use crate::agent::{AgentMiddleware, HookOutput, HookResult, Hooks};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::NodeContext;
use crate::message::{Content, Message, MessageType};

/// Why a [`Pii`] did not build, or stopped a run.
#[derive(Debug)]
#[non_exhaustive]
pub enum PiiError {
    /// No built-in detector has this type, and none was given.
    UnknownType {
        /// The type asked for.
        kind: String,
    },
    /// A custom pattern does not compile.
    BadPattern {
        /// The PII type it was for.
        kind: String,
        /// The regex crate's message.
        error: String,
    },
    /// PII was found under [`PiiStrategy::Block`] (LangChain's
    /// `PIIDetectionError`).
    Detected {
        /// The type of the first match.
        kind: String,
        /// What was found.
        matches: Vec<PiiMatch>,
    },
}

impl fmt::Display for PiiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownType { kind } => write!(
                f,
                "Unknown PII type: {kind}. Must be one of {BUILTIN_PII:?} or provide a custom detector."
            ),
            Self::BadPattern { kind, error } => {
                write!(f, "the pattern of PII type `{kind}` does not compile: {error}")
            }
            Self::Detected { kind, matches } => write!(
                f,
                "Detected {} instance(s) of {kind} in text content",
                matches.len()
            ),
        }
    }
}

impl std::error::Error for PiiError {}

/// Finds one type of PII and redacts, masks, hashes or blocks it, as
/// LangChain's `PIIMiddleware`: in the last human message before each
/// model call (`apply_to_input`, on by default), in the tool results since
/// the last AI message (`apply_to_tool_results`), in the model's answer
/// after each call (`apply_to_output`). The changed messages replace the
/// originals in the state (same ids); [`PiiStrategy::Block`] stops the run
/// with [`PiiError::Detected`]. Text blocks of block content are processed
/// one by one. Add one per type; names are `PIIMiddleware[<type>]`.
///
/// Deliberate difference: LangChain also redacts the model's streamed
/// tokens when `apply_to_output` is on; here the stored answer is
/// redacted, the streamed chunks are not.
///
/// ```
/// use agent_state::agent::middleware::{Pii, PiiStrategy};
/// use agent_state::agent::{create_agent, input, ScriptedModel};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::block_on;
/// use agent_state::{ai, AgentState};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
/// }
///
/// let email = Pii::new("email")?.strategy(PiiStrategy::Mask);
/// assert_eq!(email.apply("mail ann@example.com")?, "mail ann@****.com");
/// let agent = create_agent(ScriptedModel::new([ai("ok")])).middleware(email).compile()?;
/// let out = block_on(agent.run(input::<Chat>("I am ann@example.com")))?;
/// assert_eq!(out.state.messages()[0].text(), "I am ann@****.com");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Pii {
    kind: String,
    name: String,
    strategy: PiiStrategy,
    detector: Detector,
    input: bool,
    output: bool,
    tool_results: bool,
}

impl fmt::Debug for Pii {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pii")
            .field("kind", &self.kind)
            .field("strategy", &self.strategy)
            .field("apply_to_input", &self.input)
            .field("apply_to_output", &self.output)
            .field("apply_to_tool_results", &self.tool_results)
            .finish_non_exhaustive()
    }
}

impl Pii {
    /// A built-in type (`email`, `credit_card`, `ip`, `mac_address`,
    /// `url`); an error naming it otherwise.
    pub fn new(kind: &str) -> Result<Self, PiiError> {
        let detector = builtin_detector(kind).ok_or_else(|| PiiError::UnknownType {
            kind: kind.to_owned(),
        })?;
        Ok(Self::with_detector(kind, detector))
    }

    /// A custom type found by a regular expression (LangChain's
    /// `detector="<regex>"`); an error naming the type when it does not
    /// compile.
    pub fn with_pattern(kind: &str, pattern: &str) -> Result<Self, PiiError> {
        let re = regex::Regex::new(pattern).map_err(|e| PiiError::BadPattern {
            kind: kind.to_owned(),
            error: e.to_string(),
        })?;
        Ok(Self::with_detector(kind, pattern_detector(kind, re)))
    }

    /// A type found by `detector` (a built-in type's name may be given a
    /// detector of one's own).
    pub fn with_detector(kind: &str, detector: Detector) -> Self {
        Self {
            kind: kind.to_owned(),
            name: format!("PIIMiddleware[{kind}]"),
            strategy: PiiStrategy::Redact,
            detector,
            input: true,
            output: false,
            tool_results: false,
        }
    }

    /// What to do with what is found (default [`PiiStrategy::Redact`]).
    #[must_use]
    pub fn strategy(mut self, strategy: PiiStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Whether to check the last human message before each model call
    /// (default on).
    #[must_use]
    pub fn apply_to_input(mut self, on: bool) -> Self {
        self.input = on;
        self
    }

    /// Whether to check the model's answer after each call (default off).
    #[must_use]
    pub fn apply_to_output(mut self, on: bool) -> Self {
        self.output = on;
        self
    }

    /// Whether to check the tool results since the last AI message before
    /// each model call (default off).
    #[must_use]
    pub fn apply_to_tool_results(mut self, on: bool) -> Self {
        self.tool_results = on;
        self
    }

    /// `text` with this type's PII handled by the strategy; the error for
    /// [`PiiStrategy::Block`] when there is some.
    pub fn apply(&self, text: &str) -> Result<String, PiiError> {
        Ok(self.apply_changed(text)?.unwrap_or_else(|| text.to_owned()))
    }

    /// The text changed, or `None` when it has no PII of this type.
    fn apply_changed(&self, text: &str) -> Result<Option<String>, PiiError> {
        let matches = (self.detector)(text);
        if matches.is_empty() {
            return Ok(None);
        }
        match apply_strategy(text, &matches, self.strategy) {
            Some(changed) => Ok(Some(changed)),
            None => Err(PiiError::Detected {
                kind: matches[0].kind.clone(),
                matches,
            }),
        }
    }

    /// The content with PII handled, or `None` when nothing changed.
    fn process(&self, content: &Content) -> Result<Option<Content>, PiiError> {
        match content {
            Content::Text(text) => Ok(self.apply_changed(text)?.map(Content::Text)),
            Content::Blocks(blocks) => {
                let mut changed = false;
                let mut out = Vec::with_capacity(blocks.len());
                for block in blocks {
                    out.push(match self.process_block(block)? {
                        Some(new) => {
                            changed = true;
                            new
                        }
                        None => block.clone(),
                    });
                }
                Ok(changed.then_some(Content::Blocks(out)))
            }
        }
    }

    /// A block (a string, or an object with a `text` string) with PII
    /// handled, or `None` when nothing changed.
    fn process_block(&self, block: &Value) -> Result<Option<Value>, PiiError> {
        match block {
            Value::String(text) => Ok(self.apply_changed(text)?.map(Value::String)),
            Value::Object(map) => {
                let Some(Value::String(text)) = map.get("text") else {
                    return Ok(None);
                };
                Ok(self.apply_changed(text)?.map(|new| {
                    let mut map = map.clone();
                    map.insert("text".to_owned(), Value::String(new));
                    Value::Object(map)
                }))
            }
            _ => Ok(None),
        }
    }

    /// `message` with its content processed, when that changed it; empty
    /// content is left alone, as LangChain leaves it.
    fn rewrite(&self, message: &Message) -> Result<Option<Message>, PiiError> {
        if is_empty(&message.content) {
            return Ok(None);
        }
        Ok(self.process(&message.content)?.map(|content| Message {
            content,
            ..message.clone()
        }))
    }

    /// The rewritten messages a `before_model` hook writes.
    fn before_model_messages(&self, messages: &[Message]) -> Result<Vec<Message>, PiiError> {
        let mut changed = Vec::new();
        if self.input {
            let last_human = messages.iter().rev().find(|m| m.kind == MessageType::Human);
            if let Some(new) = last_human.map(|m| self.rewrite(m)).transpose()?.flatten() {
                changed.push(new);
            }
        }
        if self.tool_results {
            if let Some(last_ai) = messages.iter().rposition(|m| m.kind == MessageType::Ai) {
                for message in &messages[last_ai + 1..] {
                    if message.kind == MessageType::Tool {
                        changed.extend(self.rewrite(message)?);
                    }
                }
            }
        }
        Ok(changed)
    }
}

fn is_empty(content: &Content) -> bool {
    match content {
        Content::Text(text) => text.is_empty(),
        Content::Blocks(blocks) => blocks.is_empty(),
    }
}

fn write<S: HasMessages>(messages: Vec<Message>) -> HookResult<S> {
    if messages.is_empty() {
        return Ok(HookOutput::none());
    }
    Ok(HookOutput::update(S::lift(
        MessagesStateUpdate::new().messages(messages),
    )))
}

impl<S: HasMessages> AgentMiddleware<S> for Pii {
    fn name(&self) -> &str {
        &self.name
    }

    fn hooks(&self) -> Hooks {
        let mut hooks = Hooks::NONE;
        if self.input || self.tool_results {
            hooks = hooks | Hooks::BEFORE_MODEL;
        }
        if self.output {
            hooks = hooks | Hooks::AFTER_MODEL;
        }
        hooks
    }

    fn before_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        write::<S>(self.before_model_messages(state.messages())?)
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        if !self.output {
            return Ok(HookOutput::none());
        }
        let last_ai = state
            .messages()
            .iter()
            .rev()
            .find(|m| m.kind == MessageType::Ai);
        let changed = last_ai.map(|m| self.rewrite(m)).transpose()?.flatten();
        write::<S>(changed.into_iter().collect())
    }
}
