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
//!
//! A tool written once for any state with two parts, and a field the graph's
//! input may not set:
//!
//! ```
//! use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
//! use agent_state::serde_json::json;
//! use agent_state::{tool, AgentState, HasPart, StateError, StateUpdate};
//!
//! /// The todo-list middleware's schema.
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct PlanningState {
//!     /// The plan, replaced whole by `write_todos`.
//!     #[state(omit_from_input)]
//!     pub todos: Vec<String>,
//! }
//!
//! /// The `write_todos` tool, written once for any state with the two parts.
//! fn write_todos<S: HasPart<PlanningState> + HasMessages>(todos: Vec<String>, call: &str) -> S::Update {
//!     let note = format!("Updated todo list to {} items", todos.len());
//!     S::lift(PlanningStateUpdate::new().todos(todos))
//!         .with(MessagesStateUpdate::new().message(tool(note, call)))
//! }
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Agent {
//!     /// The conversation: LangChain's base `AgentState`.
//!     #[state(flatten)]
//!     pub base: MessagesState,
//!     #[state(flatten)]
//!     pub planning: PlanningState,
//! }
//!
//! let mut agent = Agent::default();
//! agent.apply_input_json(json!({"messages": "Plan my week"}))?;
//! agent.apply(write_todos::<Agent>(vec!["gym".into(), "read".into()], "call-1"))?;
//! assert_eq!(agent.part::<PlanningState>().todos.len(), 2);
//! assert_eq!(agent.messages().len(), 2);
//! assert_eq!(agent.to_json()["todos"], json!(["gym", "read"])); // flat
//!
//! // `todos` is omitted from input: the graph's input may not set it.
//! let err = agent.apply_input_json(json!({"todos": []})).unwrap_err();
//! assert_eq!(err.field(), "todos");
//! # Ok::<(), StateError>(())
//! ```
//!
//! * `HasPart<P>` is implemented for every flattened part `P`:
//!   `state.part::<P>()` reads it, `S::lift(part_update)` makes an update of
//!   the whole, `update.with(other_part_update)` adds another part's (`with`
//!   is a method of the `StateUpdate` trait: bring it in scope with
//!   `use agent_state::StateUpdate`). Outside generic code, the setter named
//!   after the part's field does the same:
//!   `AgentUpdate::new().planning(PlanningStateUpdate::new().todos(..))`.
//! * Adding an update of a part the update already writes keeps both: its
//!   writes come after the earlier ones, as the next writes of one step
//!   would (messages and list items concatenate, merges fold, an overwrite
//!   discards what came before it). What one update cannot hold (two writes
//!   of a plain field, two overwrites, two writes through a `with` function)
//!   makes applying it the error such a step gives, naming the field.
//! * `agent_state::base::MessagesState` is the conversation as a part;
//!   `HasMessages` is any state that flattens it.
//! * Parts are direct (a part of a part is reached through its parent) and a
//!   state flattens each part type once. Two parts (or a part and the state)
//!   that declare the same JSON name do not compile: the error names the
//!   field and both declarations.

// `HasPart` is defined beside `AgentState`, whose `part` and `lift` name it
// as it names `AgentState`; the names check lives in `field_names`, below
// the traits, where generated code calls it.
#[doc(hidden)]
pub use crate::field_names::{clash, ClashMessage, FieldNames, PartNames};
pub use crate::state::HasPart;
