//! `union`: add the items that are missing, never remove (a list of
//! loaded plugins, say: LangGraph's "union via Set").
//!
//! Served types: [`UnionVec<T>`] (a list in first-seen order, indexed),
//! `HashSet<T>`, `BTreeSet<T>` and, with the `indexmap` feature,
//! `indexmap::IndexSet<T>` (first-seen order too). A step's writes fold in
//! order. Each item costs one lookup in an index, so adding one item costs
//! the same at any size. A plain `Vec<T>` (`T: PartialEq`) is served by a
//! scan of the list, a cost that grows with it; the derive warns, pointing
//! at `UnionVec<T>`. Float items are refused by the derive: NaN is
//! not equal to itself, so a NaN would be added again by every write.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use crate::error::StateError;
use crate::union_vec::UnionVec;
use crate::writes::Writes;

/// A field type the `union` reducer can serve.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(union)]` cannot serve a field of type `{Self}`",
    label = "not a set the union reducer can grow",
    note = "union works on agent_state::UnionVec<T> (a list in first-seen order) and HashSet<T> with T: Hash + Eq, BTreeSet<T> with T: Ord, indexmap::IndexSet<T> (feature `indexmap`), and Vec<T> with T: PartialEq (scanned for every item)"
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

/// Each item is looked up in the list's index, and among the step's new
/// items (a short list, or once it grows an index of its own): O(items
/// written), whatever the list's length. The hash computed for the lookup
/// is kept for the commit, and one new item is staged without allocating.
impl<T: Hash + Eq> UnionField for UnionVec<T> {
    type Item = T;
    type Staged = Writes<(u64, T)>;

    fn stage(&self, mut partials: Writes<Vec<T>>) -> Result<Self::Staged, StateError> {
        /// New items up to this many are told apart by a scan.
        const FEW: usize = 8;
        // Most steps: one write of one item, looked up without an iterator.
        if let Writes::One(items) = &mut partials {
            if items.len() == 1 {
                let item = items.pop().expect("one item");
                let hash = self.hash_of(&item);
                return Ok(match self.position_hashed(hash, &item) {
                    Some(_) => Writes::Zero,
                    None => Writes::One((hash, item)),
                });
            }
        }
        let mut fresh: Writes<(u64, T)> = Writes::new();
        // Past `FEW`: hash → position of a new item with that hash.
        let mut seen: Option<HashMap<u64, usize>> = None;
        for item in partials.into_iter().flatten() {
            let hash = self.hash_of(&item);
            if self.position_hashed(hash, &item).is_some() {
                continue;
            }
            let same = |(h, f): &(u64, T)| *h == hash && *f == item;
            let earlier = fresh.as_slice();
            let repeat = match &seen {
                Some(map) => map
                    .get(&hash)
                    .is_some_and(|&at| same(&earlier[at]) || earlier.iter().any(same)),
                None => earlier.iter().any(same),
            };
            if repeat {
                continue;
            }
            if let Some(map) = &mut seen {
                map.entry(hash).or_insert(fresh.len());
            }
            fresh.push((hash, item));
            if seen.is_none() && fresh.len() > FEW {
                let mut map = HashMap::with_capacity(fresh.len() * 2);
                for (at, (h, _)) in fresh.as_slice().iter().enumerate() {
                    map.entry(*h).or_insert(at);
                }
                seen = Some(map);
            }
        }
        Ok(fresh)
    }

    fn commit(&mut self, staged: Self::Staged) {
        match staged {
            Writes::Zero => {}
            Writes::One((hash, item)) => self.push_hashed(hash, item),
            Writes::Many(all) => {
                self.reserve(all.len());
                for (hash, item) in all {
                    self.push_hashed(hash, item);
                }
            }
        }
    }
}

/// Each item is looked for in the list and among the step's new items: a
/// cost that grows with the list (the derive warns). `UnionVec<T>` is the
/// indexed list.
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

/// Sets need no check: inserting an item they hold changes nothing (an
/// `IndexSet` keeps it where it was first inserted).
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

#[cfg(feature = "indexmap")]
union_by_insert! {
    impl[T: Eq + Hash, S: BuildHasher] indexmap::IndexSet<T, S>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_vec_keeps_order_and_never_removes() {
        let mut plugins: UnionVec<String> = ["memory".to_owned()].into();
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
        assert_eq!(plugins.position("slack"), Some(2));
    }

    #[test]
    fn many_new_items_in_one_step_are_added_once_each() {
        let mut list: UnionVec<u32> = [0].into();
        let writes: Vec<Vec<u32>> = vec![(0..40).chain(10..30).collect(), (35..50).collect()];
        let staged = list.stage(writes.into()).unwrap();
        list.commit(staged);
        assert_eq!(list, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn sets_add_missing_items() {
        let mut set: BTreeSet<u8> = [1, 2].into();
        let staged = set.stage(vec![vec![2, 3]].into()).unwrap();
        set.commit(staged);
        assert_eq!(set, [1, 2, 3].into());
    }

    #[cfg(feature = "indexmap")]
    #[test]
    fn index_sets_keep_first_seen_order() {
        let mut set: indexmap::IndexSet<&str> = ["b", "a"].into_iter().collect();
        let staged = set
            .stage(vec![vec!["c", "b"], vec!["a", "d"]].into())
            .unwrap();
        set.commit(staged);
        assert_eq!(set.into_iter().collect::<Vec<_>>(), ["b", "a", "c", "d"]);
    }
}
