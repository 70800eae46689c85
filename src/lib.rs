//! Declare the state of an agent graph as a plain Rust struct.
//!
//! `#[derive(AgentState)]` reads one reducer per field and generates the
//! partial update a node returns, the apply logic, the defaults, serde and
//! the schema: what LangGraph users write as `Annotated[list, add_messages]`
//! or `Annotation.Root({...})`, checked by the compiler.
//!
//! ```
//! use agent_state::{ai, human, AgentState, Messages};
//!
//! /// State of the debate workflow.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct DebateState {
//!     /// Complete conversation history.
//!     #[reducer(messages)]
//!     pub messages: Messages,
//!     /// Current round, 0-indexed.
//!     pub round: u32,
//!     /// The debate subject.
//!     #[reducer(immutable)]
//!     pub topic: String,
//!     /// Rounds before the debate ends.
//!     #[reducer(immutable)]
//!     #[state(default = 3)]
//!     pub max_rounds: u32,
//! }
//!
//! let mut state = DebateState { topic: "Should AI be regulated?".into(), ..Default::default() };
//!
//! // What a node returns: only the fields it changes.
//! state.apply(DebateStateUpdate::new().message(human("Debate topic: AI")))?;
//! state.apply(DebateStateUpdate::new().message(ai("Yes, with care.")).round(1))?;
//! assert_eq!(state.messages.len(), 2);
//! assert_eq!(state.round, 1);
//!
//! // The same update as JSON, as a LangGraph client sends it.
//! state.apply_json(serde_json::json!({"messages": [{"role": "assistant", "content": "No."}]}))?;
//! assert_eq!(state.messages[2].text(), "No.");
//!
//! // Bad input is an error naming the field, and nothing is applied.
//! let err = state.apply_json(serde_json::json!({"round": 2, "topic": "other"})).unwrap_err();
//! assert_eq!(err.field(), "topic");
//! assert_eq!(state.round, 1);
//! # Ok::<(), agent_state::StateError>(())
//! ```
//!
//! # Reducers
//!
//! | attribute | field types | one write | several writes in one step |
//! | --- | --- | --- | --- |
//! | none / `replace` | any | overwrite | error naming the field |
//! | `merge` | `HashMap`, `BTreeMap`, `serde_json::{Map, Value}`, derived states | keys or fields present override, the rest kept | folded in order |
//! | `messages` | [`Messages`], or `Vec<M: MessageLike>` | LangGraph's `add_messages` | folded in order |
//! | `union` | [`UnionVec<T>`] (first-seen order, indexed), `HashSet`, `BTreeSet`, `IndexSet` (feature `indexmap`) | add missing, never remove | folded |
//! | `append` | `Vec<T>`, `VecDeque<T>` | extend | folded |
//! | `immutable` | any | no setter exists; a JSON update naming it is rejected | — |
//! | `with = path` | any | `path(&current, value) -> Result<T, E>` | folded |
//!
//! Every reducer field can also be set outright with `overwrite_<field>`
//! (JSON: `{"__overwrite__": value}` or `{"type": "__overwrite__", "value":
//! value}`), LangGraph's `Overwrite`.
//!
//! ```
//! use std::collections::HashMap;
//! use agent_state::{AgentState, StateError, UnionVec};
//!
//! fn count_up(current: &u64, by: u64) -> Result<u64, String> {
//!     current.checked_add(by).ok_or_else(|| "counter overflow".to_owned())
//! }
//!
//! /// What the user told us, and what we loaded for them.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Session {
//!     /// Per-user facts; updates override keys and keep the rest.
//!     #[reducer(merge)]
//!     pub facts: HashMap<String, String>,
//!     /// Plugins loaded on this thread; never shrinks.
//!     #[reducer(union)]
//!     pub loaded_plugins: UnionVec<String>,
//!     /// Every tool call made, in order.
//!     #[reducer(append)]
//!     pub audit: Vec<String>,
//!     /// Tokens spent, through a checked adder.
//!     #[reducer(with = count_up)]
//!     pub tokens: u64,
//!     /// Active editor room, if any.
//!     pub editor_room_id: Option<String>,
//! }
//!
//! let mut s = Session::default();
//! s.apply_all([
//!     SessionUpdate::new().facts([("name".to_owned(), "Ada".to_owned())]).tokens(10),
//!     SessionUpdate::new().loaded_plugins(["memory", "editor"]).tokens(5),
//!     SessionUpdate::new().loaded_plugin("memory").audit(["search"]).editor_room_id("room-1"),
//! ])?;
//! assert_eq!(s.tokens, 15);
//! assert_eq!(s.loaded_plugins, ["memory", "editor"]);
//! assert_eq!(s.editor_room_id.as_deref(), Some("room-1"));
//!
//! // `None` and "no change" differ: JSON `null` clears, an absent key keeps.
//! s.apply_json(serde_json::json!({"tokens": 1}))?;
//! assert_eq!(s.editor_room_id.as_deref(), Some("room-1"));
//! s.apply_json(serde_json::json!({"editor_room_id": null}))?;
//! assert_eq!(s.editor_room_id, None);
//! # Ok::<(), StateError>(())
//! ```
//!
//! # Attributes
//!
//! * `#[reducer(..)]` on a field: one of the reducers above. `with = path`
//!   takes `update = Type` when the function's second argument is not the
//!   field's type.
//! * `#[state(default = expr)]` on a field: its initial value (else the
//!   type's `Default`).
//! * `#[state(rename = "name")]` on a field, `#[state(rename_all = "camelCase")]`
//!   on the struct: JSON names, as serde spells them.
//! * `#[state(crate = path)]` on the struct: where generated code finds this
//!   crate, if you re-export it under another path.
//! * `#[state(flatten)]` on a field whose type derives `AgentState`: the
//!   field is a *part* (a middleware's schema); its fields sit at the top
//!   level of the JSON and update through their own reducers. See
//!   [`HasPart`] and [`base`].
//! * `#[state(omit_from_input)]`, `#[state(omit_from_output)]`,
//!   `#[state(private)]` on a field or a part: LangChain's `OmitFromInput`,
//!   `OmitFromOutput` and `PrivateStateAttr`. See [`StateInput`] and
//!   [`AgentState::output`].
//! * `#[state(json_schema)]` on the struct (the `schemars` feature): JSON
//!   Schemas of the state, its update and its input (`json_schema` module).
//!
//! # Composition
//!
//! ```
//! use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
//! use agent_state::{ai, AgentState, HasPart, StateUpdate};
//!
//! /// A middleware's schema.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct LanguageState {
//!     /// Detected by the middleware; not an input of the graph.
//!     #[state(omit_from_input)]
//!     pub detected_language: Option<String>,
//! }
//!
//! /// The middleware's hook, for any state with its part and the messages.
//! fn before_agent<S: HasPart<LanguageState> + HasMessages>(state: &S) -> Option<S::Update> {
//!     let text = state.messages().last()?.text();
//!     let lang = if text.contains("bonjour") { "fr" } else { "en" };
//!     Some(S::lift(LanguageStateUpdate::new().detected_language(lang)))
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
//! agent.apply_input(AgentInput::new().base(agent_state::base::MessagesStateInput::new().message("bonjour")))?;
//! if let Some(update) = before_agent(&agent) {
//!     agent.apply(update)?;
//! }
//! assert_eq!(agent.part::<LanguageState>().detected_language.as_deref(), Some("fr"));
//! assert_eq!(
//!     agent.to_output_json()["detected_language"],
//!     serde_json::json!("fr"),
//! );
//! println!("{}", Agent::reference_table());
//! # Ok::<(), agent_state::StateError>(())
//! ```
//!
//! # What the derive generates
//!
//! For `struct Foo`: `FooUpdate` (the partial update, with setters,
//! `Default`, `Debug`, `Clone`, `PartialEq` and serde; a setter per field,
//! named after it, plus `clear_<field>` for an `Option`, `overwrite_<field>`
//! for a reducer field, and for a `messages`, `union` or `append` field a
//! one-item setter: the field name less its final `s` when that is a plain
//! plural (`messages` → `message`), else `add_<field>`, or the name given
//! by `#[state(item_setter = "..")]`; see [`derive@AgentState`]), `FooInput` (what the
//! graph's input may set, the same less the fields omitted from input),
//! `FooStaged` (a checked step, see [`AgentState::stage`]),
//! `impl AgentState for Foo`, `impl Default for Foo`, serde's `Serialize` and
//! `Deserialize` for `Foo`, `impl HasPart<P> for Foo` for each part `P`, and
//! `impl MergeField for Foo` so `Foo` can be merged as a field of another
//! state. Your own field types need serde's traits; derive them through the
//! re-export so you still need one dependency line:
//!
//! ```
//! use agent_state::serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
//! #[serde(crate = "agent_state::serde", rename_all = "lowercase")]
//! pub enum Client { Portal, Matrix, Slack }
//! ```
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use agent_state_core::*;
/// The derive: every reducer, attribute and setter rule is below; the
/// crate docs show them at work.
pub use agent_state_derive::AgentState;

