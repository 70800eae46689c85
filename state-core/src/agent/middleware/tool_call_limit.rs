//! LangChain's `ToolCallLimitMiddleware`: counts tool calls (of one tool or
//! of all) per thread and per run, and blocks calls past a limit, ends the
//! loop, or fails the run.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use agent_state_derive::AgentState;

use super::limits::{last_ai, LimitConfigError};
use crate::agent::tool::answer_message;
use crate::agent::{AgentMiddleware, HookOutput, HookResult, Hooks, Jump};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::NodeContext;
use crate::message::{Message, MessageType, ToolCall, ToolStatus};
use crate::{HasPart, StateUpdate};

/// The key counting the calls of every tool, for a [`ToolCallLimit`] with
/// no tool name (LangChain's `"__all__"`).
pub const ALL_TOOLS: &str = "__all__";

/// [`ToolCallLimit`]'s counters (LangChain's `ToolCallLimitState`): tool
/// name (or [`ALL_TOOLS`]) → calls, so several limits share the part.
/// Both private; the run counts are `untracked`, never stored in a
/// checkpoint, so each run of a thread starts them over while the thread
/// counts go on, as LangGraph's `UntrackedValue`.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
pub struct ToolCallLimitState {
    /// Calls that ran on this thread, over all its runs.
    #[state(private)]
    pub thread_tool_call_count: BTreeMap<String, u64>,
    /// Calls the model asked for in this run (blocked ones included).
    #[reducer(untracked)]
    #[state(private)]
    pub run_tool_call_count: BTreeMap<String, u64>,
}

/// What [`ToolCallLimit`] does with calls past a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolCallExit {
    /// Answers them with an error tool message and lets the other calls
    /// run; the model decides what next (LangChain's default,
    /// `"continue"`).
    #[default]
    Continue,
    /// Fails the run with [`ToolCallLimitExceeded`] (`"error"`).
    Error,
    /// Answers them, and every other pending call of the message, with an
    /// error tool message, adds an AI message saying which limit was
    /// reached and jumps to the end (`"end"`).
    End,
}

impl FromStr for ToolCallExit {
    type Err = LimitConfigError;

    /// LangChain's names: `"continue"`, `"error"` or `"end"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "continue" => Ok(Self::Continue),
            "error" => Ok(Self::Error),
            "end" => Ok(Self::End),
            _ => Err(LimitConfigError::InvalidExitBehavior {
                given: s.to_owned(),
                allowed: &["continue", "error", "end"],
            }),
        }
    }
}

/// The counts and limits when a tool call limit is exceeded: the run's
/// error under [`ToolCallExit::Error`] (LangChain's
/// `ToolCallLimitExceededError`) and the final AI message's text under
/// [`ToolCallExit::End`]. The thread count is what it would have been had
/// the blocked calls run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallLimitExceeded {
    /// Calls on the thread, the blocked ones included.
    pub thread_count: u64,
    /// Calls asked for in the run, the blocked ones included.
    pub run_count: u64,
    /// The thread limit, if any.
    pub thread_limit: Option<u64>,
    /// The run limit, if any.
    pub run_limit: Option<u64>,
    /// The tool limited, `None` for all tools.
    pub tool_name: Option<String>,
}

impl fmt::Display for ToolCallLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut exceeded = Vec::new();
        if let Some(limit) = self.thread_limit.filter(|l| self.thread_count > *l) {
            exceeded.push(format!(
                "thread limit exceeded ({}/{limit} calls)",
                self.thread_count
            ));
        }
        if let Some(limit) = self.run_limit.filter(|l| self.run_count > *l) {
            exceeded.push(format!(
                "run limit exceeded ({}/{limit} calls)",
                self.run_count
            ));
        }
        match &self.tool_name {
            Some(tool) => write!(
                f,
                "'{tool}' tool call limit reached: {}.",
                exceeded.join(" and ")
            ),
            None => write!(f, "Tool call limit reached: {}.", exceeded.join(" and ")),
        }
    }
}

