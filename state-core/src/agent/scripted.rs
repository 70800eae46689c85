//! Models without a provider: a script of replies, and a function. For
//! examples, tests and benchmarks of the loop itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use futures::future::{ready, BoxFuture};

use super::model::{ChatModel, ModelError, ModelRequest, ResponseSchema, ToolChoice};
use crate::base::HasMessages;
use crate::message::Message;

/// What a [`ScriptedModel`] was asked, when it records.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRequest {
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The names of the tools offered.
    pub tools: Vec<String>,
    /// The messages sent.
    pub messages: Vec<Message>,
    /// The tool choice of the settings.
    pub tool_choice: Option<ToolChoice>,
    /// The schema the answer was to follow, if any.
    pub response_format: Option<ResponseSchema>,
}

/// A model that answers with its script, one reply per call, in order.
///
/// ```
/// use agent_state::agent::ScriptedModel;
/// use agent_state::ai;
///
/// let model = ScriptedModel::new([ai("Hello!")]);
/// assert_eq!(model.calls(), 0);
/// ```
pub struct ScriptedModel {
    replies: Vec<Message>,
    next: AtomicUsize,
    cycle: bool,
    seen: Option<Mutex<Vec<SeenRequest>>>,
    native_structured: bool,
}

impl ScriptedModel {
    /// A model that answers with `replies`, then fails: a call past the end
    /// of the script is an error naming how many replies it had.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> Self {
        Self {
            replies: replies.into_iter().collect(),
            next: AtomicUsize::new(0),
            cycle: false,
            seen: None,
            native_structured: false,
        }
    }

    /// Starts the script over once it is done, for runs of any length.
    #[must_use]
    pub fn cycle(mut self) -> Self {
        self.cycle = true;
        self
    }

    /// Records every request ([`seen`](Self::seen)).
    #[must_use]
    pub fn recording(mut self) -> Self {
        self.seen = Some(Mutex::new(Vec::new()));
        self
    }

    /// Declares native structured output
    /// ([`ChatModel::supports_structured_output`]), so an
    /// [`AutoStrategy`](super::AutoStrategy) picks the provider strategy:
    /// the script then answers with the JSON text itself.
    #[must_use]
    pub fn with_structured_output(mut self) -> Self {
        self.native_structured = true;
        self
    }

    /// How many times it was called.
    pub fn calls(&self) -> usize {
        self.next.load(Ordering::SeqCst)
    }

    /// The requests it was given, when recording.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.seen
            .as_ref()
            .map(|seen| seen.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default()
    }

    fn reply(&self) -> Result<Message, ModelError> {
        let call = self.next.fetch_add(1, Ordering::SeqCst);
        let at = if self.cycle && !self.replies.is_empty() {
            call % self.replies.len()
        } else {
            call
        };
        self.replies.get(at).cloned().ok_or_else(|| {
            ModelError::other(format!(
                "the scripted model has {} replies and was called a {} time",
                self.replies.len(),
                ordinal(call + 1)
            ))
        })
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl<S: HasMessages + Send + Sync> ChatModel<S> for ScriptedModel {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        if let Some(seen) = &self.seen {
            let request = SeenRequest {
                system_prompt: request.system_prompt().map(str::to_owned),
                tools: request.tools().iter().map(|t| t.name.clone()).collect(),
                messages: request.messages().to_vec(),
                tool_choice: request.settings().tool_choice.clone(),
                response_format: request.settings().response_format.clone(),
            };
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(request);
        }
        Box::pin(ready(self.reply()))
    }

    fn supports_structured_output(&self) -> bool {
        self.native_structured
    }
}

/// A model made of a function of the request: a script that reads the
/// conversation or the state.
pub struct FnModel<F>(pub F);

impl<S, F> ChatModel<S> for FnModel<F>
where
    S: Send + Sync,
    F: Fn(&ModelRequest<S>) -> Result<Message, ModelError> + Send + Sync,
{
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<S>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(ready((self.0)(request)))
    }
}
