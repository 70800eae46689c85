//! [`ContextEditing`]: trims what a model call is sent once the
//! conversation is long, by clearing old tool results
//! ([`ClearToolUses`]), as LangChain's `ContextEditingMiddleware`.

use std::fmt;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::token_count::{count_tokens_approximately, TokenCounter};
use crate::agent::{AgentMiddleware, Hooks, ModelFuture, ModelHandler, ModelRequest};
use crate::base::HasMessages;
use crate::message::{Content, Message, MessageType};
use crate::state::AgentState;

/// One way of editing the messages a model call is sent: LangChain's
/// `ContextEdit` protocol.
pub trait ContextEdit: Send + Sync {
    /// Edits `messages` in place, counting tokens with `count`.
    fn apply(&self, messages: &mut Vec<Message>, count: &dyn Fn(&[Message]) -> u64);
}

/// Clears the results of old tool calls once the messages pass `trigger`
/// tokens: LangChain's `ClearToolUsesEdit`. The `keep` latest tool
/// results stay; older ones, oldest first, get the placeholder as content
/// (and lose their artifact), marked `response_metadata.context_editing =
/// {"cleared": true, "strategy": "clear_tool_uses"}`; tools in
/// `exclude_tools` are kept; with `clear_tool_inputs` the calling AI
/// message's arguments for that call are emptied too (its metadata lists
/// `cleared_tool_inputs`); with `clear_at_least` it stops once that many
/// tokens are gone. Defaults are LangChain's: 100,000 tokens, keep 3,
/// `[cleared]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClearToolUses {
    /// Tokens above which it clears (default 100,000).
    pub trigger: u64,
    /// Tokens to clear at least before stopping (default 0: clear every
    /// candidate).
    pub clear_at_least: u64,
    /// The latest tool results kept whole (default 3).
    pub keep: usize,
    /// Whether to empty the cleared calls' arguments too (default off).
    pub clear_tool_inputs: bool,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
    /// The content of a cleared result (default `[cleared]`).
    pub placeholder: String,
}

impl Default for ClearToolUses {
    fn default() -> Self {
        Self {
            trigger: 100_000,
            clear_at_least: 0,
            keep: 3,
            clear_tool_inputs: false,
            exclude_tools: Vec::new(),
            placeholder: "[cleared]".to_owned(),
        }
    }
}

impl ContextEdit for ClearToolUses {
    fn apply(&self, messages: &mut Vec<Message>, count: &dyn Fn(&[Message]) -> u64) {
        let tokens = count(messages);
        if tokens <= self.trigger {
            return;
        }
        let mut candidates: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].kind == MessageType::Tool)
            .collect();
        candidates.truncate(candidates.len().saturating_sub(self.keep));
        for index in candidates {
            if !self.clear_one(messages, index) {
                continue;
            }
            if self.clear_at_least > 0
                && tokens.saturating_sub(count(messages)) >= self.clear_at_least
            {
                break;
            }
        }
    }
}

impl ClearToolUses {
    /// Clears the tool result at `index` if it may be: whether it did.
    fn clear_one(&self, messages: &mut [Message], index: usize) -> bool {
        let result = &messages[index];
        if already_cleared(result) {
            return false;
        }
        let call_id = result.tool_call_id.clone().unwrap_or_default();
        let Some(ai) = messages[..index]
            .iter()
            .rposition(|m| m.kind == MessageType::Ai)
        else {
            return false;
        };
        let Some(call) = messages[ai]
            .tool_calls
            .iter()
            .find(|c| c.id.as_deref() == Some(call_id.as_str()))
        else {
            return false;
        };
        let tool = result.name.as_deref().unwrap_or(&call.name);
        if self.exclude_tools.iter().any(|t| t == tool) {
            return false;
        }
        let result = &mut messages[index];
        result.content = Content::Text(self.placeholder.clone());
        result.artifact = None;
        result.response_metadata.insert(
            "context_editing".to_owned(),
            json!({"cleared": true, "strategy": "clear_tool_uses"}),
        );
        if self.clear_tool_inputs {
            clear_inputs(&mut messages[ai], &call_id);
        }
        true
    }
}

