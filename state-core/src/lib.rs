//! The runtime of [agent-state](https://docs.rs/agent-state): the
//! [`AgentState`] trait, the reducers, a LangChain-compatible message model
//! and the error type. Depend on the `agent-state` facade crate rather than
//! on this one: it re-exports all of this plus `#[derive(AgentState)]`.
//!
//! The messages reducer works without any derive:
//!
//! ```
//! use agent_state_core::{add_messages, ai, human, MessageOp, RemoveMessage};
//!
//! let history = vec![human("hi").with_id("1")];
//! let history = add_messages(history, [MessageOp::from(ai("hello"))]).unwrap();
//! assert_eq!(history.len(), 2);
//! let history = add_messages(history, [MessageOp::from(RemoveMessage::all())]).unwrap();
//! assert!(history.is_empty());
//! ```
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "agent")]
pub mod agent;
pub mod base;
pub mod checkpoint;
pub mod combine;
pub mod error;
mod field_json;
mod field_names;
pub mod graph;
mod id;
#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
pub mod json_schema;
pub mod message;
pub mod messages;
pub mod part;
mod positions;
mod pyrepr;
pub mod reducer;
pub mod schema;
mod send;
pub mod state;
mod storable;
pub mod store;
pub mod union_vec;
pub mod write;
pub mod writes;

#[doc(hidden)]
pub mod __private;

/// Runs a future or a graph run to completion on the current thread
/// (defined as [`checkpoint::block_on`], also at `graph::block_on`).
#[doc(no_inline)]
pub use checkpoint::block_on;
pub use error::{ErrorKind, StateError};
pub use id::new_message_id;
pub use message::{
    ai, human, system, tool, Content, MergeError, Message, MessageChunk, MessageChunks,
    MessageError, MessageType, ToolCall, ToolCallChunk, ToolStatus,
};
pub use messages::{
    DuplicateId, MessageLike, MessageOp, MessageOps, Messages, RemoveMessage, REMOVE_ALL_MESSAGES,
};
pub use part::HasPart;
pub use reducer::{
    add_messages, AppendField, MergeField, MessageNotFound, MessagesField, UnionField,
};
pub use schema::{FieldSchema, PartSchema, ReducerKind, StateSchema, Visibility};
pub use state::{AgentState, MigrationError, Output, StateInput, StateUpdate, StepRule, Stored};
pub use storable::MAX_FIELD_DEPTH;
pub use union_vec::UnionVec;

pub use write::{FieldWrite, OVERWRITE_KEY, REDUCE_KEY};

pub use writes::Writes;

// `futures`, `indexmap`, `serde`, `serde_json` and `schemars` are
// re-exported at the root of the `agent-state` facade, from its own
// dependencies on them: a crate re-exported here would be copied page by
// page into the facade's docs (rustdoc inlines what the facade's glob
// re-export of this crate reaches, whatever `doc(no_inline)` says).

/// README.md's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
