//! The store in the process's memory: for tests, one-process apps, and as
//! the reference the database backends are checked against.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::item::{from_micros, join};
use super::prepare::{expiry, PreparedPut};
use super::rank::{list_namespaces, rank, Candidate};
use super::{
    prepare, IndexConfig, Item, Op, OpResult, PreparedOp, SearchItem, SearchOp, Store, StoreError,
    TtlConfig,
};
use crate::checkpoint::BoxFuture;

/// A [`Store`] in memory, lost when the process exits. Items are kept by
/// namespace in order, so a search reads only the namespaces under its
/// prefix, however many items the store holds elsewhere.
///
/// ```
/// use agent_state::checkpoint::block_on;
/// use agent_state::store::{IndexConfig, MemoryStore, SearchOp, StoreExt};
/// use serde_json::json;
///
/// // A toy embedding: how often each of two words occurs.
/// let embed = |texts: &[String]| -> Vec<Vec<f32>> {
///     texts.iter().map(|t| vec![t.matches("rust").count() as f32, t.matches("tea").count() as f32]).collect()
/// };
/// let store = MemoryStore::new().with_index(IndexConfig::new(2, embed).fields(["text"]));
/// block_on(async {
///     store.put(["notes"], "a", json!({"text": "likes green tea"})).await?;
///     store.put(["notes"], "b", json!({"text": "writes rust"})).await?;
///     let found = store.search(SearchOp::new(["notes"]).query("rust code")).await?;
///     assert_eq!(found[0].key, "b");
///     Ok::<(), agent_state::store::StoreError>(())
/// })?;
/// # Ok::<(), agent_state::store::StoreError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    data: Mutex<Data>,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
}

/// Items by joined namespace, then key.
#[derive(Debug, Default)]
struct Data {
    namespaces: BTreeMap<String, BTreeMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    item: Item,
    vectors: Vec<Vec<f32>>,
    ttl_minutes: Option<f64>,
    expires_at: Option<i64>,
}

impl Entry {
    fn live(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }

    fn refresh(&mut self, now: i64) {
        if let Some(minutes) = self.ttl_minutes {
            self.expires_at = Some(expiry(now, minutes));
        }
    }
}

impl Candidate for &Entry {
    fn item(&self) -> &Item {
        &self.item
    }
    fn vectors(&self) -> &[Vec<f32>] {
        &self.vectors
    }
}

impl MemoryStore {
    /// An empty store, without an index or TTL.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// Searches rank by similarity to a query, through `index`.
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Items expire as `ttl` says.
    pub fn with_ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = ttl;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        // Every change is made whole under the lock; a panic elsewhere
        // leaves nothing half-done.
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn batch<'a>(&'a self, ops: Vec<Op>) -> BoxFuture<'a, Result<Vec<OpResult>, StoreError>> {
        Box::pin(async move {
            let prepared = prepare(ops, self.index.as_ref(), &self.ttl).await?;
            let now = prepared.now;
            let mut data = self.lock();
            let mut puts = Vec::new();
            let mut results = Vec::with_capacity(prepared.ops.len());
            for op in prepared.ops {
                results.push(match op {
                    PreparedOp::Get {
                        namespace,
                        key,
                        refresh,
                    } => OpResult::Item(data.get(&join(&namespace), &key, refresh, now)),
                    PreparedOp::Put(put) => {
                        puts.push(put);
                        OpResult::Done
                    }
                    PreparedOp::Skip => OpResult::Done,
                    PreparedOp::Search { op, query, refresh } => {
                        OpResult::Items(data.search(&op, query.as_deref(), refresh, now))
                    }
                    PreparedOp::List(list) => {
                        OpResult::Namespaces(list_namespaces(data.live_namespaces(now), &list))
                    }
                });
            }
            puts.into_iter().for_each(|put| data.put(put, now));
            Ok(results)
        })
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let now = super::item::to_micros(std::time::SystemTime::now());
            let mut data = self.lock();
            let mut swept = 0u64;
            data.namespaces.retain(|_, items| {
                let before = items.len();
                items.retain(|_, entry| entry.live(now));
                swept += (before - items.len()) as u64;
                !items.is_empty()
            });
            Ok(swept)
        })
    }
}

impl Data {
    fn get(&mut self, namespace: &str, key: &str, refresh: bool, now: i64) -> Option<Item> {
        let entry = self.namespaces.get_mut(namespace)?.get_mut(key)?;
        if !entry.live(now) {
            return None;
        }
        if refresh {
            entry.refresh(now);
        }
        Some(entry.item.clone())
    }

    fn put(&mut self, put: PreparedPut, now: i64) {
        let joined = join(&put.namespace);
        let Some(value) = put.value else {
            if let Some(items) = self.namespaces.get_mut(&joined) {
                items.remove(&put.key);
                if items.is_empty() {
                    self.namespaces.remove(&joined);
                }
            }
            return;
        };
        let items = self.namespaces.entry(joined).or_default();
        let created_at = match items.get(&put.key) {
            Some(old) if old.live(now) => old.item.created_at,
            _ => from_micros(now),
        };
        let item = Item {
            namespace: put.namespace,
            key: put.key.clone(),
            value,
            created_at,
            updated_at: from_micros(now),
        };
        let vectors = put.vectors.into_iter().map(|(_, v)| v).collect();
        let entry = Entry {
            item,
            vectors,
            ttl_minutes: put.ttl_minutes,
            expires_at: put.expires_at,
        };
        items.insert(put.key, entry);
    }

    /// The namespaces under `prefix`: the prefix itself, then those that
    /// extend it (`a.b` then `a.b.*`, never `a.bc`).
    fn under<'a>(&'a self, prefix: &[String]) -> Vec<&'a BTreeMap<String, Entry>> {
        if prefix.is_empty() {
            return self.namespaces.values().collect();
        }
        let joined = join(prefix);
        let (from, to) = (format!("{joined}."), format!("{joined}/"));
        let exact = self.namespaces.get(&joined);
        let deeper = self
            .namespaces
            .range::<str, _>((Bound::Included(from.as_str()), Bound::Excluded(to.as_str())))
            .map(|(_, items)| items);
        exact.into_iter().chain(deeper).collect()
    }

    fn search(
        &mut self,
        op: &SearchOp,
        query: Option<&[f32]>,
        refresh: bool,
        now: i64,
    ) -> Vec<SearchItem> {
        let candidates: Vec<&Entry> = self
            .under(&op.namespace_prefix)
            .into_iter()
            .flat_map(BTreeMap::values)
            .filter(|entry| entry.live(now) && op.filter.matches(&entry.item.value))
            .collect();
        let page: Vec<SearchItem> = rank(candidates, query, op.offset, op.limit)
            .into_iter()
            .map(|(entry, score)| SearchItem {
                item: entry.item.clone(),
                score,
            })
            .collect();
        if refresh {
            for found in &page {
                let items = self.namespaces.get_mut(&join(&found.namespace));
                if let Some(entry) = items.and_then(|items| items.get_mut(&found.key)) {
                    entry.refresh(now);
                }
            }
        }
        page
    }

    fn live_namespaces(&self, now: i64) -> Vec<Vec<String>> {
        self.namespaces
            .values()
            .filter_map(|items| items.values().find(|e| e.live(now)))
            .map(|entry| entry.item.namespace.clone())
            .collect()
    }
}
