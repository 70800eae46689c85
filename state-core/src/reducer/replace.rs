//! `replace`, the reducer of a field without an attribute: the update's value
//! becomes the field's value (LangGraph's `LastValue` channel).
//!
//! One write per step: two nodes of one superstep that both write the field
//! are a bug in the graph, reported as LangGraph reports it
//! (`INVALID_CONCURRENT_GRAPH_UPDATE`), not settled by whichever ran last.
//! When a nested state is merged, its writes fold in order instead, and the
//! last one wins, as `{...prev, ...curr}` does.

use crate::error::{ErrorKind, StateError};
use crate::write::StepRule;
use crate::writes::Writes;

/// Stages the writes of one step to a `replace` field: the value to store,
/// or `None` when the step does not write it.
#[inline]
pub fn stage_replace<T>(writes: Writes<T>, rule: StepRule) -> Result<Option<T>, StateError> {
    let writes = match writes {
        Writes::Zero => return Ok(None),
        Writes::One(value) => return Ok(Some(value)),
        many => many,
    };
    if rule == StepRule::Superstep {
        return Err(StateError::new(
            "",
            ErrorKind::ConcurrentWrites {
                writes: writes.len(),
            },
        ));
    }
    Ok(writes.into_iter().last())
}

/// Commits what [`stage_replace`] staged.
#[inline]
pub fn commit_replace<T>(current: &mut T, staged: Option<T>) {
    if let Some(value) = staged {
        *current = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_write_per_superstep() {
        let err = stage_replace(vec![1, 2].into(), StepRule::Superstep).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
        assert_eq!(
            stage_replace(vec![1, 2].into(), StepRule::Fold),
            Ok(Some(2))
        );
        assert_eq!(
            stage_replace(Writes::<u8>::new(), StepRule::Superstep),
            Ok(None)
        );
    }
}
