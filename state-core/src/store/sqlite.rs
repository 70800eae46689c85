//! The store in a SQLite file (LangGraph's `SqliteStore`). Feature
//! `sqlite`; SQLite is compiled in.
//!
//! By default the file is the checkpoints' own: the store's tables are
//! prefixed `store_` and sit beside the checkpointer's, so one file holds
//! a deployment's threads and memories, and a [`SqliteCheckpointer`] and a
//! [`SqliteStore`] may be open on it at once, each on its connection
//! ([`SqliteStore::open`], [`SqliteStore::beside`]) or on the
//! checkpointer's ([`SqliteStore::sharing`]).
//!
//! The tables (`sqlite3 file.db '.schema store_items'`):
//!
//! * `store_items(prefix, key, value, created_at, updated_at, expires_at,
//!   ttl_minutes)`, keyed by `(prefix, key)`: `prefix` is the namespace's
//!   labels joined with `.`, `value` JSON text, times integer microseconds
//!   since the Unix epoch.
//! * `store_embeddings(prefix, key, field, embedding)`: one row per embedded
//!   text of an item (its path in `field`), unique by `(prefix, key,
//!   field)`, the vector as a BLOB of little-endian `f32`s.
//! * `store_meta(name, value)`: the tables' layout version.
//! * The index `store_items_newest` on `(prefix, updated_at DESC, key)`
//!   holding every column of `store_items` (so it is about the table's
//!   size again, and a put writes both): created on open when missing.
//!
//! A search reads the namespaces under its prefix as a range of the
//! primary key (and of the vectors' unique index), never a scan of the
//! table, so its cost does not grow with the items stored elsewhere
//! (LangGraph's `SqliteStore` scans); filters run in Rust with LangGraph's
//! semantics ([`Filter::matches`](super::Filter::matches)). A search of
//! one namespace with none under it streams its items newest first from
//! `store_items_newest`, reads of each value only the fields the filter
//! names, and stops once its page is full (a corrupt row past the page is
//! not seen); other searches read their range whole.
//!
//! A query scores the prefix's vectors exactly (cosine, in Rust, no
//! vector extension). The embedded items of the prefixes searched, with
//! their vectors decoded, stay in the store's memory (at most 64 MiB:
//! 4 bytes a dimension, plus a value's JSON text), valid while the file
//! holds what they were read from: SQLite's `PRAGMA data_version` moves
//! when another connection commits, the connection's `total_changes`
//! when it writes; either empties the cache. So a query reads no row
//! while the file is unchanged, and the first query after a write reads
//! the prefix's vectors whole (10,000 vectors of 256 dimensions: about
//! 34 ms, `cargo bench --bench store_search`).
//!
//! A batch is one transaction, but for a lone get: one statement (SQLite
//! reads it from one snapshot). Reads restart TTLs, so a batch that may
//! refresh takes the write lock. The write-ahead log grows to 10,000
//! pages (about 40 MB) before a commit copies it into the file, not
//! SQLite's 1,000: each copy ends in two fsyncs.
//!
//! [`SqliteCheckpointer`]: crate::checkpoint::sqlite::SqliteCheckpointer

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{params, Connection, OptionalExtension};

use super::item::{join, split, to_micros};
use super::prepare::{expiry, PreparedPut};
use super::rank::{list_namespaces, rank};
use super::sql::{
    found, literal_prefix, value_text, vector_bytes, ByItem, Found, ItemRow, PrefixRange,
};
use super::{
    prepare, IndexConfig, Item, ListNamespacesOp, Op, OpResult, PreparedOp, SearchItem, SearchOp,
    Store, StoreError, TtlConfig,
};
use crate::checkpoint::sqlite::{SqliteCheckpointer, WriteTx};
use crate::checkpoint::BoxFuture;

mod fields;
mod query;
mod recent;
mod vectors;

use vectors::VectorCache;

