//! `merge`: keys (or fields) present in the update override, the rest are
//! kept: `(prev, curr) => ({ ...prev, ...curr })`.
//!
//! Served types: `HashMap`, `BTreeMap`, `serde_json::Map`, `serde_json::Value`
//! (objects; the merge is shallow, like the spread it mirrors) and structs
//! that derive `AgentState`, whose partial is their own update type and whose
//! fields merge through their own reducers. A step's writes fold in order.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use serde_json::{Map, Value};

use crate::error::{json_type, ErrorKind, StateError};
use crate::write::FieldWrite;
use crate::writes::Writes;

/// A field type the `merge` reducer can serve.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(merge)]` cannot serve a field of type `{Self}`",
    label = "not mergeable",
    note = "merge works on HashMap, BTreeMap, serde_json::Map, serde_json::Value and structs that derive AgentState"
)]
pub trait MergeField: Sized {
    /// What an update carries: the keys or fields to override.
    type Partial;
    /// A checked step, ready to commit.
    type Staged;

    /// Checks a step's partials against the current value. Changes nothing.
    fn stage(&self, partials: Writes<Self::Partial>) -> Result<Self::Staged, StateError>;

    /// Writes a staged step. Cannot fail.
    fn commit(&mut self, staged: Self::Staged);

    /// Puts two partials of one update together, `later` after `first`, as
    /// two writes of one step would fold (see [`crate::combine`]); hands
    /// `later` back when only [`stage`](Self::stage) could. The default
    /// keeps them apart: combining two such updates is then an error when
    /// applied, never a lost write.
    fn combine_partials(
        first: &mut Self::Partial,
        later: Self::Partial,
    ) -> Result<(), Self::Partial> {
        let _ = first;
        Err(later)
    }

    /// Gives the messages a partial carries ids where they have none (see
    /// [`StateUpdate::assign_message_ids`](crate::StateUpdate::assign_message_ids));
    /// nothing for plain maps.
    fn assign_message_ids(partial: &mut Self::Partial) {
        let _ = partial;
    }
}

/// Gives the messages of a merge field's write ids (a nested state's
/// messages); an overwrite brings a whole state, whose messages have them.
pub fn assign_nested_message_ids<T: MergeField>(write: &mut FieldWrite<T, T::Partial>) {
    if let FieldWrite::Reduce(partial) = write {
        T::assign_message_ids(partial);
    }
}

/// Maps merge by `extend`: the partial's keys override, the rest stay.
macro_rules! merge_by_extend {
    ($(impl[$($generics:tt)*] $ty:ty;)*) => {$(
        impl<$($generics)*> MergeField for $ty {
            type Partial = Self;
            type Staged = Writes<Self>;

            fn stage(&self, partials: Writes<Self>) -> Result<Writes<Self>, StateError> {
                Ok(partials)
            }

            fn commit(&mut self, staged: Writes<Self>) {
                for partial in staged {
                    self.extend(partial);
                }
            }

            fn combine_partials(first: &mut Self, later: Self) -> Result<(), Self> {
                first.extend(later);
                Ok(())
            }
        }
    )*};
}

merge_by_extend! {
    impl[K: Eq + Hash, V, S: BuildHasher] HashMap<K, V, S>;
    impl[K: Ord, V] BTreeMap<K, V>;
    impl[] Map<String, Value>;
}

/// A JSON value merges as an object: a current value that is not an object
/// (the `null` default) starts empty, and a partial that is not an object is
/// an error.
impl MergeField for Value {
    type Partial = Value;
    type Staged = Writes<Map<String, Value>>;

    fn stage(&self, partials: Writes<Value>) -> Result<Self::Staged, StateError> {
        partials
            .into_iter()
            .map(|partial| match partial {
                Value::Object(map) => Ok(map),
                other => Err(StateError::new(
                    "",
                    ErrorKind::NotAnObject {
                        found: json_type(&other),
                    },
                )),
            })
            .collect()
    }

    fn combine_partials(first: &mut Value, later: Value) -> Result<(), Value> {
        match (first, later) {
            (Value::Object(first), Value::Object(later)) => {
                first.extend(later);
                Ok(())
            }
            // Not an object: staging reports it; keep both for it to.
            (_, later) => Err(later),
        }
    }

    fn commit(&mut self, staged: Self::Staged) {
        if !self.is_object() {
            *self = Value::Object(Map::new());
        }
        if let Value::Object(map) = self {
            for partial in staged {
                map.extend(partial);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_keep_unset_keys_and_fold_in_order() {
        let mut map: HashMap<&str, i32> = [("a", 1), ("b", 2)].into();
        let staged = map
            .stage(vec![[("b", 3)].into(), [("b", 4), ("c", 5)].into()].into())
            .unwrap();
        map.commit(staged);
        assert_eq!(map, [("a", 1), ("b", 4), ("c", 5)].into());
    }

    #[test]
    fn json_values_merge_shallowly_and_reject_non_objects() {
        let mut value = Value::Null;
        let staged = value
            .stage(vec![json!({"did": "d1", "wsId": "w"}), json!({"wsId": "w2"})].into())
            .unwrap();
        value.commit(staged);
        assert_eq!(value, json!({"did": "d1", "wsId": "w2"}));
        let err = value
            .stage(vec![json!({"ok": 1}), json!([1])].into())
            .unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::NotAnObject { found: "an array" });
    }
}
