//! What a store holds: items under a namespace and a key, and the rules a
//! namespace and a key keep.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::StoreError;
use crate::graph::stream::payload::iso_timestamp;

/// One stored item: a JSON object under a namespace and a key, with the
/// times it was created and last written.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The path of labels the item lives under, e.g. `["users", "did:1"]`.
    pub namespace: Vec<String>,
    /// The item's key, unique within its namespace.
    pub key: String,
    /// The value: always a JSON object, as in LangGraph.
    pub value: Map<String, Value>,
    /// When the item was first put (kept across later puts).
    pub created_at: SystemTime,
    /// When the item was last put.
    pub updated_at: SystemTime,
}

impl Item {
    /// The value read as `T` through serde: the typed view of an item.
    pub fn value_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&Value::Object(self.value.clone()))
    }

    fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("namespace", &self.namespace)?;
        map.serialize_entry("key", &self.key)?;
        map.serialize_entry("value", &self.value)?;
        map.serialize_entry("created_at", &iso_timestamp(self.created_at))?;
        map.serialize_entry("updated_at", &iso_timestamp(self.updated_at))
    }
}

/// As LangGraph's `Item.dict()` and the Agent Server write an item: times
/// in ISO 8601 with `+00:00`.
impl Serialize for Item {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(5))?;
        self.write_fields(&mut map)?;
        map.end()
    }
}

/// An item found by a search, with its similarity to the query when the
/// search had one and the item was embedded.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchItem {
    /// The item.
    pub item: Item,
    /// Cosine similarity to the search's `query` (higher is closer);
    /// `None` without a query, or for an item with nothing embedded.
    pub score: Option<f64>,
}

impl std::ops::Deref for SearchItem {
    type Target = Item;
    fn deref(&self) -> &Item {
        &self.item
    }
}

/// The item's fields and `score`, as LangGraph's `SearchItem.dict()`.
impl Serialize for SearchItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(6))?;
        self.item.write_fields(&mut map)?;
        map.serialize_entry("score", &self.score)?;
        map.end()
    }
}

/// Labels from anything iterable of strings (`["users", did]`, a
/// `Vec<String>`, a slice).
pub(crate) fn labels<S: AsRef<str>>(namespace: impl IntoIterator<Item = S>) -> Vec<String> {
    namespace
        .into_iter()
        .map(|label| label.as_ref().to_owned())
        .collect()
}

/// LangGraph's label rules: a label is a non-empty string without `.`
/// (the stores join labels with dots) or NUL.
pub(crate) fn check_labels(namespace: &[String]) -> Result<(), StoreError> {
    let refuse = |reason| {
        Err(StoreError::InvalidNamespace {
            namespace: namespace.to_vec(),
            reason,
        })
    };
    for label in namespace {
        if label.is_empty() {
            return refuse("a label cannot be empty");
        }
        if label.contains('.') {
            return refuse("a label cannot contain a period ('.')");
        }
        if label.contains('\0') {
            return refuse("a label cannot contain a NUL byte");
        }
    }
    Ok(())
}

/// The rules of an item's namespace (a put's): not empty, each label as
/// [`check_labels`] says, and a root other than `langgraph`.
pub(crate) fn check_item_namespace(namespace: &[String]) -> Result<(), StoreError> {
    let refuse = |reason| {
        Err(StoreError::InvalidNamespace {
            namespace: namespace.to_vec(),
            reason,
        })
    };
    match namespace.first() {
        None => refuse("a namespace cannot be empty"),
        Some(root) if root == "langgraph" => refuse("the root label \"langgraph\" is reserved"),
        Some(_) => check_labels(namespace),
    }
}

/// A key is a non-empty string without NUL (the SQL stores keep text).
pub(crate) fn check_key(namespace: &[String], key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.contains('\0') {
        return Err(StoreError::InvalidKey {
            namespace: namespace.to_vec(),
            key: key.to_owned(),
        });
    }
    Ok(())
}

/// A namespace as the SQL stores keep it: labels joined with `.`.
pub(crate) fn join(namespace: &[String]) -> String {
    namespace.join(".")
}

/// The labels of a joined namespace.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn split(joined: &str) -> Vec<String> {
    joined.split('.').map(str::to_owned).collect()
}

/// Microseconds since the Unix epoch, as the SQL stores keep times.
pub(crate) fn to_micros(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The time `micros` microseconds after the Unix epoch.
pub(crate) fn from_micros(micros: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}
