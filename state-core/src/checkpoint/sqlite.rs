//! Checkpoints in one SQLite file: the embedded default (LangGraph's
//! `SqliteSaver`). Feature `sqlite`; SQLite is compiled in, so nothing needs
//! installing.
//!
//! The file is created on first use and opened in WAL mode. A step is one
//! transaction: a check that the thread's newest id is still the head the
//! writer loaded, then the insert of the step's record with the next id (a
//! compare-and-swap; writers are serialized by `BEGIN IMMEDIATE`, which
//! takes the write lock before the check). Every statement of a step is
//! prepared once per connection and cached. The table is keyed by `(thread_id, id)` without a
//! separate rowid, so a step writes one B-tree leaf: fewer WAL bytes per
//! step, and cheaper WAL checkpoints. With the default `synchronous = NORMAL` a step that
//! was reported saved survives a crash of the process (the WAL is in the
//! operating system's hands); [`SqliteCheckpointer::durable`] makes it
//! survive power loss too, at the price of an `fsync` per step.
//!
//! The tables (`sqlite3 file.db .schema` shows them):
//!
//! * `agent_state_checkpoints(thread_id, id, parent_id, step, source,
//!   version, created_at_ms, writes, log_bytes, base_bytes, snapshot)`: one
//!   row per checkpoint; `writes` and `snapshot` are JSON text. A thread's
//!   head is its newest checkpoint (a fork is a new checkpoint too).
//! * `agent_state_pending(thread_id, checkpoint_id, task, key, value)`: the
//!   [pending writes](super::PendingWrite) of a superstep not saved yet (a
//!   paused run's interrupts, the finished tasks of a step cut short).
//! * `agent_state_retired(thread_id, last_id)`: the highest id a thread gave
//!   out, written only when [`truncate_after`](Checkpointer::truncate_after)
//!   takes records off it, so the next id passes the ones taken off (a
//!   thread's ids are never given out twice).
//!
//! ```
//! use agent_state::checkpoint::sqlite::SqliteCheckpointer;
//! use agent_state::checkpoint::{block_on, Source, Thread};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Counter {
//!     #[reducer(append)]
//!     seen: Vec<u32>,
//! }
//!
//! let dir = std::env::temp_dir().join(format!("agent-state-doc-{}", std::process::id()));
//! let path = dir.join("threads.db");
//! block_on(async {
//!     let saver = SqliteCheckpointer::open(&path)?;
//!     let mut thread = Thread::<Counter, _>::open(&saver, "t").await?;
//!     thread.save_step(Source::Loop, [("n", CounterUpdate::new().add_seen(1))]).await?;
//!     drop(saver);
//!
//!     // Reopened (in a new process, say): the step is there, once.
//!     let saver = SqliteCheckpointer::open(&path)?;
//!     let thread = Thread::<Counter, _>::open(&saver, "t").await?;
//!     assert_eq!(thread.state().seen, [1]);
//!     Ok::<(), agent_state::checkpoint::CheckpointError>(())
//! })?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), agent_state::checkpoint::CheckpointError>(())
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The SQLite binding ([rusqlite](https://docs.rs/rusqlite))
/// [`SqliteCheckpointer::with_connection`] hands a connection of, as
/// `checkpoint::sqlite::rusqlite`: a module of its items rather than
/// `pub use rusqlite`, which rustdoc would copy page by page into the
/// facade's docs.
#[doc(hidden)]
pub mod rusqlite {
    pub use ::rusqlite::*;
}
use rusqlite::{params, Connection, Row, TransactionBehavior};

use super::record::{
    CheckpointId, CheckpointMeta, NewCheckpoint, PendingWrite, SnapshotPolicy, StoredCheckpoint,
};
use super::sql::{from_sql, to_sql, Columns, RawRow};
use super::{
    check_thread_id, children_range, lost_parent, now_ms, BoxFuture, CheckpointError, Checkpointer,
};

/// The layout version of the tables, kept in `PRAGMA user_version`, so a
/// later layout can upgrade a file and an older program refuses a newer one.
/// 2 added `agent_state_pending`, 3 `agent_state_retired` (an older file
/// gains them on open; a program of format 2 would give a truncated id
/// out again, so it refuses a file of format 3).
const FORMAT: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_state_checkpoints (
    thread_id     TEXT    NOT NULL,
    id            INTEGER NOT NULL,
    parent_id     INTEGER,
    step          INTEGER NOT NULL,
    source        TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    writes        TEXT    NOT NULL,
    log_bytes     INTEGER NOT NULL,
    base_bytes    INTEGER NOT NULL,
    snapshot      TEXT,
    PRIMARY KEY (thread_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_state_pending (
    thread_id     TEXT    NOT NULL,
    checkpoint_id INTEGER NOT NULL,
    task          TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    value         TEXT    NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_state_retired (
    thread_id     TEXT    NOT NULL PRIMARY KEY,
    last_id       INTEGER NOT NULL
) WITHOUT ROWID;
";

/// How long a handle waits for another one's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// WAL mode, the tables and the layout version, each idempotent.
fn setup(conn: &Connection, path: &Path) -> Result<(), CheckpointError> {
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .map_err(db_err("open"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err("open"))?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(db_err("open"))?;
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(db_err("open"))?;
    let result = (|| {
        let format: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db_err("open"))?;
        if format > FORMAT {
            return Err(CheckpointError::backend(
                "open",
                format!(
                    "{} has checkpoint table format {format}, newer than this program's {FORMAT}",
                    path.display()
                ),
            ));
        }
        conn.execute_batch(SCHEMA).map_err(db_err("open"))?;
        conn.pragma_update(None, "user_version", FORMAT)
            .map_err(db_err("open"))
    })();
    if result.is_ok() {
        if let Err(e) = conn.execute_batch("COMMIT") {
            // Leave no transaction open for the retry.
            let _ = conn.execute_batch("ROLLBACK");
            return Err(CheckpointError::backend("open", e));
        }
    } else {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// A storage error with where it happened: the file, and the thread asked
/// for, so the error of a damaged file names both.
#[derive(Debug)]
struct InFile {
    place: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for InFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place, self.source)
    }
}

impl std::error::Error for InFile {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// `error`, a storage failure, located at `place` (other errors name
/// their thread already).
fn locate(error: CheckpointError, place: impl FnOnce() -> String) -> CheckpointError {
    match error {
        CheckpointError::Backend { operation, source } => CheckpointError::Backend {
            operation,
            source: Box::new(InFile {
                place: place(),
                source,
            }),
        },
        other => other,
    }
}

fn is_busy(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    matches!(
        error.downcast_ref::<rusqlite::Error>(),
        Some(rusqlite::Error::SqliteFailure(e, _))
            if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

const COLUMNS: &str =
    "c.thread_id, c.id, c.parent_id, c.step, c.source, c.version, c.created_at_ms, c.writes, c.log_bytes, c.base_bytes";

/// Checkpoints in a SQLite file. Several handles (and processes) may share
/// one file: SQLite's locking and the head compare-and-swap keep their
/// steps apart.
pub struct SqliteCheckpointer {
    conn: Mutex<Db>,
    path: PathBuf,
    policy: Option<SnapshotPolicy>,
}

fn db_err(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> CheckpointError {
    move |e| CheckpointError::backend(operation, e)
}

impl SqliteCheckpointer {
    /// Opens (creating it and its directory if needed) the file at `path`.
    /// Other handles, in this process or others, may open it too.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::open_with(path.as_ref(), false)
    }

    /// Opens the file at `path` for this handle alone, for as long as it
    /// lives (`PRAGMA locking_mode = EXCLUSIVE`): SQLite then takes its
    /// locks once instead of around every step, and keeps the WAL index in
    /// the handle's memory, which saves the six lock system calls a step
    /// costs otherwise (a third of a step on a virtual machine). A step
    /// survives a crash of the process exactly as with [`open`](Self::open).
    /// Another handle fails to open the file or waits for it (up to ten
    /// seconds) until this one is dropped.
    pub fn open_exclusive(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::open_with(path.as_ref(), true)
    }

    /// Opens the file, naming it in a failure (a file that is not a
    /// database, cut short, unreadable).
    fn open_with(path: &Path, exclusive: bool) -> Result<Self, CheckpointError> {
        Self::open_file(path, exclusive).map_err(|e| locate(e, || path.display().to_string()))
    }

    fn open_file(path: &Path, exclusive: bool) -> Result<Self, CheckpointError> {
        let path = path.to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| CheckpointError::backend("open", e))?;
        }
        let conn = Connection::open(&path).map_err(db_err("open"))?;
        // Writers of other handles wait for the lock rather than fail.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err("open"))?;
        if exclusive {
            // Before the first access, so the WAL index lives in memory.
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
                .map_err(db_err("open"))?;
        }
        // Switching to WAL and creating the tables take locks that SQLite
        // does not wait for when several processes open a new file at once:
        // retry those until the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match setup(&conn, &path) {
                Err(CheckpointError::Backend { source, .. })
                    if is_busy(source.as_ref()) && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other?,
            }
        }
        Ok(Self {
            conn: Mutex::new(Db {
                conn,
                heads: Heads::default(),
                exclusive,
            }),
            path,
            policy: None,
        })
    }

    /// Makes every saved step survive power loss as well as a crash of the
    /// process (`PRAGMA synchronous = FULL`: an `fsync` per step).
    pub fn durable(self) -> Result<Self, CheckpointError> {
        self.lock()
            .pragma_update(None, "synchronous", "FULL")
            .map_err(db_err("open"))?;
        Ok(self)
    }

    /// Takes snapshots by `policy` instead of the default.
    #[must_use]
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on this handle's connection, between its steps: for a
    /// program's tables of its own in the same file. One connection then
    /// writes the file, so the program's statements and the steps take
    /// turns in this process instead of at SQLite's write lock, whose busy
    /// handler sleeps a millisecond or more per wait. `f` must not write
    /// the checkpointer's tables (the handle caches each thread's head);
    /// a transaction it leaves open, or panics in, is rolled back.
    pub fn with_connection<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        let db = self.lock();
        let guard = RollbackOpen(&db.conn);
        f(guard.0)
    }

    /// `result`, its storage failure located in the file and `thread_id`.
    fn at<T>(
        &self,
        thread_id: &str,
        result: Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        result.map_err(|e| {
            locate(e, || {
                format!("{}, thread `{thread_id}`", self.path.display())
            })
        })
    }

    fn lock(&self) -> MutexGuard<'_, Db> {
        // Every change is one transaction, rolled back if a panic unwinds
        // through it, so a poisoned lock guards a consistent connection.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append_sync(
        &self,
        thread_id: &str,
        expected: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> Result<CheckpointMeta, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut db = self.lock();
        let Db {
            conn,
            heads,
            exclusive,
        } = &mut *db;
        // A handle that owns the file needs no transaction around the check
        // and the insert: no other connection can write in between, and the
        // insert alone is atomic.
        let tx = if *exclusive {
            None
        } else {
            Some(WriteTx::begin(conn, true).map_err(db_err("append"))?)
        };
        // The head is the thread's newest id: insert only if it is still
        // the one the writer loaded (none: no thread yet). The write lock
        // is held from `BEGIN IMMEDIATE`, so nothing moves in between.
        let known = known_ids(conn, heads, *exclusive, thread_id).map_err(db_err("append"))?;
        if known.head != expected.map(|h| to_sql(h.0)) {
            return Err(CheckpointError::Conflict {
                thread_id: thread_id.to_owned(),
                expected,
                found: known.head.map(from_sql).map(CheckpointId),
            });
        }
        let id = from_sql(known.last) + 1;
        let meta = CheckpointMeta {
            thread_id: thread_id.to_owned(),
            id: CheckpointId(id),
            parent: record.parent,
            step: record.step,
            source: record.source,
            version: record.version,
            created_at_ms: now_ms(),
        };
        conn.prepare_cached(
            "INSERT INTO agent_state_checkpoints
             (thread_id, id, parent_id, step, source, version, created_at_ms, writes, log_bytes, base_bytes, snapshot)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut st| {
            st.execute(params![
                thread_id,
                to_sql(id),
                meta.parent.map(|p| to_sql(p.0)),
                meta.step,
                meta.source.as_str(),
                meta.version,
                to_sql(meta.created_at_ms),
                record.writes,
                to_sql(record.log_bytes),
                to_sql(record.base_bytes),
                record.snapshot,
            ])
        })
        .map_err(|e| {
            heads.forget(thread_id);
            db_err("append")(e)
        })?;
        if let Some(tx) = tx {
            tx.commit().map_err(|e| {
                heads.forget(thread_id);
                db_err("append")(e)
            })?;
        }
        heads.set(thread_id, Known::appended(to_sql(id)));
        Ok(meta)
    }

    fn chain_sync(
        &self,
        thread_id: &str,
        id: CheckpointId,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let conn = self.lock();
        // The walk goes to strictly older ids only (`parent_id < id`), so it
        // ends whatever the rows hold: a loop or a missing parent leaves the
        // chain short, and the loader names the break. Compared with
        // `chain.id`, not `c.id` (equal here): SQLite plans the latter as a
        // scan of the thread at every step of the walk.
        let sql = format!(
            "WITH RECURSIVE chain(id) AS (
                 SELECT id FROM agent_state_checkpoints WHERE thread_id = ?1 AND id = ?2
                 UNION ALL
                 SELECT c.parent_id FROM agent_state_checkpoints c JOIN chain ON c.id = chain.id
                 WHERE c.thread_id = ?1 AND c.snapshot IS NULL AND c.parent_id IS NOT NULL
                   AND c.parent_id < chain.id
             )
             SELECT {COLUMNS}, c.snapshot FROM agent_state_checkpoints c JOIN chain ON c.id = chain.id
             WHERE c.thread_id = ?1 ORDER BY c.id"
        );
        let rows = read_rows(
            &conn,
            &sql,
            params![thread_id, to_sql(id.0)],
            (thread_id, Some(id), true),
            "load",
        )?;
        if rows.is_empty() {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(id),
            });
        }
        Ok(rows)
    }

    fn head_sync(&self, thread_id: &str) -> Result<Option<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let conn = self.lock();
        let sql = format!(
            "SELECT {COLUMNS} FROM agent_state_checkpoints c
             WHERE c.thread_id = ?1 ORDER BY c.id DESC LIMIT 1"
        );
        let rows = read_rows(
            &conn,
            &sql,
            params![thread_id],
            (thread_id, None, false),
            "head",
        )?;
        Ok(rows.into_iter().next())
    }

    fn list_sync(
        &self,
        thread_id: &str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let conn = self.lock();
        let sql = format!(
            "SELECT {COLUMNS} FROM agent_state_checkpoints c
             WHERE c.thread_id = ?1 AND c.id < ?2 ORDER BY c.id DESC LIMIT ?3"
        );
        let before = before.map_or(i64::MAX, |b| to_sql(b.0));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read_rows(
            &conn,
            &sql,
            params![thread_id, before, limit],
            (thread_id, None, false),
            "list",
        )
    }

    fn put_snapshot_sync(
        &self,
        thread_id: &str,
        id: CheckpointId,
        snapshot: String,
    ) -> Result<(), CheckpointError> {
        check_thread_id(thread_id)?;
        let conn = self.lock();
        let bytes = to_sql(snapshot.len() as u64);
        let changed = conn
            .prepare_cached(
                "UPDATE agent_state_checkpoints SET snapshot = ?3, log_bytes = 0, base_bytes = ?4
                 WHERE thread_id = ?1 AND id = ?2",
            )
            .and_then(|mut st| st.execute(params![thread_id, to_sql(id.0), snapshot, bytes]))
            .map_err(db_err("snapshot"))?;
        if changed == 0 {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(id),
            });
        }
        Ok(())
    }

    fn delete_sync(&self, thread_id: &str) -> Result<bool, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut db = self.lock();
        // The thread's newest id is no longer what this connection knew.
        db.heads.forget(thread_id);
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err("delete"))?;
        let mut deleted = 0;
        for table in [
            "agent_state_pending",
            "agent_state_checkpoints",
            "agent_state_retired",
        ] {
            let sql = format!("DELETE FROM {table} WHERE thread_id = ?1");
            let rows = tx
                .execute(&sql, params![thread_id])
                .map_err(db_err("delete"))?;
            if table != "agent_state_pending" {
                deleted += rows;
            }
        }
        tx.commit().map_err(db_err("delete"))?;
        Ok(deleted > 0)
    }

    fn truncate_sync(
        &self,
        thread_id: &str,
        keep: Option<CheckpointId>,
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut db = self.lock();
        let Db {
            conn,
            heads,
            exclusive,
        } = &mut *db;
        // Several statements: a transaction even on an exclusive handle.
        let tx = WriteTx::begin(conn, true).map_err(db_err("truncate"))?;
        let result =
            truncate_in(&tx, heads, *exclusive, thread_id, keep).and_then(|(dropped, known)| {
                tx.commit().map_err(db_err("truncate"))?;
                Ok((dropped, known))
            });
        match result {
            Ok((dropped, known)) => {
                heads.set(thread_id, known);
                Ok(dropped)
            }
            Err(e) => {
                heads.forget(thread_id);
                Err(e)
            }
        }
    }

    /// [`Checkpointer::drop_before`], in one write transaction.
    fn drop_before_sync(
        &self,
        thread_id: &str,
        oldest: CheckpointId,
        snapshots: &[(CheckpointId, String)],
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let db = self.lock();
        // Several statements: a transaction even on an exclusive handle.
        // The thread's head and ids do not move, so `heads` stays true.
        let tx = WriteTx::begin(&db.conn, true).map_err(db_err("drop_before"))?;
        let dropped = drop_in(&tx, thread_id, oldest, snapshots)?;
        tx.commit().map_err(db_err("drop_before"))?;
        Ok(dropped)
    }

    /// [`Checkpointer::collect_pending`]: one statement.
    fn collect_pending_sync(&self, thread_id: &str) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let db = self.lock();
        let deleted = db
            .conn
            .prepare_cached(
                // From the writes (few, near the head) to a child by the
                // key's range above them: no scan of a long history.
                "DELETE FROM agent_state_pending WHERE thread_id = ?1 AND EXISTS
                 (SELECT 1 FROM agent_state_checkpoints c WHERE c.thread_id = ?1
                  AND c.id > agent_state_pending.checkpoint_id
                  AND c.parent_id = agent_state_pending.checkpoint_id)",
            )
            .and_then(|mut st| st.execute(params![thread_id]))
            .map_err(db_err("collect_pending"))?;
        Ok(deleted as u64)
    }

    /// [`Checkpointer::delete_children`], in one write transaction.
    fn delete_children_sync(&self, thread_id: &str) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let (from, to) = children_range(thread_id);
        let mut db = self.lock();
        db.heads.newest.retain(|id, _| !(*id >= from && *id < to));
        let tx = WriteTx::begin(&db.conn, true).map_err(db_err("delete_children"))?;
        let threads: i64 = tx
            .conn
            .prepare_cached(
                "SELECT count(DISTINCT thread_id) FROM agent_state_checkpoints
                 WHERE thread_id >= ?1 AND thread_id < ?2",
            )
            .and_then(|mut st| st.query_row(params![from, to], |r| r.get(0)))
            .map_err(db_err("delete_children"))?;
        for table in [
            "agent_state_pending",
            "agent_state_retired",
            "agent_state_checkpoints",
        ] {
            let sql = format!("DELETE FROM {table} WHERE thread_id >= ?1 AND thread_id < ?2");
            tx.conn
                .prepare_cached(&sql)
                .and_then(|mut st| st.execute(params![from, to]))
                .map_err(db_err("delete_children"))?;
        }
        tx.commit().map_err(db_err("delete_children"))?;
        Ok(from_sql(threads))
    }

    fn put_pending_sync(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        check_thread_id(thread_id)?;
        let mut db = self.lock();
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err("put_pending"))?;
        let exists: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = ?1 AND id = ?2)",
                params![thread_id, to_sql(checkpoint.0)],
                |r| r.get(0),
            )
            .map_err(db_err("put_pending"))?;
        if !exists {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(checkpoint),
            });
        }
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO agent_state_pending (thread_id, checkpoint_id, task, key, value)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(db_err("put_pending"))?;
            for w in &writes {
                st.execute(params![
                    thread_id,
                    to_sql(checkpoint.0),
                    w.task,
                    w.key,
                    w.value
                ])
                .map_err(db_err("put_pending"))?;
            }
        }
        tx.commit().map_err(db_err("put_pending"))
    }

    fn pending_sync(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
    ) -> Result<Vec<PendingWrite>, CheckpointError> {
        check_thread_id(thread_id)?;
        let conn = self.lock();
        let mut st = conn
            .prepare_cached(
                "SELECT task, key, value FROM agent_state_pending
                 WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY task, key",
            )
            .map_err(db_err("pending"))?;
        let rows = st
            .query_map(params![thread_id, to_sql(checkpoint.0)], |r| {
                Ok(PendingWrite {
                    task: r.get(0)?,
                    key: r.get(1)?,
                    value: r.get(2)?,
                })
            })
            .map_err(db_err("pending"))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(db_err("pending"))
    }
}