/// The layout version of the store's tables, in `store_meta`.
const FORMAT: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store_meta (
    name  TEXT    NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS store_items (
    prefix      TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    ttl_minutes REAL,
    PRIMARY KEY (prefix, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_items_expires_at
    ON store_items (expires_at) WHERE expires_at IS NOT NULL;
-- A rowid table: a vector (1 KiB at 256 dimensions) would not fit in a
-- WITHOUT ROWID row, and every one would take an overflow page.
CREATE TABLE IF NOT EXISTS store_embeddings (
    prefix    TEXT NOT NULL,
    key       TEXT NOT NULL,
    field     TEXT NOT NULL,
    embedding BLOB NOT NULL,
    UNIQUE (prefix, key, field)
);
";

/// Bytes of the file read through a memory map.
const MMAP_SIZE: i64 = 256 << 20;
/// The page cache, in KiB when negative (SQLite's convention).
const CACHE_KIB: i64 = -(64 << 10);

/// Pages the write-ahead log grows to before a commit copies them into
/// the file (SQLite's default: 1,000). Each copy ends in an fsync of the
/// log and the file, which on a shared disk costs milliseconds: at the
/// default it dominated a lone put (measured 40-60 µs against 18-20).
const WAL_PAGES: i64 = 10_000;

/// How long a handle waits for another one's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

macro_rules! item_columns {
    () => {
        "prefix, key, value, created_at, updated_at, ttl_minutes"
    };
}
const ITEM_COLUMNS: &str = item_columns!();
/// Not expired at the batch's time.
const LIVE: &str = "(expires_at IS NULL OR expires_at > {now})";

/// A [`Store`] in a SQLite file, shared by every handle (and process) that
/// opens it.
///
/// ```
/// use agent_state::checkpoint::block_on;
/// use agent_state::checkpoint::sqlite::SqliteCheckpointer;
/// use agent_state::store::{SearchOp, SqliteStore, StoreExt};
/// use serde_json::json;
///
/// let dir = std::env::temp_dir().join(format!("agent-state-store-doc-{}", std::process::id()));
/// let path = dir.join("agent.db");
/// // The checkpoints and the memories in one file.
/// let threads = SqliteCheckpointer::open(&path)?;
/// let store = SqliteStore::beside(&threads)?;
/// block_on(async {
///     store.put(["users", "did:1"], "profile", json!({"work": "geology"})).await?;
///     let found = store.search(SearchOp::new(["users"])).await?;
///     assert_eq!(found[0].value["work"], "geology");
///     Ok::<(), agent_state::store::StoreError>(())
/// })?;
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteStore {
    conn: Handle,
    path: PathBuf,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    /// Taken inside the connection's turn, never the other way round.
    vectors: Mutex<VectorCache>,
}

/// The connection a store runs on.
enum Handle {
    /// Its own.
    Own(Mutex<Connection>),
    /// The checkpointer's.
    Shared(Arc<SqliteCheckpointer>),
}

/// A SQLite failure located in its file.
#[derive(Debug)]
struct InFile {
    path: PathBuf,
    source: rusqlite::Error,
}

impl fmt::Display for InFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl Error for InFile {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.source)
    }
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) the file at `path`
    /// and the store's tables in it; the checkpointer's tables, if any,
    /// are left as they are.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Backend {
                operation: "open",
                source: format!("{}: {e}", dir.display()).into(),
            })?;
        }
        let fail = |e| in_file(&path, "open", e);
        let conn = Connection::open(&path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        set_up(&conn, &path)?;
        tune(&conn).map_err(fail)?;
        Ok(SqliteStore {
            conn: Handle::Own(Mutex::new(conn)),
            path,
            index: None,
            ttl: TtlConfig::default(),
            vectors: Mutex::default(),
        })
    }

    /// The store on the checkpointer's own connection (through
    /// [`SqliteCheckpointer::with_connection`]): one connection writes the
    /// file, so the store's batches and the checkpoint steps take turns in
    /// the process instead of at SQLite's write lock, and a checkpointer
    /// opened with [`open_exclusive`](SqliteCheckpointer::open_exclusive),
    /// which no other connection may open, has a store too. The
    /// connection keeps the checkpointer's settings (SQLite's page cache,
    /// no memory map): [`open`](Self::open)'s larger ones would grow the
    /// process's memory with the file.
    pub fn sharing(checkpointer: Arc<SqliteCheckpointer>) -> Result<Self, StoreError> {
        let path = checkpointer.path().to_path_buf();
        checkpointer.with_connection(|conn| set_up(conn, &path))?;
        Ok(SqliteStore {
            conn: Handle::Shared(checkpointer),
            path,
            index: None,
            ttl: TtlConfig::default(),
            vectors: Mutex::default(),
        })
    }

    /// Opens the store in the checkpointer's file: one file for a
    /// deployment's threads and memories.
    pub fn beside(checkpointer: &SqliteCheckpointer) -> Result<Self, StoreError> {
        Self::open(checkpointer.path())
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

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the store's connection, alone.
    fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        match &self.conn {
            // Every batch is one transaction, rolled back if a panic
            // unwinds through it, so a poisoned lock guards a consistent
            // connection.
            Handle::Own(conn) => f(&conn.lock().unwrap_or_else(PoisonError::into_inner)),
            Handle::Shared(checkpointer) => checkpointer.with_connection(f),
        }
    }

    fn run(
        &self,
        conn: &Connection,
        prepared: super::Prepared,
    ) -> Result<Vec<OpResult>, StoreError> {
        let now = prepared.now;
        if let [PreparedOp::Get {
            namespace,
            key,
            refresh,
        }] = prepared.ops.as_slice()
        {
            if let Some(item) = self.at("get", lone_get(conn, namespace, key, *refresh, now))? {
                return Ok(vec![OpResult::Item(item)]);
            }
        }
        let fail = |e| in_file(&self.path, "batch", e);
        let puts = prepared
            .ops
            .iter()
            .any(|op| matches!(op, PreparedOp::Put(_)));
        let may_refresh = prepared.ops.iter().any(|op| match op {
            PreparedOp::Get { refresh, .. } | PreparedOp::Search { refresh, .. } => *refresh,
            _ => false,
        });
        // Reads take the write lock (and may block a checkpoint step in
        // the same file) only when some item has a TTL to restart.
        let refresh = may_refresh && holds_ttl(conn).map_err(fail)?;
        let tx = WriteTx::begin(conn, puts || refresh).map_err(fail)?;
        let mut puts = Vec::new();
        let mut results = Vec::with_capacity(prepared.ops.len());
        for op in prepared.ops {
            results.push(match op {
                PreparedOp::Get {
                    namespace,
                    key,
                    refresh: wanted,
                } => OpResult::Item(
                    self.at("get", get(conn, &namespace, &key, wanted && refresh, now))?,
                ),
                PreparedOp::Put(put) => {
                    puts.push(put);
                    OpResult::Done
                }
                PreparedOp::Skip => OpResult::Done,
                PreparedOp::Search {
                    op,
                    query,
                    refresh: wanted,
                } => OpResult::Items(self.at(
                    "search",
                    self.search(conn, &op, query.as_deref(), wanted && refresh, now),
                )?),
                PreparedOp::List(list) => {
                    OpResult::Namespaces(self.at("list namespaces", namespaces(conn, &list, now))?)
                }
            });
        }
        for put in puts {
            self.at("put", write_put(conn, put, now))?;
        }
        tx.commit().map_err(fail)?;
        Ok(results)
    }

    fn search(
        &self,
        conn: &Connection,
        op: &SearchOp,
        query: Option<&[f32]>,
        refresh: bool,
        now: i64,
    ) -> Result<Vec<SearchItem>, Failure> {
        let page = match query {
            Some(query) => {
                let stamp = vectors::stamp(conn)?;
                let mut cache = self.vectors.lock().unwrap_or_else(PoisonError::into_inner);
                query::page(conn, &mut cache, stamp, op, query, now)?
            }
            None => recent_page(conn, op, now)?,
        };
        let mut out = Vec::with_capacity(page.len());
        for (item, score, ttl_minutes) in page {
            if refresh && ttl_minutes.is_some() {
                refresh_ttl(conn, &join(&item.namespace), &item.key, ttl_minutes, now)?;
            }
            out.push(SearchItem { item, score });
        }
        Ok(out)
    }

    fn sweep(&self, conn: &Connection) -> Result<u64, StoreError> {
        let now = to_micros(SystemTime::now());
        let fail = |e| in_file(&self.path, "sweep", e);
        let tx = WriteTx::begin(conn, true).map_err(fail)?;
        conn.execute(
            "DELETE FROM store_embeddings WHERE (prefix, key) IN
             (SELECT prefix, key FROM store_items WHERE expires_at <= ?1)",
            [now],
        )
        .map_err(fail)?;
        let swept = conn
            .execute("DELETE FROM store_items WHERE expires_at <= ?1", [now])
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(swept as u64)
    }

    /// `result`, a SQLite failure located in the file.
    fn at<T>(&self, operation: &'static str, result: Result<T, Failure>) -> Result<T, StoreError> {
        result.map_err(|e| match e {
            Failure::Db(e) => in_file(&self.path, operation, e),
            Failure::Store(e) => e,
        })
    }
}

