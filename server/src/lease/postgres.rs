//! What servers on one PostgreSQL database tell each other, on one
//! connection per process kept for it (`LISTEN` needs a session of its
//! own; the pool's connections come and go):
//!
//! * cancels: a server asked to stop a run it is not running sends a
//!   `NOTIFY` on [`CANCELS`]; every server hears it, and the one running
//!   the run stops it (rolled back when asked), see [`Session::cancels`];
//! * wakes: a run queued or a thread freed is a `NOTIFY` on
//!   [`crate::queue::WAKE`], which wakes every server's queue worker and
//!   the runs waiting for their thread, see [`Session::wakes`].
//!
//! Which server runs what is in the runs table itself (see
//! [`crate::queue`]): a run's owner and its lease, renewed while the
//! server lives, so a server that dies (or loses the database) lets its
//! runs go when their lease expires.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::queue::WAKE;
use crate::store::StoreError;

/// The channel cancels travel on.
const CANCELS: &str = "agent_state_server_cancel";

/// A cancel sent by another server: stop the thread's run `run_id`, or
/// all its runs when `None`; with `rollback`, delete them and what they
/// wrote.
#[derive(Debug)]
pub(crate) struct Cancel {
    pub thread_id: String,
    pub run_id: Option<String>,
    pub rollback: bool,
}

/// The connection this process listens on.
pub(crate) struct Session {
    url: String,
    owner: String,
    client: tokio::sync::Mutex<Arc<Client>>,
    cancels_tx: mpsc::UnboundedSender<Cancel>,
    cancels: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Cancel>>>,
    wakes: watch::Sender<u64>,
}

/// Where a listening connection hands what it hears.
#[derive(Clone)]
struct Ears {
    me: String,
    cancels: mpsc::UnboundedSender<Cancel>,
    wakes: watch::Sender<u64>,
}

impl Session {
    /// Connects and listens, as the process `owner`.
    pub(crate) async fn connect(url: &str, owner: &str) -> Result<Self, StoreError> {
        let (cancels_tx, cancels) = mpsc::unbounded_channel();
        let wakes = watch::Sender::new(0);
        let session = Session {
            url: url.to_owned(),
            owner: owner.to_owned(),
            client: tokio::sync::Mutex::new(Arc::new(
                open(url, ears(owner, &cancels_tx, &wakes)).await?,
            )),
            cancels_tx,
            cancels: std::sync::Mutex::new(Some(cancels)),
            wakes,
        };
        Ok(session)
    }

    /// The cancels other servers send, once (to the task that acts on
    /// them).
    pub(crate) fn cancels(&self) -> Option<mpsc::UnboundedReceiver<Cancel>> {
        self.cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Changes at each wake (a run queued, a thread freed, on any
    /// server, this one included).
    pub(crate) fn wakes(&self) -> watch::Receiver<u64> {
        self.wakes.subscribe()
    }

    /// Wakes this process's waiters without a round trip.
    pub(crate) fn wake_here(&self) {
        self.wakes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Asks every other server to stop the thread's run `run_id` (all its
    /// runs when `None`), rolled back when `rollback`.
    pub(crate) async fn send_cancel(
        &self,
        thread_id: &str,
        run_id: Option<&str>,
        rollback: bool,
    ) -> Result<(), StoreError> {
        let action = if rollback { "rollback" } else { "interrupt" };
        let run = run_id.unwrap_or("*");
        let payload = format!("{} {thread_id} {run} {action}", self.owner);
        self.notify(CANCELS, &payload).await
    }

    /// Wakes every server's queue worker and waiting runs.
    pub(crate) async fn send_wake(&self) -> Result<(), StoreError> {
        self.wake_here();
        self.notify(WAKE, &self.owner).await
    }

    async fn notify(&self, channel: &str, payload: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
            .await
            .map_err(StoreError::db)?;
        Ok(())
    }

    /// Opens the connection again if it was lost, so the server hears
    /// the others again (called at each heartbeat).
    pub(crate) async fn keep(&self) -> Result<(), StoreError> {
        self.client().await.map(drop)
    }

    /// The session's client, connected again if the connection was lost
    /// (what was sent meanwhile is lost; the queue's poll catches up).
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut client = self.client.lock().await;
        if client.is_closed() {
            tracing::warn!(
                "the connection that listens to the other servers was lost: opening it again"
            );
            let ears = ears(&self.owner, &self.cancels_tx, &self.wakes);
            *client = Arc::new(open(&self.url, ears).await?);
        }
        Ok(Arc::clone(&client))
    }
}

fn ears(owner: &str, cancels: &mpsc::UnboundedSender<Cancel>, wakes: &watch::Sender<u64>) -> Ears {
    Ears {
        me: owner.to_owned(),
        cancels: cancels.clone(),
        wakes: wakes.clone(),
    }
}

/// The `application_name` of a server's listening connection (what an
/// operator sees in `pg_stat_activity`).
pub(crate) const APPLICATION: &str = "agent-state-server-listen";

/// A new session listening for cancels and wakes.
async fn open(url: &str, ears: Ears) -> Result<Client, StoreError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(StoreError::db)?;
    config.application_name(APPLICATION);
    let (client, mut connection) = config.connect(NoTls).await.map_err(StoreError::db)?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes.
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            let AsyncMessage::Notification(n) = message else {
                continue;
            };
            if n.channel() == WAKE {
                ears.wakes.send_modify(|n| *n = n.wrapping_add(1));
            } else if let Some(cancel) = parse_cancel(n.payload(), &ears.me) {
                let _ = ears.cancels.send(cancel);
            }
        }
    });
    let listen = format!("LISTEN {CANCELS}; LISTEN {WAKE}");
    client
        .batch_execute(&listen)
        .await
        .map_err(StoreError::db)?;
    Ok(client)
}

/// A cancel's payload, `<sender> <thread> <run or *> <action>`; `None`
/// for one this server sent (it stopped its own runs already) or a
/// malformed one.
fn parse_cancel(payload: &str, me: &str) -> Option<Cancel> {
    let mut parts = payload.split(' ');
    let (sender, thread_id, run) = (parts.next()?, parts.next()?, parts.next()?);
    let rollback = parts.next() == Some("rollback");
    (sender != me).then(|| Cancel {
        thread_id: thread_id.to_owned(),
        run_id: (run != "*").then(|| run.to_owned()),
        rollback,
    })
}
