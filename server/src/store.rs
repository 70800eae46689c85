//! Threads, runs and assistants, in tables of their own (prefixed
//! `server_`) beside the checkpoints: in the SQLite file
//! ([`sqlite`]), or in the PostgreSQL database ([`postgres`]), so one
//! database holds everything a restart needs.
//!
//! The queries are written once, here, in the SQL both databases read
//! (`$1` parameters, `ON CONFLICT DO NOTHING`, text columns); a backend
//! only runs a statement and hands back its rows as text.

use std::error::Error;
use std::fmt;

use crate::ids::now;

mod arg;
pub(crate) mod assistants;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod rows;
pub(crate) mod sqlite;
pub(crate) mod ttl;

pub(crate) use arg::{Arg, TextRow};
pub(crate) use assistants::AssistantRow;
use rows::{run_row, text0, thread_args, thread_row};
pub(crate) use rows::{RunRow, ThreadRow};

/// The server's tables, in both databases' SQL. `owner` is the server
/// process that runs a run (on PostgreSQL, see [`crate::queue`]).
pub(crate) const TABLES: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS server_assistants (
    assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL, metadata TEXT NOT NULL, status TEXT NOT NULL,
    config TEXT NOT NULL, state TEXT, error TEXT, interrupts TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS server_runs (
    run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL,
    metadata TEXT NOT NULL, status TEXT NOT NULL, kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '')",
];

/// Their indexes, made once the tables have every column.
pub(crate) const INDEXES: [&str; 2] = [
    "CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, created_at)",
    // What the queue's heartbeat reads, however many runs ended.
    "CREATE INDEX IF NOT EXISTS server_runs_unfinished ON server_runs (owner)
    WHERE status IN ('pending', 'running')",
];

const THREAD_COLUMNS: &str = "thread_id, created_at, updated_at, state_updated_at, metadata, \
    status, config, state, error, interrupts";
const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, metadata, status, kwargs, \
    multitask_strategy, created_at, updated_at";

/// Why the store failed.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// The database failed: the driver's error, for the log only (it may
    /// name a file or a host).
    Db(Box<dyn Error + Send + Sync>),
    /// No connection came free in time: the database is saturated.
    #[cfg(feature = "postgres")]
    Busy,
    /// The SQLite file was deleted or replaced while the server ran:
    /// nothing more is written until a restart opens the new one.
    Gone,
}

impl StoreError {
    pub(crate) fn db(e: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        StoreError::Db(e.into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Db(e) => write!(f, "{e}"),
            #[cfg(feature = "postgres")]
            StoreError::Busy => f.write_str("no database connection came free in time"),
            StoreError::Gone => f.write_str(GONE),
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            StoreError::Db(e) => Some(&**e),
            _ => None,
        }
    }
}

/// What a client and the log are told when the database file went away.
pub(crate) const GONE: &str =
    "the database file was deleted or replaced while the server ran: restart the server";

/// A thread's error when the server running its run died.
const ORPHANED: &str = r#"{"error":"ServerDied","message":"the server running this run stopped before the run ended"}"#;

/// The database the tables are in.
pub(crate) enum Db {
    Sqlite(sqlite::SqliteDb),
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgDb),
}

impl Db {
    async fn execute(&self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(db) => db.execute(sql, args),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.execute(sql, args).await,
        }
    }

    async fn query(&self, sql: &str, args: Vec<Arg>) -> Result<Vec<TextRow>, StoreError> {
        match self {
            Db::Sqlite(db) => db.query(sql, args),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.query(sql, args).await,
        }
    }
}

/// Writes every column of a thread but its id and creation time.
const SAVE_THREAD: &str = "UPDATE server_threads SET updated_at = $2, state_updated_at = $3,
    metadata = $4, status = $5, config = $6, state = $7, error = $8, interrupts = $9
    WHERE thread_id = $1";

/// The server's tables, and which process this is (the `owner` of the
/// runs it starts).
pub(crate) struct Store {
    db: Db,
    owner: String,
}

