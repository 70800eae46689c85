//! The base part every agent state shares: the conversation.
//!
//! LangChain's `create_agent` merges each middleware's `state_schema` with a
//! base `AgentState` that holds `messages`. Here the base is a part like any
//! other: flatten [`MessagesState`] into an agent's state and every
//! middleware written against [`HasMessages`] can read the history and add
//! to it.
//!
//! ```
//! use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
//! use agent_state::{tool, AgentState, HasPart, StateUpdate};
//!
//! /// A language-detection middleware's schema.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct LanguageState {
//!     /// The language of the conversation.
//!     #[state(omit_from_input)]
//!     pub detected_language: Option<String>,
//! }
//!
//! /// A tool of that middleware: sets the language and answers the call.
//! fn set_language<S>(language: &str, call_id: &str) -> S::Update
//! where
//!     S: HasPart<LanguageState> + HasMessages,
//! {
//!     S::lift(LanguageStateUpdate::new().detected_language(language))
//!         .with(MessagesStateUpdate::new().message(tool(format!("language: {language}"), call_id)))
//! }
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Agent {
//!     #[state(flatten)]
//!     pub base: MessagesState,
//!     #[state(flatten)]
//!     pub language: LanguageState,
//! }
//!
//! let mut agent = Agent::default();
//! agent.apply(set_language::<Agent>("fr", "call-1"))?;
//! assert_eq!(agent.language.detected_language.as_deref(), Some("fr"));
//! assert_eq!(agent.messages().len(), 1);
//! # Ok::<(), agent_state::StateError>(())
//! ```

use agent_state_derive::AgentState;

use crate::{HasPart, Messages};

/// The conversation: the base part of an agent's state (LangChain's
/// `AgentState` base schema). Flatten it into your state to make the state
/// [`HasMessages`].
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
#[cfg_attr(feature = "schemars", state(json_schema))]
pub struct MessagesState {
    /// Conversation history (LangGraph's message reducer).
    #[reducer(messages)]
    pub messages: Messages,
}

/// A state whose conversation a middleware can read and add to: any state
/// that flattens [`MessagesState`].
///
/// Add messages in an update with
/// `S::lift(MessagesStateUpdate::new().message(..))`, or
/// `.with(MessagesStateUpdate::new().message(..))` on an update that
/// already carries another part's.
pub trait HasMessages: HasPart<MessagesState> {
    /// The conversation so far.
    fn messages(&self) -> &Messages {
        &self.part::<MessagesState>().messages
    }
}

impl<S: HasPart<MessagesState>> HasMessages for S {}
