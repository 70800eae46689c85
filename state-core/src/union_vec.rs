//! [`UnionVec`]: a list without repeats, in first-seen order, that knows in
//! constant time whether it holds an item. What a `#[reducer(union)]` field
//! holds when order matters (LangGraph's "union via set" over a list).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::ops::Deref;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};

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
    /// Hash of an item → its position (positions, on a collision).
    index: HashMap<u64, Slot, BuildHasherDefault<Prehashed>>,
    hasher: RandomState,
}

/// The positions of the items with one hash: almost always one.
#[derive(Clone, Debug)]
enum Slot {
    One(usize),
    Many(Vec<usize>),
}

impl Slot {
    fn positions(&self) -> &[usize] {
        match self {
            Slot::One(at) => std::slice::from_ref(at),
            Slot::Many(all) => all,
        }
    }
}

/// The index's keys are already hashes: they are used as they are.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is called for a `u64` key; fold anything else.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

impl<T> Default for UnionVec<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: HashMap::default(),
            hasher: RandomState::new(),
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
    pub(crate) fn hash_of<Q: Hash + ?Sized>(&self, item: &Q) -> u64 {
        self.hasher.hash_one(item)
    }

    /// Where `item`, whose [`hash_of`](Self::hash_of) is `hash`, is.
    pub(crate) fn position_hashed<Q>(&self, hash: u64, item: &Q) -> Option<usize>
    where
        T: std::borrow::Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let slot = self.index.get(&hash)?;
        slot.positions()
            .iter()
            .copied()
            .find(|&at| self.items[at].borrow() == item)
    }

    /// Adds `item` at the end unless the list holds it; whether it was
    /// added.
    pub fn insert(&mut self, item: T) -> bool {
        if self.contains(&item) {
            return false;
        }
        self.push_new(item);
        true
    }

    /// Removes and returns the last item, keeping the index right. (Union
    /// never removes; this is for code that owns the list outright.)
    pub fn pop(&mut self) -> Option<T> {
        let item = self.items.pop()?;
        let at = self.items.len();
        let hash = self.hasher.hash_one(&item);
        if let Some(slot) = self.index.get_mut(&hash) {
            match slot {
                Slot::One(_) => {
                    self.index.remove(&hash);
                }
                Slot::Many(all) => {
                    all.retain(|&i| i != at);
                    if let [only] = all[..] {
                        *slot = Slot::One(only);
                    }
                }
            }
        }
        Some(item)
    }

    /// Appends an item known to be absent.
    pub(crate) fn push_new(&mut self, item: T) {
        self.push_hashed(self.hash_of(&item), item);
    }

    /// Appends an item known to be absent, whose hash is `hash`.
    pub(crate) fn push_hashed(&mut self, hash: u64, item: T) {
        let at = self.items.len();
        self.items.push(item);
        match self.index.get_mut(&hash) {
            None => {
                self.index.insert(hash, Slot::One(at));
            }
            Some(slot) => {
                let mut all = slot.positions().to_vec();
                all.push(at);
                *slot = Slot::Many(all);
            }
        }
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
    fn hash_collisions_are_told_apart_by_equality() {
        // Force every item into one slot by hand: lookups still compare.
        let mut list: UnionVec<u32> = UnionVec::new();
        list.push_new(1);
        let hash = list.hasher.hash_one(1u32);
        list.items.push(2);
        list.index.insert(hash, Slot::Many(vec![1, 0]));
        assert_eq!(list.position(&1), Some(0));
        assert!(!list.contains(&3));
    }

    #[test]
    fn json_is_an_array_and_repeats_read_as_their_union() {
        let list: UnionVec<u8> = serde_json::from_str("[3, 1, 3, 2]").unwrap();
        assert_eq!(list, [3, 1, 2]);
        assert_eq!(serde_json::to_string(&list).unwrap(), "[3,1,2]");
    }
}