impl Store {
    /// The tables in `db` (created by the backend), for the process
    /// `owner`.
    pub(crate) fn new(db: Db, owner: String) -> Self {
        Store { db, owner }
    }

    /// The PostgreSQL database, for the run queue (see [`crate::queue`]).
    #[cfg(feature = "postgres")]
    pub(crate) fn pg(&self) -> Option<&postgres::PgDb> {
        match &self.db {
            Db::Postgres(db) => Some(db),
            Db::Sqlite(_) => None,
        }
    }

    /// This process's id: the owner of the runs it runs.
    #[cfg(feature = "postgres")]
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Stores a new thread; `false` when the id is taken.
    pub(crate) async fn insert_thread(&self, t: &ThreadRow) -> Result<bool, StoreError> {
        let sql = format!(
            "INSERT INTO server_threads ({THREAD_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING"
        );
        let mut args = vec![t.thread_id.as_str().into(), t.created_at.as_str().into()];
        args.extend(thread_args(t));
        Ok(self.db.execute(&sql, args).await? == 1)
    }

    /// Writes every column of a stored thread.
    pub(crate) async fn save_thread(&self, t: &ThreadRow) -> Result<(), StoreError> {
        let mut args = vec![t.thread_id.as_str().into()];
        args.extend(thread_args(t));
        self.db.execute(SAVE_THREAD, args).await?;
        Ok(())
    }

    /// [`save_thread`](Self::save_thread) for run `run_id` as it ends or
    /// pauses, only while this process still owns the run: a server that
    /// lost a run (its lease expired, another server took it over) never
    /// writes over what the run's new owner records. `false` when it did
    /// not own it.
    pub(crate) async fn save_run_thread(
        &self,
        t: &ThreadRow,
        run_id: &str,
    ) -> Result<bool, StoreError> {
        let mut args = vec![t.thread_id.as_str().into()];
        args.extend(thread_args(t));
        args.extend([run_id.into(), self.owner.as_str().into()]);
        let sql = format!(
            "{SAVE_THREAD} AND EXISTS (SELECT 1 FROM server_runs WHERE run_id = $10 AND owner = $11)"
        );
        Ok(self.db.execute(&sql, args).await? == 1)
    }

    /// The thread, if stored.
    pub(crate) async fn thread(&self, id: &str) -> Result<Option<ThreadRow>, StoreError> {
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads WHERE thread_id = $1");
        let rows = self.db.query(&sql, vec![id.into()]).await?;
        Ok(rows.into_iter().next().map(thread_row))
    }

    /// Every thread, newest first (searches filter them).
    pub(crate) async fn threads(&self) -> Result<Vec<ThreadRow>, StoreError> {
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads ORDER BY created_at DESC");
        let rows = self.db.query(&sql, Vec::new()).await?;
        Ok(rows.into_iter().map(thread_row).collect())
    }

    /// Deletes the thread and its runs; `false` when there was none.
    pub(crate) async fn delete_thread(&self, id: &str) -> Result<bool, StoreError> {
        let db = &self.db;
        #[cfg(feature = "postgres")]
        if let Db::Postgres(_) = db {
            let sql = crate::log::postgres::DELETE_THREAD_EVENTS;
            db.execute(sql, vec![id.into()]).await?;
        }
        db.execute(
            "DELETE FROM server_runs WHERE thread_id = $1",
            vec![id.into()],
        )
        .await?;
        let n = db
            .execute(
                "DELETE FROM server_threads WHERE thread_id = $1",
                vec![id.into()],
            )
            .await?;
        Ok(n == 1)
    }

