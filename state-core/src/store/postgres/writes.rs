//! A batch's puts and deletes, written by four statements over arrays
//! (each put's columns side by side), sent together: the server does the
//! rows' work without a round trip or a statement per item.

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient};

use super::{first_cause, pg_err, vector_text, PostgresStore};
use crate::store::item::join;
use crate::store::prepare::PreparedPut;
use crate::store::sql::{value_text, vector_bytes};
use crate::store::StoreError;

/// Above this many bytes of texts and vectors, a batch's writes are not
/// sent between `BEGIN` and `COMMIT` at once (far below the 1 GiB a
/// message may hold, so every statement below it encodes).
const PIPELINED_BYTES: usize = 256 << 20;

/// The items written (`$1` prefixes, `$2` keys, `$3` values as JSON
/// text, `$5` expiries, `$6` TTLs) at `$4`. An overwrite keeps the
/// creation time of an item still alive.
pub(super) const PUT: &str = "
    INSERT INTO store_items AS s (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
    SELECT p, k, v::jsonb, $4, $4, e, t
    FROM unnest($1::text[], $2::text[], $3::text[], $5::int8[], $6::float8[]) AS u(p, k, v, e, t)
    ON CONFLICT (prefix, key) DO UPDATE SET
        value = EXCLUDED.value,
        created_at = CASE WHEN s.expires_at IS NULL OR s.expires_at > $4
                     THEN s.created_at ELSE EXCLUDED.created_at END,
        updated_at = EXCLUDED.updated_at,
        expires_at = EXCLUDED.expires_at,
        ttl_minutes = EXCLUDED.ttl_minutes";

/// The items deleted (`$1` prefixes, `$2` keys).
pub(super) const DELETE: &str = "
    DELETE FROM store_items s USING unnest($1::text[], $2::text[]) AS u(p, k)
    WHERE s.prefix = u.p AND s.key = u.k";

/// The vectors of every item written or deleted (`$1`, `$2`).
pub(super) const DELETE_VECTORS: &str = "
    DELETE FROM store_embeddings e USING unnest($1::text[], $2::text[]) AS u(p, k)
    WHERE e.prefix = u.p AND e.key = u.k";

/// The new vectors: `$1` prefixes, `$2` keys, `$3` fields, `$4` bytes,
/// `$5` pgvector's text of each (used where the column exists).
pub(super) fn insert_vectors(vector_column: bool) -> &'static str {
    if vector_column {
        "INSERT INTO store_embeddings (prefix, key, field, embedding, embedding_vector)
         SELECT p, k, f, e, v::vector
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[]) AS u(p, k, f, e, v)"
    } else {
        "INSERT INTO store_embeddings (prefix, key, field, embedding)
         SELECT p, k, f, e
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[]) AS u(p, k, f, e, v)"
    }
}

/// A batch's writes as columns, one entry per row.
#[derive(Default)]
struct Columns {
    /// Items written: prefix, key, value, expiry, TTL.
    put: (Vec<String>, Vec<String>, Vec<String>),
    put_ttl: (Vec<Option<i64>>, Vec<Option<f64>>),
    /// Items deleted.
    deleted: (Vec<String>, Vec<String>),
    /// Every item touched (their old vectors go).
    touched: (Vec<String>, Vec<String>),
    /// New vectors: prefix, key, field, bytes, pgvector text.
    vectors: (Vec<String>, Vec<String>, Vec<String>),
    vector_data: (Vec<Vec<u8>>, Vec<String>),
}

impl Columns {
    /// The bytes of the texts and vectors sent, about.
    fn bytes(&self) -> usize {
        let texts = |v: &[String]| v.iter().map(String::len).sum::<usize>();
        texts(&self.put.0)
            + texts(&self.put.1)
            + texts(&self.put.2)
            + 2 * (texts(&self.touched.0) + texts(&self.touched.1))
            + texts(&self.vectors.2)
            + texts(&self.vector_data.1)
            + self.vector_data.0.iter().map(Vec::len).sum::<usize>()
    }

