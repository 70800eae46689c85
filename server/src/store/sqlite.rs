//! The tables in the checkpointer's SQLite file, on one connection of
//! their own, every statement checked against the file's identity first
//! (see [`crate::watch`]).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use super::{Arg, StoreError, TextRow, INDEXES, TABLES};
use crate::watch::FileWatch;

/// The busy-timeout SQLite waits for the checkpointer's writes.
const BUSY: std::time::Duration = std::time::Duration::from_secs(10);

/// The SQLite file's connection.
pub(crate) struct SqliteDb {
    conn: Mutex<Connection>,
    watch: Arc<FileWatch>,
}

impl SqliteDb {
    /// Opens the file (the checkpointer has created it) and its tables;
    /// `watch` tells when the file at the path is no longer this one.
    pub(crate) fn open(path: &Path, watch: Arc<FileWatch>) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(StoreError::db)?;
        conn.busy_timeout(BUSY).map_err(StoreError::db)?;
        // The checkpointer's promise (WAL, `synchronous = NORMAL`: a crash
        // of the process loses nothing, a power cut may lose the last
        // commits) for the rows beside its checkpoints. SQLite's default,
        // FULL, was an fsync on every thread and run write (six a run),
        // which bounded the server to one run per 15 ms whatever the
        // number of clients.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(StoreError::db)?;
        for statement in TABLES {
            conn.execute_batch(statement).map_err(StoreError::db)?;
        }
        add_owner_column(&conn).map_err(StoreError::db)?;
        for statement in INDEXES {
            conn.execute_batch(statement).map_err(StoreError::db)?;
        }
        Ok(SqliteDb {
            conn: Mutex::new(conn),
            watch,
        })
    }

    fn db(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.watch.check()?;
        // A panic while holding it leaves SQLite consistent (each statement
        // is atomic), so a poisoned lock is still usable.
        Ok(self.conn.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn execute(&self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        let db = self.db()?;
        let mut stmt = db.prepare_cached(&numbered(sql)).map_err(StoreError::db)?;
        let n = stmt
            .execute(params_from_iter(args))
            .map_err(StoreError::db)?;
        Ok(n as u64)
    }

    pub(crate) fn query(&self, sql: &str, args: Vec<Arg>) -> Result<Vec<TextRow>, StoreError> {
        let db = self.db()?;
        let mut stmt = db.prepare_cached(&numbered(sql)).map_err(StoreError::db)?;
        let width = stmt.column_count();
        let rows = stmt
            .query_map(params_from_iter(args), |row| {
                (0..width)
                    .map(|i| row.get::<_, Option<String>>(i))
                    .collect()
            })
            .map_err(StoreError::db)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::db)
    }
}

/// `$1` as SQLite numbers a parameter (`?1`): the queries are written in
/// PostgreSQL's spelling, and hold no `$` otherwise.
fn numbered(sql: &str) -> String {
    sql.replace('$', "?")
}

/// A file made before runs recorded their owner gets the column.
fn add_owner_column(conn: &Connection) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('server_runs') WHERE name = 'owner'",
        [],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch("ALTER TABLE server_runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''")?;
    }
    Ok(())
}

impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Arg::Text(s) => ValueRef::Text(s.as_bytes()),
            Arg::Null => ValueRef::Null,
            Arg::Int(n) => ValueRef::Integer(*n),
        }))
    }
}