/// The connection, and what it knows of the threads' heads.
struct Db {
    conn: Connection,
    heads: Heads,
    /// Opened with [`SqliteCheckpointer::open_exclusive`]: no other
    /// connection writes the file.
    exclusive: bool,
}

impl std::ops::Deref for Db {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

/// What a connection knows of a thread's ids.
#[derive(Clone, Copy)]
struct Known {
    /// The newest record's id (the head); `None`: no record.
    head: Option<i64>,
    /// The highest id the thread gave out, taken off by a truncation or
    /// not: the next one is this plus one.
    last: i64,
}

impl Known {
    /// Right after the append of `id`, the newest id ever.
    fn appended(id: i64) -> Self {
        Self {
            head: Some(id),
            last: id,
        }
    }
}

/// Rolls back, when dropped, a transaction left open on its connection.
struct RollbackOpen<'c>(&'c Connection);

impl Drop for RollbackOpen<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            // A failed rollback leaves SQLite's own (it rolls back a
            // transaction it could not commit).
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// The ids of each thread this connection wrote or read in a write
/// transaction, valid while SQLite's `data_version` says no other
/// connection (of this process or another) has committed since: then a
/// step needs no query for the head. Any other commit empties it.
#[derive(Default)]
struct Heads {
    /// `PRAGMA data_version` when the entries were true.
    version: Option<i64>,
    newest: HashMap<String, Known>,
}

