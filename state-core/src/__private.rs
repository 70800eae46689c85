//! What generated code calls. Not a public API: names here change without
//! notice. Generated code reaches everything through this one module, so a
//! user needs one dependency line and shadowed prelude names cannot break it.

pub use ::serde;
pub use ::serde_json;

pub use crate::combine::{
    combine_replace, combine_write, concat_partials, keep_partials_apart, Conflict,
};
pub use crate::error::{ErrorKind, StateError};
pub use crate::messages::{MessageOp, MessageOps};
pub use crate::part::{clash, FieldNames, HasPart, PartNames};
pub use crate::reducer::channel::{
    commit_channel, stage_any_value, stage_ephemeral, stage_topic, ChannelStage,
};
pub use crate::reducer::merge::assign_nested_message_ids;
pub use crate::reducer::messages::assign_message_ids;
pub use crate::reducer::replace::{commit_replace, stage_replace};
pub use crate::reducer::with::stage_with;
pub use crate::reducer::{AppendField, MergeField, MessagesField, UnionField};
pub use crate::schema::{FieldSchema, PartSchema, ReducerKind, StateSchema, Visibility};
pub use crate::state::{
    AgentState, FieldView, MigrationError, StateInput, StateUpdate, StepRule, Stored,
};
pub use crate::storable::check_depth;
pub use crate::write::{
    commit_writes, overwrite_in, stage_writes, FieldStage, FieldWrite, OVERWRITE_KEY, REDUCE_KEY,
};
pub use crate::writes::Writes;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The object of fields, or the error for a non-object input.
pub fn expect_object(value: Value) -> Result<Map<String, Value>, StateError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(StateError::new(
            "",
            ErrorKind::NotAnObject {
                found: crate::error::json_type(&other),
            },
        )),
    }
}

/// A field value generated code reads and writes as JSON: any type with
/// serde's `Serialize` and `DeserializeOwned`.
///
/// Generated impls require this trait of a field type, written
/// higher-ranked (`for<'__f> Plan: SerdeValue`), rather than serde's traits
/// themselves: rustc does not check such a bound where it is declared, and
/// unlike `DeserializeOwned` (itself higher-ranked) it is never ambiguous
/// with the type's own impl. A field type without serde then gets one error,
/// from the derive's check on its type, instead of one per impl.
pub trait SerdeValue: Sized {
    /// Reads the value, naming the field on error.
    fn read_json(field: &str, value: Value) -> Result<Self, StateError>;

    /// Serializes the value.
    fn write_json<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl<T: serde::Serialize + DeserializeOwned> SerdeValue for T {
    fn read_json(field: &str, value: Value) -> Result<Self, StateError> {
        serde_json::from_value(value).map_err(|e| StateError::invalid_value(field, e))
    }

    fn write_json<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }
}

/// A field value serialized through [`SerdeValue`].
pub struct AsSerde<'a, T>(pub &'a T);

impl<T: SerdeValue> serde::Serialize for AsSerde<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.write_json(serializer)
    }
}

/// A reducer field's write serialized through [`SerdeValue`]: the partial
/// (escaped as `{"__reduce__": partial}` when it would read as a marker), or
/// `{"__overwrite__": value}`.
pub struct WriteAsSerde<'a, T, P>(pub &'a FieldWrite<T, P>);

impl<T: SerdeValue, P: SerdeValue> serde::Serialize for WriteAsSerde<'_, T, P> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            // A partial whose JSON would read as a marker is escaped, so
            // the update reads back as itself.
            FieldWrite::Reduce(partial) if crate::storable::reads_as_marker(&AsSerde(partial)) => {
                use serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(REDUCE_KEY, &AsSerde(partial))?;
                map.end()
            }
            FieldWrite::Reduce(partial) => partial.write_json(serializer),
            FieldWrite::Overwrite(value) => {
                use serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(OVERWRITE_KEY, &AsSerde(value))?;
                map.end()
            }
        }
    }
}

/// Reads one field's value, naming the field on error; JSON nested deeper
/// than a checkpoint stores is refused.
pub fn value_from_json<T: SerdeValue>(field: &str, value: Value) -> Result<T, StateError> {
    check_depth(field, &value)?;
    T::read_json(field, value)
}

