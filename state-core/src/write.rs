//! How one update writes one reducer field: through the reducer, or outright
//! (LangGraph's `Overwrite`), and how a step's writes to a field are staged.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::error::{ErrorKind, StateError};
// The markers are defined with the probe that keeps a reduce write from
// reading as one (`storable`), which this module's JSON form relies on.
pub use crate::storable::{OVERWRITE_KEY, REDUCE_KEY};
use crate::writes::Writes;

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

/// The value an overwrite carries, when `value` is one of the two JSON
/// forms of LangGraph's `Overwrite`: `{"__overwrite__": v}` (that key
/// alone), or `{"type": "__overwrite__", "value": v}` (what an `Overwrite`
/// becomes after a JSON round trip; other keys are ignored, as LangGraph
/// ignores them). Anything else is handed back unchanged, to be read as a
/// partial.
pub fn overwrite_in(value: serde_json::Value) -> Result<serde_json::Value, serde_json::Value> {
    use serde_json::Value;
    match value {
        Value::Object(mut map) if map.len() == 1 && map.contains_key(OVERWRITE_KEY) => {
            Ok(map.remove(OVERWRITE_KEY).unwrap_or(Value::Null))
        }
        Value::Object(mut map)
            if map.get("type").and_then(Value::as_str) == Some(OVERWRITE_KEY)
                && map.contains_key("value") =>
        {
            Ok(map.remove("value").unwrap_or(Value::Null))
        }
        other => Err(other),
    }
}

/// What an update carries for a field that has a reducer.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldWrite<T, P> {
    /// A partial value, combined with the current one by the field's reducer.
    Reduce(P),
    /// A whole new value that bypasses the reducer (LangGraph's `Overwrite`):
    /// a summariser replacing the history, say.
    Overwrite(T),
}

impl<T: Serialize, P: Serialize> Serialize for FieldWrite<T, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Reduce(partial) if crate::storable::reads_as_marker(partial) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(REDUCE_KEY, partial)?;
                map.end()
            }
            Self::Reduce(partial) => partial.serialize(serializer),
            Self::Overwrite(value) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(OVERWRITE_KEY, value)?;
                map.end()
            }
        }
    }
}

/// A field's staged change: checked against the current value, ready to be
/// committed without any further check.
#[derive(Debug)]
pub enum FieldStage<T, S> {
    /// The step does not write the field.
    Unchanged,
    /// The reducer's staged change.
    Reduced(S),
    /// An overwrite, then (when folding) the reducer's change staged against
    /// the overwritten value. Boxed: overwrites are rare, and a whole value
    /// inline would make every staged step as large as it, moved at each
    /// step of staging and committing.
    Overwritten(Box<(T, Option<S>)>),
}

/// Stages a step's writes to one reducer field.
///
/// Under [`StepRule::Superstep`] an overwrite discards the other writes of
/// the step and two overwrites are an error, as in LangGraph. Under
/// [`StepRule::Fold`] writes apply in order: the last overwrite wins and the
/// writes after it reduce onto it.
#[inline]
pub fn stage_writes<T, P, S>(
    current: &T,
    writes: Writes<FieldWrite<T, P>>,
    rule: StepRule,
    stage: impl FnOnce(&T, Writes<P>) -> Result<S, StateError>,
) -> Result<FieldStage<T, S>, StateError> {
    // The common cases here: no write, or one write through the reducer.
    match writes {
        Writes::Zero => Ok(FieldStage::Unchanged),
        Writes::One(FieldWrite::Reduce(partial)) => {
            stage(current, Writes::One(partial)).map(FieldStage::Reduced)
        }
        writes => stage_several(current, writes, rule, stage),
    }
}

