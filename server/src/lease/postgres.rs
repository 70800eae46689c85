//! Threads locked across servers: PostgreSQL session advisory locks, all
//! of a process's on one connection of its own (so the pool is not drained
//! by long runs, and 200 running threads cost one connection, not 200).
//!
//! The same session holds the process's own lock, keyed by its owner id:
//! PostgreSQL releases a session's locks when it ends, so when a server
//! dies (even killed) its threads are free at once, and another server
//! that can take the dead one's owner lock knows its runs will never end.
//!
//! The session also carries cancels between servers: a server asked to
//! stop a run it is not running sends a `NOTIFY` on [`CHANNEL`], and every
//! server's session, listening, hands it to the server (see
//! [`Session::cancels`]).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::store::StoreError;

/// A thread's key, in a namespace of its own (other users of advisory
/// locks in the database, as the checkpointer's schema lock, never
/// collide).
const THREAD_KEY: &str = "hashtextextended('agent-state-server/thread/' || $1, 0)";
/// A server process's key.
const OWNER_KEY: &str = "hashtextextended('agent-state-server/owner/' || $1, 0)";

/// The channel cancels travel on.
const CHANNEL: &str = "agent_state_server_cancel";

/// A cancel sent by another server: stop the thread's run `run_id`, or
/// all its runs when `None`.
#[derive(Debug)]
pub(crate) struct Cancel {
    pub thread_id: String,
    pub run_id: Option<String>,
}

/// The connection that holds this process's locks.
pub(crate) struct Session {
    url: String,
    owner: String,
    client: tokio::sync::Mutex<Arc<Client>>,
    cancels_tx: mpsc::UnboundedSender<Cancel>,
    cancels: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Cancel>>>,
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
        let (cancels_tx, cancels) = mpsc::unbounded_channel();
        let client = open(url, owner, cancels_tx.clone()).await?;
        Ok(Session {
            url: url.to_owned(),
            owner: owner.to_owned(),
            client: tokio::sync::Mutex::new(client),
            cancels_tx,
            cancels: std::sync::Mutex::new(Some(cancels)),
        })
    }

    /// The cancels other servers send, once (to the task that acts on
    /// them).
    pub(crate) fn cancels(&self) -> Option<mpsc::UnboundedReceiver<Cancel>> {
        self.cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Asks every other server to stop the thread's run `run_id` (all its
    /// runs when `None`).
    pub(crate) async fn send_cancel(
        &self,
        thread_id: &str,
        run_id: Option<&str>,
    ) -> Result<(), StoreError> {
        let payload = format!("{} {thread_id} {}", self.owner, run_id.unwrap_or("*"));
        let client = self.client().await?;
        let sql = format!("SELECT pg_notify('{CHANNEL}', $1)");
        client
            .execute(&sql, &[&payload])
            .await
            .map_err(StoreError::db)?;
        Ok(())
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
            *client = open(&self.url, &self.owner, self.cancels_tx.clone()).await?;
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

/// A new session holding `owner`'s lock and listening for cancels, which
/// go to `cancels` (but those `owner` sent itself).
async fn open(
    url: &str,
    owner: &str,
    cancels: mpsc::UnboundedSender<Cancel>,
) -> Result<Arc<Client>, StoreError> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(StoreError::db)?;
    let me = owner.to_owned();
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes.
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message {
                if let Some(cancel) = parse_cancel(n.payload(), &me) {
                    let _ = cancels.send(cancel);
                }
            }
        }
    });
    let sql = format!("SELECT pg_advisory_lock({OWNER_KEY})");
    client
        .query_one(&sql, &[&owner])
        .await
        .map_err(StoreError::db)?;
    let listen = format!("LISTEN {CHANNEL}");
    client
        .batch_execute(&listen)
        .await
        .map_err(StoreError::db)?;
    Ok(Arc::new(client))
}

/// A cancel's payload, `<sender> <thread> <run or *>`; `None` for one
/// this server sent (it stopped its own runs already) or a malformed one.
fn parse_cancel(payload: &str, me: &str) -> Option<Cancel> {
    let mut parts = payload.split(' ');
    let (sender, thread_id, run) = (parts.next()?, parts.next()?, parts.next()?);
    (sender != me).then(|| Cancel {
        thread_id: thread_id.to_owned(),
        run_id: (run != "*").then(|| run.to_owned()),
    })
}
