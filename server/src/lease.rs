//! Whose turn a thread is, on SQLite: one run at a time per thread, a
//! lock per thread in this process (one server owns the file). On
//! PostgreSQL the runs table itself says whose turn it is, across every
//! server (see [`crate::queue`]), and [`postgres`] is how the servers
//! tell each other of cancels and of runs to take.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

use crate::store::StoreError;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;

/// The threads' locks.
#[derive(Default)]
pub(crate) struct Leases {
    local: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The session that hears the other servers (cancels and wakes), on
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    shared: Option<postgres::Session>,
}

/// A thread's turn, held until dropped.
pub(crate) struct Lease {
    _local: OwnedMutexGuard<()>,
}

impl Leases {
    /// Runs on PostgreSQL, telling the other servers through `session`.
    #[cfg(feature = "postgres")]
    pub(crate) fn shared(session: postgres::Session) -> Self {
        Leases {
            local: Mutex::default(),
            shared: Some(session),
        }
    }

    /// The session that talks to the other servers, on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub(crate) fn session(&self) -> Option<&postgres::Session> {
        self.shared.as_ref()
    }

    fn local_lock(&self, thread_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.local.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(thread_id.to_owned()).or_default())
    }

    /// The thread's turn if no run of this process holds it, `None` if
    /// one does.
    pub(crate) async fn try_take(&self, thread_id: &str) -> Result<Option<Lease>, StoreError> {
        let local = self.local_lock(thread_id).try_lock_owned().ok();
        Ok(local.map(|l| Lease { _local: l }))
    }

    /// The thread's turn, once this process's runs before it are done.
    /// Cancelled by dropping it.
    pub(crate) async fn take(&self, thread_id: &str) -> Result<Lease, StoreError> {
        let local = self.local_lock(thread_id).lock_owned().await;
        Ok(Lease { _local: local })
    }

    /// Forgets a deleted thread's lock.
    pub(crate) fn forget(&self, thread_id: &str) {
        let mut locks = self.local.lock().unwrap_or_else(|e| e.into_inner());
        locks.remove(thread_id);
    }
}