impl Heads {
    /// Empties the entries unless `version` is the one they were taken at.
    fn validate(&mut self, version: i64) {
        if self.version != Some(version) {
            self.newest.clear();
            self.version = Some(version);
        }
    }

    fn get(&self, thread_id: &str) -> Option<Known> {
        self.newest.get(thread_id).copied()
    }

    fn set(&mut self, thread_id: &str, newest: Known) {
        match self.newest.get_mut(thread_id) {
            Some(entry) => *entry = newest,
            None => {
                self.newest.insert(thread_id.to_owned(), newest);
            }
        }
    }

    fn forget(&mut self, thread_id: &str) {
        self.newest.remove(thread_id);
    }
}

/// The thread's ids, inside a write transaction: from `heads` when no
/// other connection has committed since they were learnt (none can, on an
/// `exclusive` handle), else from the tables.
fn known_ids(
    conn: &Connection,
    heads: &mut Heads,
    exclusive: bool,
    thread_id: &str,
) -> rusqlite::Result<Known> {
    if !exclusive {
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        heads.validate(version);
    }
    if let Some(found) = heads.get(thread_id) {
        return Ok(found);
    }
    let (head, retired): (Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT (SELECT max(id) FROM agent_state_checkpoints WHERE thread_id = ?1),
                    (SELECT last_id FROM agent_state_retired WHERE thread_id = ?1)",
        )?
        .query_row(params![thread_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let last = head.unwrap_or(0).max(retired.unwrap_or(0));
    let found = Known { head, last };
    heads.set(thread_id, found);
    Ok(found)
}

/// The changes of [`Checkpointer::truncate_after`], inside the write
/// transaction `tx`: how many records went, and the thread's ids after.
/// Nothing changes before the checks pass; a failure after that is rolled
/// back with the transaction.
fn truncate_in(
    tx: &WriteTx<'_>,
    heads: &mut Heads,
    exclusive: bool,
    thread_id: &str,
    keep: Option<CheckpointId>,
) -> Result<(u64, Known), CheckpointError> {
    let conn = tx.conn;
    let known = known_ids(conn, heads, exclusive, thread_id).map_err(db_err("truncate"))?;
    let keep_sql = keep.map_or(0, |id| to_sql(id.0));
    if let Some(id) = keep {
        let exists: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = ?1 AND id = ?2)",
            )
            .and_then(|mut st| st.query_row(params![thread_id, keep_sql], |r| r.get(0)))
            .map_err(db_err("truncate"))?;
        if !exists {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(id),
            });
        }
    }
    let after = |sql: &str| {
        conn.prepare_cached(sql)
            .and_then(|mut st| st.execute(params![thread_id, keep_sql]))
            .map_err(db_err("truncate"))
    };
    after("DELETE FROM agent_state_pending WHERE thread_id = ?1 AND checkpoint_id > ?2")?;
    let dropped = after("DELETE FROM agent_state_checkpoints WHERE thread_id = ?1 AND id > ?2")?;
    if dropped > 0 {
        // The ids taken off stay given out: the next append passes them.
        conn.prepare_cached(
            "INSERT INTO agent_state_retired (thread_id, last_id) VALUES (?1, ?2)
             ON CONFLICT (thread_id) DO UPDATE SET last_id = max(last_id, excluded.last_id)",
        )
        .and_then(|mut st| st.execute(params![thread_id, known.last]))
        .map_err(db_err("truncate"))?;
    }
    let known = Known {
        head: keep.map(|_| keep_sql),
        last: known.last,
    };
    Ok((dropped as u64, known))
}

