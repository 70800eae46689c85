//! A search without a query of one namespace that has none under it:
//! the items stream newest first from the index `store_items_newest`
//! (which holds every column, so no row is read twice) and the search
//! stops once its page is full, instead of reading, parsing and sorting
//! the whole namespace. Within one namespace, LangGraph's order (newest
//! update, then namespace, then key) is the index's `(updated_at DESC,
//! key)`.

use rusqlite::types::Type;
use rusqlite::{params, Connection};

use super::super::sql::{ItemRow, PrefixRange};
use super::super::SearchOp;
use super::vectors::column_error;
use super::{fields, Failure};
use crate::store::Item;

/// The index: by namespace, newest update first, then key, with every
/// other column.
pub(super) const INDEX: &str = "
CREATE INDEX IF NOT EXISTS store_items_newest ON store_items
    (prefix, updated_at DESC, key, expires_at, value, created_at, ttl_minutes);
";

/// Whether `range`'s namespace is alone: no namespace extends it.
pub(super) fn alone(conn: &Connection, range: &PrefixRange) -> rusqlite::Result<bool> {
    let under: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM store_items WHERE prefix >= ?1 AND prefix < ?2)",
        )?
        .query_row(params![range.from, range.to], |r| r.get(0))?;
    Ok(!under)
}

/// The page of `op`'s items in the namespace `prefix` (alone), newest
/// first, each with its TTL.
pub(super) fn page(
    conn: &Connection,
    prefix: &str,
    op: &SearchOp,
    now: i64,
) -> Result<Vec<(Item, Option<f64>)>, Failure> {
    let mut out = Vec::new();
    if op.limit == 0 {
        return Ok(out);
    }
    let mut st = conn.prepare_cached(
        "SELECT key, value, created_at, updated_at, ttl_minutes
         FROM store_items INDEXED BY store_items_newest
         WHERE prefix = ?1 AND (expires_at IS NULL OR expires_at > ?2)
         ORDER BY updated_at DESC, key",
    )?;
    let mut rows = st.query(params![prefix, now])?;
    let mut skipped = 0;
    while let Some(row) = rows.next()? {
        let text = row
            .get_ref(1)?
            .as_str()
            .map_err(column_error(1, Type::Text))?;
        // A value that is not an object is read whole below, to name it.
        match fields::matches(&op.filter, text) {
            Some(false) => continue,
            Some(true) if skipped < op.offset => {
                skipped += 1;
                continue;
            }
            _ => {}
        }
        let whole = ItemRow {
            prefix: prefix.to_owned(),
            key: row.get(0)?,
            value: text.to_owned(),
            created_at: row.get(2)?,
            updated_at: row.get(3)?,
            ttl_minutes: row.get(4)?,
        };
        let (item, ttl) = whole.into_item()?;
        if !op.filter.matches(&item.value) {
            continue;
        }
        if skipped < op.offset {
            skipped += 1;
            continue;
        }
        out.push((item, ttl));
        if out.len() == op.limit {
            break;
        }
    }
    Ok(out)
}