fn in_file(path: &Path, operation: &'static str, source: rusqlite::Error) -> StoreError {
    StoreError::backend(operation)(Box::new(InFile {
        path: path.to_path_buf(),
        source,
    }))
}

/// Sets the connection and the tables up, retrying while another
/// process opening a new file at once holds it locked (for the switch to
/// WAL or the tables), until the busy timeout.
fn set_up(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let started = Instant::now();
    loop {
        match setup(conn) {
            Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(in_file(path, "open", e)),
            Ok(format) if format > FORMAT => {
                return Err(StoreError::Backend {
                    operation: "open",
                    source: format!(
                        "{} has store table format {format}, newer than this program's {FORMAT}",
                        path.display()
                    )
                    .into(),
                })
            }
            Ok(_) => return Ok(()),
        }
    }
}

/// The settings of a connection the store owns. A search reads its
/// namespace's vectors whole: through a memory map and a larger page
/// cache, not a system call per page (SQLite's default cache is 2 MB;
/// 10,000 vectors of 256 dimensions are 11). Not applied to a
/// checkpointer's connection shared with [`SqliteStore::sharing`]: they
/// would grow its process's memory with the file (an Agent Server's
/// peak went from 23 to 106 MiB over 20 s of load) for searches it may
/// never make.
fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "mmap_size", MMAP_SIZE)?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_PAGES)?;
    conn.pragma_update(None, "cache_size", CACHE_KIB)
}

