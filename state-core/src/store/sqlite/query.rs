//! A search with a query: the prefix's embedded items (from the cache)
//! are scored and the best `offset + limit` chosen, in LangGraph's order: best score
//! first, ties newest first; items with nothing embedded fill what the
//! page has left, newest first (as [`rank`](super::super::rank) orders).

use std::cmp::Ordering;

use rusqlite::Connection;

use super::super::sql::{ItemRow, PrefixRange};
use super::super::{newest_first, Item, SearchOp};
use super::vectors::{best_score, rough_margin, rough_score, Embedded, Stamp, VectorCache};
use super::{query_under, Failure, ITEM_COLUMNS, LIVE};

/// A found item, its score (none when nothing of it is embedded) and its
/// TTL in minutes.
pub(super) type Ranked = (Item, Option<f64>, Option<f64>);

/// The page of `op` ranked by similarity to `query`.
pub(super) fn page(
    conn: &Connection,
    cache: &mut VectorCache,
    stamp: Stamp,
    op: &SearchOp,
    query: &[f32],
    now: i64,
) -> Result<Vec<Ranked>, Failure> {
    let range = PrefixRange::of(&op.namespace_prefix);
    let embedded = cache.under(conn, stamp, range.as_ref())?;
    let order = best_first(&embedded, query, op, now);
    let mut out = Vec::new();
    let mut skipped = 0;
    for (score, at) in order {
        if out.len() >= op.limit {
            break;
        }
        let found = &embedded[at];
        if !op.filter.matches(&found.item.value) {
            continue;
        }
        if skipped < op.offset {
            skipped += 1;
            continue;
        }
        out.push((found.item.clone(), Some(score), found.ttl_minutes));
    }
    let room = op.limit.saturating_sub(out.len());
    if room > 0 {
        out.extend(unembedded(conn, range.as_ref(), op, now, room)?);
    }
    Ok(out)
}

/// The live embedded items, best score first (ties newest first): the
/// first `offset + limit` when the search has no filter, else all.
fn best_first(embedded: &[Embedded], query: &[f32], op: &SearchOp, now: i64) -> Vec<(f64, usize)> {
    let squares: f64 = query.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
    let live = |(_, e): &(usize, &Embedded)| e.expires_at.is_none_or(|at| at > now);
    let wanted = op.offset.saturating_add(op.limit);
    let mut scored: Vec<(f64, usize)> = if op.filter.is_empty() {
        let inverse = if squares == 0.0 {
            0.0
        } else {
            1.0 / squares.sqrt()
        };
        let rough: Vec<(f64, usize)> = embedded
            .iter()
            .enumerate()
            .filter(live)
            .map(|(at, e)| (rough_score(query, inverse, e), at))
            .collect();
        contenders(rough, wanted, rough_margin(query.len()))
            .map(|at| (best_score(query, squares, &embedded[at]), at))
            .collect()
    } else {
        embedded
            .iter()
            .enumerate()
            .filter(live)
            .map(|(at, e)| (best_score(query, squares, e), at))
            .collect()
    };
    let order = |a: &(f64, usize), b: &(f64, usize)| -> Ordering {
        let (x, y) = (&embedded[a.1], &embedded[b.1]);
        b.0.total_cmp(&a.0)
            .then_with(|| y.updated_at.cmp(&x.updated_at))
            .then_with(|| x.item.namespace.cmp(&y.item.namespace))
            .then_with(|| x.item.key.cmp(&y.item.key))
    };
    if op.filter.is_empty() && wanted < scored.len() {
        if wanted == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(wanted - 1, order);
        scored.truncate(wanted);
    }
    scored.sort_unstable_by(order);
    scored
}

/// The items whose exact score may place them among the best `wanted`,
/// from scores within `margin` of it: those within twice the margin of
/// the `wanted`-th best rough score.
fn contenders(
    mut rough: Vec<(f64, usize)>,
    wanted: usize,
    margin: f64,
) -> impl Iterator<Item = usize> {
    let cut = if wanted == 0 || wanted >= rough.len() {
        f64::NEG_INFINITY
    } else {
        let by_score = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0);
        rough.select_nth_unstable_by(wanted - 1, by_score);
        rough[wanted - 1].0 - 2.0 * margin
    };
    rough
        .into_iter()
        .filter(move |(score, _)| score.total_cmp(&cut).is_ge())
        .map(|(_, at)| at)
}

/// The live items under `range` with nothing embedded that match the
/// filter, newest first, at most `room`.
fn unembedded(
    conn: &Connection,
    range: Option<&PrefixRange>,
    op: &SearchOp,
    now: i64,
    room: usize,
) -> Result<Vec<Ranked>, Failure> {
    let sql = format!(
        "SELECT {ITEM_COLUMNS} FROM store_items i WHERE {{cond}} AND {LIVE} AND NOT EXISTS
         (SELECT 1 FROM store_embeddings e WHERE e.prefix = i.prefix AND e.key = i.key)"
    );
    let rows: Vec<ItemRow> = query_under(conn, &sql, range, now, |row| Ok(super::item_row(row)?))?;
    let mut found = Vec::new();
    for row in rows {
        let (item, ttl) = row.into_item()?;
        if op.filter.matches(&item.value) {
            found.push((item, None, ttl));
        }
    }
    found.sort_by(|a, b| newest_first(&a.0, &b.0));
    found.truncate(room);
    Ok(found)
}
