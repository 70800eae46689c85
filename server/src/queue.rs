//! The run queue on PostgreSQL, in the runs table itself: which server
//! runs what, across every server on the database.
//!
//! * A run is stored `pending`. A background run (`POST
//!   /threads/{id}/runs`) is *queued*: no owner, any server's worker
//!   claims it ([`claim_next`], `FOR UPDATE SKIP LOCKED`, oldest first).
//!   A streamed or waited-for run is owned at once by the server its
//!   client talks to, which claims it itself ([`claim_own`]).
//! * A run is claimed only when it is its thread's turn: no run of the
//!   thread is `running` and none older is `pending` (so `enqueue` keeps
//!   the order runs came in); a unique index on the running run of a
//!   thread makes two claims at once impossible.
//! * An owned run carries a lease (`lease_until`, the database's clock),
//!   which its server renews for all its runs at once ([`renew`]). A run
//!   whose lease expired (its server was killed, or lost the database) is
//!   put back in the queue by any server ([`take_over`]): a run that was
//!   running with its `attempt` counted up and marked to *resume* (run on
//!   from the thread's last stored step, the steps it stored not done
//!   again), one still pending as it was.
//! * A server that stops hands its running runs back the same way,
//!   without counting an attempt ([`release`]).
//! * A queued run is cancelled in the table ([`cancel_queued`]); a claimed
//!   one through its server (see [`crate::lease::postgres`]).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tokio_postgres::error::SqlState;

use crate::ids::now;
use crate::store::postgres::PgDb;
use crate::store::{RunRow, StoreError};

/// The channel a queued run or a freed thread is announced on.
pub(crate) const WAKE: &str = "agent_state_server_queue";

/// What the queue adds to the runs table, and its indexes.
pub(crate) const SCHEMA: [&str; 8] = [
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS seq BIGSERIAL",
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS lease_until BIGINT",
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS attempt INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS queued BOOLEAN NOT NULL DEFAULT false",
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS resume BOOLEAN NOT NULL DEFAULT false",
    // The request as sent (what a worker starts the run from) and the
    // thread's head before the run wrote (what a resumed run compares).
    "ALTER TABLE server_runs ADD COLUMN IF NOT EXISTS body TEXT, ADD COLUMN IF NOT EXISTS base TEXT",
    "CREATE UNIQUE INDEX IF NOT EXISTS server_runs_one_running ON server_runs (thread_id)
    WHERE status = 'running'",
    "CREATE INDEX IF NOT EXISTS server_runs_queue ON server_runs (seq) WHERE status = 'pending'",
];

/// Now on the database's clock, in milliseconds: leases are compared on
/// one clock whatever the servers' say.
const NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// A run of the thread ahead of run `r`: running, or pending and older.
const AHEAD: &str = "EXISTS (SELECT 1 FROM server_runs o WHERE o.thread_id = r.thread_id
    AND o.run_id <> r.run_id AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq)))";

/// A queued run a worker claimed.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub run_id: String,
    pub thread_id: String,
    /// The request as it was sent.
    pub body: Value,
    /// 1, then one more at each takeover.
    pub attempt: i64,
    /// Whether it ran before (on a server that died or stopped).
    pub resume: bool,
    /// The thread's head before its first attempt wrote: `Some("")` for
    /// none, `None` when it never got that far.
    pub base: Option<String>,
}

/// Whether the database refused a second running run of a thread.
fn raced(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Stores a new run: queued for any worker (`owner` `None`), or owned by
/// `owner` under a lease of `lease`. With `reject`, only if no run of the
/// thread is pending or running (`false` then, nothing stored): checked
/// and stored under the thread's transaction lock, so of two servers
/// asked at once one stores.
pub(crate) async fn insert(
    db: &PgDb,
    row: &RunRow,
    body: &Value,
    owner: Option<&str>,
    lease: Duration,
    reject: bool,
) -> Result<bool, StoreError> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(StoreError::db)?;
    let lock =
        "SELECT pg_advisory_xact_lock(hashtextextended('agent-state-server/thread/' || $1, 0))";
    tx.execute(lock, &[&row.thread_id])
        .await
        .map_err(StoreError::db)?;
    if reject {
        let busy =
            "SELECT 1 FROM server_runs WHERE thread_id = $1 AND status IN ('pending', 'running')";
        let rows = tx
            .query(busy, &[&row.thread_id])
            .await
            .map_err(StoreError::db)?;
        if !rows.is_empty() {
            return Ok(false);
        }
    }
    let sql = format!(
        "INSERT INTO server_runs (run_id, thread_id, assistant_id, metadata, status, kwargs,
         multitask_strategy, created_at, updated_at, owner, lease_until, queued, body)
         VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $7, $8,
         CASE WHEN $9 THEN NULL ELSE {NOW_MS} + $10 END, $9, $11)"
    );
    let queued = owner.is_none();
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 11] = [
        &row.run_id,
        &row.thread_id,
        &row.assistant_id,
        &row.metadata.to_string(),
        &row.kwargs.to_string(),
        &row.multitask_strategy,
        &row.created_at,
        &owner.unwrap_or(""),
        &queued,
        &millis(lease),
        &body.to_string(),
    ];
    tx.execute(&sql, &params).await.map_err(StoreError::db)?;
    if queued {
        tx.execute("SELECT pg_notify($1, $2)", &[&WAKE, &row.run_id])
            .await
            .map_err(StoreError::db)?;
    }
    tx.commit().await.map_err(StoreError::db)?;
    Ok(true)
}

