//! The part of a search's filter PostgreSQL can apply itself: a jsonb
//! object the value must contain (`value @> $filter`), so the server
//! reads the namespace newest first and stops at the page's last match.
//!
//! Only conditions whose containment answers exactly as
//! [`Filter::matches`] are sent: a top-level field equal (plainly or by
//! `$eq`) to a string, a boolean, or an integer of magnitude below 2^53
//! (where comparing as `f64`, as the filter does, and comparing jsonb's
//! exact numerics agree on every number our puts store). A filter with
//! any other condition (`null`, which a missing field matches; a float;
//! an object or list; an order or `$ne`) is not sent at all, and the
//! search filters in Rust. The rows found are checked in Rust again.

use serde_json::{Map, Value};

use crate::store::Filter;

/// Integers from here on are not all exact as `f64`.
const EXACT_BELOW: u64 = 1 << 53;

/// The jsonb text every matching value contains, when the whole filter
/// can be applied that way.
pub(super) fn containment(filter: &Filter) -> Option<String> {
    let mut wanted = Map::new();
    for (field, condition) in filter.as_json() {
        let scalar = match condition {
            Value::Object(ops) if ops.len() == 1 => ops.get("$eq")?,
            Value::Object(_) => return None,
            plain => plain,
        };
        if !exact(scalar) {
            return None;
        }
        wanted.insert(field.clone(), scalar.clone());
    }
    Some(Value::Object(wanted).to_string())
}

/// Whether jsonb equality with `value` is the filter's equality.
fn exact(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|i| i.unsigned_abs() < EXACT_BELOW),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(filter: Value) -> Option<String> {
        containment(&Filter::from_json(filter).unwrap())
    }

    #[test]
    fn plain_and_eq_scalars_are_sent() {
        assert_eq!(of(json!({})).as_deref(), Some("{}"));
        let sent = of(json!({"group": 3, "kind": {"$eq": "note"}, "ok": true})).unwrap();
        let sent: Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(sent, json!({"group": 3, "kind": "note", "ok": true}));
    }

    #[test]
    fn conditions_containment_would_answer_otherwise_are_not() {
        for filter in [
            json!({"a": null}),
            json!({"a": 1.5}),
            json!({"a": 9_007_199_254_740_993_u64}),
            json!({"a": [1]}),
            json!({"a": {"b": 1}}),
            json!({"a": {"$ne": 1}}),
            json!({"a": {"$gt": 1}}),
            json!({"a": {"$eq": 1, "$ne": 2}}),
            json!({"a": 1, "b": null}),
        ] {
            assert_eq!(of(filter.clone()), None, "{filter}");
        }
    }
}
