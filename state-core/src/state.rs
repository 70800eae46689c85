//! The trait every derived state implements, and the traits of its update
//! and its input.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::error::StateError;
use crate::field_json::to_value;
use crate::field_names::FieldNames;
use crate::schema::StateSchema;
pub use crate::write::StepRule;

/// A graph state: a struct whose fields each have a reducer.
///
/// Derive it; do not implement it by hand. The derive also generates the
/// update type (`<Name>Update`), the input type (`<Name>Input`), the staged
/// type (`<Name>Staged`), `Default`, serde's traits and the schema.
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
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an agent state",
    label = "not a struct with `#[derive(AgentState)]`",
    note = "`#[state(flatten)]` and `HasPart` take a state that derives `AgentState`"
)]
pub trait AgentState: Sized {
    /// The partial update: every updatable field optional.
    type Update: StateUpdate<State = Self>;
    /// What the graph's input may carry: the update's fields less the ones
    /// omitted from input.
    type Input: StateInput<State = Self> + Into<Self::Update>;
    /// A checked step, ready to commit.
    type Staged;

    /// The schema version stored with every checkpoint, from
    /// `#[state(version = N)]`; 1 when not declared. Raise it when a change
    /// makes stored JSON unreadable (a renamed field, a changed type) and
    /// declare `#[state(migrate = path)]` to upgrade old checkpoints. A
    /// `migrate` without a `version` of at least 2 is a compile error:
    /// nothing older than version 1 is stored, so it could never run.
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

    /// The JSON names of the fields, parts included, for the compile-time
    /// check that flattened parts do not clash.
    #[doc(hidden)]
    const FIELD_NAMES: FieldNames;

    /// The field metadata: names, types, reducers, defaults, docs,
    /// visibility and owners, flattened parts' fields included.
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

    /// Applies the graph's input: an update that cannot name a field
    /// omitted from input.
    fn apply_input(&mut self, input: Self::Input) -> Result<(), StateError> {
        self.apply(input.into())
    }

    /// Applies the graph's input given as JSON. A key naming a field
    /// omitted from input is an error saying so, and nothing is applied.
    fn apply_input_json(&mut self, input: Value) -> Result<(), StateError> {
        let input = Self::Input::from_json(input)?;
        self.apply_input(input)
    }

    /// Reads a whole state from JSON: missing fields take their defaults,
    /// unknown fields and values of the wrong type are errors naming the
    /// field.
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// The state as JSON: every field, private ones included (what a
    /// checkpoint stores).
    fn to_json(&self) -> Value;

    /// The graph's output view of the state: it serializes without the
    /// fields omitted from output.
    fn output(&self) -> Output<'_, Self> {
        Output(self)
    }

    /// The graph's output as JSON: [`to_json`](Self::to_json) without the
    /// fields omitted from output.
    fn to_output_json(&self) -> Value {
        to_value(&self.output())
    }

    /// The part of type `P` (a `#[state(flatten)]` field).
    fn part<P: AgentState>(&self) -> &P
    where
        Self: HasPart<P>,
    {
        <Self as HasPart<P>>::part_of(self)
    }

    /// Lifts an update of a part into an update of the whole that changes
    /// nothing else.
    fn lift<U>(part_update: U) -> Self::Update
    where
        U: StateUpdate,
        U::State: AgentState<Update = U>,
        Self: HasPart<U::State>,
    {
        let mut update = Self::Update::default();
        *<Self as HasPart<U::State>>::update_part_of_mut(&mut update) = part_update;
        update
    }

    /// The reference table of the fields in Markdown, with the JSON of
    /// each field's default value: see [`StateSchema::to_markdown`].
    fn reference_table() -> String
    where
        Self: Default,
    {
        Self::schema().to_markdown(Some(&Self::default().to_json()))
    }

    /// Whether a JSON key is one of the state's fields, a part's included.
    #[doc(hidden)]
    fn has_field(name: &str) -> bool;

    /// Writes the fields into a map being serialized, parts' fields
    /// inline: all of them, or those the output shows.
    #[doc(hidden)]
    fn serialize_fields<M: SerializeMap>(
        &self,
        map: &mut M,
        view: FieldView,
    ) -> Result<(), M::Error>;
}