/// The changes of [`Checkpointer::drop_before`], inside the write
/// transaction `tx`: every check first; a failure after them is rolled
/// back with the transaction. How many records went.
fn drop_in(
    tx: &WriteTx<'_>,
    thread_id: &str,
    oldest: CheckpointId,
    snapshots: &[(CheckpointId, String)],
) -> Result<u64, CheckpointError> {
    let conn = tx.conn;
    let floor = to_sql(oldest.0);
    for id in std::iter::once(oldest).chain(snapshots.iter().map(|(id, _)| *id)) {
        let exists: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = ?1 AND id = ?2)",
            )
            .and_then(|mut st| st.query_row(params![thread_id, to_sql(id.0)], |r| r.get(0)))
            .map_err(db_err("drop_before"))?;
        if !exists || id < oldest {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(id),
            });
        }
    }
    let orphans: Vec<(i64, i64)> = conn
        .prepare_cached(
            "SELECT id, parent_id FROM agent_state_checkpoints
             WHERE thread_id = ?1 AND id >= ?2 AND parent_id < ?2 AND snapshot IS NULL ORDER BY id",
        )
        .and_then(|mut st| {
            st.query_map(params![thread_id, floor], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(db_err("drop_before"))?;
    let given = |id: i64| snapshots.iter().any(|(s, _)| to_sql(s.0) == id);
    if let Some((id, parent)) = orphans.into_iter().find(|(id, _)| !given(*id)) {
        let parent = Some(CheckpointId(from_sql(parent)));
        return Err(lost_parent(thread_id, CheckpointId(from_sql(id)), parent));
    }
    let run = |sql: &str, extra: Option<(&String, i64)>| -> Result<usize, CheckpointError> {
        let mut st = conn.prepare_cached(sql).map_err(db_err("drop_before"))?;
        match extra {
            Some((text, id)) => st.execute(params![thread_id, id, text, to_sql(text.len() as u64)]),
            None => st.execute(params![thread_id, floor]),
        }
        .map_err(db_err("drop_before"))
    };
    for (id, snapshot) in snapshots {
        run(
            "UPDATE agent_state_checkpoints SET snapshot = ?3, log_bytes = 0, base_bytes = ?4
             WHERE thread_id = ?1 AND id = ?2",
            Some((snapshot, to_sql(id.0))),
        )?;
    }
    run(
        "DELETE FROM agent_state_pending WHERE thread_id = ?1 AND checkpoint_id < ?2",
        None,
    )?;
    let dropped = run(
        "DELETE FROM agent_state_checkpoints WHERE thread_id = ?1 AND id < ?2",
        None,
    )?;
    run(
        "UPDATE agent_state_checkpoints SET parent_id = NULL
         WHERE thread_id = ?1 AND id >= ?2 AND parent_id < ?2",
        None,
    )?;
    Ok(dropped as u64)
}

/// A transaction through cached statements (`BEGIN IMMEDIATE`, `COMMIT`:
/// no SQL parsed per step), rolled back when dropped before its commit (an
/// error, a panic): a step, or a store's batch, all or nothing.
pub(crate) struct WriteTx<'c> {
    conn: &'c Connection,
    committed: bool,
}

impl<'c> WriteTx<'c> {
    /// `BEGIN IMMEDIATE` (the write lock at once) when `immediate`, else a
    /// deferred `BEGIN` (a consistent read that may still write).
    pub(crate) fn begin(conn: &'c Connection, immediate: bool) -> rusqlite::Result<Self> {
        let sql = if immediate {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN"
        };
        conn.prepare_cached(sql)?.execute([])?;
        Ok(Self {
            conn,
            committed: false,
        })
    }

    pub(crate) fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        if !self.committed {
            // Nothing of the step stays; a failed rollback leaves SQLite's
            // own (it rolls back a transaction it could not commit).
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// Runs a query for checkpoint rows of one thread and checks each row:
/// `(thread_id, the checkpoint being loaded, whether snapshots are read)`.
fn read_rows(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    (thread_id, loading, with_snapshot): (&str, Option<CheckpointId>, bool),
    operation: &'static str,
) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
    let mut st = conn.prepare_cached(sql).map_err(db_err(operation))?;
    let mut rows = st.query(params).map_err(db_err(operation))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(db_err(operation))? {
        out.push(RawRow::read(row, thread_id, loading, with_snapshot)?.into_stored()?);
    }
    Ok(out)
}

impl Columns for Row<'_> {
    type Error = rusqlite::Error;

    fn text(&self, at: usize) -> rusqlite::Result<String> {
        self.get(at)
    }

    fn opt_text(&self, at: usize) -> rusqlite::Result<Option<String>> {
        self.get(at)
    }

    fn int(&self, at: usize) -> rusqlite::Result<i64> {
        self.get(at)
    }

    fn opt_int(&self, at: usize) -> rusqlite::Result<Option<i64>> {
        self.get(at)
    }
}

impl Checkpointer for SqliteCheckpointer {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        Box::pin(async move {
            self.at(
                thread_id,
                self.append_sync(thread_id, expected_head, record),
            )
        })
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.put_snapshot_sync(thread_id, id, snapshot)) })
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.head_sync(thread_id)) })
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.chain_sync(thread_id, id)) })
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.list_sync(thread_id, before, limit)) })
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.delete_sync(thread_id)) })
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.policy.unwrap_or_default()
    }

    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            self.at(
                thread_id,
                self.put_pending_sync(thread_id, checkpoint, writes),
            )
        })
    }

    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.pending_sync(thread_id, checkpoint)) })
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.truncate_sync(thread_id, keep)) })
    }

    fn drop_before<'a>(
        &'a self,
        thread_id: &'a str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move {
            self.at(
                thread_id,
                self.drop_before_sync(thread_id, oldest, &snapshots),
            )
        })
    }

    fn collect_pending<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.collect_pending_sync(thread_id)) })
    }

    fn delete_children<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move { self.at(thread_id, self.delete_children_sync(thread_id)) })
    }
}
