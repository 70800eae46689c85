//! Wakes the followers of a run's stored events when more are written:
//! one connection per server `LISTEN`s to the channel every writer
//! notifies (the payload only `<run id> <last id> <thread id>`, far below
//! PostgreSQL's 8000-byte limit), and wakes the followers of that run,
//! and those of any run of that thread (a thread-protocol stream, which
//! follows runs that start after it).
//! A lost connection is opened again (every follower is woken then, to
//! read what it may have missed); followers also read every
//! [`POLL`](super::postgres::POLL) whatever happens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel runs' events are announced on.
const CHANNEL: &str = "agent_state_server_events";

/// How long to wait before connecting again.
const RETRY: Duration = Duration::from_secs(1);

/// The followers waiting on this server, by run.
pub(crate) struct Listener {
    url: String,
    waiting: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Dropped with the listener: its connection closes.
    _stop: watch::Sender<()>,
}

/// A follower's wake-ups for one run (or one thread's runs).
pub(crate) struct Wake {
    listener: Arc<Listener>,
    /// The run id, or `thread:` and the thread id.
    key: String,
    rx: watch::Receiver<u64>,
}

impl Wake {
    /// Marks every notification so far seen.
    pub(crate) fn seen(&mut self) {
        self.rx.borrow_and_update();
    }

    /// Returns at the next notification of the run (never, once the
    /// listener is gone).
    pub(crate) async fn next(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        let mut waiting = self.listener.waiting();
        // This follower's receiver is the last of the run's.
        if waiting
            .get(&self.key)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            waiting.remove(&self.key);
        }
    }
}

impl Listener {
    /// Listens on the database at `url`, as long as the listener lives.
    pub(crate) fn start(url: &str) -> Arc<Self> {
        let (stop, stopped) = watch::channel(());
        let listener = Arc::new(Listener {
            url: url.to_owned(),
            waiting: Mutex::default(),
            _stop: stop,
        });
        tokio::spawn(keep_listening(Arc::downgrade(&listener), stopped));
        listener
    }

    /// Wakes for run `run_id`'s notifications.
    pub(crate) fn subscribe(self: &Arc<Self>, run_id: &str) -> Wake {
        self.wake_for(run_id.to_owned())
    }

    /// Wakes for the notifications of any run of thread `thread_id`.
    pub(crate) fn subscribe_thread(self: &Arc<Self>, thread_id: &str) -> Wake {
        self.wake_for(format!("thread:{thread_id}"))
    }

    fn wake_for(self: &Arc<Self>, key: String) -> Wake {
        let mut waiting = self.waiting();
        let tx = waiting
            .entry(key.clone())
            .or_insert_with(|| watch::channel(0).0);
        Wake {
            listener: Arc::clone(self),
            key,
            rx: tx.subscribe(),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<u64>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the followers of the run a payload names, and of its thread.
    fn notified(&self, payload: &str) {
        let mut parts = payload.split(' ');
        let run_id = parts.next().unwrap_or_default();
        let thread = parts.nth(1).map(|t| format!("thread:{t}"));
        let waiting = self.waiting();
        for key in std::iter::once(run_id).chain(thread.as_deref()) {
            if let Some(tx) = waiting.get(key) {
                tx.send_modify(|n| *n += 1);
            }
        }
    }

    /// Wakes every follower (notifications may have been missed).
    fn wake_all(&self) {
        for tx in self.waiting().values() {
            tx.send_modify(|n| *n += 1);
        }
    }
}

/// Connects, listens, and connects again when the connection is lost,
/// until the listener is dropped.
async fn keep_listening(listener: Weak<Listener>, mut stopped: watch::Receiver<()>) {
    loop {
        let Some(url) = listener.upgrade().map(|l| l.url.clone()) else {
            return;
        };
        tokio::select! {
            () = listen_once(&listener, &url) => {}
            _ = stopped.changed() => return,
        }
        if let Some(l) = listener.upgrade() {
            l.wake_all();
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// One connection's life: `LISTEN`, then notifications until it ends.
async fn listen_once(listener: &Weak<Listener>, url: &str) {
    let (client, mut connection) = match tokio_postgres::connect(url, NoTls).await {
        Ok(pair) => pair,
        Err(e) => return tracing::warn!(error = %e, "could not connect to hear of runs' events"),
    };
    let drive = async {
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            let (AsyncMessage::Notification(n), Some(l)) = (message, listener.upgrade()) else {
                continue;
            };
            l.notified(n.payload());
        }
    };
    tokio::pin!(drive);
    let sql = format!("LISTEN {CHANNEL}");
    let listen = client.batch_execute(&sql);
    tokio::select! {
        listened = listen => if let Err(e) = listened {
            return tracing::warn!(error = %e, "could not listen for runs' events");
        },
        () = &mut drive => return,
    }
    // Whatever was written before the LISTEN took effect is read by the
    // followers woken now.
    if let Some(l) = listener.upgrade() {
        l.wake_all();
    }
    drive.await;
    tracing::warn!("the connection that hears of runs' events was lost");
}