    fn of<'a>(puts: impl IntoIterator<Item = &'a PreparedPut>, pgvector: bool) -> Self {
        let mut c = Columns::default();
        for put in puts {
            let prefix = join(&put.namespace);
            let key = &put.key;
            for (field, vector) in &put.vectors {
                c.vectors.0.push(prefix.clone());
                c.vectors.1.push(key.clone());
                c.vectors.2.push(field.clone());
                c.vector_data.0.push(vector_bytes(vector));
                c.vector_data.1.push(if pgvector {
                    vector_text(vector)
                } else {
                    String::new()
                });
            }
            c.touched.0.push(prefix.clone());
            c.touched.1.push(key.clone());
            match &put.value {
                Some(value) => {
                    c.put.0.push(prefix);
                    c.put.1.push(key.clone());
                    c.put.2.push(value_text(value));
                    c.put_ttl.0.push(put.expires_at);
                    c.put_ttl.1.push(put.ttl_minutes);
                }
                None => {
                    c.deleted.0.push(prefix);
                    c.deleted.1.push(key.clone());
                }
            }
        }
        c
    }
}

impl PostgresStore {
    /// Writes a batch's puts (one per item: `prepare` dropped the ones a
    /// later put overrides). The items' rows go first: their locks order
    /// instances writing one item, so the second one's delete sees (and
    /// removes) the first's vectors instead of colliding with them. The
    /// statements are sent together (the connection pipelines them).
    pub(super) async fn write_puts(
        &self,
        tx: &impl GenericClient,
        puts: &[PreparedPut],
        now: i64,
    ) -> Result<(), StoreError> {
        if puts.is_empty() {
            return Ok(());
        }
        let columns = Columns::of(puts, self.vector_column);
        self.send(tx, &columns, now).await
    }

    /// Writes a batch that only writes in one round trip: `BEGIN`, the
    /// statements and `COMMIT` are queued on the connection together (on
    /// the future's first poll, so dropping it later still ends the
    /// transaction). A statement the server refuses aborts the
    /// transaction, and `COMMIT` then rolls it back: nothing is written.
    /// Batches of more than [`PIPELINED_BYTES`] go the usual way (a
    /// statement too big to encode would never reach the server, and the
    /// others would be committed without it). The commit waits for the
    /// server's flush as any other.
    pub(super) async fn write_alone(
        &self,
        client: &Client,
        puts: &[&PreparedPut],
        now: i64,
    ) -> Result<bool, StoreError> {
        let columns = Columns::of(puts.iter().copied(), self.vector_column);
        if columns.bytes() > PIPELINED_BYTES {
            return Ok(false);
        }
        let begin = client.batch_execute("BEGIN");
        let writes = self.send(client, &columns, now);
        let commit = client.batch_execute("COMMIT");
        let (began, written, committed) = futures::future::join3(begin, writes, commit).await;
        // The cause first: after it, the rest fail as aborted.
        written?;
        began.map_err(pg_err("batch"))?;
        committed.map_err(pg_err("batch"))?;
        Ok(true)
    }

    /// Sends the statements of `c` together (the connection pipelines
    /// them), each on first poll.
    async fn send(&self, tx: &impl GenericClient, c: &Columns, now: i64) -> Result<(), StoreError> {
        let st = &self.st;
        let mut sent: Vec<(_, Vec<&(dyn ToSql + Sync)>)> = Vec::with_capacity(4);
        if !c.put.0.is_empty() {
            let (p, k, v) = &c.put;
            let (e, t) = &c.put_ttl;
            sent.push((&st.put, vec![p, k, v, &now, e, t]));
        }
        if !c.deleted.0.is_empty() {
            sent.push((&st.delete, vec![&c.deleted.0, &c.deleted.1]));
        }
        if !c.touched.0.is_empty() {
            sent.push((&st.delete_vectors, vec![&c.touched.0, &c.touched.1]));
        }
        if !c.vectors.0.is_empty() {
            let (p, k, f) = &c.vectors;
            let (b, t) = &c.vector_data;
            sent.push((&st.insert_vectors, vec![p, k, f, b, t]));
        }
        let results = futures::future::join_all(sent.iter().map(|(statement, args)| async move {
            tx.execute(*statement, args)
                .await
                .map(drop)
                .map_err(pg_err("put"))
        }))
        .await;
        first_cause(results)
    }
}