/// Which fields [`AgentState::serialize_fields`] writes.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldView {
    /// Every field.
    All,
    /// The fields a checkpoint stores: all but the untracked ones.
    Stored,
    /// The fields the graph's output shows.
    Output,
}

/// The graph's output view of a state: serializes the fields the output
/// shows, flat. Made by [`AgentState::output`].
///
/// ```
/// use agent_state::AgentState;
///
/// #[derive(AgentState)]
/// struct Research {
///     answer: String,
///     /// Scratch notes of the planner: checkpointed, never shown.
///     #[state(private)]
///     notes: Vec<String>,
/// }
///
/// let state = Research { answer: "42".into(), notes: vec!["think".into()] };
/// assert_eq!(state.to_output_json(), serde_json::json!({"answer": "42"}));
/// assert_eq!(state.to_json(), serde_json::json!({"answer": "42", "notes": ["think"]}));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Output<'a, S>(&'a S);

impl<S> Output<'_, S> {
    /// The whole state behind the view.
    pub fn state(&self) -> &S {
        self.0
    }
}

impl<S: AgentState> Serialize for Output<'_, S> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut map = serializer.serialize_map(None)?;
        self.0.serialize_fields(&mut map, FieldView::Output)?;
        map.end()
    }
}

/// The update type of a state: what a node returns.
pub trait StateUpdate: Default + Sized {
    /// The state it updates.
    type State: AgentState;

    /// Whether the update changes nothing.
    fn is_empty(&self) -> bool;

    /// Gives every message the update carries an id where it has none, as
    /// the messages reducer would when applying it. A checkpointer calls this
    /// before storing an update, so replaying the stored update rebuilds the
    /// same ids. Messages inside fields with a `with` reducer are not reached.
    fn assign_message_ids(&mut self) {}

    /// Refuses an update given as the graph's input
    /// ([`Input::Update`](crate::graph::Input::Update)) that writes a field
    /// the input may not set (`omit_from_input` or `private`): the error is
    /// [`ErrorKind::NotInput`](crate::ErrorKind::NotInput), naming the
    /// field, as [`StateInput::from_json`] gives for the same JSON.
    /// `omitted`: the update is a part its state omits from input, so any
    /// write is refused. Generated.
    #[doc(hidden)]
    fn check_input(&self, omitted: bool) -> Result<(), StateError>;

    /// Reads an update from JSON, rejecting unknown fields (with the list of
    /// valid ones), immutable fields and values of the wrong type, each
    /// error naming the field.
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// The update as JSON: set fields only; overwrites as
    /// `{"__overwrite__": value}`.
    fn to_json(&self) -> Value;

