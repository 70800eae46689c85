//! The embedded items of the prefixes a store's queries searched (each
//! item with its decoded vectors), kept between batches while the file
//! holds what they were read from, and the exact scores a query gives
//! them.
//!
//! An entry is valid while SQLite's `PRAGMA data_version` (which moves
//! when another connection commits) and the connection's
//! `total_changes` (which moves when this connection writes, through
//! this store, another store sharing it or a checkpointer) are what they
//! were when it was read; any other value empties the whole cache.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::types::{FromSqlError, Type};
use rusqlite::Connection;

use super::super::sql::{vector_from_bytes, ItemRow, PrefixRange};
use super::super::Item;
use super::Failure;

/// The most the cache holds, in `f32`s (64 MiB), a value's JSON text
/// counting a float per 4 bytes; a prefix with more is read from its rows
/// on every query instead.
pub(super) const MAX_CACHED_FLOATS: usize = 16 << 20;

/// What identifies the file's content as this connection sees it.
pub(super) type Stamp = (i64, u64);

/// The stamp of the connection, inside the batch's transaction.
pub(super) fn stamp(conn: &Connection) -> rusqlite::Result<Stamp> {
    let version = conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?;
    Ok((version, conn.total_changes()))
}

/// One embedded item under a prefix.
pub(super) struct Embedded {
    /// Its joined namespace, as stored.
    pub prefix: String,
    pub item: Item,
    /// In microseconds since the epoch, for the newest-first tie-break.
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub ttl_minutes: Option<f64>,
    /// Its vectors.
    pub vectors: Vec<Stored>,
    /// Its size, in `f32`s, for the cache's bound.
    pub floats: usize,
}

/// A vector, with the sum of its squares and the inverse of its norm (0
/// for a zero vector).
pub(super) struct Stored {
    pub vector: Vec<f32>,
    pub squares: f64,
    pub inverse: f64,
}

impl Stored {
    fn new(vector: Vec<f32>) -> Self {
        let squares: f64 = vector.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
        let inverse = if squares == 0.0 {
            0.0
        } else {
            1.0 / squares.sqrt()
        };
        Stored {
            vector,
            squares,
            inverse,
        }
    }
}

/// The embedded items under one prefix, ordered by namespace and key.
pub(super) type Prefix = Arc<Vec<Embedded>>;

/// The cache: entries by the search's joined prefix (`""`: everything).
#[derive(Default)]
pub(super) struct VectorCache {
    stamp: Option<Stamp>,
    by_prefix: HashMap<String, Prefix>,
    floats: usize,
}

impl VectorCache {
    /// The embedded items under `range`, from the cache when `now_stamp`
    /// says the file has not changed since they were read, else from the
    /// tables (and kept, within [`MAX_CACHED_FLOATS`]).
    pub(super) fn under(
        &mut self,
        conn: &Connection,
        now_stamp: Stamp,
        range: Option<&PrefixRange>,
    ) -> Result<Prefix, Failure> {
        if self.stamp != Some(now_stamp) {
            self.by_prefix.clear();
            self.floats = 0;
            self.stamp = Some(now_stamp);
        }
        let name = range.map_or("", |r| r.exact.as_str());
        if let Some(found) = self.by_prefix.get(name) {
            return Ok(Arc::clone(found));
        }
        let read = Arc::new(read_under(conn, range)?);
        let floats: usize = read.iter().map(|e| e.floats).sum();
        if floats <= MAX_CACHED_FLOATS {
            if self.floats + floats > MAX_CACHED_FLOATS {
                self.by_prefix.clear();
                self.floats = 0;
            }
            self.floats += floats;
            self.by_prefix.insert(name.to_owned(), Arc::clone(&read));
        }
        Ok(read)
    }
}

/// Every embedded item under `range` with its vectors, read in the order
/// of the vectors' unique index.
fn read_under(conn: &Connection, range: Option<&PrefixRange>) -> Result<Vec<Embedded>, Failure> {
    let cond = match range {
        Some(_) => "(e.prefix = ?1 OR (e.prefix >= ?2 AND e.prefix < ?3))",
        None => "1",
    };
    let sql = format!(
        "SELECT e.prefix, e.key, e.embedding, i.value, i.created_at, i.updated_at,
                i.expires_at, i.ttl_minutes
         FROM store_embeddings e JOIN store_items i ON i.prefix = e.prefix AND i.key = e.key
         WHERE {cond} ORDER BY e.prefix, e.key"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = match range {
        Some(r) => st.query(rusqlite::params![r.exact, r.from, r.to])?,
        None => st.query([])?,
    };
    let mut out: Vec<Embedded> = Vec::new();
    while let Some(row) = rows.next()? {
        let prefix = row
            .get_ref(0)?
            .as_str()
            .map_err(column_error(0, Type::Text))?;
        let key = row
            .get_ref(1)?
            .as_str()
            .map_err(column_error(1, Type::Text))?;
        let bytes = row
            .get_ref(2)?
            .as_blob()
            .map_err(column_error(2, Type::Blob))?;
        let vector = Stored::new(vector_from_bytes(prefix, key, bytes)?);
        match out.last_mut() {
            Some(last) if last.prefix == prefix && last.item.key == key => {
                last.floats += vector.vector.len();
                last.vectors.push(vector);
            }
            _ => out.push(embedded(row, vector)?),
        }
    }
    Ok(out)
}

