//! LangGraph's other channel kinds, as field attributes: how a field
//! behaves across steps, beyond combining a step's writes.
//!
//! * `#[reducer(ephemeral)]` (`EphemeralValue`): the value written in a step
//!   is seen by the next step only; a step that does not write the field
//!   sets it back to its default. One write per step.
//! * `#[reducer(any_value)]` (`AnyValue`): like `ephemeral`, but several
//!   writes in one step are allowed: the last wins.
//! * `#[reducer(topic)]` (`Topic`): a `Vec` holding the items written in
//!   the last step, all of them in order (lists flattened); a step that
//!   writes none empties it. `#[reducer(topic(accumulate))]` keeps them
//!   instead, step after step: `append`.
//! * `#[reducer(untracked)]` (`UntrackedValue`): a plain field (one write
//!   per step) that is never stored in a checkpoint, so a resumed thread
//!   has its default there: a client handle, a cache. (See
//!   [`replace`](super::replace); only the stored JSON differs.)
//!
//! "A step" is one [`stage`](crate::AgentState::stage) under
//! [`StepRule::Superstep`]: a graph's superstep, or one `apply`. Under
//! [`StepRule::Fold`] (a nested state merged) the writes fold in order and
//! nothing is cleared.

use crate::error::{ErrorKind, StateError};
use crate::state::StepRule;
use crate::write::FieldWrite;
use crate::writes::Writes;

/// A channel field's staged change.
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelStage<T> {
    /// The step leaves the field as it is.
    Keep,
    /// The step sets the field.
    Set(T),
    /// The step sets the field back to its default.
    Clear,
}

fn concurrent(writes: usize) -> StateError {
    StateError::new("", ErrorKind::ConcurrentWrites { writes })
}

/// Stages an `ephemeral` field: one write per step; none clears it.
pub fn stage_ephemeral<T>(
    writes: Writes<T>,
    rule: StepRule,
) -> Result<ChannelStage<T>, StateError> {
    if writes.len() > 1 && rule == StepRule::Superstep {
        return Err(concurrent(writes.len()));
    }
    stage_any_value(writes, rule)
}

/// Stages an `any_value` field: the last write wins; none clears it.
pub fn stage_any_value<T>(
    writes: Writes<T>,
    rule: StepRule,
) -> Result<ChannelStage<T>, StateError> {
    Ok(match (writes.into_iter().last(), rule) {
        (Some(value), _) => ChannelStage::Set(value),
        (None, StepRule::Superstep) => ChannelStage::Clear,
        (None, StepRule::Fold) => ChannelStage::Keep,
    })
}

/// Stages a `topic` field: the step's items, in order; none empties it.
/// An overwrite sets the list outright (two in one step are an error); the
/// items written after it in the step join it.
pub fn stage_topic<I>(
    writes: Writes<FieldWrite<Vec<I>, Vec<I>>>,
    rule: StepRule,
) -> Result<ChannelStage<Vec<I>>, StateError> {
    if writes.is_empty() {
        return Ok(match rule {
            StepRule::Superstep => ChannelStage::Clear,
            StepRule::Fold => ChannelStage::Keep,
        });
    }
    let overwrites = writes
        .as_slice()
        .iter()
        .filter(|w| matches!(w, FieldWrite::Overwrite(_)))
        .count();
    if overwrites > 1 && rule == StepRule::Superstep {
        return Err(StateError::new(
            "",
            ErrorKind::ConcurrentOverwrites { overwrites },
        ));
    }
    let mut items = Vec::new();
    for write in writes {
        match write {
            FieldWrite::Reduce(more) => items.extend(more),
            FieldWrite::Overwrite(all) => items = all,
        }
    }
    Ok(ChannelStage::Set(items))
}

/// Commits a channel field's staged change; `default` is the field's
/// default (its `#[state(default = ..)]`, or `Default`).
pub fn commit_channel<T>(current: &mut T, staged: ChannelStage<T>, default: impl FnOnce() -> T) {
    match staged {
        ChannelStage::Keep => {}
        ChannelStage::Set(value) => *current = value,
        ChannelStage::Clear => *current = default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ephemeral_takes_one_write_and_clears_when_unwritten() {
        let err = stage_ephemeral(vec![1, 2].into(), StepRule::Superstep).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
        assert_eq!(
            stage_ephemeral(vec![1].into(), StepRule::Superstep),
            Ok(ChannelStage::Set(1))
        );
        assert_eq!(
            stage_ephemeral(Writes::<u8>::new(), StepRule::Superstep),
            Ok(ChannelStage::Clear)
        );
        assert_eq!(
            stage_ephemeral(Writes::<u8>::new(), StepRule::Fold),
            Ok(ChannelStage::Keep)
        );
    }

    #[test]
    fn any_value_takes_the_last_write() {
        assert_eq!(
            stage_any_value(vec![1, 2].into(), StepRule::Superstep),
            Ok(ChannelStage::Set(2))
        );
    }

    #[test]
    fn topic_collects_a_steps_items() {
        let writes = vec![FieldWrite::Reduce(vec![1, 2]), FieldWrite::Reduce(vec![3])];
        assert_eq!(
            stage_topic(writes.into(), StepRule::Superstep),
            Ok(ChannelStage::Set(vec![1, 2, 3]))
        );
        let writes = vec![
            FieldWrite::Reduce(vec![1]),
            FieldWrite::Overwrite(vec![9]),
            FieldWrite::Reduce(vec![3]),
        ];
        assert_eq!(
            stage_topic(writes.into(), StepRule::Superstep),
            Ok(ChannelStage::Set(vec![9, 3]))
        );
        let two = vec![
            FieldWrite::Overwrite(vec![1]),
            FieldWrite::<Vec<u8>, Vec<u8>>::Overwrite(vec![2]),
        ];
        assert!(stage_topic(two.into(), StepRule::Superstep).is_err());
        assert_eq!(
            stage_topic(
                Writes::<FieldWrite<Vec<u8>, Vec<u8>>>::new(),
                StepRule::Superstep
            ),
            Ok(ChannelStage::Clear)
        );
    }

    #[test]
    fn commit_clears_to_the_default() {
        let mut v = 5;
        commit_channel(&mut v, ChannelStage::Clear, || 3);
        assert_eq!(v, 3);
        commit_channel(&mut v, ChannelStage::Set(7), || 3);
        assert_eq!(v, 7);
        commit_channel(&mut v, ChannelStage::Keep, || 3);
        assert_eq!(v, 7);
    }
}