/// [`stage_writes`] of an overwrite or of several writes.
fn stage_several<T, P, S>(
    current: &T,
    writes: Writes<FieldWrite<T, P>>,
    rule: StepRule,
    stage: impl FnOnce(&T, Writes<P>) -> Result<S, StateError>,
) -> Result<FieldStage<T, S>, StateError> {
    let overwrites = writes
        .as_slice()
        .iter()
        .filter(|w| matches!(w, FieldWrite::Overwrite(_)))
        .count();
    if overwrites == 0 {
        let partials = writes.map(|w| match w {
            FieldWrite::Reduce(p) => p,
            FieldWrite::Overwrite(_) => unreachable!("counted no overwrite"),
        });
        return stage(current, partials).map(FieldStage::Reduced);
    }
    match rule {
        StepRule::Superstep => {
            the_overwrite(writes, overwrites).map(|v| FieldStage::Overwritten(Box::new((v, None))))
        }
        StepRule::Fold => fold_from_last_overwrite(writes, stage),
    }
}

/// A superstep's one overwrite, which discards the step's other writes; two
/// or more are an error.
fn the_overwrite<T, P>(
    writes: Writes<FieldWrite<T, P>>,
    overwrites: usize,
) -> Result<T, StateError> {
    if overwrites > 1 {
        return Err(StateError::new(
            "",
            ErrorKind::ConcurrentOverwrites { overwrites },
        ));
    }
    Ok(writes
        .into_iter()
        .find_map(|w| match w {
            FieldWrite::Overwrite(v) => Some(v),
            FieldWrite::Reduce(_) => None,
        })
        .expect("counted one overwrite above"))
}

/// Folded writes with an overwrite among them: the last overwrite, and the
/// writes after it staged against it.
fn fold_from_last_overwrite<T, P, S>(
    writes: Writes<FieldWrite<T, P>>,
    stage: impl FnOnce(&T, Writes<P>) -> Result<S, StateError>,
) -> Result<FieldStage<T, S>, StateError> {
    let mut base = None;
    let mut after = Writes::new();
    for write in writes {
        match write {
            FieldWrite::Overwrite(v) => {
                base = Some(v);
                after = Writes::new();
            }
            FieldWrite::Reduce(p) => after.push(p),
        }
    }
    let base = base.expect("counted an overwrite above");
    let rest = if after.is_empty() {
        None
    } else {
        Some(stage(&base, after)?)
    };
    Ok(FieldStage::Overwritten(Box::new((base, rest))))
}

/// Commits what [`stage_writes`] staged.
#[inline]
pub fn commit_writes<T, S>(
    current: &mut T,
    staged: FieldStage<T, S>,
    commit: impl FnOnce(&mut T, S),
) {
    match staged {
        FieldStage::Unchanged => {}
        FieldStage::Reduced(s) => commit(current, s),
        FieldStage::Overwritten(overwrite) => {
            let (value, rest) = *overwrite;
            *current = value;
            if let Some(s) = rest {
                commit(current, s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The signature of a stage function over a `Vec` field.
    #[allow(clippy::ptr_arg)]
    fn extend(current: &Vec<u8>, partials: Writes<Vec<u8>>) -> Result<Vec<u8>, StateError> {
        let mut next = current.clone();
        next.extend(partials.into_iter().flatten());
        Ok(next)
    }

    fn run(
        writes: Vec<FieldWrite<Vec<u8>, Vec<u8>>>,
        rule: StepRule,
    ) -> Result<Vec<u8>, StateError> {
        let mut current = vec![0];
        let staged = stage_writes(&current, writes.into(), rule, extend)?;
        commit_writes(&mut current, staged, |cur, next| *cur = next);
        Ok(current)
    }

    #[test]
    fn folding_reduces_the_writes_after_the_last_overwrite_onto_it() {
        use FieldWrite::{Overwrite, Reduce};
        let writes = vec![
            Reduce(vec![1]),
            Overwrite(vec![5]),
            Reduce(vec![6]),
            Overwrite(vec![7]),
            Reduce(vec![8]),
        ];
        assert_eq!(run(writes.clone(), StepRule::Fold), Ok(vec![7, 8]));
        assert_eq!(
            run(writes, StepRule::Superstep).unwrap_err().kind(),
            &ErrorKind::ConcurrentOverwrites { overwrites: 2 }
        );
        assert_eq!(run(vec![Overwrite(vec![9])], StepRule::Fold), Ok(vec![9]));
        assert_eq!(
            run(vec![Reduce(vec![1]), Reduce(vec![2])], StepRule::Fold),
            Ok(vec![0, 1, 2])
        );
    }
}