/// What became of a server's own pending run it tried to claim.
#[derive(Debug, PartialEq)]
pub(crate) enum Own {
    /// It is running, on this server.
    Running,
    /// Its thread is busy: wait.
    Wait,
    /// It is no longer this server's pending run (cancelled, deleted, or
    /// taken over).
    Gone,
}

/// Claims `owner`'s pending run `run_id` if it is its thread's turn.
pub(crate) async fn claim_own(
    db: &PgDb,
    owner: &str,
    run_id: &str,
    lease: Duration,
) -> Result<Own, StoreError> {
    let client = db.client().await?;
    let sql = format!(
        "UPDATE server_runs r SET status = 'running', lease_until = {NOW_MS} + $3, updated_at = $4
         WHERE r.run_id = $1 AND r.owner = $2 AND r.status = 'pending' AND NOT {AHEAD}"
    );
    let claimed = client
        .execute(&sql, &[&run_id, &owner, &millis(lease), &now()])
        .await;
    match claimed {
        Ok(1) => return Ok(Own::Running),
        Ok(_) => {}
        Err(e) if raced(&e) => return Ok(Own::Wait),
        Err(e) => return Err(StoreError::db(e)),
    }
    let still = "SELECT 1 FROM server_runs WHERE run_id = $1 AND owner = $2 AND status = 'pending'";
    let rows = client
        .query(still, &[&run_id, &owner])
        .await
        .map_err(StoreError::db)?;
    Ok(if rows.is_empty() {
        Own::Gone
    } else {
        Own::Wait
    })
}

