//! The tables in the PostgreSQL database, beside the core's
//! `PostgresCheckpointer`'s, through a bounded pool of connections: many
//! clients share a few connections (waiting their turn, 30 s at most by
//! default) instead of each opening one of its own.

use std::error::Error;
use std::time::Duration;

use deadpool_postgres::{Pool, PoolConfig, PoolError, Runtime, Timeouts};
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::NoTls;

use crate::open::PoolSettings;

use super::{Arg, StoreError, TextRow, INDEXES, TABLES};

/// How long opening (or checking) a connection may take.
const CONNECT: Duration = Duration::from_secs(30);

/// The advisory lock that serializes creating the tables, so servers
/// starting together on an empty database do not race.
const SCHEMA_LOCK: &str = "hashtextextended('agent-state-server/schema', 0)";

/// A pool of connections to the database.
pub(crate) struct PgDb {
    pool: Pool,
}

impl PgDb {
    /// A pool of connections to `url` (libpq-style or a `postgresql://`
    /// URL), with the tables created.
    pub(crate) async fn connect(url: &str, settings: PoolSettings) -> Result<Self, StoreError> {
        let db = PgDb {
            pool: new_pool(url, settings)?,
        };
        db.create_tables().await?;
        Ok(db)
    }

    /// The pool, for the runs' stored events (`crate::log::postgres`),
    /// which write arrays this module's text arguments do not carry.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn create_tables(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let assistants = super::assistants::pg_migrations();
        let assistants: Vec<&str> = assistants.iter().map(String::as_str).collect();
        let batch = format!(
            "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {}; COMMIT;",
            [
                &TABLES[..],
                &assistants[..],
                &INDEXES[..],
                &super::ttl::TABLES[..],
                &crate::queue::SCHEMA[..]
            ]
            .concat()
            .join(";\n")
        );
        client.batch_execute(&batch).await.map_err(StoreError::db)
    }

    /// A connection of the pool, for the queue's statements and
    /// transactions (see [`crate::queue`]).
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    pub(crate) async fn execute(&self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let stmt = client.prepare_cached(sql).await.map_err(StoreError::db)?;
        client
            .execute(&stmt, &params(&args))
            .await
            .map_err(StoreError::db)
    }

    pub(crate) async fn query(
        &self,
        sql: &str,
        args: Vec<Arg>,
    ) -> Result<Vec<TextRow>, StoreError> {
        let client = self.pool.get().await.map_err(pool_error)?;
        let stmt = client.prepare_cached(sql).await.map_err(StoreError::db)?;
        let rows = client
            .query(&stmt, &params(&args))
            .await
            .map_err(StoreError::db)?;
        rows.iter()
            .map(|row| (0..row.len()).map(|i| row.try_get(i)).collect())
            .collect::<Result<_, _>>()
            .map_err(StoreError::db)
    }
}

/// A pool of at most `settings.size` connections to `url`, opened as
/// they are needed.
pub(crate) fn new_pool(url: &str, settings: PoolSettings) -> Result<Pool, StoreError> {
    let pg = url
        .parse::<tokio_postgres::Config>()
        .map_err(StoreError::db)?;
    let config = PoolConfig {
        max_size: settings.size,
        timeouts: Timeouts {
            wait: Some(settings.wait),
            create: Some(CONNECT),
            recycle: Some(CONNECT),
        },
        ..PoolConfig::default()
    };
    let manager = deadpool_postgres::Manager::new(pg, NoTls);
    Pool::builder(manager)
        .config(config)
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(StoreError::db)
}

fn params(args: &[Arg]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

/// A pool that stayed full past its wait is busy (503); anything else
/// (a connection that could not be opened in time included) is the
/// database failing.
fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => StoreError::Busy,
        other => StoreError::db(other),
    }
}

impl ToSql for Arg {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Arg::Text(s) => s.to_sql(ty, out),
            Arg::Null => Ok(IsNull::Yes),
            Arg::Int(n) => n.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <String as ToSql>::accepts(ty) || <i64 as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}
