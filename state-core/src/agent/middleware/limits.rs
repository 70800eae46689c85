//! What the call-limit middleware share: their configuration's errors and
//! the last AI message they look at.

use std::fmt;

use crate::message::{Message, MessageType};

/// Why a call-limit middleware's configuration was refused (LangChain's
/// `ValueError`s, in its words).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitConfigError {
    /// Neither a thread limit nor a run limit was given.
    NoLimit,
    /// An exit behaviour the middleware does not have.
    InvalidExitBehavior {
        /// What was given.
        given: String,
        /// What the middleware accepts.
        allowed: &'static [&'static str],
    },
    /// A run limit above the thread limit (a run could never reach it).
    RunAboveThread {
        /// The run limit.
        run: u64,
        /// The thread limit.
        thread: u64,
    },
}

impl fmt::Display for LimitConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoLimit => f.write_str("At least one limit must be specified (thread_limit or run_limit)"),
            // LangChain words it two ways: ModelCallLimit's two choices,
            // ToolCallLimit's tuple of three.
            Self::InvalidExitBehavior { given, allowed: [a, b] } => {
                write!(f, "Invalid exit_behavior: {given}. Must be '{a}' or '{b}'")
            }
            Self::InvalidExitBehavior { given, allowed } => {
                let quoted: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
                write!(f, "Invalid exit_behavior: '{given}'. Must be one of ({})", quoted.join(", "))
            }
            Self::RunAboveThread { run, thread } => write!(
                f,
                "run_limit ({run}) cannot exceed thread_limit ({thread}). The run limit should be less than or equal to the thread limit."
            ),
        }
    }
}

impl std::error::Error for LimitConfigError {}

/// The last AI message of the conversation, if any.
pub(crate) fn last_ai(messages: &[Message]) -> Option<&Message> {
    messages.iter().rev().find(|m| m.kind == MessageType::Ai)
}
