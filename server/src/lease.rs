//! Whose turn a thread is: one run at a time per thread, in this process
//! (a lock per thread) and, on PostgreSQL, across every server on the
//! database (an advisory lock, see [`postgres`]).

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
    /// The session holding this process's advisory locks, on PostgreSQL.
    #[cfg(feature = "postgres")]
    shared: Option<postgres::Session>,
}

/// A thread's turn, held until dropped.
pub(crate) struct Lease {
    // Dropped first: the other servers may take the thread before the
    // runs queued here, as they would without a local lock.
    #[cfg(feature = "postgres")]
    _shared: Option<postgres::Held>,
    _local: OwnedMutexGuard<()>,
}

/// How often a run queued for a thread another server runs asks again.
#[cfg(feature = "postgres")]
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

impl Leases {
    /// Locks across servers through `session` as well as in this process.
    #[cfg(feature = "postgres")]
    pub(crate) fn shared(session: postgres::Session) -> Self {
        Leases {
            local: Mutex::default(),
            shared: Some(session),
        }
    }

    /// The advisory-lock session, on PostgreSQL.
    #[cfg(feature = "postgres")]
    pub(crate) fn session(&self) -> Option<&postgres::Session> {
        self.shared.as_ref()
    }

    fn local_lock(&self, thread_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.local.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(locks.entry(thread_id.to_owned()).or_default())
    }

    /// The thread's turn if no run holds it, `None` if one does.
    pub(crate) async fn try_take(&self, thread_id: &str) -> Result<Option<Lease>, StoreError> {
        let Ok(local) = self.local_lock(thread_id).try_lock_owned() else {
            return Ok(None);
        };
        #[cfg(feature = "postgres")]
        if let Some(session) = &self.shared {
            let Some(held) = session.try_lock(thread_id).await? else {
                return Ok(None);
            };
            return Ok(Some(Lease {
                _shared: Some(held),
                _local: local,
            }));
        }
        Ok(Some(Lease {
            #[cfg(feature = "postgres")]
            _shared: None,
            _local: local,
        }))
    }

    /// The thread's turn, once the runs before it are done (here first,
    /// then on the other servers). Cancelled by dropping it.
    pub(crate) async fn take(&self, thread_id: &str) -> Result<Lease, StoreError> {
        let local = self.local_lock(thread_id).lock_owned().await;
        #[cfg(feature = "postgres")]
        if let Some(session) = &self.shared {
            loop {
                if let Some(held) = session.try_lock(thread_id).await? {
                    return Ok(Lease {
                        _shared: Some(held),
                        _local: local,
                    });
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(Lease {
            #[cfg(feature = "postgres")]
            _shared: None,
            _local: local,
        })
    }

    /// Forgets a deleted thread's lock.
    pub(crate) fn forget(&self, thread_id: &str) {
        let mut locks = self.local.lock().unwrap_or_else(|e| e.into_inner());
        locks.remove(thread_id);
    }
}
