//! [`Positions`]: the index of a list that finds an item's position by its
//! key without holding a copy of the key.
//!
//! [`Messages`](crate::Messages) (key: the message's id) and
//! [`UnionVec`](crate::UnionVec) (key: the item) keep one beside their
//! list. The table holds only `u32` positions (hashbrown's `HashTable`, one
//! control byte and four bytes a bucket); a lookup hashes the key and
//! compares it with the list's item at each candidate position, and a
//! table that grows rehashes from the list. So an id is stored once, in its
//! message, and adding a message allocates nothing for the index.
//!
//! The hash is foldhash (hashbrown's default), seeded once per process from
//! the standard library's `RandomState` (operating-system entropy): several
//! times faster than SipHash on an id, and its seed cannot be read from
//! outside, so ids crafted to collide would have to be guessed blind. It is
//! not a cryptographic hash; the worst such ids could do is slow the
//! lookups of the history they are in. One seed serves every table: a
//! table is only ever built from its list, never from another table's
//! order, so tables need no seed of their own.

use std::hash::{BuildHasher, Hash};
use std::sync::OnceLock;

use foldhash::fast::SeedableRandomState;
use foldhash::SharedSeed;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

/// The process's hasher, seeded from operating-system entropy.
#[inline]
fn hasher() -> &'static SeedableRandomState {
    static SEED: OnceLock<SharedSeed> = OnceLock::new();
    static HASHER: OnceLock<SeedableRandomState> = OnceLock::new();
    HASHER.get_or_init(|| {
        let seed = SEED.get_or_init(|| {
            let os = std::collections::hash_map::RandomState::new();
            SharedSeed::from_u64(os.hash_one(0x5eed_u64))
        });
        SeedableRandomState::with_seed(0x243f_6a88_85a3_08d3, seed)
    })
}

/// A position as the table stores it.
fn slot(at: usize) -> u32 {
    u32::try_from(at).expect("an indexed list holds at most u32::MAX items")
}

/// Positions in a list, found by the hash of a key and a comparison with
/// the list (the callers pass both).
#[derive(Clone)]
pub(crate) struct Positions {
    table: HashTable<u32>,
}

impl Default for Positions {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Positions {
    /// Room for `capacity` positions without growing.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            table: HashTable::with_capacity(capacity),
        }
    }

    /// The hash the table files `key` under.
    #[inline]
    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        hasher().hash_one(key)
    }

    /// The position filed under `hash` for which `is` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut is: impl FnMut(usize) -> bool) -> Option<usize> {
        self.table
            .find(hash, |&at| is(at as usize))
            .map(|&at| at as usize)
    }

    /// The position filed under `hash` for which `is` holds; when there is
    /// none, files `new` under `hash` (one probe for both). `key_at` gives
    /// the key of the item at a position, to rehash a table that grows.
    #[inline]
    pub(crate) fn find_or_insert<'k, K: Hash + ?Sized + 'k>(
        &mut self,
        hash: u64,
        new: usize,
        mut is: impl FnMut(usize) -> bool,
        key_at: impl Fn(usize) -> &'k K,
    ) -> Option<usize> {
        let hasher = hasher();
        match self.table.entry(
            hash,
            |&at| is(at as usize),
            |&at| hasher.hash_one(key_at(at as usize)),
        ) {
            Entry::Occupied(found) => Some(*found.get() as usize),
            Entry::Vacant(free) => {
                free.insert(slot(new));
                None
            }
        }
    }

    /// Files `at`, whose key is known to be absent, under `hash`.
    #[inline]
    pub(crate) fn insert_new<'k, K: Hash + ?Sized + 'k>(
        &mut self,
        hash: u64,
        at: usize,
        key_at: impl Fn(usize) -> &'k K,
    ) {
        let hasher = hasher();
        self.table
            .insert_unique(hash, slot(at), |&p| hasher.hash_one(key_at(p as usize)));
    }

    /// Points the entry filed under `hash` for which `is` holds at `at`, or
    /// files `at` when there is none: of several positions with one key,
    /// the last set wins.
    pub(crate) fn set<'k, K: Hash + ?Sized + 'k>(
        &mut self,
        hash: u64,
        at: usize,
        mut is: impl FnMut(usize) -> bool,
        key_at: impl Fn(usize) -> &'k K,
    ) {
        let hasher = hasher();
        match self.table.entry(
            hash,
            |&p| is(p as usize),
            |&p| hasher.hash_one(key_at(p as usize)),
        ) {
            Entry::Occupied(mut found) => *found.get_mut() = slot(at),
            Entry::Vacant(free) => {
                free.insert(slot(at));
            }
        }
    }

    /// Forgets position `at`, filed under `hash`; whether it was there.
    #[inline]
    pub(crate) fn remove(&mut self, hash: u64, at: usize) -> bool {
        let at = slot(at);
        match self.table.find_entry(hash, |&p| p == at) {
            Ok(found) => {
                found.remove();
                true
            }
            Err(_) => false,
        }
    }

    /// Forgets every position.
    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }

    /// Room for `additional` more positions.
    pub(crate) fn reserve<'k, K: Hash + ?Sized + 'k>(
        &mut self,
        additional: usize,
        key_at: impl Fn(usize) -> &'k K,
    ) {
        let hasher = hasher();
        self.table
            .reserve(additional, |&p| hasher.hash_one(key_at(p as usize)));
    }
}
