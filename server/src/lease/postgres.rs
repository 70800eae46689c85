//! Threads locked across servers: PostgreSQL session advisory locks, all
//! of a process's on one connection of its own (so the pool is not drained
//! by long runs, and 200 running threads cost one connection, not 200).
//!
//! The same session holds the process's own lock, keyed by its owner id:
//! PostgreSQL releases a session's locks when it ends, so when a server
//! dies (even killed) its threads are free at once, and another server
//! that can take the dead one's owner lock knows its runs will never end.

use std::sync::Arc;

use tokio_postgres::{Client, NoTls};

use crate::store::StoreError;

/// A thread's key, in a namespace of its own (other users of advisory
/// locks in the database, as the checkpointer's schema lock, never
/// collide).
const THREAD_KEY: &str = "hashtextextended('agent-state-server/thread/' || $1, 0)";
/// A server process's key.
const OWNER_KEY: &str = "hashtextextended('agent-state-server/owner/' || $1, 0)";

/// The connection that holds this process's locks.
pub(crate) struct Session {
    url: String,
    owner: String,
    client: tokio::sync::Mutex<Arc<Client>>,
}

/// A thread's advisory lock, released when dropped.
pub(crate) struct Held {
    client: Arc<Client>,
    thread_id: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let (client, thread_id) = (
            Arc::clone(&self.client),
            std::mem::take(&mut self.thread_id),
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let sql = format!("SELECT pg_advisory_unlock({THREAD_KEY})");
            // A session that ended has released it already.
            if let Err(e) = client.query_one(&sql, &[&thread_id]).await {
                tracing::warn!(%thread_id, error = %e, "could not release a thread's lock");
            }
        });
    }
}

impl Session {
    /// Connects and takes the lock that says `owner` is alive.
    pub(crate) async fn connect(url: &str, owner: &str) -> Result<Self, StoreError> {
        let client = open(url, owner).await?;
        Ok(Session {
            url: url.to_owned(),
            owner: owner.to_owned(),
            client: tokio::sync::Mutex::new(client),
        })
    }

    /// The session's client, connected again if the connection was lost
    /// (the locks it held went with it, which is logged).
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut client = self.client.lock().await;
        if client.is_closed() {
            tracing::error!(
                "the connection holding the threads' locks was lost: their runs no longer \
                 exclude other servers' until they end"
            );
            *client = open(&self.url, &self.owner).await?;
        }
        Ok(Arc::clone(&client))
    }

    /// The thread's lock if no other server holds it. The query runs in a
    /// task of its own, so a caller that gives up mid-way (a cancelled
    /// queued run) never leaves a lock taken and unowned.
    pub(crate) async fn try_lock(&self, thread_id: &str) -> Result<Option<Held>, StoreError> {
        let client = self.client().await?;
        let thread_id = thread_id.to_owned();
        let task = tokio::spawn(async move {
            let sql = format!("SELECT pg_try_advisory_lock({THREAD_KEY})");
            let row = client.query_one(&sql, &[&thread_id]).await;
            let taken: bool = row.and_then(|r| r.try_get(0)).map_err(StoreError::db)?;
            Ok(taken.then_some(Held { client, thread_id }))
        });
        task.await.map_err(StoreError::db)?
    }

    /// Whether server `owner` is gone: its session no longer holds its
    /// lock.
    pub(crate) async fn is_dead(&self, owner: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT pg_try_advisory_lock({OWNER_KEY})");
        let taken: bool = client
            .query_one(&sql, &[&owner])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(StoreError::db)?;
        if taken {
            let sql = format!("SELECT pg_advisory_unlock({OWNER_KEY})");
            client
                .query_one(&sql, &[&owner])
                .await
                .map_err(StoreError::db)?;
        }
        Ok(taken)
    }
}

/// A new session holding `owner`'s lock.
async fn open(url: &str, owner: &str) -> Result<Arc<Client>, StoreError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(StoreError::db)?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes.
        let _ = connection.await;
    });
    let sql = format!("SELECT pg_advisory_lock({OWNER_KEY})");
    client
        .query_one(&sql, &[&owner])
        .await
        .map_err(StoreError::db)?;
    Ok(Arc::new(client))
}