    /// Adds an update of one part of the state (a `#[state(flatten)]`
    /// field). The part is told by the type of `part`, so generic code reads
    /// `S::lift(todo_update).with(messages_update)`; the trait must be in
    /// scope (`use agent_state::StateUpdate`).
    ///
    /// When this update already carries writes to that part, `part`'s
    /// writes come after them, as the next writes of the same step would,
    /// and none is dropped: messages, union and append items are
    /// concatenated, merges fold in order, and what one update cannot hold
    /// (two writes of a plain field, two overwrites, two writes through a
    /// `with` function) makes applying the update an error naming the
    /// field, as a step of the two updates would. See [`crate::combine`].
    ///
    /// ```
    /// use agent_state::base::{MessagesState, MessagesStateUpdate};
    /// use agent_state::{ai, AgentState, StateUpdate};
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Agent {
    ///     #[state(flatten)]
    ///     base: MessagesState,
    ///     turns: u32,
    /// }
    ///
    /// let update = Agent::lift(MessagesStateUpdate::new().message(ai("one")))
    ///     .with(MessagesStateUpdate::new().message(ai("two")));
    /// let mut agent = Agent::default();
    /// agent.apply(update)?;
    /// assert_eq!(agent.base.messages.len(), 2);
    /// # Ok::<(), agent_state::StateError>(())
    /// ```
    #[must_use]
    fn with<U>(mut self, part: U) -> Self
    where
        U: StateUpdate,
        U::State: AgentState<Update = U>,
        Self::State: HasPart<U::State> + AgentState<Update = Self>,
    {
        let slot = <Self::State as HasPart<U::State>>::update_part_of_mut(&mut self);
        StateUpdate::combine(slot, part, StepRule::Superstep);
        self
    }

    /// Adds `later`'s writes after this update's, as the next writes of one
    /// step under `rule` would be (see [`crate::combine`]). Generated.
    #[doc(hidden)]
    fn combine(&mut self, later: Self, rule: StepRule);

    /// Writes the set fields into a map being serialized, parts' inline.
    #[doc(hidden)]
    fn serialize_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

/// The input type of a state: what the graph's input may carry.
///
/// It has the update's fields less the ones marked `omit_from_input` or
/// `private` (and immutable ones, which no update can carry); a JSON input
/// naming one of those is an error that names the field. It converts into
/// the state's update with `Into`.
///
/// ```
/// use agent_state::{AgentState, ErrorKind, Messages, StateInput};
///
/// #[derive(AgentState)]
/// struct Chat {
///     #[reducer(messages)]
///     messages: Messages,
///     /// Set by a middleware, never by the caller.
///     #[state(omit_from_input)]
///     language: Option<String>,
/// }
///
/// let mut chat = Chat::default();
/// chat.apply_input(ChatInput::new().message("hello"))?;
/// let err = chat.apply_input_json(serde_json::json!({"language": "fr"})).unwrap_err();
/// assert_eq!(err.field(), "language");
/// assert_eq!(err.kind(), &ErrorKind::NotInput);
/// assert_eq!(chat.messages.len(), 1);
/// # Ok::<(), agent_state::StateError>(())
/// ```
pub trait StateInput: Default + Sized {
    /// The state it is the input of.
    type State: AgentState;

    /// Whether the input sets nothing.
    fn is_empty(&self) -> bool;

    /// Reads an input from JSON, rejecting fields omitted from input (and
    /// unknown and immutable ones), each error naming the field.
    fn from_json(value: Value) -> Result<Self, StateError>;

    /// The input as JSON: set fields only.
    fn to_json(&self) -> Value;

    /// Adds `later`'s writes after this input's, as
    /// [`StateUpdate::with`] does for updates. Generated.
    #[doc(hidden)]
    fn combine(&mut self, later: Self, rule: StepRule);

    /// Writes the set fields into a map being serialized, parts' inline.
    #[doc(hidden)]
    fn serialize_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

/// A state that embeds the derived state `P` as a part
/// (`#[state(flatten)] field: P`).
///
/// Implemented by `#[derive(AgentState)]`, once per flattened part; do not
/// implement it by hand. Use it as a bound (`S: HasPart<TodoState>`) and
/// reach the part through [`AgentState::part`] and [`AgentState::lift`],
/// or [`StateUpdate::with`] on an update.
///
/// Parts are direct: when `Outer` flattens `Mid`, which flattens `Base`,
/// `Outer: HasPart<Mid>` and `Mid: HasPart<Base>`, and `Base` is reached
/// through `Mid`. A state flattens each part type at most once.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no part `{P}`",
    label = "no `#[state(flatten)]` field of type `{P}`",
    note = "add `#[state(flatten)] name: {P}` to the state, or drop the bound"
)]
pub trait HasPart<P: AgentState>: AgentState {
    /// The part inside the whole.
    fn part_of(whole: &Self) -> &P;

    /// The part's update inside an update of the whole.
    fn update_part_of(update: &Self::Update) -> &P::Update;

    /// The part's update inside an update of the whole, to change.
    fn update_part_of_mut(update: &mut Self::Update) -> &mut P::Update;
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
