//! The store in PostgreSQL, shared by every instance of a deployment
//! (LangGraph's `PostgresStore`). Feature `postgres`; needs a Tokio
//! runtime, which drives the connection.
//!
//! The tables, as in the SQLite file (`\d store_items` in `psql`):
//!
//! * `store_items(prefix, key, value, created_at, updated_at, expires_at,
//!   ttl_minutes)`, keyed by `(prefix, key)`; `prefix` is the namespace's
//!   labels joined with `.`, in the `"C"` collation so that the primary
//!   key's B-tree orders it by bytes and a search reads the namespaces
//!   under its prefix as one range of it; `value` is `jsonb` (so SQL can
//!   read it: `SELECT value->>'work' FROM store_items`); times are
//!   microseconds since the Unix epoch. A second B-tree,
//!   `store_items_newest(prefix, updated_at DESC, key)`, holds each
//!   namespace in a search's order.
//! * `store_embeddings(prefix, key, field, embedding, embedding_vector)`:
//!   one row per embedded text, the vector as little-endian `f32` bytes
//!   and, where the [pgvector](https://github.com/pgvector/pgvector)
//!   extension is installed, as a `vector` too.
//!
//! With pgvector, a query's cosine distances are computed by the server
//! (`embedding_vector <=> $query`), so no vector crosses the wire; without
//! it (or with [`PostgresStore::exact_vectors`]) the vectors under the
//! prefix are read and scored in Rust. Both are exact and rank alike.
//! Every put fills the `vector` column where it exists, whichever way its
//! store searches; rows stored before it existed get their value when a
//! store next connects, and are scored in Rust until then. The column has
//! no fixed size (stores of different sizes may share the database), so
//! there is no approximate index: the scan is exact, in the server.
//!
//! Filters have LangGraph's semantics. When every condition of one is a
//! plain equality jsonb answers alike (a string, a boolean, an integer
//! below 2^53 in magnitude), the server applies it too (`value @>
//! $filter`): a search without a query then reads its namespace newest
//! first and stops at the page's end. A query's search, and a search with
//! another filter, read every item under the prefix and filter in Rust;
//! the rows the server kept are checked in Rust either way.
//!
//! A batch that writes is one transaction, its puts and deletes four
//! statements over arrays (whatever their number); a batch of one read
//! runs without one (one round trip).

use std::fmt;

use futures::lock::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, Row, Statement};

mod containment;
mod writes;

use super::item::{join, split, to_micros};
use super::prepare::{expiry, PreparedPut};
use super::rank::{list_namespaces, rank};
use super::sql::{found, literal_prefix, vector_from_bytes, ByItem, Found, ItemRow, PrefixRange};
use super::{
    prepare, IndexConfig, Item, ListNamespacesOp, Op, OpResult, PreparedOp, SearchItem, SearchOp,
    Store, StoreError, TtlConfig,
};
use crate::checkpoint::postgres::{connect_driven, Connect, PostgresError};
use crate::checkpoint::BoxFuture;