/// Claims for `owner` the oldest queued run whose thread is free.
pub(crate) async fn claim_next(
    db: &PgDb,
    owner: &str,
    lease: Duration,
) -> Result<Option<Claimed>, StoreError> {
    let client = db.client().await?;
    let sql = format!(
        "UPDATE server_runs SET status = 'running', owner = $1, lease_until = {NOW_MS} + $2,
         updated_at = $3
         WHERE status = 'pending' AND run_id = (SELECT r.run_id FROM server_runs r
           WHERE r.status = 'pending' AND r.queued AND NOT {AHEAD}
           ORDER BY r.seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING run_id, thread_id, body, attempt::bigint, resume, base"
    );
    let rows = match client.query(&sql, &[&owner, &millis(lease), &now()]).await {
        Ok(rows) => rows,
        Err(e) if raced(&e) => return Ok(None),
        Err(e) => return Err(StoreError::db(e)),
    };
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let body: Option<String> = row.try_get(2).map_err(StoreError::db)?;
    Ok(Some(Claimed {
        run_id: row.try_get(0).map_err(StoreError::db)?,
        thread_id: row.try_get(1).map_err(StoreError::db)?,
        body: body
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or(Value::Null),
        attempt: row.try_get(3).map_err(StoreError::db)?,
        resume: row.try_get(4).map_err(StoreError::db)?,
        base: row.try_get(5).map_err(StoreError::db)?,
    }))
}

/// Renews the lease of every unfinished run `owner` holds: how many.
pub(crate) async fn renew(
    db: &PgDb,
    owner: &str,
    lease: Duration,
) -> Result<HashSet<String>, StoreError> {
    let client = db.client().await?;
    let sql = format!(
        "UPDATE server_runs SET lease_until = {NOW_MS} + $2
         WHERE owner = $1 AND status IN ('pending', 'running') RETURNING run_id"
    );
    let rows = client
        .query(&sql, &[&owner, &millis(lease)])
        .await
        .map_err(StoreError::db)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Puts back in the queue the runs whose lease expired (or that never
/// had one: left by a server of a version before the queue): a running
/// one to resume, its attempt counted up. How many.
pub(crate) async fn take_over(db: &PgDb) -> Result<u64, StoreError> {
    let client = db.client().await?;
    let sql = format!(
        "UPDATE server_runs SET resume = resume OR status = 'running',
         attempt = attempt + CASE WHEN status = 'running' THEN 1 ELSE 0 END,
         status = 'pending', owner = '', lease_until = NULL, queued = true, updated_at = $1
         WHERE run_id IN (SELECT run_id FROM server_runs
           WHERE status IN ('pending', 'running') AND owner <> ''
           AND (lease_until IS NULL OR lease_until < {NOW_MS})
           FOR UPDATE SKIP LOCKED)"
    );
    client
        .execute(&sql, &[&now()])
        .await
        .map_err(StoreError::db)
}

/// Hands `owner`'s running run back to the queue, to resume elsewhere
/// (a server that stops): no attempt is counted. `false` when it was not
/// `owner`'s running run any more.
pub(crate) async fn release(db: &PgDb, owner: &str, run_id: &str) -> Result<bool, StoreError> {
    let client = db.client().await?;
    let sql = "UPDATE server_runs SET status = 'pending', owner = '', lease_until = NULL,
         queued = true, resume = true, updated_at = $3
         WHERE run_id = $1 AND owner = $2 AND status = 'running'";
    let n = client
        .execute(sql, &[&run_id, &owner, &now()])
        .await
        .map_err(StoreError::db)?;
    Ok(n == 1)
}

/// Records the thread's head before the run's first attempt wrote (`""`
/// for none); a resumed run keeps the first.
pub(crate) async fn set_base(db: &PgDb, run_id: &str, base: &str) -> Result<(), StoreError> {
    let client = db.client().await?;
    let sql = "UPDATE server_runs SET base = COALESCE(base, $2) WHERE run_id = $1";
    client
        .execute(sql, &[&run_id, &base])
        .await
        .map_err(StoreError::db)?;
    Ok(())
}

/// Cancels the thread's queued runs no server has claimed (`run_id`
/// only, when given): marked `interrupted`, or deleted with `rollback`.
/// The ids cancelled.
pub(crate) async fn cancel_queued(
    db: &PgDb,
    thread_id: &str,
    run_id: Option<&str>,
    rollback: bool,
) -> Result<Vec<String>, StoreError> {
    let client = db.client().await?;
    let which = "thread_id = $1 AND (CAST($2 AS TEXT) IS NULL OR run_id = $2)
        AND status = 'pending' AND owner = ''";
    let sql = match rollback {
        true => format!("DELETE FROM server_runs WHERE {which} AND $3 <> '' RETURNING run_id"),
        false => format!(
            "UPDATE server_runs SET status = 'interrupted', updated_at = $3
             WHERE {which} RETURNING run_id"
        ),
    };
    let rows = client
        .query(&sql, &[&thread_id, &run_id, &now()])
        .await
        .map_err(StoreError::db)?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(StoreError::db))
        .collect()
}

/// The thread's unfinished runs stored before run `run_id` (what its
/// `interrupt` or `rollback` strategy stops), on any server.
pub(crate) async fn runs_before(
    db: &PgDb,
    thread_id: &str,
    run_id: &str,
) -> Result<Vec<String>, StoreError> {
    let client = db.client().await?;
    let sql = "SELECT run_id FROM server_runs WHERE thread_id = $1
        AND status IN ('pending', 'running')
        AND seq < (SELECT seq FROM server_runs WHERE run_id = $2) ORDER BY seq";
    let rows = client
        .query(sql, &[&thread_id, &run_id])
        .await
        .map_err(StoreError::db)?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(StoreError::db))
        .collect()
}

/// Whether a run of the thread is running, on any server.
pub(crate) async fn running(db: &PgDb, thread_id: &str) -> Result<bool, StoreError> {
    let client = db.client().await?;
    let sql = "SELECT 1 FROM server_runs WHERE thread_id = $1 AND status = 'running'";
    let rows = client
        .query(sql, &[&thread_id])
        .await
        .map_err(StoreError::db)?;
    Ok(!rows.is_empty())
}
