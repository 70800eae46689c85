//! What configures [`Summarization`](super::Summarization): context sizes,
//! trigger clauses, the token counter, and the configuration's errors.

use std::fmt;

use crate::agent::middleware::token_count::{ApproximateTokenCounter, TokenCounter};
use crate::message::Message;

/// How much context: LangChain's `ContextSize`, for a trigger or what to
/// keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ContextSize {
    /// A fraction (in `(0, 1]`) of the model's maximum input tokens (see
    /// [`Summarization::max_input_tokens`](super::Summarization::max_input_tokens)).
    Fraction(f64),
    /// A number of tokens (above 0).
    Tokens(u64),
    /// A number of messages (above 0).
    Messages(usize),
}

/// Thresholds that must all be met (LangChain's `TriggerClause`): several
/// clauses on one middleware trigger when any one is met.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TriggerClause {
    /// At least this many tokens (counted, or reported by the model).
    pub tokens: Option<u64>,
    /// At least this many messages.
    pub messages: Option<usize>,
    /// At least this fraction of the model's maximum input tokens.
    pub fraction: Option<f64>,
}

impl From<ContextSize> for TriggerClause {
    fn from(size: ContextSize) -> Self {
        match size {
            ContextSize::Fraction(f) => Self {
                fraction: Some(f),
                ..Self::default()
            },
            ContextSize::Tokens(t) => Self {
                tokens: Some(t),
                ..Self::default()
            },
            ContextSize::Messages(m) => Self {
                messages: Some(m),
                ..Self::default()
            },
        }
    }
}

/// Why a [`Summarization`](super::Summarization) configuration was refused (LangChain's
/// `ValueError`s, in its words).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SummarizationConfigError {
    /// A fraction outside `(0, 1]`.
    FractionOutOfRange {
        /// `"trigger"` or `"keep"`.
        parameter: &'static str,
        /// The fraction given.
        value: f64,
    },
    /// A token or message count of 0.
    NotPositive {
        /// `"trigger"` or `"keep"`.
        parameter: &'static str,
    },
    /// A trigger clause with no threshold.
    EmptyClause,
    /// A fraction, with no maximum input tokens of the model to take it of.
    NoProfile,
}

impl fmt::Display for SummarizationConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FractionOutOfRange { parameter, value } => {
                write!(f, "Fractional {parameter} values must be between 0 and 1, got {value}.")
            }
            Self::NotPositive { parameter } => write!(f, "{parameter} thresholds must be greater than 0, got 0."),
            Self::EmptyClause => f.write_str("trigger clause must specify at least one of 'tokens', 'messages', 'fraction'"),
            Self::NoProfile => f.write_str(
                "Model profile information is required to use fractional token limits, and is unavailable for the specified model. Please use absolute token counts instead, or set `max_input_tokens`.",
            ),
        }
    }
}

impl std::error::Error for SummarizationConfigError {}

/// The counter: LangChain's approximate one (scaled by reported usage for
/// the whole history, unscaled for parts of it), or the user's.
#[derive(Clone)]
pub(super) enum Counter {
    Approximate(ApproximateTokenCounter),
    Custom(TokenCounter),
}

impl Counter {
    pub(super) fn full(&self, messages: &[Message]) -> u64 {
        match self {
            Self::Approximate(c) => c.count(messages),
            Self::Custom(f) => f(messages),
        }
    }

    pub(super) fn partial(&self, messages: &[Message]) -> u64 {
        match self {
            Self::Approximate(c) => ApproximateTokenCounter {
                use_usage_metadata_scaling: false,
                ..c.clone()
            }
            .count(messages),
            Self::Custom(f) => f(messages),
        }
    }
}