/// Taken while creating the tables, so instances starting together do not
/// race on `CREATE TABLE IF NOT EXISTS`.
const SCHEMA_LOCK: i64 = 0x7374_6f72_6573;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS store_items (
    prefix      TEXT COLLATE "C" NOT NULL,
    key         TEXT             NOT NULL,
    value       JSONB            NOT NULL,
    created_at  BIGINT           NOT NULL,
    updated_at  BIGINT           NOT NULL,
    expires_at  BIGINT,
    ttl_minutes DOUBLE PRECISION,
    PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS store_items_expires_at
    ON store_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS store_items_newest
    ON store_items (prefix, updated_at DESC, key COLLATE "C");
CREATE TABLE IF NOT EXISTS store_embeddings (
    prefix    TEXT COLLATE "C" NOT NULL,
    key       TEXT             NOT NULL,
    field     TEXT             NOT NULL,
    embedding BYTEA            NOT NULL,
    PRIMARY KEY (prefix, key, field)
);
"#;

const ITEM_COLUMNS: &str = "prefix, key, value::text, created_at, updated_at, ttl_minutes";
const UNDER: &str = "(prefix = $1 OR (prefix >= $2 AND prefix < $3))";

/// A search's order in SQL, the same as [`newest_first`](super::rank)'s:
/// labels compared one by one (an array of them, bytewise), keys bytewise.
const NEWEST: &str = r#"updated_at DESC, string_to_array(prefix, '.'), key COLLATE "C""#;

/// A [`Store`] in a PostgreSQL database.
///
/// ```no_run
/// use agent_state::store::{PostgresStore, SearchOp, StoreExt};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), agent_state::store::StoreError> {
/// // Inside a Tokio runtime:
/// let store = PostgresStore::connect("host=/run/postgresql user=postgres").await?;
/// store.put(["users", "did:1"], "profile", json!({"work": "geology"})).await?;
/// let found = store.search(SearchOp::new(["users"])).await?;
/// assert_eq!(found[0].value["work"], "geology");
/// # Ok(())
/// # }
/// ```
pub struct PostgresStore {
    client: Mutex<Client>,
    st: Statements,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    /// `store_embeddings` has the pgvector column: puts fill it.
    vector_column: bool,
    /// Searches score with pgvector (the column is there, and
    /// [`PostgresStore::exact_vectors`] was not asked for).
    use_pgvector: bool,
}

/// The statements of a batch, prepared once per connection; `all_*` read
/// every namespace, the others those under a prefix.
struct Statements {
    get: Statement,
    refresh: Statement,
    items_under: Statement,
    newest_under: Statement,
    all_items: Statement,
    vectors_under: Statement,
    all_vectors: Statement,
    prefixes_under: Statement,
    all_prefixes: Statement,
    put: Statement,
    delete: Statement,
    delete_vectors: Statement,
    insert_vectors: Statement,
}

fn pg_err(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
    move |e| StoreError::backend(operation)(Box::new(PostgresError(e)))
}

impl PostgresStore {
    /// Connects with a libpq-style configuration (`host=.. user=..
    /// dbname=..` or a `postgresql://` URL) and sets the tables up, as
    /// [`from_client`](Self::from_client). Must run inside a Tokio
    /// runtime, which drives the connection from then on.
    pub async fn connect(config: &str) -> Result<Self, StoreError> {
        let client = connect_driven(config).await.map_err(|e| match e {
            Connect::NoRuntime => StoreError::argument(
                "the PostgreSQL store needs a Tokio runtime (call it from within one)",
            ),
            Connect::Failed(e) => pg_err("connect")(e),
        })?;
        Self::from_client(client).await
    }

    /// Uses a client the caller connected (TLS, a pool's connection, ...):
    /// creates the tables if needed, installs pgvector in the database if
    /// the server has it (`CREATE EXTENSION IF NOT EXISTS vector`; without
    /// it, or without the right to create it, vectors are scored in Rust),
    /// and prepares the statements. The caller drives the connection.
    pub async fn from_client(client: Client) -> Result<Self, StoreError> {
        client
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {SCHEMA} COMMIT;"
            ))
            .await
            .map_err(pg_err("create tables"))?;
        let vector_column = add_vector_column(&client).await?;
        let st = Statements::prepare(&client, vector_column).await?;
        Ok(PostgresStore {
            client: Mutex::new(client),
            st,
            index: None,
            ttl: TtlConfig::default(),
            vector_column,
            use_pgvector: vector_column,
        })
    }

    /// Searches rank by similarity to a query, through `index`.
    #[must_use]
    pub fn with_index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Items expire as `ttl` says.
    #[must_use]
    pub fn with_ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = ttl;
        self
    }

    /// Scores a query's vectors in Rust even where pgvector is installed
    /// (puts still fill pgvector's column, for other instances).
    #[must_use]
    pub fn exact_vectors(mut self) -> Self {
        self.use_pgvector = false;
        self
    }

    /// Whether searches score with pgvector in the server.
    pub fn uses_pgvector(&self) -> bool {
        self.use_pgvector
    }

    async fn run(&self, prepared: super::Prepared) -> Result<Vec<OpResult>, StoreError> {
        let now = prepared.now;
        let mut client = self.client.lock().await;
        if let [op] = prepared.ops.as_slice() {
            // One read (and each of its refreshes, atomic alone) needs no
            // transaction: one round trip instead of three.
            if let Some(result) = self.lone_read(&client, op, now).await? {
                return Ok(vec![result]);
            }
        }
        if let Some(puts) = only_writes(&prepared.ops) {
            if self.write_alone(&client, &puts, now).await? {
                return Ok(prepared.ops.iter().map(|_| OpResult::Done).collect());
            }
        }
        let tx = client.transaction().await.map_err(pg_err("batch"))?;
        let mut puts = Vec::new();
        let mut results = Vec::with_capacity(prepared.ops.len());
        for op in prepared.ops {
            results.push(match op {
                PreparedOp::Get {
                    namespace,
                    key,
                    refresh,
                } => OpResult::Item(self.get(&tx, &namespace, &key, refresh, now).await?),
                PreparedOp::Put(put) => {
                    puts.push(put);
                    OpResult::Done
                }
                PreparedOp::Skip => OpResult::Done,
                PreparedOp::Search { op, query, refresh } => OpResult::Items(
                    self.search(&tx, &op, query.as_deref(), refresh, now)
                        .await?,
                ),
                PreparedOp::List(list) => {
                    OpResult::Namespaces(self.namespaces(&tx, &list, now).await?)
                }
            });
        }
        self.write_puts(&tx, &puts, now).await?;
        tx.commit().await.map_err(pg_err("batch"))?;
        Ok(results)
    }

    /// A batch's only operation, run outside a transaction when it only
    /// reads; `None` for a write.
    async fn lone_read(
        &self,
        client: &Client,
        op: &PreparedOp,
        now: i64,
    ) -> Result<Option<OpResult>, StoreError> {
        Ok(Some(match op {
            PreparedOp::Get {
                namespace,
                key,
                refresh,
            } => OpResult::Item(self.get(client, namespace, key, *refresh, now).await?),
            PreparedOp::Search { op, query, refresh } => OpResult::Items(
                self.search(client, op, query.as_deref(), *refresh, now)
                    .await?,
            ),
            PreparedOp::List(list) => {
                OpResult::Namespaces(self.namespaces(client, list, now).await?)
            }
            PreparedOp::Put(_) | PreparedOp::Skip => return Ok(None),
        }))
    }

    async fn sweep(&self) -> Result<u64, StoreError> {
        let now = to_micros(std::time::SystemTime::now());
        let client = self.client.lock().await;
        // One statement: the items and their vectors go together.
        let row = client
            .query_one(
                "WITH gone AS (DELETE FROM store_items WHERE expires_at <= $1 RETURNING prefix, key),
                      v AS (DELETE FROM store_embeddings e USING gone
                            WHERE e.prefix = gone.prefix AND e.key = gone.key)
                 SELECT count(*) FROM gone",
                &[&now],
            )
            .await
            .map_err(pg_err("sweep"))?;
        let swept: i64 = row.get(0);
        Ok(u64::try_from(swept).unwrap_or(0))
    }
}

