//! `union`: add the items that are missing, never remove (seed 002's
//! `loadedPlugins`, "union via Set").
//!
//! Served types: `Vec<T>` (first-seen order kept), `HashSet`, `BTreeSet`.
//! A step's writes fold in order. On a `Vec` each item is looked up in the
//! list, so prefer a set for large collections.

use std::collections::{BTreeSet, HashSet};
use std::hash::{BuildHasher, Hash};

use crate::error::StateError;
use crate::writes::Writes;

/// A field type the `union` reducer can serve.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(union)]` cannot serve a field of type `{Self}`",
    label = "not a collection the union reducer can grow",
    note = "union works on Vec<T> (T: PartialEq), HashSet<T> and BTreeSet<T>"
)]
pub trait UnionField: Sized {
    /// The item type.
    type Item;
    /// A checked step, ready to commit.
    type Staged;

    /// Works out which items are new. Changes nothing.
    fn stage(&self, partials: Writes<Vec<Self::Item>>) -> Result<Self::Staged, StateError>;

    /// Adds them. Cannot fail.
    fn commit(&mut self, staged: Self::Staged);
}

impl<T: PartialEq> UnionField for Vec<T> {
    type Item = T;
    type Staged = Vec<T>;

    fn stage(&self, partials: Writes<Vec<T>>) -> Result<Vec<T>, StateError> {
        let mut fresh: Vec<T> = Vec::new();
        for item in partials.into_iter().flatten() {
            if !self.contains(&item) && !fresh.contains(&item) {
                fresh.push(item);
            }
        }
        Ok(fresh)
    }

    fn commit(&mut self, staged: Vec<T>) {
        self.extend(staged);
    }
}

/// Sets need no check: inserting an item they hold changes nothing.
macro_rules! union_by_insert {
    ($(impl[$($generics:tt)*] $ty:ty;)*) => {$(
        impl<$($generics)*> UnionField for $ty {
            type Item = T;
            type Staged = Vec<T>;

            fn stage(&self, partials: Writes<Vec<T>>) -> Result<Vec<T>, StateError> {
                Ok(partials.into_iter().flatten().collect())
            }

            fn commit(&mut self, staged: Vec<T>) {
                self.extend(staged);
            }
        }
    )*};
}

union_by_insert! {
    impl[T: Eq + Hash, S: BuildHasher] HashSet<T, S>;
    impl[T: Ord] BTreeSet<T>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_union_keeps_order_and_never_removes() {
        let mut plugins = vec!["memory".to_owned()];
        let staged = plugins
            .stage(
                vec![
                    vec!["editor".into(), "memory".into()],
                    vec!["editor".into(), "slack".into()],
                ]
                .into(),
            )
            .unwrap();
        plugins.commit(staged);
        assert_eq!(plugins, ["memory", "editor", "slack"]);
    }

    #[test]
    fn sets_add_missing_items() {
        let mut set: BTreeSet<u8> = [1, 2].into();
        let staged = set.stage(vec![vec![2, 3]].into()).unwrap();
        set.commit(staged);
        assert_eq!(set, [1, 2, 3].into());
    }
}
