//! The trait every derived state implements, and the trait of its update.

use serde_json::Value;

use crate::error::StateError;
use crate::schema::StateSchema;

/// How several writes to one field in one step combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepRule {
    /// LangGraph's superstep: a field without a reducer takes one write per
    /// step (a second is an error naming the field), reducer fields fold in
    /// order, and at most one overwrite per field.
    Superstep,
    /// Plain folding, in order: the last write to a field without a reducer
    /// wins. This is how a nested state merges (`{...prev, ...curr}`).
    Fold,
}

/// A graph state: a struct whose fields each have a reducer.
///
/// Derive it; do not implement it by hand. The derive also generates the
/// update type (`<Name>Update`), the staged type (`<Name>Staged`),
/// `Default`, serde's traits and the schema.
///
/// Updates are atomic: [`stage`](Self::stage) checks a whole step without
/// changing anything and [`commit`](Self::commit) cannot fail, so
/// [`apply`](Self::apply) and [`apply_all`](Self::apply_all) either apply
/// every write or return the error and leave the state as it was.
///
/// ```
/// use agent_state::{ai, AgentState, Messages};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[reducer(messages)]
///     messages: Messages,
///     turns: u32,
/// }
///
/// let mut chat = Chat::default();
/// chat.apply(ChatUpdate::new().message(ai("hello")).turns(1))?;
/// assert_eq!(chat.turns, 1);
///
/// // Two nodes of one step writing the same plain field: rejected whole.
/// let err = chat
///     .apply_all([ChatUpdate::new().turns(2), ChatUpdate::new().message(ai("x")).turns(3)])
///     .unwrap_err();
/// assert_eq!(err.field(), "turns");
/// assert_eq!(chat.messages.len(), 1);
/// # Ok::<(), agent_state::StateError>(())
/// ```
pub trait AgentState: Sized {
    /// The partial update: every updatable field optional.
    type Update: StateUpdate;
    /// A checked step, ready to commit.
    type Staged;

    /// The schema version stored with every checkpoint, from
    /// `#[state(version = N)]`; 1 when not declared. Raise it when a change
    /// makes stored JSON unreadable (a renamed field, a changed type) and
    /// declare `#[state(migrate = path)]` to upgrade old checkpoints.
    const VERSION: u32 = 1;

    /// Upgrades JSON stored under version `from` to version `from + 1`,
    /// from `#[state(migrate = path)]`: the path names a
    /// `fn(u32, Stored, Value) -> Result<Value, MigrationError>`. A
    /// checkpointer calls it once per version step, for snapshots and for
    /// stored updates alike. Without a declared migration, old checkpoints
    /// fail to load with an error naming the versions.
    fn migrate(from: u32, kind: Stored, value: Value) -> Result<Value, MigrationError> {
        let _ = (kind, value);
        Err(MigrationError::new(format!(
            "no migration declared from version {from} (add `#[state(migrate = path)]`)"
        )))
    }

    /// The field metadata: names, types, reducers, defaults, docs.
    fn schema() -> &'static StateSchema;

    /// Checks a step's updates against the state and prepares them, without
    /// changing anything. Every error an update can cause arises here.
    fn stage<I>(&self, updates: I, rule: StepRule) -> Result<Self::Staged, StateError>
    where
        I: IntoIterator<Item = Self::Update>;

    /// Writes a staged step. Cannot fail. Staging and committing separately
    /// lets a caller persist a step between the two.
    fn commit(&mut self, staged: Self::Staged);

    /// Applies one update through each field's reducer.
    fn apply(&mut self, update: Self::Update) -> Result<(), StateError> {
        let staged = self.stage(std::iter::once(update), StepRule::Superstep)?;
        self.commit(staged);
        Ok(())
    }

    /// Applies the updates of one step (the nodes of one superstep) as one:
    /// see [`StepRule::Superstep`].
    fn apply_all<I>(&mut self, updates: I) -> Result<(), StateError>
    where
        I: IntoIterator<Item = Self::Update>,
    {
        let staged = self.stage(updates, StepRule::Superstep)?;
        self.commit(staged);
        Ok(())
    }

    /// Applies an update given as JSON (what a LangGraph node returns).
    fn apply_json(&mut self, update: Value) -> Result<(), StateError> {
        let update = Self::Update::from_json(update)?;
        self.apply(update)
    }

    /// Reads a whole state from JSON: missing fields take their defaults,
    /// unknown fields and values of the wrong type are errors naming the
    /// field.
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// The state as JSON.
    fn to_json(&self) -> Value;
}

/// The update type of a state: what a node returns.
pub trait StateUpdate: Default + Sized {
    /// Whether the update changes nothing.
    fn is_empty(&self) -> bool;

    /// Gives every message the update carries an id where it has none, as
    /// the messages reducer would when applying it. A checkpointer calls this
    /// before storing an update, so replaying the stored update rebuilds the
    /// same ids. Messages inside fields with a `with` reducer are not reached.
    fn assign_message_ids(&mut self) {}

    /// Reads an update from JSON, rejecting unknown fields (with the list of
    /// valid ones), immutable fields and values of the wrong type, each
    /// error naming the field.
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// The update as JSON: set fields only; overwrites as
    /// `{"__overwrite__": value}`.
    fn to_json(&self) -> Value;
}

/// What a stored JSON value holds, for a [migration](AgentState::migrate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A whole state (a checkpoint's snapshot).
    State,
    /// One update (a node's write in a stored step).
    Update,
}

/// Why a migration could not upgrade a stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationError {
    message: String,
}

impl MigrationError {
    /// An error with the reason the value cannot be upgraded.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The reason.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for MigrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MigrationError {}
