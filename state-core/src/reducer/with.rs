//! `with = path`: a reducer the user writes, `fn(&T, U) -> Result<T, E>`.
//!
//! The function sees the current value and one write, and returns the new
//! value or an error (a debate's status reducer that refuses to reopen a
//! finished debate, say). Writes of one step fold in order; the first
//! error rejects the whole step.

use std::fmt::Display;

use serde::Serialize;

use crate::error::{ErrorKind, StateError};
use crate::writes::Writes;

/// The error of a `with = path` reducer: anything `Display`, since it
/// becomes the message of the rejected step. The bound goes through this
/// trait so that an error type without `Display` says so, and why.
#[diagnostic::on_unimplemented(
    message = "the error of a `with = path` reducer must implement `Display`, and `{Self}` does not",
    label = "its error, `{Self}`, is not `Display`",
    note = "the error becomes the message of the rejected step: implement `std::fmt::Display` for `{Self}`, or return a `String`"
)]
pub trait ReducerError: Display {}

impl<E: Display + ?Sized> ReducerError for E {}

/// Folds a step's writes through the user's reducer: the value to store, or
/// `None` when the step does not write the field.
///
/// The function may build what no write held (a NaN out of finite floats,
/// a value nested deeper than [`MAX_FIELD_DEPTH`](crate::MAX_FIELD_DEPTH)):
/// its result is checked as a snapshot would store it, and one that could
/// not be read back rejects the step.
pub fn stage_with<T, U, E: ReducerError>(
    current: &T,
    writes: Writes<U>,
    reducer: impl Fn(&T, U) -> Result<T, E>,
) -> Result<Option<T>, StateError>
where
    T: Serialize,
{
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
    if let Some(value) = &value {
        crate::storable::check_value(value).map_err(|kind| StateError::new("", kind))?;
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

    #[test]
    fn a_result_no_checkpoint_could_hold_rejects_the_step() {
        let divide = |current: &f64, by: f64| Ok::<_, String>(current / by);
        let err = stage_with(&0.0, vec![0.0].into(), divide).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotStorable { .. }), "{err}");
        let nest =
            |current: &serde_json::Value, _: ()| Ok::<_, String>(serde_json::json!([current]));
        let mut deep = serde_json::json!(1);
        for _ in 0..crate::MAX_FIELD_DEPTH - 1 {
            deep = serde_json::json!([deep]);
        }
        assert!(stage_with(&deep, Writes::One(()), nest).is_ok());
        let err = stage_with(&deep, vec![(), ()].into(), nest).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::TooDeep { .. }), "{err}");
    }
}
