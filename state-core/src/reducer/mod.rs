//! The reducers: how a field combines its current value with a step's
//! writes. One module per reducer, each holding that reducer's whole
//! semantics.
//!
//! Every reducer works in two phases, which is what makes a step atomic at a
//! cost in proportion to the update: `stage` reads the current value and
//! checks the writes without changing anything (the only place an error can
//! arise), and `commit` writes what was staged and cannot fail. A state's
//! `apply` stages every field before it commits any.
//!
//! | attribute | module | LangGraph |
//! | --- | --- | --- |
//! | none / `replace` | [`replace`] | a channel without a reducer (`LastValue`) |
//! | `merge` | [`merge`] | a dict merged key by key |
//! | `messages` | [`messages`] | `add_messages` |
//! | `union` | [`union`] | a set-like reducer |
//! | `append` | [`append`] | `operator.add` |
//! | `with = path` | [`with`] | a reducer function |
//! | `ephemeral`, `any_value`, `topic`, `untracked` | [`channel`] | `EphemeralValue`, `AnyValue`, `Topic`, `UntrackedValue` |
//!
//! The field types each accepts, the setters it gets and the rules of the
//! attributes are on the derive (`agent_state::AgentState`, the derive
//! macro).

pub mod append;
pub mod channel;
pub mod merge;
pub mod messages;
pub mod replace;
pub mod union;
pub mod with;

pub use append::AppendField;
pub use merge::MergeField;
pub use messages::{add_messages, MessageNotFound, MessagesField};
pub use union::UnionField;
