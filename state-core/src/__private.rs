//! What generated code calls. Not a public API: names here change without
//! notice. Generated code reaches everything through this one module, so a
//! user needs one dependency line and shadowed prelude names cannot break it.
//!
//! It sits above the rest of the crate: it re-exports what is defined below
//! (the writes, reducers, JSON glue and traits), and defines only glue that
//! nothing else in the crate imports: the field-type probes the derive's
//! checks call, with their diagnostic traits, and a few helpers of the
//! generated setters, schema and `stage`.

pub use ::serde;
pub use ::serde_json;

pub use crate::combine::{
    combine_replace, combine_write, concat_partials, keep_partials_apart, Conflict,
};
pub use crate::error::{ErrorKind, StateError};
pub use crate::field_json::{
    entry, expect_object, immutable_field, not_input, opt_entry, opt_write_entry, to_value,
    unknown_input_field, unknown_state_field, unknown_update_field, value_from_json, value_into,
    write_from_json, write_into, AsSerde, SerdeValue, WriteAsSerde,
};
pub use crate::field_names::{clash, FieldNames, PartNames};
pub use crate::messages::{MessageOp, MessageOps};
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
    AgentState, FieldView, HasPart, MigrationError, StateInput, StateUpdate, Stored,
};
pub use crate::storable::check_depth;
pub use crate::write::{
    commit_writes, overwrite_in, stage_writes, FieldStage, FieldWrite, StepRule, OVERWRITE_KEY,
    REDUCE_KEY,
};
pub use crate::writes::Writes;

use serde::de::DeserializeOwned;

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

/// Adds one update's write of a field, if it has one, to the field's list
/// of the step's writes: one call per field in the generated `stage`,
/// whose length is most of what a wide state costs to compile. The list
/// is taken and given back (`w = gather(w, write)`), not changed through
/// `&mut`: overwriting a list in place calls the drop glue of the write
/// type on the path of every update, a moved list has nothing to drop.
#[inline]
pub fn gather<P>(writes: Writes<P>, write: Option<P>) -> Writes<P> {
    match (writes, write) {
        (writes, None) => writes,
        (Writes::Zero, Some(write)) => Writes::One(write),
        (Writes::One(first), Some(write)) => Writes::Many(vec![first, write]),
        (Writes::Many(mut all), Some(write)) => {
            all.push(write);
            Writes::Many(all)
        }
    }
}

/// One update's write of a field as the field's list of a step's writes,
/// begun from the first update of a step in the generated `stage` (no
/// `gather`).
#[inline]
pub fn one<P>(write: Option<P>) -> Writes<P> {
    match write {
        None => Writes::Zero,
        Some(write) => Writes::One(write),
    }
}

/// A part's update as the part's list of a step's writes, begun from the
/// first update as [`one`] begins a field's: none when it is empty, as the
/// generated `stage` skips an empty part update.
#[inline]
pub fn one_part<U: crate::state::StateUpdate>(update: U) -> Writes<U> {
    if update.is_empty() {
        Writes::Zero
    } else {
        Writes::One(update)
    }
}

/// Per reducer served by a trait, the staging of a field's list of writes
/// (its error named after the field) and the commit of what was staged:
/// one call each in the generated code, whose types rustc infers from the
/// field alone (cheaper to compile than `stage_writes` with the trait's
/// function as an argument, and `in_field` around it).
macro_rules! via_trait {
    ($tr:ident, $partial:ty, $stage:ident, $commit:ident) => {
        #[doc = concat!("Stages a `", stringify!($tr), "` field's writes; errors name `field`.")]
        #[inline]
        pub fn $stage<T: $tr>(
            current: &T,
            writes: Writes<FieldWrite<T, $partial>>,
            rule: StepRule,
            field: &str,
        ) -> Result<FieldStage<T, T::Staged>, StateError> {
            in_field(stage_writes(current, writes, rule, T::stage), field)
        }

        #[doc = concat!("Commits what [`", stringify!($stage), "`] staged.")]
        #[inline]
        pub fn $commit<T: $tr>(current: &mut T, staged: FieldStage<T, T::Staged>) {
            commit_writes(current, staged, T::commit)
        }
    };
}

via_trait!(MergeField, T::Partial, stage_merge, commit_merge);
via_trait!(
    MessagesField,
    MessageOps<T::Message>,
    stage_messages,
    commit_messages
);
via_trait!(UnionField, Vec<T::Item>, stage_union, commit_union);
via_trait!(AppendField, Vec<T::Item>, stage_append, commit_append);

/// [`stage_replace`] of a field, its error named after the field: one call
/// per `replace` field in the generated `stage`.
#[inline]
pub fn stage_replace_field<T>(
    writes: Writes<T>,
    rule: StepRule,
    field: &str,
) -> Result<Option<T>, StateError> {
    in_field(stage_replace(writes, rule), field)
}

/// A field's staging, its error named after the field (a function, not a
/// closure per field in the generated `stage`).
#[inline]
pub fn in_field<T>(staged: Result<T, StateError>, field: &str) -> Result<T, StateError> {
    staged.map_err(|e| e.within(field))
}

/// [`extend_write`] with each item converted into the collection's item
/// `X`: a plural setter's one call (its body type-checked here once, not
/// per field of every state).
#[inline]
pub fn extend_into<X, T, P, I>(slot: &mut Option<FieldWrite<T, P>>, items: I)
where
    P: Default + Extend<X>,
    I: IntoIterator,
    I::Item: Into<X>,
{
    extend_write(slot, items.into_iter().map(Into::into));
}

/// [`extend_write`] with one item: a one-item setter's call.
#[inline]
pub fn push_write<X, T, P: Default + Extend<X>>(slot: &mut Option<FieldWrite<T, P>>, item: X) {
    extend_write(slot, std::iter::once(item));
}

/// An input made from an update with the same writes: implemented by
/// the derive for an input that mirrors its update (no part, no field
/// omitted from input), whose `from_json` and `combine` are then the
/// update's.
pub trait InputOf<U>: Sized {
    /// The update's writes, moved into an input.
    fn from_update(update: U) -> Self;
}

/// Adds items to a collection field's pending write: extends a pending
/// partial, or starts one (replacing a pending overwrite).
#[inline]
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