/// The puts of a batch that only writes (its skipped puts aside).
fn only_writes(ops: &[PreparedOp]) -> Option<Vec<&PreparedPut>> {
    let mut puts = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            PreparedOp::Put(put) => puts.push(put),
            PreparedOp::Skip => {}
            _ => return None,
        }
    }
    Some(puts)
}

/// The first failure of pipelined statements that is not the
/// transaction's refusal to go on after another one failed (SQLSTATE
/// 25P02): the cause, whichever statement was sent first.
fn first_cause(results: Vec<Result<(), StoreError>>) -> Result<(), StoreError> {
    let aborted = |e: &StoreError| match e {
        StoreError::Backend { source, .. } => source
            .downcast_ref::<PostgresError>()
            .is_some_and(|pg| pg.code() == Some("25P02")),
        _ => false,
    };
    let mut errors: Vec<StoreError> = results.into_iter().filter_map(Result::err).collect();
    match errors.iter().position(|e| !aborted(e)) {
        Some(at) => Err(errors.swap_remove(at)),
        None => errors.into_iter().next().map_or(Ok(()), Err),
    }
}

/// Installs pgvector in the database if the server has it, gives
/// `store_embeddings` its `vector` column, and fills the column for rows
/// stored without it; whether the column is there.
async fn add_vector_column(client: &Client) -> Result<bool, StoreError> {
    if !has_vector_column(client).await? {
        // Refused when the server lacks the extension or the role the
        // right: then vectors are scored in Rust.
        if client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .await
            .is_err()
        {
            return Ok(false);
        }
        // Looked up first: ALTER TABLE locks the table even when it has
        // the column.
        client
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
                 ALTER TABLE store_embeddings ADD COLUMN IF NOT EXISTS embedding_vector vector;
                 COMMIT;"
            ))
            .await
            .map_err(pg_err("create tables"))?;
    }
    backfill_vectors(client).await?;
    Ok(true)
}

