//! Threads' time-to-live, in a table of its own beside `server_threads`
//! (so a database made before it gains it on open, and nothing else
//! changes): the strategy, the TTL, and when the thread expires, in
//! milliseconds since the Unix epoch so both databases compare it.

use super::{text0, Store, StoreError};

/// The table and its index, in both databases' SQL; each idempotent.
pub(crate) const TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS server_thread_ttl (
    thread_id TEXT PRIMARY KEY, strategy TEXT NOT NULL, minutes TEXT NOT NULL,
    ttl_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS server_thread_ttl_expiry ON server_thread_ttl (expires_at_ms)",
];

/// A thread's TTL as stored.
pub(crate) struct TtlRow {
    /// `delete` or `keep_latest`.
    pub strategy: String,
    /// The TTL in minutes, as the client gave it.
    pub minutes: f64,
    /// When it expires (ms since the epoch).
    pub expires_at_ms: i64,
}

impl Store {
    /// Sets a thread's TTL, from `now_ms` on (replacing one set before).
    pub(crate) async fn set_ttl(
        &self,
        thread_id: &str,
        strategy: &str,
        minutes: f64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let replace = "DO UPDATE SET strategy = excluded.strategy, minutes = excluded.minutes,
             ttl_ms = excluded.ttl_ms, expires_at_ms = excluded.expires_at_ms";
        self.insert_ttl(thread_id, strategy, minutes, now_ms, replace)
            .await
    }

    /// Sets the TTL of a thread that has none (the server's default).
    pub(crate) async fn default_ttl(
        &self,
        thread_id: &str,
        strategy: &str,
        minutes: f64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.insert_ttl(thread_id, strategy, minutes, now_ms, "DO NOTHING")
            .await
    }

    /// Inserts a thread's TTL row; `on_conflict` says what an existing
    /// one becomes.
    async fn insert_ttl(
        &self,
        thread_id: &str,
        strategy: &str,
        minutes: f64,
        now_ms: i64,
        on_conflict: &str,
    ) -> Result<(), StoreError> {
        let ttl_ms = minutes_ms(minutes);
        let args = vec![
            thread_id.into(),
            strategy.into(),
            minutes.to_string().into(),
            ttl_ms.into(),
            now_ms.saturating_add(ttl_ms).into(),
        ];
        let sql = format!(
            "INSERT INTO server_thread_ttl VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (thread_id) {on_conflict}"
        );
        self.db.execute(&sql, args).await?;
        Ok(())
    }

    /// Starts a thread's TTL again from `now_ms` (a run on it); nothing
    /// for a thread without one.
    pub(crate) async fn refresh_ttl(&self, thread_id: &str, now_ms: i64) -> Result<(), StoreError> {
        self.db
            .execute(
                "UPDATE server_thread_ttl SET expires_at_ms = $2 + ttl_ms WHERE thread_id = $1",
                vec![thread_id.into(), now_ms.into()],
            )
            .await?;
        Ok(())
    }

    /// The thread's TTL, if it has one.
    pub(crate) async fn ttl(&self, thread_id: &str) -> Result<Option<TtlRow>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT strategy, minutes, CAST(expires_at_ms AS TEXT)
                 FROM server_thread_ttl WHERE thread_id = $1",
                vec![thread_id.into()],
            )
            .await?;
        Ok(rows.into_iter().next().map(|row| {
            let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            TtlRow {
                strategy: text(0),
                minutes: text(1).parse().unwrap_or(0.0),
                expires_at_ms: text(2).parse().unwrap_or(0),
            }
        }))
    }

    /// Up to `limit` threads expired at `now_ms`, the longest expired
    /// first, with their strategies.
    pub(crate) async fn expired(
        &self,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT thread_id, strategy FROM server_thread_ttl
                 WHERE expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2",
                vec![now_ms.into(), limit.into()],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let strategy = row.get(1).cloned().flatten().unwrap_or_default();
                (text0(row), strategy)
            })
            .collect())
    }

    /// Forgets a deleted thread's TTL.
    pub(crate) async fn delete_ttl(&self, thread_id: &str) -> Result<(), StoreError> {
        self.db
            .execute(
                "DELETE FROM server_thread_ttl WHERE thread_id = $1",
                vec![thread_id.into()],
            )
            .await?;
        Ok(())
    }
}

/// `minutes` in milliseconds (a TTL is a number of minutes, fractions
/// allowed).
fn minutes_ms(minutes: f64) -> i64 {
    // Validated positive and finite before; `as` saturates at i64::MAX.
    (minutes * 60_000.0).round() as i64
}
