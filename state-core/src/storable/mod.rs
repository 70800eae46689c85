//! What a checkpoint can store and read back as itself, and the checks that
//! keep everything else out of the store.
//!
//! A step is stored as JSON text and read back from it, so a value survives
//! a checkpoint only if its JSON reads back as the same value. Three things
//! break that, and each is refused, naming the field, before anything is
//! stored:
//!
//! * **Depth.** serde_json reads at most 127 nested arrays and objects. A
//!   stored record wraps a field's value in a few more (the list of writes,
//!   the node's write, the update), so a field's JSON may nest at most
//!   [`MAX_FIELD_DEPTH`] levels: checked when JSON comes in
//!   ([`check_depth`], called by every `from_json`) and when a step is
//!   encoded.
//! * **Values JSON has no faithful form for**: NaN and infinite floats
//!   (serde_json writes `null`), integers beyond 64 bits (read back as
//!   floats), `Some` of a value written as `null` (read back as `None`), a
//!   `Serialize` that fails. The encoder ([`encode_object`]) refuses them.
//!   A `with` reducer, the one reducer whose result can nest deeper than
//!   its writes or hold a NaN they did not, has its result checked too
//!   ([`check_value`]), so a snapshot of the state can always be stored.
//! * **Markers.** An update's field JSON `{"__overwrite__": v}` means an
//!   overwrite. A reduce write whose own JSON has a marker's shape is written
//!   as `{"__reduce__": v}` ([`reads_as_marker`], used by
//!   [`FieldWrite`](crate::FieldWrite)'s `Serialize`), which reads back as
//!   that reduce write: the encoding is injective, whatever keys user data has.

mod check;
mod probe;
mod text;

pub(crate) use check::{check_value, encode_object, Fields};
pub(crate) use probe::reads_as_marker;

use serde_json::Value;

use crate::error::{ErrorKind, StateError};

/// The JSON key that marks an overwrite: `{"__overwrite__": value}`, as in
/// LangGraph.
pub const OVERWRITE_KEY: &str = "__overwrite__";

/// The JSON key that marks a reduce write whose own JSON would read as a
/// marker (a `merge` map whose only key is `__overwrite__`, say):
/// `{"__reduce__": value}`. Written only for those, so an update's JSON
/// reads back as the update whatever keys its data has.
pub const REDUCE_KEY: &str = "__reduce__";

/// The deepest a field's JSON may nest, counted in arrays and objects (a
/// number is 0 deep, `[1]` is 1, `{"a": [1]}` is 2): deeper values are
/// refused when JSON comes in and when a step is stored.
///
/// serde_json reads 127 levels; a stored step wraps a field's write in 3
/// (the list of writes, a node's write, the update) and a snapshot a field's
/// value in 1. 100 leaves room for those and for wrappers a later record
/// format may add. An overwrite (`{"__overwrite__": v}`) and an escaped
/// reduce write (`{"__reduce__": v}`) count their wrapper, as stored; a
/// single message given as an object is stored as a list of one, one
/// level deeper than it came.
pub const MAX_FIELD_DEPTH: usize = 100;

/// Refuses JSON for `field` that nests deeper than [`MAX_FIELD_DEPTH`]. The
/// walk stops one level below the limit, so it is cheap on deep input and
/// never recurses further than the limit.
pub fn check_depth(field: &str, value: &Value) -> Result<(), StateError> {
    if deeper_than(value, MAX_FIELD_DEPTH) {
        Err(StateError::new(
            field,
            ErrorKind::TooDeep {
                max: MAX_FIELD_DEPTH,
            },
        ))
    } else {
        Ok(())
    }
}

/// Whether `value` nests more than `levels` arrays and objects.
fn deeper_than(value: &Value, levels: usize) -> bool {
    match value {
        Value::Array(items) => levels == 0 || items.iter().any(|v| deeper_than(v, levels - 1)),
        Value::Object(map) => levels == 0 || map.values().any(|v| deeper_than(v, levels - 1)),
        _ => false,
    }
}

/// Whether a string (or object key) inside `value` holds a NUL, which
/// PostgreSQL's text and jsonb cannot store: what the PostgreSQL
/// checkpointer and every store refuse.
pub(crate) fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `depth` nested arrays around a number.
    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn depth_is_counted_in_arrays_and_objects() {
        assert!(!deeper_than(&json!(1), 0));
        assert!(deeper_than(&json!([]), 0));
        assert!(!deeper_than(&json!({"a": [1]}), 2));
        assert!(deeper_than(&json!({"a": [1]}), 1));
        assert!(check_depth("f", &nested(MAX_FIELD_DEPTH)).is_ok());
        let err = check_depth("f", &nested(MAX_FIELD_DEPTH + 1)).unwrap_err();
        assert_eq!(err.field(), "f");
        assert_eq!(
            err.kind(),
            &ErrorKind::TooDeep {
                max: MAX_FIELD_DEPTH
            }
        );
    }

    #[test]
    fn a_stored_step_at_the_limit_still_parses() {
        // The record's three wrappers, an overwrite's, then the value.
        let record =
            json!([{"node": "n", "update": {"f": {"__overwrite__": nested(MAX_FIELD_DEPTH - 1)}}}]);
        let text = record.to_string();
        assert!(serde_json::from_str::<Value>(&text).is_ok());
    }
}
