//! Who runs a thread now: one run per thread at a time, across every
//! server that shares the store.
//!
//! The checkpointer already keeps two writers of one thread from losing or
//! doubling a step (the second gets a conflict), but two runs of one
//! debate would both call the model and stream tokens that only one of
//! them keeps. So a request takes the thread's lease first, and a request
//! for a thread another run holds is refused (LangGraph Platform's default
//! `multitask_strategy="reject"`).
//!
//! With SQLite (one server) the leases are a set in memory. With
//! PostgreSQL they are session advisory locks, each on a connection of its
//! own: PostgreSQL releases a lock when its session ends, so a server that
//! dies (even by SIGKILL) frees its threads at once, and another server
//! can resume them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use tokio_postgres::NoTls;

/// Where the leases live.
pub enum Leases {
    /// In this process.
    Local(Arc<Mutex<HashSet<String>>>),
    /// Advisory locks in the PostgreSQL database at this connection string.
    Postgres(String),
}

/// A thread's lease, held until dropped.
pub struct Lease {
    _held: Held,
}

enum Held {
    Local {
        set: Arc<Mutex<HashSet<String>>>,
        thread: String,
    },
    /// The session holding the lock: dropping the client ends it, and
    /// PostgreSQL releases the lock.
    Postgres { _session: tokio_postgres::Client },
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::Local { set, thread } = self {
            set.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(thread.as_str());
        }
    }
}

/// The lock key of a thread: a namespace, so that other users of advisory
/// locks in the database (the checkpointer's schema lock) never collide.
const KEY_SQL: &str = "SELECT pg_try_advisory_lock(hashtextextended('debate-server/' || $1, 0))";

impl Leases {
    /// Leases in this process.
    pub fn local() -> Self {
        Leases::Local(Arc::default())
    }

    /// Takes `thread`'s lease, or `None` when another run holds it.
    pub async fn acquire(&self, thread: &str) -> Result<Option<Lease>, tokio_postgres::Error> {
        match self {
            Leases::Local(set) => {
                let fresh = set
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(thread.to_owned());
                Ok(fresh.then(|| Lease {
                    _held: Held::Local {
                        set: Arc::clone(set),
                        thread: thread.to_owned(),
                    },
                }))
            }
            Leases::Postgres(url) => {
                let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
                tokio::spawn(async move {
                    // Ends when the client is dropped (or the server goes).
                    let _ = connection.await;
                });
                let taken: bool = client.query_one(KEY_SQL, &[&thread]).await?.get(0);
                Ok(taken.then_some(Lease {
                    _held: Held::Postgres { _session: client },
                }))
            }
        }
    }
}