impl std::error::Error for ToolCallLimitExceeded {}

/// The answer to a call of a batch that `end` stops before it runs.
pub const STOPPED_CALL: &str = "Execution stopped before this tool call could run because another tool call in the same batch exceeded the limit.";

/// Limits the tool calls of a thread (over all its runs) and of a run, for
/// one tool or all, as LangChain's `ToolCallLimitMiddleware`: after each
/// model response it counts the calls the response asks for and answers
/// those past a limit itself (see [`ToolCallExit`]).
///
/// ```
/// use agent_state::agent::middleware::{ToolCallLimit, ToolCallLimitState};
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
///     limits: ToolCallLimitState,
/// }
///
/// let call = |id: &str| ToolCall::new("ping", Default::default(), id);
/// let model = ScriptedModel::new([ai("").with_tool_call(call("c1")).with_tool_call(call("c2")), ai("done")]);
/// let ping = FnTool::sync("ping", "Pings", |_: serde_json::Value, _: &ToolRuntime<Chat>| "pong");
/// let limit = ToolCallLimit::new(None, Some(1))?.tool_name("ping");
/// let agent = create_agent(model).tool(ping).middleware(limit).compile()?;
/// let out = block_on(agent.run(input::<Chat>("hi")))?;
/// let answers: Vec<String> = out.state.messages()[2..4].iter().map(|m| m.text()).collect();
/// assert_eq!(answers, ["Tool call limit exceeded. Do not call 'ping' again.", "pong"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallLimit {
    tool_name: Option<String>,
    name: String,
    thread_limit: Option<u64>,
    run_limit: Option<u64>,
    exit: ToolCallExit,
}

/// The calls of one response a limit lets run and those it blocks, with
/// the counts after the allowed ones.
struct Split<'a> {
    allowed: usize,
    blocked: Vec<&'a ToolCall>,
    thread: u64,
    run: u64,
}

impl ToolCallLimit {
    /// At most `thread_limit` tool calls per thread and `run_limit` per run
    /// (`None`: no limit; at least one is required, and the run limit may
    /// not exceed the thread limit), of every tool unless
    /// [`tool_name`](Self::tool_name) says which.
    pub fn new(
        thread_limit: Option<u64>,
        run_limit: Option<u64>,
    ) -> Result<Self, LimitConfigError> {
        match (thread_limit, run_limit) {
            (None, None) => return Err(LimitConfigError::NoLimit),
            (Some(thread), Some(run)) if run > thread => {
                return Err(LimitConfigError::RunAboveThread { run, thread })
            }
            _ => {}
        }
        Ok(Self {
            tool_name: None,
            name: "ToolCallLimitMiddleware".to_owned(),
            thread_limit,
            run_limit,
            exit: ToolCallExit::Continue,
        })
    }

