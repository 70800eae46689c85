//! The operations of a store, as LangGraph's `GetOp`, `PutOp`, `SearchOp`
//! and `ListNamespacesOp`: what [`Store::batch`](super::Store::batch) runs,
//! and what the convenience methods build.

use serde_json::{Map, Value};

use super::filter::Filter;
use super::item::{Item, SearchItem};

/// One operation of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Reads one item.
    Get(GetOp),
    /// Writes one item, or deletes it (`value: None`).
    Put(PutOp),
    /// Finds items under a namespace prefix.
    Search(SearchOp),
    /// Lists the namespaces that hold items.
    ListNamespaces(ListNamespacesOp),
}

/// Reads the item at `namespace` / `key`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetOp {
    /// The item's namespace.
    pub namespace: Vec<String>,
    /// The item's key.
    pub key: String,
    /// Whether reading restarts the item's TTL; `None`: the store's
    /// [`TtlConfig::refresh_on_read`](super::TtlConfig::refresh_on_read).
    pub refresh_ttl: Option<bool>,
}

/// Writes `value` at `namespace` / `key`, or deletes the item when `value`
/// is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct PutOp {
    /// The item's namespace (not empty; no label `.`, empty, or NUL).
    pub namespace: Vec<String>,
    /// The item's key.
    pub key: String,
    /// The new value (a JSON object), or `None` to delete.
    pub value: Option<Map<String, Value>>,
    /// Which fields are embedded for semantic search.
    pub index: IndexFields,
    /// How long the item lives.
    pub ttl: Ttl,
}

/// Which parts of a put's value are embedded, on a store with an index.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum IndexFields {
    /// The fields of the store's [`IndexConfig`](super::IndexConfig).
    /// (Not named `Default`: a public item of that name makes rustc spell
    /// the trait `std::default::Default` in every user's errors.)
    #[default]
    Configured,
    /// Nothing: the item is found by filters only (LangGraph's
    /// `index=False`).
    Off,
    /// These paths instead (LangGraph's `index=["a.b", "c[*]"]`).
    Paths(Vec<String>),
}

/// How long a put item lives.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Ttl {
    /// The store's [`TtlConfig::default_ttl`](super::TtlConfig::default_ttl).
    #[default]
    Configured,
    /// For ever.
    Never,
    /// This many minutes after it was last written (or read, when reads
    /// refresh).
    Minutes(f64),
}

/// Finds items whose namespace starts with `namespace_prefix`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOp {
    /// The prefix; empty finds every item.
    pub namespace_prefix: Vec<String>,
    /// What the value must match (LangGraph's filter: equality of fields,
    /// or `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`).
    pub filter: Filter,
    /// Natural-language query, ranked by similarity on a store with an
    /// index; ignored without one.
    pub query: Option<String>,
    /// At most this many items.
    pub limit: usize,
    /// Skips this many first.
    pub offset: usize,
    /// Whether reading restarts the found items' TTL.
    pub refresh_ttl: Option<bool>,
}

impl SearchOp {
    /// A search of everything under `namespace_prefix`: no filter, no
    /// query, LangGraph's default limit of 10.
    pub fn new<S: AsRef<str>>(namespace_prefix: impl IntoIterator<Item = S>) -> Self {
        SearchOp {
            namespace_prefix: super::item::labels(namespace_prefix),
            filter: Filter::default(),
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: None,
        }
    }

    /// Only items whose value matches `filter`.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// Ranked by similarity to `query`.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// At most `limit` items.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset` items.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// Lists namespaces, as LangGraph's `list_namespaces`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListNamespacesOp {
    /// Conditions every listed namespace meets (`*` matches any label).
    pub match_conditions: Vec<MatchCondition>,
    /// Namespaces cut to their first `max_depth` labels (then
    /// deduplicated).
    pub max_depth: Option<usize>,
    /// At most this many (LangGraph's default: 100).
    pub limit: usize,
    /// Skips this many first.
    pub offset: usize,
}

impl Default for ListNamespacesOp {
    fn default() -> Self {
        ListNamespacesOp {
            match_conditions: Vec::new(),
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }
}

impl ListNamespacesOp {
    /// Only namespaces that start with `labels` (`*` matches any).
    pub fn prefix<S: AsRef<str>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.match_conditions
            .push(MatchCondition::Prefix(super::item::labels(labels)));
        self
    }

    /// Only namespaces that end with `labels` (`*` matches any).
    pub fn suffix<S: AsRef<str>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.match_conditions
            .push(MatchCondition::Suffix(super::item::labels(labels)));
        self
    }

    /// Cut to the first `depth` labels.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// At most `limit` namespaces.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Skips the first `offset`.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// A condition on a namespace's labels; `*` matches any one label.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchCondition {
    /// The namespace starts with these labels.
    Prefix(Vec<String>),
    /// The namespace ends with these labels.
    Suffix(Vec<String>),
}

impl MatchCondition {
    /// Whether `namespace` meets the condition (LangGraph's
    /// `_does_match`).
    pub fn matches(&self, namespace: &[String]) -> bool {
        let (path, prefix) = match self {
            MatchCondition::Prefix(path) => (path, true),
            MatchCondition::Suffix(path) => (path, false),
        };
        if namespace.len() < path.len() {
            return false;
        }
        let start = if prefix {
            0
        } else {
            namespace.len() - path.len()
        };
        path.iter()
            .zip(&namespace[start..])
            .all(|(want, have)| want == "*" || want == have)
    }
}

/// What one operation of a batch answered, in the batch's order.
#[derive(Debug, Clone, PartialEq)]
pub enum OpResult {
    /// A get's item, `None` when there is none (or it expired).
    Item(Option<Item>),
    /// A put or delete: done.
    Done,
    /// A search's items, best first.
    Items(Vec<SearchItem>),
    /// The namespaces listed, sorted.
    Namespaces(Vec<Vec<String>>),
}