fn already_cleared(message: &Message) -> bool {
    message
        .response_metadata
        .get("context_editing")
        .and_then(|c| c.get("cleared"))
        .is_some_and(|c| !matches!(c, Value::Null | Value::Bool(false)))
}

/// Empties the arguments of call `call_id` in `ai` and lists the id in
/// its `context_editing.cleared_tool_inputs` (sorted, as LangChain).
fn clear_inputs(ai: &mut Message, call_id: &str) {
    let mut cleared_any = false;
    for call in &mut ai.tool_calls {
        if call.id.as_deref() == Some(call_id) {
            call.args = Map::new();
            cleared_any = true;
        }
    }
    if !cleared_any {
        return;
    }
    let entry = ai
        .response_metadata
        .entry("context_editing")
        .or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    let mut ids: Vec<String> = entry
        .get("cleared_tool_inputs")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    ids.push(call_id.to_owned());
    ids.sort();
    ids.dedup();
    entry["cleared_tool_inputs"] = json!(ids);
}

/// Edits the messages of every model call, as LangChain's
/// `ContextEditingMiddleware`: each edit in turn on a copy of the request's
/// messages, counting tokens approximately
/// ([`count_tokens_approximately`]) unless given a counter. The state
/// keeps every message: only what the model is sent changes.
///
/// Deliberate difference: LangChain's `token_count_method="model"` asks
/// the chat model to count; our models do not count, so pass a
/// [`token_counter`](Self::token_counter) for an exact count.
///
/// ```
/// use agent_state::agent::middleware::{ClearToolUses, ContextEditing};
/// use agent_state::{ai, human, tool, ToolCall};
///
/// let editing = ContextEditing::new()
///     .edit(ClearToolUses { trigger: 20, keep: 1, ..ClearToolUses::default() });
/// let call = |id: &str| ai("").with_tool_call(ToolCall::new("search", Default::default(), id));
/// let history = vec![
///     human("find it"),
///     call("c1"),
///     tool("a long result nobody needs any more", "c1"),
///     call("c2"),
///     tool("the latest result", "c2"),
/// ];
/// // What a model call is sent (the agent's state keeps the originals):
/// let sent = editing.apply(&history);
/// assert_eq!(sent[2].text(), "[cleared]");
/// assert_eq!(sent[4].text(), "the latest result");
/// ```
#[derive(Clone)]
pub struct ContextEditing {
    edits: Vec<Arc<dyn ContextEdit>>,
    counter: TokenCounter,
}

impl fmt::Debug for ContextEditing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextEditing")
            .field("edits", &self.edits.len())
            .finish_non_exhaustive()
    }
}

impl Default for ContextEditing {
    fn default() -> Self {
        Self::new()
    }
}

impl ContextEditing {
    /// No edits yet: [`ClearToolUses::default`] is used when none is added
    /// (LangChain's default), with the approximate count.
    pub fn new() -> Self {
        Self {
            edits: Vec::new(),
            counter: Arc::new(count_tokens_approximately),
        }
    }

    /// Adds an edit, applied after those added before it.
    #[must_use]
    pub fn edit(mut self, edit: impl ContextEdit + 'static) -> Self {
        self.edits.push(Arc::new(edit));
        self
    }

    /// Counts tokens with `counter` instead of the approximate count.
    #[must_use]
    pub fn token_counter(
        mut self,
        counter: impl Fn(&[Message]) -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// `messages` after every edit.
    pub fn apply(&self, messages: &[Message]) -> Vec<Message> {
        let mut edited = messages.to_vec();
        let count = |m: &[Message]| (self.counter)(m);
        if self.edits.is_empty() {
            ClearToolUses::default().apply(&mut edited, &count);
        }
        for edit in &self.edits {
            edit.apply(&mut edited, &count);
        }
        edited
    }
}

impl<S: HasMessages + AgentState> AgentMiddleware<S> for ContextEditing {
    fn name(&self) -> &str {
        "ContextEditingMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        if request.messages().is_empty() {
            return handler.call(request);
        }
        let edited = self.apply(request.messages());
        handler.call(request.with_messages(edited))
    }
}
