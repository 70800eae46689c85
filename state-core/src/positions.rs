//! [`Positions`]: the index of a list that finds an item's position by its
//! key without holding a copy of the key.
//!
//! [`Messages`](crate::Messages) (key: the message's id) and
//! [`UnionVec`](crate::UnionVec) (key: the item) keep one beside their
//! list. The table holds a `u32` position and 32 bits of the key's hash
//! per item (hashbrown's `HashTable`, one control byte and eight bytes a
//! bucket); a lookup hashes the key and compares it with the list's item at
//! each candidate position whose stored hash matches, and a table that
//! grows rehashes from the stored hashes, without reading the list. So an
//! id is stored once, in its message, and adding a message allocates
//! nothing for the index.
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

/// A position as the table stores it, with 32 bits of its key's hash: a
/// table that grows rehashes from those, without reading (and hashing
/// again) the key of every item, which at a large size is a cache miss
/// each.
#[derive(Clone, Copy)]
struct Slot {
    at: u32,
    hash: u32,
}

impl Slot {
    fn new(hash: u64, at: usize) -> Self {
        Self {
            at: u32::try_from(at).expect("an indexed list holds at most u32::MAX items"),
            // The low half of a table hash is the whole of what it is made of.
            hash: hash as u32,
        }
    }

    fn at(self) -> usize {
        self.at as usize
    }
}

/// The table hash of 32 bits of a key's hash: the bits both pick the
/// bucket (low bits) and fill the control byte (top bits), so the table
/// hash of a stored slot is known from the slot alone.
#[inline]
fn spread(h: u32) -> u64 {
    u64::from(h) | (u64::from(h) << 32)
}

/// The table hash of a slot, to rehash it.
#[inline]
fn rehash(slot: &Slot) -> u64 {
    spread(slot.hash)
}

/// Positions in a list, found by the hash of a key and a comparison with
/// the list (the callers pass both).
#[derive(Clone)]
pub(crate) struct Positions {
    table: HashTable<Slot>,
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
        let h = hasher().hash_one(key);
        spread((h ^ (h >> 32)) as u32)
    }

    /// The position filed under `hash` for which `is` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut is: impl FnMut(usize) -> bool) -> Option<usize> {
        let h = hash as u32;
        self.table
            .find(hash, |s| s.hash == h && is(s.at()))
            .map(|s| s.at())
    }

    /// The position filed under `hash` for which `is` holds; when there is
    /// none, files `new` under `hash` (one probe for both).
    #[inline]
    pub(crate) fn find_or_insert(
        &mut self,
        hash: u64,
        new: usize,
        mut is: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let h = hash as u32;
        match self
            .table
            .entry(hash, |s| s.hash == h && is(s.at()), rehash)
        {
            Entry::Occupied(found) => Some(found.get().at()),
            Entry::Vacant(free) => {
                free.insert(Slot::new(hash, new));
                None
            }
        }
    }

    /// Files `at`, whose key is known to be absent, under `hash`.
    #[inline]
    pub(crate) fn insert_new(&mut self, hash: u64, at: usize) {
        self.table.insert_unique(hash, Slot::new(hash, at), rehash);
    }

    /// Points the entry filed under `hash` for which `is` holds at `at`, or
    /// files `at` when there is none: of several positions with one key,
    /// the last set wins.
    pub(crate) fn set(&mut self, hash: u64, at: usize, mut is: impl FnMut(usize) -> bool) {
        let h = hash as u32;
        match self
            .table
            .entry(hash, |s| s.hash == h && is(s.at()), rehash)
        {
            Entry::Occupied(mut found) => *found.get_mut() = Slot::new(hash, at),
            Entry::Vacant(free) => {
                free.insert(Slot::new(hash, at));
            }
        }
    }

    /// Forgets position `at`, filed under `hash`; whether it was there.
    #[inline]
    pub(crate) fn remove(&mut self, hash: u64, at: usize) -> bool {
        let at = Slot::new(hash, at).at;
        match self.table.find_entry(hash, |s| s.at == at) {
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
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional, rehash);
    }
}
