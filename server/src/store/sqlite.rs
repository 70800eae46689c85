//! The tables in the checkpointer's SQLite file, on the checkpointer's
//! own connection, every statement checked against the file's identity
//! first (see [`crate::watch`]).

use std::sync::Arc;

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, Connection, ToSql};

use super::{Arg, StoreError, TextRow, INDEXES, TABLES};
use crate::watch::FileWatch;

/// Prepared statements kept per connection: the checkpointer's and all
/// of the store's, so none is prepared again.
const CACHED_STATEMENTS: usize = 64;

/// The tables' access to the file: through the checkpointer's connection,
/// so a run's store writes and its steps take turns in this process
/// rather than wait for each other at SQLite's write lock (two
/// connections did, and SQLite's busy handler slept a millisecond or
/// more inside a Tokio worker each time, which held 16 clients below
/// one client's runs/s). The connection keeps the checkpointer's
/// promise (WAL, `synchronous = NORMAL`: a crash of the process loses
/// nothing, a power cut may lose the last commits).
pub(crate) struct SqliteDb {
    saver: Arc<SqliteCheckpointer>,
    watch: Arc<FileWatch>,
}

impl SqliteDb {
    /// The tables beside `saver`'s checkpoints (created if missing);
    /// `watch` tells when the file at the path is no longer this one.
    pub(crate) fn open(
        saver: Arc<SqliteCheckpointer>,
        watch: Arc<FileWatch>,
    ) -> Result<Self, StoreError> {
        saver
            .with_connection(create_tables)
            .map_err(StoreError::db)?;
        Ok(SqliteDb { saver, watch })
    }

    /// `f` on the connection, once the file is known to be still there.
    fn on_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.watch.check()?;
        self.saver.with_connection(f).map_err(StoreError::db)
    }

    pub(crate) fn execute(&self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        self.on_conn(|db| {
            let mut stmt = db.prepare_cached(&numbered(sql))?;
            Ok(stmt.execute(params_from_iter(args))? as u64)
        })
    }

    pub(crate) fn query(&self, sql: &str, args: Vec<Arg>) -> Result<Vec<TextRow>, StoreError> {
        self.on_conn(|db| {
            let mut stmt = db.prepare_cached(&numbered(sql))?;
            let width = stmt.column_count();
            let rows = stmt.query_map(params_from_iter(args), |row| {
                (0..width)
                    .map(|i| row.get::<_, Option<String>>(i))
                    .collect()
            })?;
            rows.collect()
        })
    }
}

/// The server's tables and indexes, each idempotent.
fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    for statement in TABLES {
        conn.execute_batch(statement)?;
    }
    add_owner_column(conn)?;
    add_assistant_columns(conn)?;
    for statement in INDEXES.iter().chain(&super::ttl::TABLES) {
        conn.execute_batch(statement)?;
    }
    Ok(())
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

/// A file made before assistants could be created or changed gets their
/// columns and the versions table.
fn add_assistant_columns(conn: &Connection) -> rusqlite::Result<()> {
    for (name, decl) in super::assistants::ADDED_COLUMNS {
        let has: bool = conn.query_row(
            "SELECT count(*) FROM pragma_table_info('server_assistants') WHERE name = ?1",
            [name],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!(
                "ALTER TABLE server_assistants ADD COLUMN {name} {decl}"
            ))?;
        }
    }
    conn.execute_batch(super::assistants::VERSIONS_TABLE)
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
