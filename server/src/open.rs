//! Opening the database a server was given: the checkpointer, the
//! server's tables beside it, and the threads' locks that fit it.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::Checkpointer;
use agent_state::store::Store as ItemStore;

use crate::gate::Gated;
use crate::lease::Leases;
use crate::server::ServerError;
use crate::store::sqlite::SqliteDb;
use crate::store::{Db, Store};
use crate::watch::{FileWatch, Watched};

/// How requests share PostgreSQL connections (SQLite has one).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct PoolSettings {
    /// The most connections open at once.
    pub size: usize,
    /// How long a request waits for one before it is answered 503.
    pub wait: std::time::Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            size: 16,
            wait: std::time::Duration::from_secs(30),
        }
    }
}

/// Where a server keeps its state.
pub(crate) enum Database {
    /// One SQLite file (created with its directory if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database, at this connection string.
    #[cfg(feature = "postgres")]
    Postgres(String),
}

/// Shows the file, but never a connection string (it may hold a
/// password).
impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            #[cfg(feature = "postgres")]
            Database::Postgres(_) => f.write_str("Postgres"),
        }
    }
}

/// What a server runs on: its tables, the checkpoints, the threads'
/// locks, and the Store (LangGraph's memory across threads) in the same
/// database.
type Opened = (Store, Arc<dyn Checkpointer>, Leases, Arc<dyn ItemStore>);

impl Database {
    /// Opens it for the server process `owner`, with a pool of
    /// connections on PostgreSQL (SQLite has one connection).
    pub(crate) async fn open(
        &self,
        owner: &str,
        pool: PoolSettings,
    ) -> Result<Opened, ServerError> {
        #[cfg(not(feature = "postgres"))]
        let _ = pool;
        match self {
            Database::Sqlite(path) => open_sqlite(path, owner),
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => open_postgres(url, pool, owner).await,
        }
    }
}

fn open_sqlite(path: &std::path::Path, owner: &str) -> Result<Opened, ServerError> {
    let saver = Arc::new(SqliteCheckpointer::open(path).map_err(ServerError::Checkpoint)?);
    let watch = Arc::new(FileWatch::new(path));
    let db = SqliteDb::open(Arc::clone(&saver), Arc::clone(&watch))
        .map_err(|e| ServerError::Store(e.into()))?;
    // On the checkpointer's connection: a batch and a step take turns.
    let items = agent_state::store::SqliteStore::sharing(Arc::clone(&saver))
        .map_err(|e| ServerError::Store(e.into()))?;
    let saver = Gated(Watched {
        inner: saver,
        watch,
    });
    let store = Store::new(Db::Sqlite(db), owner.to_owned());
    Ok((store, Arc::new(saver), Leases::default(), Arc::new(items)))
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str, pool: PoolSettings, owner: &str) -> Result<Opened, ServerError> {
    use crate::lease::postgres::Session;
    use crate::reconnect::Reconnecting;
    use crate::store::postgres::PgDb;

    let store_error = |e: crate::store::StoreError| ServerError::Store(e.into());
    let saver = Reconnecting::connect(url)
        .await
        .map_err(ServerError::Checkpoint)?;
    let db = PgDb::connect(url, pool).await.map_err(store_error)?;
    let session = Session::connect(url, owner).await.map_err(store_error)?;
    let items = agent_state::store::PostgresStore::connect(url)
        .await
        .map_err(|e| ServerError::Store(e.into()))?;
    let store = Store::new(Db::Postgres(db), owner.to_owned());
    let leases = Leases::shared(session);
    Ok((store, Arc::new(Gated(saver)), leases, Arc::new(items)))
}
