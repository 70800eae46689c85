//! Composition: a state embeds other derived states as parts with
//! `#[state(flatten)]`, and middleware reach their part by type.
//!
//! A part is a whole derived state (a middleware's schema) stored in a field
//! of the outer state. Its fields stay flat in JSON, as LangGraph merges
//! middleware schemas, and its updates go through its own reducers. The
//! derive implements [`HasPart<P>`] for every flattened part `P`, which is
//! what lets a middleware be written once, generic over any state that
//! contains its part:
//!
//! ```
//! use agent_state::{AgentState, HasPart, StateUpdate};
//!
//! /// The todo-list middleware's schema.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct TodoState {
//!     /// The plan.
//!     #[reducer(append)]
//!     pub todos: Vec<String>,
//! }
//!
//! /// Written once, for every state that flattens a `TodoState`.
//! fn plan<S: HasPart<TodoState>>(state: &S, step: &str) -> S::Update {
//!     let todo: &TodoState = state.part();
//!     if todo.todos.iter().any(|t| t == step) {
//!         return S::Update::default();
//!     }
//!     S::lift(TodoStateUpdate::new().todo(step))
//! }
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Agent {
//!     pub turns: u32,
//!     #[state(flatten)]
//!     pub planning: TodoState,
//! }
//!
//! let mut agent = Agent::default();
//! agent.apply(plan(&agent, "draft"))?;
//! agent.apply(plan(&agent, "draft"))?;
//! assert_eq!(agent.part::<TodoState>().todos, ["draft"]);
//! // JSON stays flat: the part's fields sit at the top level.
//! assert_eq!(agent.to_json(), serde_json::json!({"turns": 0, "todos": ["draft"]}));
//! # Ok::<(), agent_state::StateError>(())
//! ```

// `HasPart` is defined beside `AgentState`, whose `part` and `lift` name it
// as it names `AgentState`; the names check lives in `field_names`, below
// the traits, where generated code calls it.
#[doc(hidden)]
pub use crate::field_names::{clash, ClashMessage, FieldNames, PartNames};
pub use crate::state::HasPart;
