//! [`UnionVec`]: a list without repeats, in first-seen order, that knows in
//! constant time whether it holds an item. What a `#[reducer(union)]` field
//! holds when order matters (LangGraph's "union via set" over a list).

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};

use crate::positions::Positions;

/// A list of distinct items in the order they were first added, indexed by
/// hash, so adding an item or asking whether it is there costs the same at
/// any length (a `Vec` would be scanned).
///
/// Reads like a slice (`len`, `iter`, `[i]`, `contains`); grows through the
/// union reducer or [`insert`](Self::insert); never holds an item twice.
/// Items need `Hash + Eq`. JSON is a plain array; an array with repeats
/// reads as their union (the first of each kept).
///
/// ```
/// use agent_state::{AgentState, UnionVec};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Runtime {
///     /// Plugins loaded so far, in load order, each once.
///     #[reducer(union)]
///     loaded_plugins: UnionVec<String>,
/// }
///
/// let mut rt = Runtime::default();
/// rt.apply(RuntimeUpdate::new().loaded_plugins(["editor", "memory"]))?;
/// rt.apply(RuntimeUpdate::new().loaded_plugin("editor").loaded_plugin("slack"))?;
/// assert_eq!(rt.loaded_plugins, ["editor", "memory", "slack"]);
/// assert!(rt.loaded_plugins.contains("memory"));
/// # Ok::<(), agent_state::StateError>(())
/// ```
#[derive(Clone)]
pub struct UnionVec<T> {
    items: Vec<T>,
    /// Each item's position, filed under the item's hash (no copy of the
    /// item: a lookup compares with the list).
    index: Positions,
}

impl<T> Default for UnionVec<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: Positions::default(),
        }
    }
}

impl<T> UnionVec<T> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The items as a slice, in first-seen order.
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    /// The items as a `Vec`.
    pub fn into_vec(self) -> Vec<T> {
        self.items
    }
}

impl<T: Hash + Eq> UnionVec<T> {
    /// Whether the list holds `item`: one hash and (almost always) one
    /// comparison.
    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.position(item).is_some()
    }

    /// Where `item` is.
    pub fn position<Q>(&self, item: &Q) -> Option<usize>
    where
        T: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.position_hashed(self.hash_of(item), item)
    }

    /// The hash the index files `item` under.
    #[inline]
    pub(crate) fn hash_of<Q: Hash + ?Sized>(&self, item: &Q) -> u64 {
        self.index.hash(item)
    }

    /// Where `item`, whose [`hash_of`](Self::hash_of) is `hash`, is.
    #[inline]
    pub(crate) fn position_hashed<Q>(&self, hash: u64, item: &Q) -> Option<usize>
    where
        T: std::borrow::Borrow<Q>,
        Q: Eq + ?Sized,
    {
        self.index.find(hash, |at| self.items[at].borrow() == item)
    }

    /// Adds `item` at the end unless the list holds it; whether it was
    /// added. One probe of the index finds it or the free slot for it.
    pub fn insert(&mut self, item: T) -> bool {
        let hash = self.hash_of(&item);
        let list = &self.items;
        let found = self
            .index
            .find_or_insert(hash, list.len(), |at| list[at] == item);
        if found.is_some() {
            return false;
        }
        self.items.push(item);
        true
    }

    /// Removes and returns the last item, keeping the index right. (Union
    /// never removes; this is for code that owns the list outright.)
    pub fn pop(&mut self) -> Option<T> {
        let last = self.items.last()?;
        let hash = self.hash_of(last);
        self.index.remove(hash, self.items.len() - 1);
        self.items.pop()
    }

    /// Appends an item known to be absent, whose hash is `hash`.
    #[inline]
    pub(crate) fn push_hashed(&mut self, hash: u64, item: T) {
        self.index.insert_new(hash, self.items.len());
        self.items.push(item);
    }

    /// Room for `additional` more items.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.items.reserve(additional);
        self.index.reserve(additional);
    }
}

impl<T> Deref for UnionVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T: Hash + Eq> FromIterator<T> for UnionVec<T> {
    /// The union of the items: the first of each kept, in order.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = Self::new();
        out.extend(iter);
        out
    }
}

impl<T: Hash + Eq> Extend<T> for UnionVec<T> {
    /// Adds the items it does not hold, in order.
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        self.reserve(iter.size_hint().0);
        for item in iter {
            self.insert(item);
        }
    }
}

impl<T: Hash + Eq> From<Vec<T>> for UnionVec<T> {
    fn from(items: Vec<T>) -> Self {
        items.into_iter().collect()
    }
}

impl<T: Hash + Eq, const N: usize> From<[T; N]> for UnionVec<T> {
    fn from(items: [T; N]) -> Self {
        items.into_iter().collect()
    }
}

impl<T> IntoIterator for UnionVec<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a UnionVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: PartialEq> PartialEq for UnionVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<T: Eq> Eq for UnionVec<T> {}

impl<T: PartialEq<U>, U> PartialEq<Vec<U>> for UnionVec<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        self.items == *other
    }
}

impl<T: PartialEq<U>, U> PartialEq<[U]> for UnionVec<T> {
    fn eq(&self, other: &[U]) -> bool {
        self.items == other
    }
}

impl<T: PartialEq<U>, U> PartialEq<&[U]> for UnionVec<T> {
    fn eq(&self, other: &&[U]) -> bool {
        self.items == *other
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for UnionVec<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        self.items == other
    }
}

impl<T: fmt::Debug> fmt::Debug for UnionVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.items).finish()
    }
}

impl<T: Serialize> Serialize for UnionVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.items.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de> + Hash + Eq> Deserialize<'de> for UnionVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_seen_order_without_repeats() {
        let mut list: UnionVec<String> = ["b", "a", "b"].map(String::from).into();
        assert_eq!(list, ["b", "a"]);
        assert!(list.insert("c".into()));
        assert!(!list.insert("a".into()));
        assert_eq!(list, ["b", "a", "c"]);
        assert_eq!(list.position("c"), Some(2));
        assert!(list.contains("b") && !list.contains("z"));
        assert_eq!(list.pop().as_deref(), Some("c"));
        assert!(!list.contains("c"));
        assert!(list.insert("c".into()));
        assert_eq!(format!("{list:?}"), r#"["b", "a", "c"]"#);
    }

    #[test]
    fn items_with_one_hash_are_told_apart_by_equality() {
        // Two items filed under one hash by hand: lookups still compare.
        let mut list: UnionVec<u32> = UnionVec::new();
        let hash = list.hash_of(&1u32);
        list.push_hashed(hash, 1);
        list.push_hashed(hash, 2);
        assert_eq!(list.position_hashed(hash, &1), Some(0));
        assert_eq!(list.position_hashed(hash, &2), Some(1));
        assert_eq!(list.position_hashed(hash, &3), None);
    }

    #[test]
    fn json_is_an_array_and_repeats_read_as_their_union() {
        let list: UnionVec<u8> = serde_json::from_str("[3, 1, 3, 2]").unwrap();
        assert_eq!(list, [3, 1, 2]);
        assert_eq!(serde_json::to_string(&list).unwrap(), "[3,1,2]");
    }
}