    /// Limits the calls of the tool `name` only; the middleware is then
    /// named `ToolCallLimitMiddleware[name]`, so an agent may have one per
    /// tool.
    #[must_use]
    pub fn tool_name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.name = format!("ToolCallLimitMiddleware[{name}]");
        self.tool_name = Some(name);
        self
    }

    /// What to do with calls past a limit (default
    /// [`ToolCallExit::Continue`]).
    #[must_use]
    pub fn exit_behavior(mut self, exit: ToolCallExit) -> Self {
        self.exit = exit;
        self
    }

    fn key(&self) -> &str {
        self.tool_name.as_deref().unwrap_or(ALL_TOOLS)
    }

    /// Which of `calls` run and which are blocked, counting from `thread`
    /// and `run` calls.
    fn split<'a>(&self, calls: &'a [ToolCall], mut thread: u64, mut run: u64) -> Split<'a> {
        let (mut allowed, mut blocked) = (0, Vec::new());
        let tracked = calls
            .iter()
            .filter(|c| self.tool_name.as_ref().is_none_or(|t| *t == c.name));
        for call in tracked {
            let over = self.thread_limit.is_some_and(|l| thread + 1 > l)
                || self.run_limit.is_some_and(|l| run + 1 > l);
            if over {
                blocked.push(call);
            } else {
                allowed += 1;
                thread += 1;
                run += 1;
            }
        }
        Split {
            allowed,
            blocked,
            thread,
            run,
        }
    }

    /// The update of the counts (`thread` and `run` for this limit's key).
    fn counts<S: HasPart<ToolCallLimitState>>(
        &self,
        state: &S,
        thread: u64,
        run: u64,
    ) -> S::Update {
        let part: &ToolCallLimitState = state.part();
        let (mut threads, mut runs) = (
            part.thread_tool_call_count.clone(),
            part.run_tool_call_count.clone(),
        );
        threads.insert(self.key().to_owned(), thread);
        runs.insert(self.key().to_owned(), run);
        S::lift(
            ToolCallLimitStateUpdate::new()
                .thread_tool_call_count(threads)
                .run_tool_call_count(runs),
        )
    }

    /// The answer to a blocked call (for the model: no thread or run).
    fn blocked_answer(&self) -> String {
        match &self.tool_name {
            Some(tool) => format!("Tool call limit exceeded. Do not call '{tool}' again."),
            None => "Tool call limit exceeded. Do not make additional tool calls.".to_owned(),
        }
    }
}

/// An error tool message answering `call`.
fn refusal(call: &ToolCall, text: &str) -> Message {
    let id = call.id.as_deref().unwrap_or_default();
    answer_message(text.into(), id, &call.name, ToolStatus::Error)
}

impl<S> AgentMiddleware<S> for ToolCallLimit
where
    S: HasPart<ToolCallLimitState> + HasMessages,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn hooks(&self) -> Hooks {
        Hooks::AFTER_MODEL
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let Some(message) = last_ai(state.messages()).filter(|m| !m.tool_calls.is_empty()) else {
            return Ok(HookOutput::none());
        };
        let part: &ToolCallLimitState = state.part();
        let thread = part
            .thread_tool_call_count
            .get(self.key())
            .copied()
            .unwrap_or(0);
        let run = part
            .run_tool_call_count
            .get(self.key())
            .copied()
            .unwrap_or(0);
        let split = self.split(&message.tool_calls, thread, run);
        let blocked = split.blocked.len() as u64;
        let run_after = split.run + blocked;
        if blocked == 0 {
            return Ok(if split.allowed > 0 {
                HookOutput::update(self.counts(state, split.thread, run_after))
            } else {
                HookOutput::none()
            });
        }
        let exceeded = ToolCallLimitExceeded {
            thread_count: split.thread + blocked,
            run_count: run_after,
            thread_limit: self.thread_limit,
            run_limit: self.run_limit,
            tool_name: self.tool_name.clone(),
        };
        let answer = self.blocked_answer();
        let mut answers: Vec<Message> = split.blocked.iter().map(|c| refusal(c, &answer)).collect();
        match self.exit {
            ToolCallExit::Error => Err(exceeded.into()),
            ToolCallExit::Continue => {
                let update = self.counts(state, split.thread, run_after);
                Ok(HookOutput::update(
                    update.with(MessagesStateUpdate::new().messages(answers)),
                ))
            }
            ToolCallExit::End => {
                let blocked_ids: Vec<&Option<String>> =
                    split.blocked.iter().map(|c| &c.id).collect();
                let others = message
                    .tool_calls
                    .iter()
                    .filter(|c| !blocked_ids.contains(&&c.id));
                answers.extend(others.map(|c| refusal(c, STOPPED_CALL)));
                answers.push(Message::new(MessageType::Ai, exceeded.to_string()));
                // Nothing of the batch runs: the thread count stays.
                let update = self.counts(state, thread, run_after);
                let update = update.with(MessagesStateUpdate::new().messages(answers));
                Ok(HookOutput::update(update).and_jump(Jump::End))
            }
        }
    }
}
