//! Why a structured answer was refused: LangChain's
//! `MultipleStructuredOutputsError` and `StructuredOutputValidationError`,
//! with their wording (a retry tells the model the same words).

use std::fmt;

use crate::message::Message;

/// Which error a structured answer met, for
/// [`HandleErrors::Only`](super::HandleErrors::Only) (LangChain matches
/// the exception class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StructuredErrorKind {
    /// Arguments or text that do not parse into the type.
    Validation,
    /// Several structured calls in one answer.
    MultipleOutputs,
}

/// A structured answer the agent could not take.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StructuredOutputError {
    /// The model called the structured tool several times in one answer
    /// (only one value can be the answer).
    MultipleOutputs {
        /// The names of the structured calls, in order.
        tool_names: Vec<String>,
        /// The AI message that made them.
        ai_message: Box<Message>,
    },
    /// The arguments of the structured call (tool strategy) or the text of
    /// the answer (provider strategy) do not parse into the type.
    Validation {
        /// The tool (or schema) name.
        tool_name: String,
        /// What failed, naming the type (serde's message inside).
        source: String,
        /// The AI message that carried it.
        ai_message: Box<Message>,
    },
}

impl StructuredOutputError {
    /// Its kind.
    pub fn kind(&self) -> StructuredErrorKind {
        match self {
            Self::MultipleOutputs { .. } => StructuredErrorKind::MultipleOutputs,
            Self::Validation { .. } => StructuredErrorKind::Validation,
        }
    }

    /// The AI message whose answer was refused.
    pub fn ai_message(&self) -> &Message {
        match self {
            Self::MultipleOutputs { ai_message, .. } | Self::Validation { ai_message, .. } => {
                ai_message
            }
        }
    }
}

impl fmt::Display for StructuredOutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MultipleOutputs { tool_names, .. } => write!(
                f,
                "Model incorrectly returned multiple structured responses ({}) when only one is expected.",
                tool_names.join(", ")
            ),
            Self::Validation {
                tool_name, source, ..
            } => write!(
                f,
                "Failed to parse structured output for tool '{tool_name}': {source}."
            ),
        }
    }
}

impl std::error::Error for StructuredOutputError {}