/// Reads one reducer field's write: a reduce write escaped as
/// `{"__reduce__": v}`, an overwrite in either JSON form ([`overwrite_in`]),
/// or a partial.
pub fn write_from_json<T: SerdeValue, P: SerdeValue>(
    field: &str,
    value: Value,
) -> Result<FieldWrite<T, P>, StateError> {
    check_depth(field, &value)?;
    let value = match value {
        Value::Object(mut map) if map.len() == 1 && map.contains_key(REDUCE_KEY) => {
            let inner = map.remove(REDUCE_KEY).unwrap_or(Value::Null);
            return P::read_json(field, inner).map(FieldWrite::Reduce);
        }
        other => other,
    };
    match overwrite_in(value) {
        Ok(inner) => T::read_json(field, inner).map(FieldWrite::Overwrite),
        Err(partial) => P::read_json(field, partial).map(FieldWrite::Reduce),
    }
}

/// The error for a key a whole state does not have, listing its fields.
pub fn unknown_state_field(key: String, schema: &StateSchema) -> StateError {
    let expected = schema.fields.iter().map(|f| f.name).collect();
    StateError::new(key, ErrorKind::UnknownField { expected })
}

/// The error for a key an update may not carry, listing the fields an
/// update can write (immutable ones are answered by [`immutable_field`]).
pub fn unknown_update_field(key: String, schema: &StateSchema) -> StateError {
    let expected = schema.update_fields().map(|f| f.name).collect();
    StateError::new(key, ErrorKind::UnknownField { expected })
}

/// The error for a key the graph's input may not carry, listing the fields
/// it can set (immutable ones and ones omitted from input are answered by
/// [`immutable_field`] and [`not_input`]).
pub fn unknown_input_field(key: String, schema: &StateSchema) -> StateError {
    let expected = schema.input_fields().map(|f| f.name).collect();
    StateError::new(key, ErrorKind::UnknownField { expected })
}

/// The error for an immutable field named by an update.
pub fn immutable_field(key: String) -> StateError {
    StateError::new(key, ErrorKind::Immutable)
}

/// The error for a field omitted from input named by the graph's input.
pub fn not_input(key: String) -> StateError {
    StateError::new(key, ErrorKind::NotInput)
}

/// The fields of a part's schema as the outer state lists them: with the
/// outer state's part field name and the visibility of the flattened field
/// applied on top of each field's own.
pub fn part_fields(
    part: &'static str,
    visibility: Visibility,
    schema: &'static StateSchema,
) -> impl Iterator<Item = FieldSchema> {
    schema.fields.iter().map(move |f| FieldSchema {
        visibility: f.visibility.and(visibility),
        part: Some(part),
        ..f.clone()
    })
}

/// The doc of a part: the flattened field's own, else the part struct's.
pub fn part_doc(field_doc: &'static str, schema: &'static StateSchema) -> &'static str {
    if field_doc.is_empty() {
        schema.doc
    } else {
        field_doc
    }
}

/// Serializes into a JSON value. Our generated `Serialize` impls write maps
/// of string keys, which cannot fail; a user type whose `Serialize` fails is
/// written as `null` rather than panicking.
pub fn to_value<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Adds items to a collection field's pending write: extends a pending
/// partial, or starts one (replacing a pending overwrite).
pub fn extend_write<T, P, I>(slot: &mut Option<FieldWrite<T, P>>, items: I)
where
    P: Default + Extend<I::Item>,
    I: IntoIterator,
{
    match slot {
        Some(FieldWrite::Reduce(partial)) => partial.extend(items),
        _ => {
            let mut partial = P::default();
            partial.extend(items);
            *slot = Some(FieldWrite::Reduce(partial));
        }
    }
}

/// The probe of the derive's checks of a field type, each one error on
/// the type however many traits it misses.
///
/// `(&Probe::<T>::new()).serde_verdict()` is [`IsSerde`] when `T` is
/// `Serialize + DeserializeOwned` ([`ViaSerde`], found first by method
/// resolution) and [`NotSerde`] otherwise ([`ViaNotSerde`], found by
/// autoref), and [`assert_serde`] accepts only the first. A type missing
/// both traits so gives one error, on the field's type, instead of one per
/// trait and per place generated code serializes. `union_verdict` and
/// [`assert_union`] do the same for [`UnionField`].
pub struct Probe<T>(core::marker::PhantomData<T>);

impl<T> Probe<T> {
    /// A probe of `T`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(core::marker::PhantomData)
    }
}

/// The field type has serde's traits.
pub struct IsSerde;

/// The field type lacks `Serialize` or `Deserialize`.
pub struct NotSerde;

/// Found first, for a type with serde's traits.
pub trait ViaSerde {
    /// [`IsSerde`].
    fn serde_verdict(&self) -> IsSerde {
        IsSerde
    }
}

impl<T: serde::Serialize + DeserializeOwned> ViaSerde for Probe<T> {}