/// serde, re-exported so states and your own field types need no extra
/// dependency line (`#[serde(crate = "agent_state::serde")]`). Not inlined:
/// its docs are serde's own, on docs.rs.
#[doc(no_inline)]
pub use serde;

/// serde_json, re-exported: [`AgentState::apply_json`] and friends take its
/// `Value`, and its `json!` macro works through this path.
#[doc(no_inline)]
pub use serde_json;

/// futures, re-exported for the `Stream` a streamed run is
/// ([`graph::RunStream`]) and its `StreamExt` (`next`, `collect`, ..).
#[doc(no_inline)]
pub use futures;

/// The traits whose methods a program calls, and the derive, in one
/// import, so `FooUpdate::from_json`, `state.apply(..)` or
/// `checkpointer.head(..)` need no `use` of the trait that defines
/// them.
///
/// ```
/// use agent_state::prelude::*;
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Counter {
///     count: u32,
/// }
///
/// let update = CounterUpdate::from_json(serde_json::json!({"count": 2}))?;
/// let mut counter = Counter::default();
/// counter.apply(update)?;
/// assert_eq!(counter.count, 2);
/// # Ok::<(), agent_state::StateError>(())
/// ```
pub mod prelude {
    /// The state trait, and its derive.
    pub use crate::AgentState;
    pub use agent_state_core::base::HasMessages;
    pub use agent_state_core::checkpoint::Checkpointer;
    pub use agent_state_core::{HasPart, StateInput, StateUpdate};
}

/// schemars, re-exported (the `schemars` feature) so field types can derive
/// `JsonSchema` with no extra dependency line
/// (`#[schemars(crate = "agent_state::schemars")]`).
#[cfg(feature = "schemars")]
#[cfg_attr(docsrs, doc(cfg(feature = "schemars")))]
#[doc(no_inline)]
pub use schemars;

/// indexmap, re-exported (the `indexmap` feature) for `IndexSet<T>` as a
/// `#[reducer(union)]` field that keeps first-seen order
/// (`agent_state::indexmap::IndexSet`).
#[cfg(feature = "indexmap")]
#[cfg_attr(docsrs, doc(cfg(feature = "indexmap")))]
#[doc(no_inline)]
pub use indexmap;

// README.md's examples are compiled and run as doctests of the server
// crate (`server/src/lib.rs`): its recipe for serving a graph needs
// `agent-state-server`, which depends on this crate.
