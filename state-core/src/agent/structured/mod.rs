//! Structured output: the agent's final answer as a typed value
//! (LangChain's `response_format`), kept in the state as
//! `structured_response`.
//!
//! Flatten [`StructuredResponse<T>`] into the agent's state and give the
//! builder a strategy for `T`
//! ([`AgentBuilder::response_format`](super::AgentBuilder::response_format)):
//! the compiler checks that the state holds the value the strategy makes.
//! [`ToolStrategy`] offers the type as a tool the model calls,
//! [`ProviderStrategy`] sends its schema to a model that answers in JSON
//! by itself, [`AutoStrategy`] picks the second when the model supports
//! it.
//!
//! Where this differs from LangChain 1.4.7:
//! * the tool message answering the structured call shows the value as
//!   JSON (`Returning structured response: {"city":"Paris"}`), where
//!   LangChain prints the Python object; a parse error quotes serde's
//!   message where LangChain quotes pydantic's (the words around it are
//!   LangChain's);
//! * the answer is read after the `wrap_model_call` chain (LangChain reads
//!   it inside, so a middleware there sees the structured tool message);
//!   the structured tool and the schema are added innermost, as LangChain
//!   adds them;
//! * after the tools node the loop ends when the model's turn gave the
//!   value (LangChain ends on any structured tool message not marked an
//!   error, which its retry messages are not, so a retry next to another
//!   tool call ends its loop without a value);
//! * one type per agent: LangChain's union of schemas (one tool each) is
//!   not offered.

mod binding;
mod error;
mod strategy;

use agent_state_derive::AgentState;

pub(crate) use binding::{Binding, Bound, Outcome};
pub use error::{StructuredErrorKind, StructuredOutputError};
pub use strategy::{
    AutoStrategy, ErrorHandler, HandleErrors, IntoResponseFormat, ProviderStrategy, ResponseFormat,
    ResponseValue, ToolStrategy,
};

/// The part of the state that holds the agent's typed answer (LangChain's
/// `structured_response`): flatten it into a state whose agent has a
/// [`response_format`](super::AgentBuilder::response_format). The agent
/// writes it at every model call (the value, or `None` when the call gave
/// none, so a thread's next turn does not show the last turn's); a run's
/// input may not set it (`omit_from_input`, as LangChain's
/// `OmitFromInput`).
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate, json_schema)]
pub struct StructuredResponse<T: ResponseValue> {
    /// The agent's final answer, parsed into its type.
    #[state(omit_from_input)]
    pub structured_response: Option<T>,
}