/// Found by autoref when [`ViaSerde`] does not apply.
pub trait ViaNotSerde {
    /// [`NotSerde`].
    fn serde_verdict(&self) -> NotSerde {
        NotSerde
    }
}

impl<T> ViaNotSerde for &Probe<T> {}

/// The verdict of a [`Probe`] of a field type `T`: only [`IsSerde`] is one.
#[diagnostic::on_unimplemented(
    message = "`{T}` cannot be the type of a state field: it needs serde's `Serialize` and `Deserialize`",
    label = "not `Serialize + Deserialize`",
    note = "a state is stored and sent as JSON; derive both on `{T}`: `#[derive(Serialize, Deserialize)]` with `#[serde(crate = \"agent_state::serde\")]` (serde re-exported by agent_state), or check whether the crate of `{T}` has a `serde` feature"
)]
pub trait SerdeField<T> {}

#[diagnostic::do_not_recommend]
impl<T> SerdeField<T> for IsSerde {}

/// Accepts the verdict of a [`Probe`] of `T` only if `T` has serde's traits.
pub fn assert_serde<T, V: SerdeField<T>>(verdict: V) {
    let _ = verdict;
}

/// The field type serves `#[reducer(union)]`.
pub struct IsUnion;

/// The field type does not serve `#[reducer(union)]`.
pub struct NotUnion;

/// Found first, for a type the union reducer serves.
pub trait ViaUnion {
    /// [`IsUnion`].
    fn union_verdict(&self) -> IsUnion {
        IsUnion
    }
}

impl<T: UnionField> ViaUnion for Probe<T> {}

/// Found by autoref when [`ViaUnion`] does not apply.
pub trait ViaNotUnion {
    /// [`NotUnion`].
    fn union_verdict(&self) -> NotUnion {
        NotUnion
    }
}

impl<T> ViaNotUnion for &Probe<T> {}

/// The verdict of a union [`Probe`] of a field type `T`: only [`IsUnion`].
#[diagnostic::on_unimplemented(
    message = "`#[reducer(union)]` cannot serve a field of type `{T}`: its items must be `Hash + Eq` (`UnionVec`, `HashSet`, `IndexSet`) or `Ord` (`BTreeSet`)",
    label = "items the union reducer cannot index",
    note = "union adds an item only if it is not there yet, which it finds out through an index of the items: derive `Hash` and `Eq` (or `Ord`, for a `BTreeSet`) on the item type"
)]
pub trait UnionVerdict<T> {}

#[diagnostic::do_not_recommend]
impl<T> UnionVerdict<T> for IsUnion {}

/// Accepts the verdict of a union [`Probe`] of `T` only if the union
/// reducer serves `T`.
pub fn assert_union<T, V: UnionVerdict<T>>(verdict: V) {
    let _ = verdict;
}

/// A field's initial value when it has no `#[state(default = ..)]`: its
/// `Default`. Through this trait, a type without one is told how to give
/// the field a default.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `Default`, which a state field without `#[state(default = ..)]` takes as its initial value",
    label = "no `Default`",
    note = "give the field its initial value with `#[state(default = expr)]`, or implement `Default` for `{Self}`"
)]
pub trait FieldDefault {
    /// The initial value.
    fn field_default() -> Self;
}

impl<T: Default> FieldDefault for T {
    fn field_default() -> Self {
        T::default()
    }
}

/// Implemented by nothing: the bound of the stand-in method an immutable
/// field gets on the update type, so calling it explains itself.
#[diagnostic::on_unimplemented(
    message = "this field is `#[reducer(immutable)]`: it is set when the state is built and no update may change it",
    label = "an immutable field has no setter",
    note = "set it when building the state (`State {{ field, ..Default::default() }}` or `AgentState::from_json`)"
)]
pub trait ImmutableField {}

/// Expands `#[state(json_schema)]`'s impls when the `schemars` feature is on.
#[cfg(feature = "schemars")]
#[doc(hidden)]
#[macro_export]
macro_rules! __agent_state_if_json_schema {
    ($($tokens:tt)*) => { $($tokens)* };
}

/// Without the `schemars` feature, `#[state(json_schema)]` is one error
/// saying how to turn it on.
#[cfg(not(feature = "schemars"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __agent_state_if_json_schema {
    ($($tokens:tt)*) => {
        ::core::compile_error!(
            "`#[state(json_schema)]` needs the `schemars` feature of agent-state: `agent-state = { version = \"..\", features = [\"schemars\"] }`"
        );
    };
}

pub use crate::__agent_state_if_json_schema as if_json_schema;

/// The JSON Schema support generated code calls.
#[cfg(feature = "schemars")]
pub use crate::json_schema;