/// WAL mode and the tables, each idempotent; the layout version found.
fn setup(conn: &Connection) -> rusqlite::Result<i64> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = WriteTx::begin(conn, true)?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(recent::INDEX)?;
    conn.execute(
        "INSERT INTO store_meta (name, value) VALUES ('format', ?1) ON CONFLICT (name) DO NOTHING",
        [FORMAT],
    )?;
    let format = conn.query_row(
        "SELECT value FROM store_meta WHERE name = 'format'",
        [],
        |r| r.get(0),
    )?;
    tx.commit()?;
    Ok(format)
}

/// Whether any item has a TTL (through the partial index on
/// `expires_at`: one probe).
fn holds_ttl(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM store_items WHERE expires_at IS NOT NULL)")?
        .query_row([], |r| r.get(0))
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(e, _)
            if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// What a step of a batch failed with: the database, or a row that does
/// not read.
enum Failure {
    Db(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Db(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Store(e)
    }
}

fn item_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ItemRow> {
    Ok(ItemRow {
        prefix: row.get(0)?,
        key: row.get(1)?,
        value: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
        ttl_minutes: row.get(5)?,
    })
}

/// The row of the live item at `prefix` / `key`.
fn item_at(
    conn: &Connection,
    prefix: &str,
    key: &str,
    now: i64,
) -> rusqlite::Result<Option<ItemRow>> {
    conn.prepare_cached(concat!(
        "SELECT ",
        item_columns!(),
        " FROM store_items
         WHERE (expires_at IS NULL OR expires_at > ?1) AND prefix = ?2 AND key = ?3"
    ))?
    .query_row(params![now, prefix, key], item_row)
    .optional()
}

fn get(
    conn: &Connection,
    namespace: &[String],
    key: &str,
    refresh: bool,
    now: i64,
) -> Result<Option<Item>, Failure> {
    let prefix = join(namespace);
    let Some(row) = item_at(conn, &prefix, key, now)? else {
        return Ok(None);
    };
    let (item, ttl_minutes) = row.into_item()?;
    if refresh {
        refresh_ttl(conn, &prefix, key, ttl_minutes, now)?;
    }
    Ok(Some(item))
}

/// A batch of one get, as one statement outside a transaction (SQLite
/// reads a statement from one snapshot); `None` when the item has a TTL
/// to restart, which takes the batch's write transaction.
fn lone_get(
    conn: &Connection,
    namespace: &[String],
    key: &str,
    refresh: bool,
    now: i64,
) -> Result<Option<Option<Item>>, Failure> {
    if !conn.is_autocommit() {
        return Ok(None);
    }
    match item_at(conn, &join(namespace), key, now)? {
        Some(row) if refresh && row.ttl_minutes.is_some() => Ok(None),
        Some(row) => Ok(Some(Some(row.into_item()?.0))),
        None => Ok(Some(None)),
    }
}

/// Restarts an item's TTL, if it has one.
fn refresh_ttl(
    conn: &Connection,
    prefix: &str,
    key: &str,
    ttl_minutes: Option<f64>,
    now: i64,
) -> rusqlite::Result<()> {
    if let Some(minutes) = ttl_minutes {
        conn.prepare_cached(
            "UPDATE store_items SET expires_at = ?3 WHERE prefix = ?1 AND key = ?2",
        )?
        .execute(params![prefix, key, expiry(now, minutes)])?;
    }
    Ok(())
}

/// Runs `sql` over the namespaces under `prefix`: `{cond}` in it becomes
/// a range of the primary key (or nothing, for everything), `{now}` the
/// batch's time.
fn query_under<T>(
    conn: &Connection,
    sql: &str,
    prefix: Option<&PrefixRange>,
    now: i64,
    mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<T, Failure>,
) -> Result<Vec<T>, Failure> {
    let uses_now = sql.contains("{now}");
    let mut args: Vec<&dyn rusqlite::ToSql> = Vec::new();
    let cond = match prefix {
        Some(r) => {
            args.extend([&r.exact as &dyn rusqlite::ToSql, &r.from, &r.to]);
            "(prefix = ?1 OR (prefix >= ?2 AND prefix < ?3))"
        }
        None => "1",
    };
    if uses_now {
        args.push(&now);
    }
    let sql = sql
        .replace("{cond}", cond)
        .replace("{now}", &format!("?{}", args.len()));
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query(args.as_slice())?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(each(row)?);
    }
    Ok(out)
}

