//! `with = path`: a reducer the user writes, `fn(&T, U) -> Result<T, E>`.
//!
//! The function sees the current value and one write, and returns the new
//! value or an error (seed 004's validating `statusReducer`). Writes of one
//! step fold in order; the first error rejects the whole step.

use std::fmt::Display;

use crate::error::{ErrorKind, StateError};
use crate::writes::Writes;

/// Folds a step's writes through the user's reducer: the value to store, or
/// `None` when the step does not write the field.
pub fn stage_with<T, U, E: Display>(
    current: &T,
    writes: Writes<U>,
    reducer: impl Fn(&T, U) -> Result<T, E>,
) -> Result<Option<T>, StateError> {
    let mut value: Option<T> = None;
    for write in writes {
        let next = reducer(value.as_ref().unwrap_or(current), write).map_err(|e| {
            StateError::new(
                "",
                ErrorKind::Rejected {
                    reason: e.to_string(),
                },
            )
        })?;
        value = Some(next);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_positive(current: &i64, delta: i64) -> Result<i64, String> {
        if delta <= 0 {
            return Err(format!("delta must be positive, got {delta}"));
        }
        Ok(current + delta)
    }

    #[test]
    fn folds_in_order_and_stops_at_the_first_error() {
        assert_eq!(stage_with(&1, vec![2, 3].into(), add_positive), Ok(Some(6)));
        let err = stage_with(&1, vec![2, -1, 3].into(), add_positive).unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::Rejected {
                reason: "delta must be positive, got -1".into()
            }
        );
    }
}
