//! `append`: extend the list with the update's items (LangGraph's
//! `Annotated[list, operator.add]`). A step's writes fold in order.

use std::collections::VecDeque;

use crate::error::StateError;
use crate::writes::Writes;

/// A field type the `append` reducer can serve.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(append)]` cannot serve a field of type `{Self}`",
    label = "not a list the append reducer can extend",
    note = "append works on Vec<T> and VecDeque<T>"
)]
pub trait AppendField: Sized {
    /// The item type.
    type Item;
    /// A checked step, ready to commit.
    type Staged;

    /// Collects a step's items. Changes nothing.
    fn stage(&self, partials: Writes<Vec<Self::Item>>) -> Result<Self::Staged, StateError>;

    /// Appends them. Cannot fail.
    fn commit(&mut self, staged: Self::Staged);
}

/// Lists append by `extend`, in the order of the step's writes.
macro_rules! append_by_extend {
    ($($ty:ty),*) => {$(
        impl<T> AppendField for $ty {
            type Item = T;
            type Staged = Writes<Vec<T>>;

            fn stage(&self, partials: Writes<Vec<T>>) -> Result<Self::Staged, StateError> {
                Ok(partials)
            }

            fn commit(&mut self, staged: Self::Staged) {
                for items in staged {
                    self.extend(items);
                }
            }
        }
    )*};
}

append_by_extend!(Vec<T>, VecDeque<T>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_in_order_with_duplicates() {
        let mut log = vec![1];
        let staged = log.stage(vec![vec![2, 1], vec![3]].into()).unwrap();
        log.commit(staged);
        assert_eq!(log, [1, 2, 1, 3]);
    }
}
