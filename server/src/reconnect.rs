//! The core's PostgreSQL checkpointer keeps one connection; when it is
//! lost (a database restart, a failover, a terminated backend) every later
//! step would fail until the server restarts. Behind this gate, the next
//! call finds the connection closed and connects again: the call made
//! while it broke fails, the ones after it succeed.

use std::sync::Arc;

use agent_state::checkpoint::postgres::PostgresCheckpointer;
use agent_state::checkpoint::{BoxFuture, CheckpointError, Checkpointer, SnapshotPolicy};
use tokio::sync::Mutex;

use crate::gate::Gate;

/// The checkpointer, connected again when its connection is lost.
pub(crate) struct Reconnecting {
    url: String,
    policy: SnapshotPolicy,
    current: Mutex<Arc<PostgresCheckpointer>>,
}

impl Reconnecting {
    /// Connects to `url` (and creates the tables if needed).
    pub(crate) async fn connect(url: &str) -> Result<Self, CheckpointError> {
        let saver = PostgresCheckpointer::connect(url).await?;
        Ok(Reconnecting {
            url: url.to_owned(),
            policy: saver.snapshot_policy(),
            current: Mutex::new(Arc::new(saver)),
        })
    }
}

impl Gate for Reconnecting {
    type Inner = PostgresCheckpointer;

    fn open(
        &self,
        _operation: &'static str,
    ) -> BoxFuture<'_, Result<Arc<PostgresCheckpointer>, CheckpointError>> {
        Box::pin(async move {
            let mut current = self.current.lock().await;
            if current.client().is_closed() {
                tracing::warn!("the checkpoints' connection was lost: connecting again");
                *current = Arc::new(PostgresCheckpointer::connect(&self.url).await?);
            }
            Ok(Arc::clone(&current))
        })
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.policy
    }
}