async fn has_vector_column(client: &Client) -> Result<bool, StoreError> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute
                 WHERE attrelid = 'store_embeddings'::regclass
                   AND attname = 'embedding_vector' AND NOT attisdropped)",
            &[],
        )
        .await
        .map_err(pg_err("create tables"))?;
    Ok(row.get(0))
}

/// Gives the rows stored before the column (or by an instance that
/// connected before it) their pgvector value, so that every vector is
/// scored alike. A row whose bytes do not read is left to the search that
/// meets it, which names it.
async fn backfill_vectors(client: &Client) -> Result<(), StoreError> {
    let rows = client
        .query(
            "SELECT prefix, key, field, embedding FROM store_embeddings
             WHERE embedding_vector IS NULL",
            &[],
        )
        .await
        .map_err(pg_err("fill vectors"))?;
    let mut columns: [Vec<String>; 4] = Default::default();
    for row in &rows {
        let (prefix, key): (String, String) = (row.get(0), row.get(1));
        let Ok(vector) = vector_from_bytes(&prefix, &key, row.get(3)) else {
            continue;
        };
        let values = [prefix, key, row.get(2), vector_text(&vector)];
        for (column, value) in columns.iter_mut().zip(values) {
            column.push(value);
        }
    }
    if columns[0].is_empty() {
        return Ok(());
    }
    let [prefixes, keys, fields, texts] = &columns;
    client
        .execute(
            "UPDATE store_embeddings e SET embedding_vector = u.v::vector
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(p, k, f, v)
             WHERE e.prefix = u.p AND e.key = u.k AND e.field = u.f",
            &[prefixes, keys, fields, texts],
        )
        .await
        .map_err(pg_err("fill vectors"))?;
    Ok(())
}

impl Statements {
    async fn prepare(client: &Client, vector_column: bool) -> Result<Self, StoreError> {
        let p = |sql: String| async move { client.prepare(&sql).await.map_err(pg_err("prepare")) };
        let live = |at: &str| format!("(expires_at IS NULL OR expires_at > ${at})");
        // With pgvector, a vector the server scores is not sent back; a
        // row without the column's value (written before it existed) is
        // sent for Rust to score. A zero vector's NaN distance scores 0,
        // as in Rust.
        // `q`: the query as pgvector's text, cast once: MATERIALIZED, or
        // a generic plan (which the server picks after five runs) parses
        // it again for every row, 50 times slower.
        let vectors_from = |q: &str, cond: &str| {
            if vector_column {
                format!(
                    "WITH q AS MATERIALIZED (SELECT {q}::text::vector AS v)
                     SELECT prefix, key,
                         CASE WHEN embedding_vector IS NULL OR q.v IS NULL THEN embedding END,
                         CASE WHEN embedding_vector IS NOT NULL AND q.v IS NOT NULL THEN
                             coalesce(1 - nullif(embedding_vector <=> q.v, 'NaN'::float8), 0)
                         END
                     FROM store_embeddings, q WHERE {cond}"
                )
            } else {
                format!("SELECT prefix, key, embedding, {q}::text::float8 FROM store_embeddings WHERE {cond}")
            }
        };
        Ok(Statements {
            get: p(format!(
                "SELECT {ITEM_COLUMNS} FROM store_items WHERE prefix = $1 AND key = $2 AND {}",
                live("3")
            ))
            .await?,
            refresh: p(
                "UPDATE store_items SET expires_at = $3 WHERE prefix = $1 AND key = $2".into(),
            )
            .await?,
            items_under: p(format!(
                "SELECT {ITEM_COLUMNS} FROM store_items WHERE {UNDER} AND {}",
                live("4")
            ))
            .await?,
            newest_under: p(newest_under()).await?,
            all_items: p(format!(
                "SELECT {ITEM_COLUMNS} FROM store_items WHERE {}",
                live("1")
            ))
            .await?,
            vectors_under: p(vectors_from("$4", UNDER)).await?,
            all_vectors: p(vectors_from("$1", "true")).await?,
            prefixes_under: p(format!(
                "SELECT DISTINCT prefix FROM store_items WHERE {UNDER} AND {}",
                live("4")
            ))
            .await?,
            all_prefixes: p(format!(
                "SELECT DISTINCT prefix FROM store_items WHERE {}",
                live("1")
            ))
            .await?,
            put: p(writes::PUT.into()).await?,
            delete: p(writes::DELETE.into()).await?,
            delete_vectors: p(writes::DELETE_VECTORS.into()).await?,
            insert_vectors: p(writes::insert_vectors(vector_column).into()).await?,
        })
    }
}