    /// Stores a new run, owned by this process.
    pub(crate) async fn insert_run(&self, r: &RunRow) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO server_runs ({RUN_COLUMNS}, owner)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        );
        let args = vec![
            r.run_id.as_str().into(),
            r.thread_id.as_str().into(),
            r.assistant_id.as_str().into(),
            r.metadata.to_string().into(),
            r.status.as_str().into(),
            r.kwargs.to_string().into(),
            r.multitask_strategy.as_str().into(),
            r.created_at.as_str().into(),
            r.updated_at.as_str().into(),
            self.owner.as_str().into(),
        ];
        self.db.execute(&sql, args).await?;
        Ok(())
    }

    /// Deletes a run's record; `false` when there was none.
    pub(crate) async fn delete_run(&self, run_id: &str) -> Result<bool, StoreError> {
        #[cfg(feature = "postgres")]
        if let Db::Postgres(_) = &self.db {
            let sql = crate::log::postgres::DELETE_RUN_EVENTS;
            self.db.execute(sql, vec![run_id.into()]).await?;
        }
        let n = self
            .db
            .execute(
                "DELETE FROM server_runs WHERE run_id = $1",
                vec![run_id.into()],
            )
            .await?;
        Ok(n == 1)
    }

    /// Sets the status of a run this process owns; `false` when it no
    /// longer owns it (see [`save_run_thread`](Self::save_run_thread)),
    /// and then nothing is written.
    pub(crate) async fn set_run_status(
        &self,
        run_id: &str,
        status: &str,
    ) -> Result<bool, StoreError> {
        let sql =
            "UPDATE server_runs SET status = $2, updated_at = $3 WHERE run_id = $1 AND owner = $4";
        let args = vec![
            run_id.into(),
            status.into(),
            now().into(),
            self.owner.as_str().into(),
        ];
        Ok(self.db.execute(sql, args).await? == 1)
    }

    /// The run of a thread, if stored.
    pub(crate) async fn run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRow>, StoreError> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM server_runs WHERE thread_id = $1 AND run_id = $2");
        let rows = self
            .db
            .query(&sql, vec![thread_id.into(), run_id.into()])
            .await?;
        Ok(rows.into_iter().next().map(run_row))
    }

    /// Whether the thread has a run other than `run_id` pending or
    /// running: a run that ends leaves such a thread `busy`.
    pub(crate) async fn has_other_runs(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<bool, StoreError> {
        let sql = "SELECT run_id FROM server_runs WHERE thread_id = $1 AND run_id <> $2
             AND status IN ('pending', 'running') LIMIT 1";
        let args = vec![thread_id.into(), run_id.into()];
        Ok(!self.db.query(sql, args).await?.is_empty())
    }

    /// A thread's runs, newest first.
    pub(crate) async fn runs(
        &self,
        thread_id: &str,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs WHERE thread_id = $1
             ORDER BY created_at DESC, run_id DESC LIMIT $2 OFFSET $3"
        );
        let args = vec![thread_id.into(), limit.into(), offset.into()];
        let rows = self.db.query(&sql, args).await?;
        Ok(rows.into_iter().map(run_row).collect())
    }

    /// The pool of connections on PostgreSQL (`None` on SQLite).
    #[cfg(feature = "postgres")]
    pub(crate) fn pool(&self) -> Option<&deadpool_postgres::Pool> {
        match &self.db {
            Db::Postgres(db) => Some(db.pool()),
            Db::Sqlite(_) => None,
        }
    }

    /// Marks `error` the runs `owner` left `pending` or `running` (every
    /// owner's when `None`), and their threads: a process that died
    /// leaves nothing busy forever. How many runs.
    pub(crate) async fn fail_runs_of(&self, owner: Option<&str>) -> Result<u64, StoreError> {
        let owner = Arg::from(owner.map(str::to_owned));
        let stamp = Arg::from(now());
        let error = Arg::from(ORPHANED.to_string());
        self.db
            .execute(
                "UPDATE server_threads SET status = 'error', updated_at = $2, error = $3
                 WHERE thread_id IN
                 (SELECT thread_id FROM server_runs WHERE status IN ('pending', 'running')
                  AND (CAST($1 AS TEXT) IS NULL OR owner = $1))",
                vec![owner.clone(), stamp.clone(), error],
            )
            .await?;
        self.db
            .execute(
                "UPDATE server_runs SET status = 'error', updated_at = $2
                 WHERE status IN ('pending', 'running') AND (CAST($1 AS TEXT) IS NULL OR owner = $1)",
                vec![owner, stamp],
            )
            .await
    }
}
