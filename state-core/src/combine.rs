//! How two updates of one state combine into one: what
//! [`StateUpdate::with`](crate::StateUpdate::with) and a part's setter do
//! when the update already carries writes to that part.
//!
//! The later update's writes are added as the next writes of the same step
//! would be, field by field, and nothing is dropped:
//!
//! * reducer fields whose writes can be put together do so: the items of
//!   `messages`, `union` and `append` writes are concatenated (one batch,
//!   as two calls of the field's setters on one update make), `merge`
//!   partials are merged in order (`StepRule::Fold`), a part's updates
//!   combine recursively;
//! * an overwrite discards the writes before it in the step, as LangGraph's
//!   `Overwrite` does; in a superstep, writes after an overwrite are
//!   ignored, as LangGraph ignores them;
//! * what one update cannot hold is recorded, and applying the update is
//!   the error a step of the two updates would give: two writes of a plain
//!   field ([`ErrorKind::ConcurrentWrites`]), two overwrites
//!   ([`ErrorKind::ConcurrentOverwrites`]); or, for writes only the field's
//!   reducer could fold (two writes through a `with` function, a write
//!   after an overwrite when nested states fold), [`ErrorKind::Uncombined`].
//!   The error names the field and the state is unchanged.

use std::fmt;

use crate::error::{ErrorKind, StateError};
use crate::write::{FieldWrite, StepRule};

/// A generated update's record of a write it could not combine: the error
/// applying it returns. Empty, it costs a null pointer.
#[doc(hidden)]
#[derive(Clone, Default, PartialEq)]
pub struct Conflict(Option<Box<StateError>>);

impl Conflict {
    /// Records `error` unless an earlier one is recorded.
    pub fn record(&mut self, error: StateError) {
        if self.0.is_none() {
            self.0 = Some(Box::new(error));
        }
    }

    /// Keeps the earlier of this record and `later`.
    pub fn absorb(&mut self, later: Conflict) {
        if let Some(error) = later.0 {
            self.record(*error);
        }
    }

    /// Whether a conflict is recorded.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// The recorded error, if any.
    pub fn error(&self) -> Option<&StateError> {
        self.0.as_deref()
    }

    /// The recorded error, as the result of staging the update.
    #[inline]
    pub fn check(self) -> Result<(), StateError> {
        match self.0 {
            Some(error) => Err(*error),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("None"),
            Some(error) => write!(f, "Some({error})"),
        }
    }
}

/// Combines two writes of a field without a reducer: the later wins when
/// nested states fold; in a superstep, two are a conflict, as two nodes
/// writing the field would be.
pub fn combine_replace<T>(
    slot: &mut Option<T>,
    later: Option<T>,
    rule: StepRule,
    conflict: &mut Conflict,
    field: &'static str,
) {
    match (slot.is_some(), later) {
        (_, None) => {}
        (false, later) => *slot = later,
        (true, later) => match rule {
            StepRule::Fold => *slot = later,
            StepRule::Superstep => {
                conflict.record(StateError::new(
                    field,
                    ErrorKind::ConcurrentWrites { writes: 2 },
                ));
            }
        },
    }
}

/// Combines two writes of a reducer field; `partials` puts two partials
/// together, or hands the later one back when only the reducer could.
pub fn combine_write<T, P>(
    slot: &mut Option<FieldWrite<T, P>>,
    later: Option<FieldWrite<T, P>>,
    rule: StepRule,
    conflict: &mut Conflict,
    field: &'static str,
    partials: impl FnOnce(&mut P, P) -> Result<(), P>,
) {
    let Some(later) = later else { return };
    let Some(first) = slot else {
        *slot = Some(later);
        return;
    };
    let uncombined = || StateError::new(field, ErrorKind::Uncombined);
    match (first, later) {
        (FieldWrite::Reduce(first), FieldWrite::Reduce(later)) => {
            if partials(first, later).is_err() {
                conflict.record(uncombined());
            }
        }
        // An overwrite discards the writes before it.
        (first @ FieldWrite::Reduce(_), later @ FieldWrite::Overwrite(_)) => *first = later,
        (FieldWrite::Overwrite(_), FieldWrite::Reduce(_)) => {
            // A superstep ignores writes after an overwrite; a fold would
            // reduce them onto it, which only the reducer can do.
            if rule == StepRule::Fold {
                conflict.record(uncombined());
            }
        }
        (first @ FieldWrite::Overwrite(_), later @ FieldWrite::Overwrite(_)) => match rule {
            StepRule::Fold => *first = later,
            StepRule::Superstep => conflict.record(StateError::new(
                field,
                ErrorKind::ConcurrentOverwrites { overwrites: 2 },
            )),
        },
    }
}

/// Partials that are lists of items (`messages`, `union`, `append`): the
/// later items after the earlier ones.
pub fn concat_partials<P: Extend<I> + IntoIterator<Item = I>, I>(
    first: &mut P,
    later: P,
) -> Result<(), P> {
    first.extend(later);
    Ok(())
}

/// Partials only the reducer can fold (`with = path`).
pub fn keep_partials_apart<P>(_first: &mut P, later: P) -> Result<(), P> {
    Err(later)
}

#[cfg(test)]
mod tests {
    use super::*;
    use FieldWrite::{Overwrite, Reduce};

    type Slot = Option<FieldWrite<Vec<u8>, Vec<u8>>>;

    fn write(first: Slot, later: Slot, rule: StepRule) -> (Slot, Option<ErrorKind>) {
        let mut slot = first;
        let mut conflict = Conflict::default();
        combine_write(&mut slot, later, rule, &mut conflict, "f", concat_partials);
        (slot, conflict.error().map(|e| e.kind().clone()))
    }

    #[test]
    fn reducer_writes_combine_as_a_step_would() {
        use StepRule::{Fold, Superstep};
        let r = |v: &[u8]| Some(Reduce(v.to_vec()));
        let o = |v: &[u8]| Some(Overwrite(v.to_vec()));
        assert_eq!(write(r(&[1]), r(&[2]), Superstep), (r(&[1, 2]), None));
        assert_eq!(write(None, r(&[2]), Superstep), (r(&[2]), None));
        assert_eq!(write(r(&[1]), None, Superstep), (r(&[1]), None));
        assert_eq!(write(r(&[1]), o(&[9]), Superstep), (o(&[9]), None));
        assert_eq!(write(o(&[9]), r(&[1]), Superstep), (o(&[9]), None));
        assert_eq!(
            write(o(&[9]), o(&[8]), Superstep).1,
            Some(ErrorKind::ConcurrentOverwrites { overwrites: 2 })
        );
        assert_eq!(write(o(&[9]), o(&[8]), Fold), (o(&[8]), None));
        assert_eq!(write(o(&[9]), r(&[1]), Fold).1, Some(ErrorKind::Uncombined));
    }

    #[test]
    fn plain_fields_conflict_in_a_superstep_and_fold_otherwise() {
        let mut conflict = Conflict::default();
        let mut slot = Some(1);
        combine_replace(&mut slot, Some(2), StepRule::Fold, &mut conflict, "n");
        assert_eq!((slot, conflict.is_set()), (Some(2), false));
        combine_replace(&mut slot, Some(3), StepRule::Superstep, &mut conflict, "n");
        assert_eq!(slot, Some(2));
        let err = conflict.check().unwrap_err();
        assert_eq!(err.field(), "n");
        assert_eq!(err.kind(), &ErrorKind::ConcurrentWrites { writes: 2 });
    }
}