/// The first `$6` items under a prefix (`$1`..`$3`, alive at `$4`) whose
/// value contains `$5` (jsonb text), in the search's order: the
/// namespace itself from [`store_items_newest`](SCHEMA), stopping at the
/// last, and its descendants, sorted. Ranked in Rust together after.
/// The filter is read once (a subquery): a generic plan would otherwise
/// parse it for every row.
fn newest_under() -> String {
    let live = "(expires_at IS NULL OR expires_at > $4)";
    let contains = "value @> (SELECT $5::text::jsonb)";
    format!(
        r#"(SELECT {ITEM_COLUMNS} FROM store_items
             WHERE prefix = $1 AND {live} AND {contains}
             ORDER BY updated_at DESC, key COLLATE "C" LIMIT $6)
         UNION ALL
         (SELECT {ITEM_COLUMNS} FROM store_items
             WHERE prefix >= $2 AND prefix < $3 AND {live} AND {contains}
             ORDER BY {NEWEST} LIMIT $6)"#
    )
}

fn item_row(row: &Row) -> Result<ItemRow, tokio_postgres::Error> {
    Ok(ItemRow {
        prefix: row.try_get(0)?,
        key: row.try_get(1)?,
        value: row.try_get(2)?,
        created_at: row.try_get(3)?,
        updated_at: row.try_get(4)?,
        ttl_minutes: row.try_get(5)?,
    })
}

/// A vector as pgvector reads it: `[1,0.5,-2]` (Rust's shortest text of
/// an `f32` reads back as the same `f32`).
fn vector_text(vector: &[f32]) -> String {
    let parts: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", parts.join(","))
}

impl PostgresStore {
    async fn get(
        &self,
        tx: &impl GenericClient,
        namespace: &[String],
        key: &str,
        refresh: bool,
        now: i64,
    ) -> Result<Option<Item>, StoreError> {
        let prefix = join(namespace);
        let row = tx
            .query_opt(&self.st.get, &[&prefix, &key, &now])
            .await
            .map_err(pg_err("get"))?;
        let Some(row) = row else { return Ok(None) };
        let (item, ttl_minutes) = item_row(&row).map_err(pg_err("get"))?.into_item()?;
        if let (true, Some(minutes)) = (refresh, ttl_minutes) {
            tx.execute(&self.st.refresh, &[&prefix, &key, &expiry(now, minutes)])
                .await
                .map_err(pg_err("get"))?;
        }
        Ok(Some(item))
    }

    /// Runs the `under` statement (prefix range, then `extra`) or the
    /// `all` one (`extra` alone).
    async fn query_under(
        tx: &impl GenericClient,
        (under, all): (&Statement, &Statement),
        range: Option<&PrefixRange>,
        extra: &[&(dyn ToSql + Sync)],
        operation: &'static str,
    ) -> Result<Vec<Row>, StoreError> {
        let rows = match range {
            Some(r) => {
                let mut args: Vec<&(dyn ToSql + Sync)> = vec![&r.exact, &r.from, &r.to];
                args.extend_from_slice(extra);
                tx.query(under, &args).await
            }
            None => tx.query(all, extra).await,
        };
        rows.map_err(pg_err(operation))
    }

    async fn search(
        &self,
        client: &impl GenericClient,
        op: &SearchOp,
        query: Option<&[f32]>,
        refresh: bool,
        now: i64,
    ) -> Result<Vec<SearchItem>, StoreError> {
        let range = PrefixRange::of(&op.namespace_prefix);
        let newest = match (query, &range, containment::containment(&op.filter)) {
            (None, Some(range), Some(contains)) => {
                self.search_newest(client, op, range, &contains, now)
                    .await?
            }
            _ => None,
        };
        let candidates = match newest {
            Some(candidates) => candidates,
            None => {
                self.candidates(client, op, range.as_ref(), query, now)
                    .await?
            }
        };
        let page = rank(candidates, query, op.offset, op.limit);
        let mut out = Vec::with_capacity(page.len());
        for (found, score) in page {
            let Found {
                item, ttl_minutes, ..
            } = found;
            if let (true, Some(minutes)) = (refresh, ttl_minutes) {
                let prefix = join(&item.namespace);
                client
                    .execute(
                        &self.st.refresh,
                        &[&prefix, &item.key, &expiry(now, minutes)],
                    )
                    .await
                    .map_err(pg_err("search"))?;
            }
            out.push(SearchItem { item, score });
        }
        Ok(out)
    }