/// The first row of an item: the item, and its first vector.
fn embedded(row: &rusqlite::Row<'_>, vector: Stored) -> Result<Embedded, Failure> {
    let whole = ItemRow {
        prefix: row.get(0)?,
        key: row.get(1)?,
        value: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
        ttl_minutes: row.get(7)?,
    };
    let (prefix, updated_at) = (whole.prefix.clone(), whole.updated_at);
    let text_floats = whole.value.len() / 4;
    let (item, ttl_minutes) = whole.into_item()?;
    Ok(Embedded {
        prefix,
        item,
        updated_at,
        expires_at: row.get(6)?,
        ttl_minutes,
        floats: text_floats + vector.vector.len(),
        vectors: vec![vector],
    })
}

/// A column that should hold a `kind` and does not.
pub(super) fn column_error(column: usize, kind: Type) -> impl Fn(FromSqlError) -> rusqlite::Error {
    move |e| rusqlite::Error::FromSqlConversionFailure(column, kind, e.into())
}

/// An item's best cosine similarity to `query` (whose sum of squares is
/// `query_squares`), as [`cosine`](super::super::embed::cosine) computes
/// it, the dot product summed in eight lanes.
pub(super) fn best_score(query: &[f32], query_squares: f64, item: &Embedded) -> f64 {
    item.vectors
        .iter()
        .map(
            |Stored {
                 vector, squares, ..
             }| {
                if vector.len() != query.len() {
                    // Cosine over the common length: the stored sum is not it.
                    return super::super::embed::cosine(query, vector);
                }
                if query_squares == 0.0 || *squares == 0.0 {
                    return 0.0;
                }
                dot(query, vector) / (query_squares.sqrt() * squares.sqrt())
            },
        )
        .fold(f64::NEG_INFINITY, f64::max)
}

/// [`best_score`] within [`rough_margin`], several times faster: the dot
/// products summed in `f32`, times the norms' inverses (`query_inverse`:
/// the query's, 0 for a zero query).
pub(super) fn rough_score(query: &[f32], query_inverse: f64, item: &Embedded) -> f64 {
    item.vectors
        .iter()
        .map(
            |Stored {
                 vector, inverse, ..
             }| {
                if vector.len() != query.len() {
                    return super::super::embed::cosine(query, vector);
                }
                f64::from(dot_f32(query, vector)) * query_inverse * inverse
            },
        )
        .fold(f64::NEG_INFINITY, f64::max)
}

/// How far [`rough_score`] may be from [`best_score`] for vectors of
/// `dims` dimensions: summing `n` products in `f32` errs by at most about
/// `n` units of its last place (2^-24) relative to the sum of their
/// magnitudes, which Cauchy-Schwarz bounds by the norms' product; twice
/// that, for the rounding of the rest.
pub(super) fn rough_margin(dims: usize) -> f64 {
    (dims as f64 + 8.0) * 2.0 * f64::from(f32::EPSILON)
}

fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        for j in 0..8 {
            lanes[j] += x[j] * y[j];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// The dot product in `f64`, in eight independent sums the compiler
/// turns into vector instructions.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0f64; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        for j in 0..8 {
            lanes[j] += f64::from(x[j]) * f64::from(y[j]);
        }
    }
    let tail: f64 = ra
        .iter()
        .zip(rb)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    lanes.iter().sum::<f64>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embed::cosine;

    fn embedded(vectors: Vec<Vec<f32>>) -> Embedded {
        Embedded {
            prefix: "a".into(),
            item: Item {
                namespace: vec!["a".into()],
                key: "k".into(),
                value: Default::default(),
                created_at: std::time::UNIX_EPOCH,
                updated_at: std::time::UNIX_EPOCH,
            },
            updated_at: 0,
            expires_at: None,
            ttl_minutes: None,
            floats: 0,
            vectors: vectors.into_iter().map(Stored::new).collect(),
        }
    }

    #[test]
    fn scores_are_cosines_of_the_best_vector() {
        let q: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin()).collect();
        let v1: Vec<f32> = (0..37).map(|i| (i as f32 * 0.11).cos()).collect();
        let v2: Vec<f32> = (0..37).map(|i| (i as f32 * 0.29).sin() + 0.5).collect();
        let qs = q.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
        let score = best_score(&q, qs, &embedded(vec![v1.clone(), v2.clone()]));
        let want = cosine(&q, &v1).max(cosine(&q, &v2));
        assert!((score - want).abs() < 1e-12, "{score} vs {want}");
        // Other lengths and zero vectors score as `cosine` says.
        let short = vec![1.0f32, 2.0];
        let score = best_score(&q, qs, &embedded(vec![short.clone()]));
        assert!((score - cosine(&q, &short)).abs() < 1e-12);
        assert_eq!(best_score(&q, qs, &embedded(vec![vec![0.0; 37]])), 0.0);
        let item = embedded(vec![v1, v2]);
        let rough = rough_score(&q, 1.0 / qs.sqrt(), &item);
        assert!((rough - best_score(&q, qs, &item)).abs() <= rough_margin(37));
    }
}