/// The page of a search without a query, in LangGraph's order: streamed
/// from the index when the prefix is one namespace with none under it,
/// else read whole and ranked.
fn recent_page(conn: &Connection, op: &SearchOp, now: i64) -> Result<Vec<query::Ranked>, Failure> {
    let range = PrefixRange::of(&op.namespace_prefix);
    if let Some(range) = range.as_ref().filter(|_| op.limit > 0) {
        if recent::alone(conn, range)? {
            let page = recent::page(conn, &range.exact, op, now)?;
            return Ok(page
                .into_iter()
                .map(|(item, ttl)| (item, None, ttl))
                .collect());
        }
    }
    let rows = query_under(
        conn,
        &format!("SELECT {ITEM_COLUMNS} FROM store_items WHERE {{cond}} AND {LIVE}"),
        range.as_ref(),
        now,
        |row| Ok(item_row(row)?),
    )?;
    let candidates = found(rows, &op.filter, ByItem::new(), &ByItem::new())?;
    let page = rank(candidates, None, op.offset, op.limit);
    Ok(page
        .into_iter()
        .map(
            |(
                Found {
                    item, ttl_minutes, ..
                },
                score,
            )| (item, score, ttl_minutes),
        )
        .collect())
}

fn namespaces(
    conn: &Connection,
    op: &ListNamespacesOp,
    now: i64,
) -> Result<Vec<Vec<String>>, Failure> {
    let literal = literal_prefix(op);
    let sql = format!("SELECT DISTINCT prefix FROM store_items WHERE {{cond}} AND {LIVE}");
    let prefixes = query_under(conn, &sql, PrefixRange::of(&literal).as_ref(), now, |row| {
        Ok(row.get::<_, String>(0)?)
    })?;
    Ok(list_namespaces(prefixes.iter().map(|p| split(p)), op))
}

fn write_put(conn: &Connection, put: PreparedPut, now: i64) -> Result<(), Failure> {
    let prefix = join(&put.namespace);
    conn.prepare_cached("DELETE FROM store_embeddings WHERE prefix = ?1 AND key = ?2")?
        .execute(params![prefix, put.key])?;
    let Some(value) = &put.value else {
        conn.prepare_cached("DELETE FROM store_items WHERE prefix = ?1 AND key = ?2")?
            .execute(params![prefix, put.key])?;
        return Ok(());
    };
    // An overwrite keeps the creation time of an item still alive.
    conn.prepare_cached(
        "INSERT INTO store_items (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
         ON CONFLICT (prefix, key) DO UPDATE SET
             value = excluded.value,
             created_at = CASE WHEN store_items.expires_at IS NULL OR store_items.expires_at > ?4
                          THEN store_items.created_at ELSE excluded.created_at END,
             updated_at = excluded.updated_at,
             expires_at = excluded.expires_at,
             ttl_minutes = excluded.ttl_minutes",
    )?
    .execute(params![
        prefix,
        put.key,
        value_text(value),
        now,
        put.expires_at,
        put.ttl_minutes
    ])?;
    let mut insert = conn.prepare_cached(
        "INSERT OR REPLACE INTO store_embeddings (prefix, key, field, embedding) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (field, vector) in &put.vectors {
        insert.execute(params![prefix, put.key, field, vector_bytes(vector)])?;
    }
    Ok(())
}

impl Store for SqliteStore {
    fn batch<'a>(&'a self, ops: Vec<Op>) -> BoxFuture<'a, Result<Vec<OpResult>, StoreError>> {
        Box::pin(async move {
            let prepared = prepare(ops, self.index.as_ref(), &self.ttl).await?;
            self.with_conn(|conn| self.run(conn, prepared))
        })
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move { self.with_conn(|conn| self.sweep(conn)) })
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}