    /// A search without a query whose whole filter the server applies
    /// (`contains`): only the first `offset + limit` matches of each part
    /// of the range are read. `None` (search otherwise) if Rust's filter
    /// refuses a row the server kept, which containment should never do.
    async fn search_newest(
        &self,
        client: &impl GenericClient,
        op: &SearchOp,
        range: &PrefixRange,
        contains: &str,
        now: i64,
    ) -> Result<Option<Vec<Found>>, StoreError> {
        let end = i64::try_from(op.offset.saturating_add(op.limit)).unwrap_or(i64::MAX);
        let args: [&(dyn ToSql + Sync); 6] =
            [&range.exact, &range.from, &range.to, &now, &contains, &end];
        let rows = client
            .query(&self.st.newest_under, &args)
            .await
            .map_err(pg_err("search"))?;
        let rows = rows
            .iter()
            .map(item_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pg_err("search"))?;
        let kept = rows.len();
        let candidates = found(rows, &op.filter, ByItem::new(), &ByItem::new())?;
        Ok((candidates.len() == kept).then_some(candidates))
    }

    /// Every item under the prefix that matches the filter, with its
    /// vectors or scores when there is a query.
    async fn candidates(
        &self,
        client: &impl GenericClient,
        op: &SearchOp,
        range: Option<&PrefixRange>,
        query: Option<&[f32]>,
        now: i64,
    ) -> Result<Vec<Found>, StoreError> {
        let statements = (&self.st.items_under, &self.st.all_items);
        let at: [&(dyn ToSql + Sync); 1] = [&now];
        let items = Self::query_under(client, statements, range, &at, "search");
        // Both sent at once (the connection pipelines them): one round
        // trip.
        let vectors = async {
            match query {
                Some(query) => self.vectors(client, range, query).await,
                None => Ok((ByItem::new(), ByItem::new())),
            }
        };
        let (rows, (vectors, scores)) = futures::future::try_join(items, vectors).await?;
        let rows = rows
            .iter()
            .map(item_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pg_err("search"))?;
        found(rows, &op.filter, vectors, &scores)
    }

    /// The vectors under the prefix to score in Rust, and the scores the
    /// server computed with pgvector.
    async fn vectors(
        &self,
        tx: &impl GenericClient,
        range: Option<&PrefixRange>,
        query: &[f32],
    ) -> Result<(ByItem<Vec<f32>>, ByItem<f64>), StoreError> {
        let text = self.use_pgvector.then(|| vector_text(query));
        let statements = (&self.st.vectors_under, &self.st.all_vectors);
        let rows = Self::query_under(tx, statements, range, &[&text], "search").await?;
        let (mut vectors, mut scores) = (ByItem::new(), ByItem::new());
        for row in rows {
            let (prefix, key): (String, String) = (row.get(0), row.get(1));
            let bytes: Option<Vec<u8>> = row.try_get(2).map_err(pg_err("search"))?;
            let score: Option<f64> = row.try_get(3).map_err(pg_err("search"))?;
            if let Some(bytes) = bytes {
                let vector = vector_from_bytes(&prefix, &key, &bytes)?;
                vectors
                    .entry((prefix.clone(), key.clone()))
                    .or_insert_with(Vec::new)
                    .push(vector);
            }
            if let Some(score) = score {
                scores
                    .entry((prefix, key))
                    .or_insert_with(Vec::new)
                    .push(score);
            }
        }
        Ok((vectors, scores))
    }

    async fn namespaces(
        &self,
        tx: &impl GenericClient,
        op: &ListNamespacesOp,
        now: i64,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        let range = PrefixRange::of(&literal_prefix(op));
        let statements = (&self.st.prefixes_under, &self.st.all_prefixes);
        let rows =
            Self::query_under(tx, statements, range.as_ref(), &[&now], "list namespaces").await?;
        let prefixes = rows.iter().map(|row| split(row.get::<_, &str>(0)));
        Ok(list_namespaces(prefixes, op))
    }
}

impl Store for PostgresStore {
    fn batch<'a>(&'a self, ops: Vec<Op>) -> BoxFuture<'a, Result<Vec<OpResult>, StoreError>> {
        Box::pin(async move {
            let prepared = prepare(ops, self.index.as_ref(), &self.ttl).await?;
            self.run(prepared).await
        })
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(self.sweep())
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .field("vector_column", &self.vector_column)
            .field("use_pgvector", &self.use_pgvector)
            .finish_non_exhaustive()
    }
}
