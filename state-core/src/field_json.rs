//! A field's value and write as JSON: what generated `from_json` and
//! `serialize_fields` call to read and write each field, and the errors
//! they return for keys a state, update or input does not take.
//!
//! Generated code reaches these through `__private`; the crate itself uses
//! [`to_value`].

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use crate::error::{ErrorKind, StateError};
use crate::schema::StateSchema;
use crate::storable::check_depth;
use crate::write::{overwrite_in, FieldWrite, OVERWRITE_KEY, REDUCE_KEY};

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
        // Read from the borrowed value, so that on error it is still there
        // to be read again, slowly, for the path of what failed.
        T::deserialize(&value).map_err(|e| invalid_at_path::<T>(field, &value, e))
    }

    fn write_json<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }
}

/// The error of a field whose JSON `value` is not a `T`, naming the path
/// of the value at fault inside the field (`config.did`, `items[2].name`)
/// as the field: `value` is read again with the path tracked (the cold
/// path: only after a plain read failed with `first`).
#[cold]
fn invalid_at_path<T: DeserializeOwned>(
    field: &str,
    value: &Value,
    first: serde_json::Error,
) -> StateError {
    let error = match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => return StateError::invalid_value(field, first),
        Err(error) => error,
    };
    let path = error.path().to_string();
    let at = match path.as_str() {
        "." => field.to_owned(),
        seq if seq.starts_with('[') => format!("{field}{seq}"),
        inner => format!("{field}.{inner}"),
    };
    StateError::invalid_value(at, error.into_inner())
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

/// [`value_from_json`] into the field's slot of a `from_json` being
/// built. Generated code makes this one call per field and returns its
/// error without `?`: in a state of many fields, each `?` and each extra
/// statement is type-checked and borrow-checked in one long function, and
/// that is most of what the derive costs to compile.
#[inline]
pub fn value_into<T: SerdeValue>(
    slot: &mut Option<T>,
    field: &str,
    value: Value,
) -> Result<(), StateError> {
    *slot = Some(value_from_json(field, value)?);
    Ok(())
}

/// [`write_from_json`] into the field's slot, as [`value_into`].
#[inline]
pub fn write_into<T: SerdeValue, P: SerdeValue>(
    slot: &mut Option<FieldWrite<T, P>>,
    field: &str,
    value: Value,
) -> Result<(), StateError> {
    *slot = Some(write_from_json(field, value)?);
    Ok(())
}

/// Writes one field of a state into the map being serialized (one call
/// per field in generated code, as [`value_into`]).
#[inline]
pub fn entry<M: SerializeMap, T: SerdeValue>(
    map: &mut M,
    key: &str,
    value: &T,
) -> Result<(), M::Error> {
    map.serialize_entry(key, &AsSerde(value))
}

/// Writes one field of an update or input, if it is set.
#[inline]
pub fn opt_entry<M: SerializeMap, T: SerdeValue>(
    map: &mut M,
    key: &str,
    value: &Option<T>,
) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, &AsSerde(value)),
        None => Ok(()),
    }
}

/// Writes one reducer field's write of an update or input, if it is set
/// ([`WriteAsSerde`]).
#[inline]
pub fn opt_write_entry<M: SerializeMap, T: SerdeValue, P: SerdeValue>(
    map: &mut M,
    key: &str,
    write: &Option<FieldWrite<T, P>>,
) -> Result<(), M::Error> {
    match write {
        Some(write) => map.serialize_entry(key, &WriteAsSerde(write)),
        None => Ok(()),
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

/// Serializes into a JSON value. Our generated `Serialize` impls write maps
/// of string keys, which cannot fail; a user type whose `Serialize` fails is
/// written as `null` rather than panicking.
pub fn to_value<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
