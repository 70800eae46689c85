//! What the SQL backends share: the namespace range a search reads, the
//! bytes of a stored vector, and a stored row read back as an item (a row
//! that does not read is [`StoreError::Corrupt`], naming it).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::item::{from_micros, join, split};
use super::rank::Candidate;
use super::{Item, ListNamespacesOp, MatchCondition, StoreError};

/// The joined namespaces under a search's prefix, as a range of the
/// primary key: the prefix itself (`exact`), and the half-open range
/// `[from, to)` of those that extend it. `.` sorts just before `/` in
/// bytes, so `a.b.` ≤ every `a.b.*` < `a.b/`, and a sibling `a.bc` is out.
pub(crate) struct PrefixRange {
    pub exact: String,
    pub from: String,
    pub to: String,
}

impl PrefixRange {
    /// The range of `prefix`; `None` for the empty prefix (everything).
    pub fn of(prefix: &[String]) -> Option<Self> {
        if prefix.is_empty() {
            return None;
        }
        let exact = join(prefix);
        Some(PrefixRange {
            from: format!("{exact}."),
            to: format!("{exact}/"),
            exact,
        })
    }
}

/// The labels every namespace a listing keeps must start with: the
/// leading labels of its prefix condition before any `*`, so the database
/// reads only that range.
pub(crate) fn literal_prefix(op: &ListNamespacesOp) -> Vec<String> {
    op.match_conditions
        .iter()
        .find_map(|condition| match condition {
            MatchCondition::Prefix(labels) => Some(
                labels
                    .iter()
                    .take_while(|label| *label != "*")
                    .cloned()
                    .collect(),
            ),
            MatchCondition::Suffix(_) => None,
        })
        .unwrap_or_default()
}

/// A vector as stored: its `f32`s in little-endian order.
pub(crate) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector read back; a length that is not a whole number of
/// `f32`s is a corrupt row.
pub(crate) fn vector_from_bytes(
    prefix: &str,
    key: &str,
    bytes: &[u8],
) -> Result<Vec<f32>, StoreError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(corrupt(
            prefix,
            key,
            format!("a stored vector of {} bytes, not whole f32s", bytes.len()),
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// A [`StoreError::Corrupt`] for the row at `prefix` / `key`.
pub(crate) fn corrupt(prefix: &str, key: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        namespace: prefix.to_owned(),
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// An item's row, as both backends select it.
pub(crate) struct ItemRow {
    pub prefix: String,
    pub key: String,
    pub value: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub ttl_minutes: Option<f64>,
}

impl ItemRow {
    /// The item the row holds: its value must be a JSON object.
    pub fn into_item(self) -> Result<(Item, Option<f64>), StoreError> {
        let value = match serde_json::from_str::<Value>(&self.value) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                let reason = format!("the value is not a JSON object but `{other}`");
                return Err(corrupt(&self.prefix, &self.key, reason));
            }
            Err(e) => {
                let reason = format!("the value is not JSON: {e}");
                return Err(corrupt(&self.prefix, &self.key, reason));
            }
        };
        let item = Item {
            namespace: split(&self.prefix),
            key: self.key,
            value,
            created_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
        };
        Ok((item, self.ttl_minutes))
    }
}

/// An item a search found, with its TTL (to refresh it) and its vectors
/// or, from pgvector, its score computed by the server.
pub(crate) struct Found {
    pub item: Item,
    pub ttl_minutes: Option<f64>,
    pub vectors: Vec<Vec<f32>>,
    pub score: Option<f64>,
}

impl Candidate for Found {
    fn item(&self) -> &Item {
        &self.item
    }
    fn vectors(&self) -> &[Vec<f32>] {
        &self.vectors
    }
    fn known_score(&self) -> Option<f64> {
        self.score
    }
}

/// Vectors (or server-side scores) of the items under a prefix, by joined
/// namespace and key.
pub(crate) type ByItem<T> = HashMap<(String, String), Vec<T>>;

/// The items of `rows` whose value matches the search's filter, each with
/// the vectors and scores found for it.
pub(crate) fn found(
    rows: Vec<ItemRow>,
    filter: &super::Filter,
    mut vectors: ByItem<Vec<f32>>,
    scores: &ByItem<f64>,
) -> Result<Vec<Found>, StoreError> {
    let mut out = Vec::new();
    for row in rows {
        let id = (row.prefix.clone(), row.key.clone());
        let (item, ttl_minutes) = row.into_item()?;
        if !filter.matches(&item.value) {
            continue;
        }
        let score = scores
            .get(&id)
            .and_then(|s| s.iter().copied().reduce(f64::max));
        out.push(Found {
            item,
            ttl_minutes,
            vectors: vectors.remove(&id).unwrap_or_default(),
            score,
        });
    }
    Ok(out)
}

/// The JSON text of a put's value (checked storable by `prepare`).
pub(crate) fn value_text(value: &Map<String, Value>) -> String {
    // A checked map of JSON values always serializes.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_holds_the_prefix_and_its_children_only() {
        let range = PrefixRange::of(&["a".into(), "b".into()]).unwrap();
        let under = |ns: &str| ns == range.exact || (*ns >= *range.from && *ns < *range.to);
        assert!(under("a.b") && under("a.b.c") && under("a.b.c.d"));
        assert!(!under("a.bc") && !under("a") && !under("a.b-") && !under("a.c"));
        assert!(PrefixRange::of(&[]).is_none());
    }

    #[test]
    fn vectors_round_trip_and_bad_lengths_are_corrupt() {
        let v = vec![1.5f32, -0.25, f32::MIN_POSITIVE];
        assert_eq!(vector_from_bytes("a", "k", &vector_bytes(&v)).unwrap(), v);
        let err = vector_from_bytes("a.b", "k", &[0, 1, 2]).unwrap_err();
        assert!(err.to_string().contains("\"a.b\""), "{err}");
    }

    #[test]
    fn listing_ranges_stop_at_the_first_wildcard() {
        let op = ListNamespacesOp::default()
            .suffix(["x"])
            .prefix(["a", "*", "c"]);
        assert_eq!(literal_prefix(&op), ["a"]);
        assert!(literal_prefix(&ListNamespacesOp::default()).is_empty());
    }
}
