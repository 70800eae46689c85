//! What generated code calls. Not a public API: names here change without
//! notice. Generated code reaches everything through this one module, so a
//! user needs one dependency line and shadowed prelude names cannot break it.

pub use ::serde;
pub use ::serde_json;

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
    commit_writes, stage_writes, FieldStage, FieldWrite, OVERWRITE_KEY, REDUCE_KEY,
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

/// Reads one field's value, naming the field on error; JSON nested deeper
/// than a checkpoint stores is refused.
pub fn value_from_json<T: DeserializeOwned>(field: &str, value: Value) -> Result<T, StateError> {
    check_depth(field, &value)?;
    decode(field, value)
}

fn decode<T: DeserializeOwned>(field: &str, value: Value) -> Result<T, StateError> {
    serde_json::from_value(value).map_err(|e| StateError::invalid_value(field, e))
}

/// Reads one reducer field's write: `{"__overwrite__": v}`, a reduce write
/// escaped as `{"__reduce__": v}`, or a partial.
pub fn write_from_json<T: DeserializeOwned, P: DeserializeOwned>(
    field: &str,
    value: Value,
) -> Result<FieldWrite<T, P>, StateError> {
    check_depth(field, &value)?;
    match value {
        Value::Object(mut map) if map.len() == 1 => {
            if let Some(inner) = map.remove(OVERWRITE_KEY) {
                return decode(field, inner).map(FieldWrite::Overwrite);
            }
            if let Some(inner) = map.remove(REDUCE_KEY) {
                return decode(field, inner).map(FieldWrite::Reduce);
            }
            decode(field, Value::Object(map)).map(FieldWrite::Reduce)
        }
        other => decode(field, other).map(FieldWrite::Reduce),
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
