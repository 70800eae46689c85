//! The methods users call on any store: one operation each, built on
//! [`Store::batch`], plus their typed forms through serde.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::item::labels;
use super::{
    GetOp, IndexFields, Item, ListNamespacesOp, Op, OpResult, PutOp, SearchItem, SearchOp, Store,
    StoreError, Ttl,
};

/// `get`, `put`, `delete`, `search`, `list_namespaces` on any [`Store`]
/// (a `dyn Store` too), as LangGraph's `BaseStore` has them, and
/// [`get_as`](Self::get_as) / [`put_as`](Self::put_as) for typed values.
pub trait StoreExt: Store {
    /// The item at `namespace` / `key`; `None` when there is none.
    fn get<S: AsRef<str>>(
        &self,
        namespace: impl IntoIterator<Item = S>,
        key: &str,
    ) -> impl Future<Output = Result<Option<Item>, StoreError>> + Send {
        let op = Op::Get(GetOp {
            namespace: labels(namespace),
            key: key.to_owned(),
            refresh_ttl: None,
        });
        async move {
            match one(self.batch(vec![op]).await?) {
                OpResult::Item(item) => Ok(item),
                _ => Ok(None),
            }
        }
    }

    /// Writes `value` (a JSON object) at `namespace` / `key`, embedded as
    /// the store's index says, living as its TTL config says.
    fn put<S: AsRef<str>>(
        &self,
        namespace: impl IntoIterator<Item = S>,
        key: &str,
        value: Value,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let namespace = labels(namespace);
        let op = object(&namespace, key, value).map(|value| PutOp {
            namespace,
            key: key.to_owned(),
            value: Some(value),
            index: IndexFields::Configured,
            ttl: Ttl::Configured,
        });
        self.put_op(op)
    }

    /// Runs one [`PutOp`] (to choose its index paths or TTL).
    fn put_op(
        &self,
        op: Result<PutOp, StoreError>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            self.batch(vec![Op::Put(op?)]).await?;
            Ok(())
        }
    }

    /// Deletes the item at `namespace` / `key`, if there is one.
    fn delete<S: AsRef<str>>(
        &self,
        namespace: impl IntoIterator<Item = S>,
        key: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let op = PutOp {
            namespace: labels(namespace),
            key: key.to_owned(),
            value: None,
            index: IndexFields::Configured,
            ttl: Ttl::Configured,
        };
        self.put_op(Ok(op))
    }

    /// The items a search finds, best first.
    fn search(
        &self,
        op: SearchOp,
    ) -> impl Future<Output = Result<Vec<SearchItem>, StoreError>> + Send {
        async move {
            match one(self.batch(vec![Op::Search(op)]).await?) {
                OpResult::Items(items) => Ok(items),
                _ => Ok(Vec::new()),
            }
        }
    }

    /// The namespaces holding items, sorted.
    fn list_namespaces(
        &self,
        op: ListNamespacesOp,
    ) -> impl Future<Output = Result<Vec<Vec<String>>, StoreError>> + Send {
        async move {
            match one(self.batch(vec![Op::ListNamespaces(op)]).await?) {
                OpResult::Namespaces(namespaces) => Ok(namespaces),
                _ => Ok(Vec::new()),
            }
        }
    }

    /// The value at `namespace` / `key` read as `T`; an item that does not
    /// read as `T` is [`StoreError::InvalidValue`], naming it.
    fn get_as<T: DeserializeOwned, S: AsRef<str>>(
        &self,
        namespace: impl IntoIterator<Item = S>,
        key: &str,
    ) -> impl Future<Output = Result<Option<T>, StoreError>> + Send {
        let item = self.get(namespace, key);
        async move {
            let Some(item) = item.await? else {
                return Ok(None);
            };
            item.value_as()
                .map(Some)
                .map_err(|e| StoreError::InvalidValue {
                    reason: format!("does not read as {}: {e}", std::any::type_name::<T>()),
                    namespace: item.namespace,
                    key: item.key,
                })
        }
    }

    /// Writes `value`, which must serialize as a JSON object.
    fn put_as<T: Serialize + ?Sized, S: AsRef<str>>(
        &self,
        namespace: impl IntoIterator<Item = S>,
        key: &str,
        value: &T,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let namespace = labels(namespace);
        let value = serde_json::to_value(value).map_err(|e| StoreError::InvalidValue {
            namespace: namespace.clone(),
            key: key.to_owned(),
            reason: e.to_string(),
        });
        let op = value
            .and_then(|value| object(&namespace, key, value))
            .map(|value| PutOp {
                namespace,
                key: key.to_owned(),
                value: Some(value),
                index: IndexFields::Configured,
                ttl: Ttl::Configured,
            });
        self.put_op(op)
    }
}

impl<T: Store + ?Sized> StoreExt for T {}

fn one(mut results: Vec<OpResult>) -> OpResult {
    results.pop().unwrap_or(OpResult::Done)
}

/// A value as an item holds it: a JSON object, as in LangGraph.
pub(crate) fn object(
    namespace: &[String],
    key: &str,
    value: Value,
) -> Result<Map<String, Value>, StoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(StoreError::InvalidValue {
            namespace: namespace.to_vec(),
            key: key.to_owned(),
            reason: format!("an item's value is a JSON object, not `{other}`"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::block_on;
    use crate::store::MemoryStore;

    #[test]
    fn values_that_are_not_objects_are_refused_naming_the_item() {
        let store = MemoryStore::new();
        let err = block_on(store.put(["a"], "k", serde_json::json!([1]))).unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidValue { ref key, .. } if key == "k"),
            "{err}"
        );
        let err = block_on(store.put_as(["a"], "typed", &vec![1, 2])).unwrap_err();
        assert!(err.to_string().contains("\"typed\""), "{err}");
        let listed = block_on(store.list_namespaces(ListNamespacesOp::default())).unwrap();
        assert!(listed.is_empty(), "nothing written: {listed:?}");
    }
}
