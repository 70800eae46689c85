//! What every backend does before it touches its data: check the whole
//! batch, settle the TTLs and refreshes, drop puts a later put of the same
//! item overrides, and call the embeddings model, so a refusal or a model
//! failure leaves nothing half-written.

use std::collections::HashSet;
use std::time::SystemTime;

use serde_json::{Map, Value};

use super::embed::texts_to_embed;
use super::item::{check_item_namespace, check_key, check_labels, to_micros};
use super::{IndexConfig, IndexFields, ListNamespacesOp, Op, SearchOp, StoreError, Ttl, TtlConfig};
use crate::storable::{check_value, holds_nul};
use crate::StateError;

/// A checked batch, ready to run.
pub(crate) struct Prepared {
    /// One per operation of the batch, in order.
    pub ops: Vec<PreparedOp>,
    /// The batch's time, in microseconds since the epoch: every put of the
    /// batch is stamped with it, and items expired before it are gone.
    pub now: i64,
}

/// One checked operation.
pub(crate) enum PreparedOp {
    /// Read one item.
    Get {
        namespace: Vec<String>,
        key: String,
        /// Whether to restart the item's TTL.
        refresh: bool,
    },
    /// Write (or delete, `value: None`) one item.
    Put(PreparedPut),
    /// A put overridden by a later put of the same item in the batch.
    Skip,
    /// Find items.
    Search {
        op: SearchOp,
        /// The query's vector, on a store with an index.
        query: Option<Vec<f32>>,
        refresh: bool,
    },
    /// List namespaces.
    List(ListNamespacesOp),
}

/// A checked put.
pub(crate) struct PreparedPut {
    pub namespace: Vec<String>,
    pub key: String,
    pub value: Option<Map<String, Value>>,
    /// Which paths to embed.
    pub index: IndexFields,
    /// The vectors of the item's texts, by path (none without an index).
    pub vectors: Vec<(String, Vec<f32>)>,
    /// Minutes the item lives, for refreshes; `None`: for ever.
    pub ttl_minutes: Option<f64>,
    /// When it expires (µs since the epoch).
    pub expires_at: Option<i64>,
}

/// Checks `ops` and embeds what needs it.
pub(crate) async fn prepare(
    ops: Vec<Op>,
    index: Option<&IndexConfig>,
    ttl: &TtlConfig,
) -> Result<Prepared, StoreError> {
    let now = to_micros(SystemTime::now());
    ops.iter().try_for_each(check_op)?;
    let last_puts = last_put_of_each_item(&ops);
    let mut prepared = Vec::with_capacity(ops.len());
    for (at, op) in ops.into_iter().enumerate() {
        prepared.push(match op {
            Op::Get(get) => PreparedOp::Get {
                refresh: get.refresh_ttl.unwrap_or(ttl.refresh_on_read),
                namespace: get.namespace,
                key: get.key,
            },
            Op::Put(_) if !last_puts.contains(&at) => PreparedOp::Skip,
            Op::Put(put) => PreparedOp::Put(settle_put(put, ttl, now)),
            Op::Search(search) => PreparedOp::Search {
                query: query_vector(index, &search).await?,
                refresh: search.refresh_ttl.unwrap_or(ttl.refresh_on_read),
                op: search,
            },
            Op::ListNamespaces(list) => PreparedOp::List(list),
        });
    }
    if let Some(index) = index {
        embed_puts(index, &mut prepared).await?;
    }
    Ok(Prepared { ops: prepared, now })
}

fn check_op(op: &Op) -> Result<(), StoreError> {
    match op {
        Op::Get(get) => {
            check_labels(&get.namespace)?;
            check_key(&get.namespace, &get.key)
        }
        Op::Put(put) => check_put(put),
        Op::Search(search) => check_labels(&search.namespace_prefix),
        Op::ListNamespaces(list) => list.match_conditions.iter().try_for_each(|c| match c {
            super::MatchCondition::Prefix(p) | super::MatchCondition::Suffix(p) => check_labels(p),
        }),
    }
}

fn check_put(put: &super::PutOp) -> Result<(), StoreError> {
    check_item_namespace(&put.namespace)?;
    check_key(&put.namespace, &put.key)?;
    let refuse = |reason: String| StoreError::InvalidValue {
        namespace: put.namespace.clone(),
        key: put.key.clone(),
        reason,
    };
    if let Ttl::Minutes(minutes) = put.ttl {
        if !(minutes.is_finite() && minutes > 0.0) {
            return Err(refuse(format!(
                "a TTL is a positive number of minutes, not {minutes}"
            )));
        }
    }
    match &put.value {
        // Field by field, so the error names the field at fault.
        Some(value) => value.iter().try_for_each(|(field, v)| {
            check_value(v)
                .map_err(|kind| refuse(StateError::new(field.clone(), kind).to_string()))?;
            if field.contains('\0') || holds_nul(v) {
                // PostgreSQL's text and jsonb cannot hold one.
                return Err(refuse(format!("field `{field}` holds a NUL character")));
            }
            Ok(())
        }),
        None => Ok(()),
    }
}

/// The positions of the puts that win: the last of each item.
fn last_put_of_each_item(ops: &[Op]) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let mut winners = HashSet::new();
    for (at, op) in ops.iter().enumerate().rev() {
        if let Op::Put(put) = op {
            if seen.insert((&put.namespace, &put.key)) {
                winners.insert(at);
            }
        }
    }
    winners
}

fn settle_put(put: super::PutOp, ttl: &TtlConfig, now: i64) -> PreparedPut {
    let ttl_minutes = match put.ttl {
        Ttl::Configured => ttl.default_ttl,
        Ttl::Never => None,
        Ttl::Minutes(minutes) => Some(minutes),
    };
    PreparedPut {
        expires_at: ttl_minutes.map(|minutes| expiry(now, minutes)),
        ttl_minutes,
        index: put.index,
        vectors: Vec::new(),
        namespace: put.namespace,
        key: put.key,
        value: put.value,
    }
}

/// When an item written (or read) at `now` expires after `minutes`.
pub(crate) fn expiry(now: i64, minutes: f64) -> i64 {
    now.saturating_add((minutes * 60_000_000.0) as i64)
}

async fn query_vector(
    index: Option<&IndexConfig>,
    search: &SearchOp,
) -> Result<Option<Vec<f32>>, StoreError> {
    match (index, &search.query) {
        (Some(index), Some(query)) => Ok(Some(index.embed_query(query).await?)),
        _ => Ok(None),
    }
}

/// Embeds every put's texts in one call to the model.
async fn embed_puts(index: &IndexConfig, ops: &mut [PreparedOp]) -> Result<(), StoreError> {
    let mut wanted: Vec<(usize, String, String)> = Vec::new();
    for (at, op) in ops.iter().enumerate() {
        let PreparedOp::Put(put) = op else { continue };
        let Some(value) = &put.value else { continue };
        let paths = match &put.index {
            IndexFields::Configured => &index.fields,
            IndexFields::Off => continue,
            IndexFields::Paths(paths) => paths,
        };
        for (path, text) in texts_to_embed(value, paths) {
            wanted.push((at, path, text));
        }
    }
    let texts: Vec<String> = wanted.iter().map(|(_, _, t)| t.clone()).collect();
    let vectors = index.embed_checked(&texts).await?;
    for ((at, path, _), vector) in wanted.into_iter().zip(vectors) {
        if let PreparedOp::Put(put) = &mut ops[at] {
            put.vectors.push((path, vector));
        }
    }
    Ok(())
}
