//! LangChain's `ModelCallLimitMiddleware`: counts model calls per thread
//! and per run, and stops the loop (or fails the run) at a limit.

use std::fmt;
use std::str::FromStr;

use agent_state_derive::AgentState;

use super::limits::LimitConfigError;
use crate::agent::{AgentMiddleware, HookOutput, HookResult, Hooks, Jump};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::NodeContext;
use crate::message::{Message, MessageType};
use crate::HasPart;

/// [`ModelCallLimit`]'s counters (LangChain's `ModelCallLimitState`):
/// flatten it into the agent's state. Both are private (neither input nor
/// output of the graph); the run count is `untracked`, never stored in a
/// checkpoint, so every run of a thread starts it from 0 while the thread
/// count goes on from the stored value, as LangGraph's `UntrackedValue`.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
pub struct ModelCallLimitState {
    /// Model calls made on this thread, over all its runs.
    #[state(private)]
    pub thread_model_call_count: u64,
    /// Model calls made in this run.
    #[reducer(untracked)]
    #[state(private)]
    pub run_model_call_count: u64,
}

/// What [`ModelCallLimit`] does at a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelCallExit {
    /// Adds an AI message saying which limit was reached and jumps to the
    /// end (LangChain's default, `"end"`).
    #[default]
    End,
    /// Fails the run with [`ModelCallLimitExceeded`] (`"error"`).
    Error,
}

impl FromStr for ModelCallExit {
    type Err = LimitConfigError;

    /// LangChain's names: `"end"` or `"error"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "end" => Ok(Self::End),
            "error" => Ok(Self::Error),
            _ => Err(LimitConfigError::InvalidExitBehavior {
                given: s.to_owned(),
                allowed: &["end", "error"],
            }),
        }
    }
}

/// The counts and limits when a model call limit is reached: the run's
/// error under [`ModelCallExit::Error`] (LangChain's
/// `ModelCallLimitExceededError`), and the text of the AI message under
/// [`ModelCallExit::End`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCallLimitExceeded {
    /// Model calls made on the thread.
    pub thread_count: u64,
    /// Model calls made in the run.
    pub run_count: u64,
    /// The thread limit, if any.
    pub thread_limit: Option<u64>,
    /// The run limit, if any.
    pub run_limit: Option<u64>,
}

impl fmt::Display for ModelCallLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut exceeded = Vec::new();
        if let Some(limit) = self.thread_limit.filter(|l| self.thread_count >= *l) {
            exceeded.push(format!("thread limit ({}/{limit})", self.thread_count));
        }
        if let Some(limit) = self.run_limit.filter(|l| self.run_count >= *l) {
            exceeded.push(format!("run limit ({}/{limit})", self.run_count));
        }
        write!(f, "Model call limits exceeded: {}", exceeded.join(", "))
    }
}

impl std::error::Error for ModelCallLimitExceeded {}

/// Limits the model calls of a thread (over all its runs) and of a run,
/// as LangChain's `ModelCallLimitMiddleware`: before each model call it
/// checks the counts of [`ModelCallLimitState`], after each it adds one
/// to both.
///
/// ```
/// use agent_state::agent::middleware::{ModelCallLimit, ModelCallLimitState};
/// use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
/// use agent_state::base::{HasMessages, MessagesState};
/// use agent_state::checkpoint::block_on;
/// use agent_state::{ai, AgentState, ToolCall};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
///     #[state(flatten)]
///     limits: ModelCallLimitState,
/// }
///
/// // The model calls a tool forever; the limit stops it after one call.
/// let call = ToolCall::new("ping", Default::default(), "c1");
/// let model = ScriptedModel::new([ai("").with_tool_call(call)]).cycle();
/// let ping = FnTool::sync("ping", "Pings", |_: serde_json::Value, _: &ToolRuntime<Chat>| "pong");
/// let limit = ModelCallLimit::new(None, Some(1))?;
/// let agent = create_agent(model).tool(ping).middleware(limit).compile()?;
/// let out = block_on(agent.run(input::<Chat>("hi")))?;
/// let last = out.state.messages().last().unwrap();
/// assert_eq!(last.text(), "Model call limits exceeded: run limit (1/1)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCallLimit {
    thread_limit: Option<u64>,
    run_limit: Option<u64>,
    exit: ModelCallExit,
}

impl ModelCallLimit {
    /// At most `thread_limit` model calls per thread and `run_limit` per
    /// run (`None`: no limit; at least one is required), ending the loop
    /// with an AI message at a limit.
    pub fn new(
        thread_limit: Option<u64>,
        run_limit: Option<u64>,
    ) -> Result<Self, LimitConfigError> {
        if thread_limit.is_none() && run_limit.is_none() {
            return Err(LimitConfigError::NoLimit);
        }
        Ok(Self {
            thread_limit,
            run_limit,
            exit: ModelCallExit::End,
        })
    }

    /// What to do at a limit (default [`ModelCallExit::End`]).
    #[must_use]
    pub fn exit_behavior(mut self, exit: ModelCallExit) -> Self {
        self.exit = exit;
        self
    }

    /// The counts and limits when a limit is reached, `None` otherwise.
    fn exceeded(&self, counts: &ModelCallLimitState) -> Option<ModelCallLimitExceeded> {
        let (thread, run) = (counts.thread_model_call_count, counts.run_model_call_count);
        let hit = self.thread_limit.is_some_and(|l| thread >= l)
            || self.run_limit.is_some_and(|l| run >= l);
        hit.then_some(ModelCallLimitExceeded {
            thread_count: thread,
            run_count: run,
            thread_limit: self.thread_limit,
            run_limit: self.run_limit,
        })
    }
}

impl<S> AgentMiddleware<S> for ModelCallLimit
where
    S: HasPart<ModelCallLimitState> + HasMessages,
{
    fn name(&self) -> &str {
        "ModelCallLimitMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_MODEL | Hooks::AFTER_MODEL
    }

    fn before_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let Some(exceeded) = self.exceeded(state.part()) else {
            return Ok(HookOutput::none());
        };
        match self.exit {
            ModelCallExit::Error => Err(exceeded.into()),
            ModelCallExit::End => {
                let message = Message::new(MessageType::Ai, exceeded.to_string());
                let update = S::lift(MessagesStateUpdate::new().message(message));
                Ok(HookOutput::update(update).and_jump(Jump::End))
            }
        }
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let counts: &ModelCallLimitState = state.part();
        let update = ModelCallLimitStateUpdate::new()
            .thread_model_call_count(counts.thread_model_call_count + 1)
            .run_model_call_count(counts.run_model_call_count + 1);
        Ok(HookOutput::update(S::lift(update)))
    }
}
