//! A query's search when pgvector scores in the server and the server can
//! apply the whole filter: one statement returns the page's best scored
//! items and the newest unscored ones, instead of every item and every
//! score under the prefix.

use tokio_postgres::types::ToSql;
use tokio_postgres::GenericClient;

use super::{item_row, pg_err, vector_text, PostgresStore, ITEM_COLUMNS, NEWEST};
use crate::store::sql::{found, ByItem, Found, PrefixRange};
use crate::store::{SearchOp, StoreError};

/// `$1`..`$3` the prefix range, `$4` now, `$5` the query as pgvector's
/// text, `$6` the jsonb the value contains, `$7` how many scored items
/// (`offset + limit`), `$8` how many unscored ones (`limit`). Each row:
/// the item's columns, its best score (`NULL`: nothing embedded), and
/// whether some vector under the prefix lacks pgvector's value (then the
/// answer is not used: Rust scores those). Scored items come best first,
/// then in the search's order, as [`rank`](crate::store::rank) sorts them.
pub(super) fn statement() -> String {
    let under = "(prefix = $1 OR (prefix >= $2 AND prefix < $3))";
    let alive = "(expires_at IS NULL OR expires_at > $4)";
    let contains = "value @> (SELECT $6::text::jsonb)";
    format!(
        r#"WITH q AS MATERIALIZED (SELECT $5::text::vector AS v),
         s AS MATERIALIZED (
             SELECT prefix, key,
                 max(coalesce(1 - nullif(embedding_vector <=> q.v, 'NaN'::float8), 0)) AS score,
                 bool_or(embedding_vector IS NULL) AS raw
             FROM store_embeddings, q WHERE {under} GROUP BY prefix, key),
         raw AS (SELECT coalesce(bool_or(raw), false) AS any FROM s)
         (SELECT {ITEM_COLUMNS}, s.score, raw.any FROM store_items JOIN s USING (prefix, key), raw
             WHERE {alive} AND {contains}
             ORDER BY s.score DESC, {NEWEST} LIMIT $7)
         UNION ALL
         (SELECT {ITEM_COLUMNS}, NULL::float8, raw.any FROM store_items, raw
             WHERE {under} AND {alive} AND {contains}
               AND NOT EXISTS (SELECT 1 FROM s WHERE s.prefix = store_items.prefix
                                                 AND s.key = store_items.key)
             ORDER BY {NEWEST} LIMIT $8)"#
    )
}

impl PostgresStore {
    /// The candidates of a query's page, from one statement; `None`
    /// (search otherwise) when some vector is to be scored in Rust or
    /// Rust's filter refuses a row the server kept.
    pub(super) async fn search_similar(
        &self,
        client: &impl GenericClient,
        op: &SearchOp,
        range: &PrefixRange,
        (query, contains): (&[f32], &str),
        now: i64,
    ) -> Result<Option<Vec<Found>>, StoreError> {
        let Some(statement) = self.st.similar.as_ref().filter(|_| self.use_pgvector) else {
            return Ok(None);
        };
        let text = vector_text(query);
        let end = i64::try_from(op.offset.saturating_add(op.limit)).unwrap_or(i64::MAX);
        let room = i64::try_from(op.limit).unwrap_or(i64::MAX);
        let args: [&(dyn ToSql + Sync); 8] = [
            &range.exact,
            &range.from,
            &range.to,
            &now,
            &text,
            &contains,
            &end,
            &room,
        ];
        let rows = client
            .query(statement, &args)
            .await
            .map_err(pg_err("search"))?;
        let mut items = Vec::with_capacity(rows.len());
        let mut scores = ByItem::new();
        for row in &rows {
            if row.try_get::<_, bool>(7).map_err(pg_err("search"))? {
                return Ok(None);
            }
            let item = item_row(row).map_err(pg_err("search"))?;
            if let Some(score) = row.try_get::<_, Option<f64>>(6).map_err(pg_err("search"))? {
                scores.insert((item.prefix.clone(), item.key.clone()), vec![score]);
            }
            items.push(item);
        }
        let kept = items.len();
        let candidates = found(items, &op.filter, ByItem::new(), &scores)?;
        Ok((candidates.len() == kept).then_some(candidates))
    }
}
