//! Threads, runs and assistants in SQLite, in the same file as the
//! checkpoints (tables of their own, prefixed `server_`), so one file holds
//! everything a restart needs.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::{Map, Value};

use crate::ids::now;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS server_assistants (
    assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL, metadata TEXT NOT NULL, status TEXT NOT NULL,
    config TEXT NOT NULL, state TEXT, error TEXT, interrupts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS server_runs (
    run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL,
    metadata TEXT NOT NULL, status TEXT NOT NULL, kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, created_at);
";

/// The server's tables.
pub(crate) struct Store {
    conn: Mutex<Connection>,
}

/// A thread as the API shows it.
#[derive(Debug, Clone)]
pub(crate) struct ThreadRow {
    pub thread_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub state_updated_at: String,
    pub metadata: Map<String, Value>,
    pub status: String,
    pub config: Value,
    pub values: Option<Value>,
    pub error: Option<Value>,
    pub interrupts: Value,
}

/// A run as the API shows it.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: String,
    pub thread_id: String,
    pub assistant_id: String,
    pub metadata: Value,
    pub status: String,
    pub kwargs: Value,
    pub multitask_strategy: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The busy-timeout SQLite waits for the checkpointer's writes.
const BUSY: std::time::Duration = std::time::Duration::from_secs(10);

impl Store {
    /// Opens the file (the checkpointer has created it) and its tables.
    /// Runs left `pending` or `running` by a process that died are marked
    /// `error`, and their threads too: nothing stays busy forever.
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(BUSY)?;
        // The checkpointer's promise (WAL, `synchronous = NORMAL`: a crash
        // of the process loses nothing, a power cut may lose the last
        // commits) for the rows beside its checkpoints. SQLite's default,
        // FULL, was an fsync on every thread and run write (six a run),
        // which bounded the server to one run per 15 ms whatever the
        // number of clients.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(SCHEMA)?;
        let stamp = now();
        conn.execute(
            "UPDATE server_threads SET status = 'error', updated_at = ?1 WHERE thread_id IN
             (SELECT thread_id FROM server_runs WHERE status IN ('pending', 'running'))",
            [&stamp],
        )?;
        conn.execute(
            "UPDATE server_runs SET status = 'error', updated_at = ?1
             WHERE status IN ('pending', 'running')",
            [&stamp],
        )?;
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn db(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding it leaves SQLite consistent (each statement
        // is atomic), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The assistant's creation time, stored at its first registration so
    /// it survives restarts.
    pub(crate) fn assistant_created_at(&self, id: &str, graph: &str) -> rusqlite::Result<String> {
        let db = self.db();
        db.execute(
            "INSERT OR IGNORE INTO server_assistants VALUES (?1, ?2, ?3)",
            params![id, graph, now()],
        )?;
        db.query_row(
            "SELECT created_at FROM server_assistants WHERE assistant_id = ?1",
            [id],
            |r| r.get(0),
        )
    }

    /// Stores a new thread; `false` when the id is taken.
    pub(crate) fn insert_thread(&self, t: &ThreadRow) -> rusqlite::Result<bool> {
        let n = self.db().execute(
            "INSERT OR IGNORE INTO server_threads VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                t.thread_id,
                t.created_at,
                t.updated_at,
                t.state_updated_at,
                Value::Object(t.metadata.clone()).to_string(),
                t.status,
                t.config.to_string(),
                t.values.as_ref().map(Value::to_string),
                t.error.as_ref().map(Value::to_string),
                t.interrupts.to_string(),
            ],
        )?;
        Ok(n == 1)
    }

    /// Writes every column of a stored thread.
    pub(crate) fn save_thread(&self, t: &ThreadRow) -> rusqlite::Result<()> {
        self.db().execute(
            "UPDATE server_threads SET updated_at = ?2, state_updated_at = ?3, metadata = ?4,
             status = ?5, config = ?6, state = ?7, error = ?8, interrupts = ?9
             WHERE thread_id = ?1",
            params![
                t.thread_id,
                t.updated_at,
                t.state_updated_at,
                Value::Object(t.metadata.clone()).to_string(),
                t.status,
                t.config.to_string(),
                t.values.as_ref().map(Value::to_string),
                t.error.as_ref().map(Value::to_string),
                t.interrupts.to_string(),
            ],
        )?;
        Ok(())
    }

    /// The thread, if stored.
    pub(crate) fn thread(&self, id: &str) -> rusqlite::Result<Option<ThreadRow>> {
        self.db()
            .query_row(
                "SELECT * FROM server_threads WHERE thread_id = ?1",
                [id],
                thread_row,
            )
            .optional()
    }

    /// Every thread, newest first (searches filter them).
    pub(crate) fn threads(&self) -> rusqlite::Result<Vec<ThreadRow>> {
        let db = self.db();
        let mut stmt = db.prepare("SELECT * FROM server_threads ORDER BY created_at DESC")?;
        let rows = stmt.query_map([], thread_row)?;
        rows.collect()
    }

    /// Deletes the thread and its runs; `false` when there was none.
    pub(crate) fn delete_thread(&self, id: &str) -> rusqlite::Result<bool> {
        let db = self.db();
        db.execute("DELETE FROM server_runs WHERE thread_id = ?1", [id])?;
        Ok(db.execute("DELETE FROM server_threads WHERE thread_id = ?1", [id])? == 1)
    }

    /// Stores a new run.
    pub(crate) fn insert_run(&self, r: &RunRow) -> rusqlite::Result<()> {
        self.db().execute(
            "INSERT INTO server_runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                r.run_id,
                r.thread_id,
                r.assistant_id,
                r.metadata.to_string(),
                r.status,
                r.kwargs.to_string(),
                r.multitask_strategy,
                r.created_at,
                r.updated_at,
            ],
        )?;
        Ok(())
    }

    /// Deletes a run's record; `false` when there was none.
    pub(crate) fn delete_run(&self, run_id: &str) -> rusqlite::Result<bool> {
        let n = self
            .db()
            .execute("DELETE FROM server_runs WHERE run_id = ?1", [run_id])?;
        Ok(n == 1)
    }

    /// Sets a run's status.
    pub(crate) fn set_run_status(&self, run_id: &str, status: &str) -> rusqlite::Result<()> {
        self.db().execute(
            "UPDATE server_runs SET status = ?2, updated_at = ?3 WHERE run_id = ?1",
            params![run_id, status, now()],
        )?;
        Ok(())
    }

    /// The run of a thread, if stored.
    pub(crate) fn run(&self, thread_id: &str, run_id: &str) -> rusqlite::Result<Option<RunRow>> {
        self.db()
            .query_row(
                "SELECT * FROM server_runs WHERE thread_id = ?1 AND run_id = ?2",
                [thread_id, run_id],
                run_row,
            )
            .optional()
    }

    /// A thread's runs, newest first.
    pub(crate) fn runs(
        &self,
        thread_id: &str,
        limit: i64,
        offset: i64,
    ) -> rusqlite::Result<Vec<RunRow>> {
        let db = self.db();
        let mut stmt = db.prepare(
            "SELECT * FROM server_runs WHERE thread_id = ?1
             ORDER BY created_at DESC, run_id DESC LIMIT ?2 OFFSET ?3",
        )?;
        let rows = stmt.query_map(params![thread_id, limit, offset], run_row)?;
        rows.collect()
    }
}

/// A JSON column; a value that does not parse (written by hand) reads as
/// null rather than failing the whole listing.
fn json_col(row: &Row<'_>, i: usize) -> rusqlite::Result<Value> {
    let text: Option<String> = row.get(i)?;
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null))
}

fn thread_row(row: &Row<'_>) -> rusqlite::Result<ThreadRow> {
    let metadata = match json_col(row, 4)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let values = Some(json_col(row, 7)?).filter(|v| !v.is_null());
    let error = Some(json_col(row, 8)?).filter(|v| !v.is_null());
    Ok(ThreadRow {
        thread_id: row.get(0)?,
        created_at: row.get(1)?,
        updated_at: row.get(2)?,
        state_updated_at: row.get(3)?,
        metadata,
        status: row.get(5)?,
        config: json_col(row, 6)?,
        values,
        error,
        interrupts: json_col(row, 9)?,
    })
}

fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: row.get(0)?,
        thread_id: row.get(1)?,
        assistant_id: row.get(2)?,
        metadata: json_col(row, 3)?,
        status: row.get(4)?,
        kwargs: json_col(row, 5)?,
        multitask_strategy: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}
