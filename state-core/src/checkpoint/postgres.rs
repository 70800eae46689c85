//! Checkpoints in PostgreSQL, for deployments of several instances sharing
//! threads (LangGraph's `PostgresSaver`). Feature `postgres`; needs a Tokio
//! runtime, which drives the connection.
//!
//! Every change is one SQL statement, so it is atomic without an explicit
//! transaction, and instances never lose each other's steps: saving a step
//! is an `UPDATE .. WHERE head = <expected>` on the thread's row (a
//! compare-and-swap, serialized by the row lock) whose result feeds the
//! `INSERT` of the step's record. A writer whose head moved gets
//! [`CheckpointError::Conflict`] and nothing is stored.
//!
//! [`truncate_after`](Checkpointer::truncate_after) is one statement too:
//! the thread's row moves its head back (if it is still the head the
//! statement read) and the records after it go with their pending writes.
//!
//! The tables, as in the SQLite file (`\d agent_state_checkpoints` in
//! `psql`): `agent_state_threads(thread_id, head, last_id, retired)` (`head`
//! 0 once a truncation took every record off; `retired` the highest id a
//! truncation took off, which the next id passes),
//! `agent_state_checkpoints(thread_id, id, parent_id, step, source, version,
//! created_at_ms, writes, log_bytes, base_bytes, snapshot)` with `writes` and
//! `snapshot` as `jsonb`, so `SELECT writes->0->'update' FROM
//! agent_state_checkpoints` reads a node's update, and
//! `agent_state_pending(thread_id, checkpoint_id, task, key, value)`, the
//! [pending writes](super::PendingWrite) of supersteps not saved yet.
//!
//! ```no_run
//! use agent_state::checkpoint::postgres::PostgresCheckpointer;
//! use agent_state::checkpoint::{Source, Thread};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Counter {
//!     #[reducer(append)]
//!     seen: Vec<u32>,
//! }
//!
//! # async fn run() -> Result<(), agent_state::checkpoint::CheckpointError> {
//! // Inside a Tokio runtime:
//! let saver = PostgresCheckpointer::connect("host=/run/postgresql user=postgres").await?;
//! let mut thread = Thread::<Counter, _>::open(&saver, "t").await?;
//! thread.save_step(Source::Loop, [("n", CounterUpdate::new().add_seen(1))]).await?;
//! # Ok(())
//! # }
//! ```

use std::error::Error;
use std::fmt;

use serde_json::Value;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::codec::held_content;
use super::record::{
    CheckpointId, CheckpointMeta, NewCheckpoint, PendingWrite, SnapshotPolicy, StoredCheckpoint,
};
use super::sql::{from_sql, to_sql, Columns, RawRow};
use super::{
    check_thread_id, children_range, lost_parent, now_ms, BoxFuture, CheckpointError, Checkpointer,
};
use crate::error::{ErrorKind, StateError};
use crate::storable::holds_nul;

/// Taken while creating the tables, so instances starting together do not
/// race on `CREATE TABLE IF NOT EXISTS`.
const SCHEMA_LOCK: i64 = 0x6167_656e_7473;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_state_threads (
    thread_id TEXT PRIMARY KEY,
    head      BIGINT NOT NULL,
    last_id   BIGINT NOT NULL,
    retired   BIGINT NOT NULL DEFAULT 0
);
-- A table made before truncation existed gains the column; looked up
-- first, since ALTER TABLE locks the table even when it has the column.
DO $$ BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_attribute
        WHERE attrelid = 'agent_state_threads'::regclass AND attname = 'retired'
          AND NOT attisdropped
    ) THEN
        ALTER TABLE agent_state_threads ADD COLUMN retired BIGINT NOT NULL DEFAULT 0;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS agent_state_checkpoints (
    thread_id     TEXT    NOT NULL,
    id            BIGINT  NOT NULL,
    parent_id     BIGINT,
    step          BIGINT  NOT NULL,
    source        TEXT    NOT NULL,
    version       BIGINT  NOT NULL,
    created_at_ms BIGINT  NOT NULL,
    writes        JSONB   NOT NULL,
    log_bytes     BIGINT  NOT NULL,
    base_bytes    BIGINT  NOT NULL,
    snapshot      JSONB,
    PRIMARY KEY (thread_id, id)
);
CREATE TABLE IF NOT EXISTS agent_state_pending (
    thread_id     TEXT   NOT NULL,
    checkpoint_id BIGINT NOT NULL,
    task          TEXT   NOT NULL,
    key           TEXT   NOT NULL,
    value         JSONB  NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task, key)
);
";

/// Stores a batch of pending writes in one statement (whole or not at
/// all), only for a checkpoint that exists; a later write of one task and
/// key replaces the earlier.
const PUT_PENDING: &str = "
INSERT INTO agent_state_pending (thread_id, checkpoint_id, task, key, value)
SELECT $1::text, $2::bigint, w.task, w.key, w.value::jsonb
FROM unnest($3::text[], $4::text[], $5::text[]) AS w(task, key, value)
WHERE EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = $1 AND id = $2)
ON CONFLICT (thread_id, checkpoint_id, task, key) DO UPDATE SET value = EXCLUDED.value
RETURNING 1";

const PENDING: &str = "
SELECT task, key, value::text FROM agent_state_pending
WHERE thread_id = $1 AND checkpoint_id = $2 ORDER BY task, key";

const COLUMNS: &str = "c.thread_id, c.id, c.parent_id, c.step, c.source, c.version, c.created_at_ms, c.writes::text, c.log_bytes, c.base_bytes";

const INSERT_SELECT: &str = "
INSERT INTO agent_state_checkpoints
    (thread_id, id, parent_id, step, source, version, created_at_ms, writes, log_bytes, base_bytes, snapshot)
SELECT $1::text, t.last_id, $2::bigint, $3::bigint, $4::text, $5::bigint, $6::bigint,
       $7::text::jsonb, $8::bigint, $9::bigint, $10::text::jsonb
FROM t RETURNING id";

/// [`Checkpointer::truncate_after`] as one statement (`$2`: the id kept,
/// 0 for none). The thread's row moves only if its head is still the one
/// the statement's snapshot read, so the deletes, which see that snapshot,
/// cannot miss a record a racing append stored; the last two columns say
/// why nothing moved (no thread, or `$2` not in it; else a race), the
/// first of them being the head the statement read.
const TRUNCATE: &str = "
WITH seen AS (SELECT head FROM agent_state_threads WHERE thread_id = $1),
kept AS (
    SELECT $2::bigint = 0
        OR EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = $1 AND id = $2) AS ok
),
t AS (
    UPDATE agent_state_threads
    SET head = $2, last_id = $2, retired = greatest(retired, last_id)
    WHERE thread_id = $1 AND head = (SELECT head FROM seen) AND (SELECT ok FROM kept)
    RETURNING 1
),
c AS (
    DELETE FROM agent_state_checkpoints
    WHERE thread_id = $1 AND id > $2 AND EXISTS (SELECT 1 FROM t) RETURNING 1
),
p AS (
    DELETE FROM agent_state_pending
    WHERE thread_id = $1 AND checkpoint_id > $2 AND EXISTS (SELECT 1 FROM t)
)
SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM c),
       (SELECT head FROM seen), (SELECT ok FROM kept)";

/// [`Checkpointer::drop_before`] as one statement, so nothing is
/// half-applied: `$2` the oldest record kept; `$3`, `$4`, `$5` the
/// snapshots given (ids, texts, sizes). The changes happen only if the
/// checks pass; the last four columns say which failed.
const DROP_BEFORE: &str = "
WITH given AS (
    SELECT * FROM unnest($3::bigint[], $4::text[], $5::bigint[]) AS g(id, snapshot, bytes)
),
checks AS (
    SELECT EXISTS (SELECT 1 FROM agent_state_checkpoints WHERE thread_id = $1 AND id = $2) AS found,
        (SELECT min(g.id) FROM given g WHERE g.id < $2 OR NOT EXISTS
            (SELECT 1 FROM agent_state_checkpoints c WHERE c.thread_id = $1 AND c.id = g.id)) AS missing,
        (SELECT array[c.id, c.parent_id] FROM agent_state_checkpoints c
         WHERE c.thread_id = $1 AND c.id >= $2 AND c.parent_id < $2 AND c.snapshot IS NULL
           AND c.id NOT IN (SELECT id FROM given) ORDER BY c.id LIMIT 1) AS orphan
),
ok AS (SELECT found AND missing IS NULL AND orphan IS NULL AS ok FROM checks),
kept AS (
    UPDATE agent_state_checkpoints c SET
        snapshot = coalesce((SELECT g.snapshot::jsonb FROM given g WHERE g.id = c.id), c.snapshot),
        log_bytes = CASE WHEN c.id IN (SELECT id FROM given) THEN 0 ELSE c.log_bytes END,
        base_bytes = coalesce((SELECT g.bytes FROM given g WHERE g.id = c.id), c.base_bytes),
        parent_id = CASE WHEN c.parent_id < $2 THEN NULL ELSE c.parent_id END
    WHERE c.thread_id = $1 AND c.id >= $2 AND (SELECT ok FROM ok)
      AND (c.parent_id < $2 OR c.id IN (SELECT id FROM given))
),
gone AS (
    DELETE FROM agent_state_checkpoints
    WHERE thread_id = $1 AND id < $2 AND (SELECT ok FROM ok) RETURNING 1
),
writes AS (
    DELETE FROM agent_state_pending
    WHERE thread_id = $1 AND checkpoint_id < $2 AND (SELECT ok FROM ok)
)
SELECT (SELECT count(*) FROM gone), found, missing, orphan FROM checks";

/// [`Checkpointer::collect_pending`]: the writes of every checkpoint
/// that has a child, found from the writes (few, near the head) through
/// the key's range above them, so a long history is not scanned.
const COLLECT_PENDING: &str = "
DELETE FROM agent_state_pending p WHERE p.thread_id = $1 AND EXISTS
    (SELECT 1 FROM agent_state_checkpoints c
     WHERE c.thread_id = $1 AND c.id > p.checkpoint_id AND c.parent_id = p.checkpoint_id)";

/// [`Checkpointer::delete_children`] as one statement: the threads whose
/// ids are in [`children_range`] (`$1` to `$2`, excluded), how many.
const DELETE_CHILDREN: &str = "
WITH t AS (DELETE FROM agent_state_threads WHERE thread_id >= $1 AND thread_id < $2 RETURNING 1),
     c AS (DELETE FROM agent_state_checkpoints WHERE thread_id >= $1 AND thread_id < $2),
     p AS (DELETE FROM agent_state_pending WHERE thread_id >= $1 AND thread_id < $2)
SELECT count(*) FROM t";

/// How often [`Checkpointer::truncate_after`] tries again after an append
/// moved the head under it, before it reports the conflict.
const TRUNCATE_TRIES: usize = 3;

struct Statements {
    append_new: Statement,
    append_next: Statement,
    head_id: Statement,
    head: Statement,
    chain: Statement,
    list: Statement,
    snapshot: Statement,
    delete: Statement,
    truncate: Statement,
    put_pending: Statement,
    pending: Statement,
    drop_before: Statement,
    collect_pending: Statement,
    delete_children: Statement,
}

impl Statements {
    /// Every statement the checkpointer runs, prepared once on `client`.
    async fn prepare(client: &Client) -> Result<Self, CheckpointError> {
        let prepare =
            |sql: String| async move { client.prepare(&sql).await.map_err(pg_err("prepare")) };
        Ok(Statements {
            append_new: prepare(format!(
                // A thread a truncation emptied (head 0) starts again
                // past every id it gave out.
                "WITH t AS (
                     INSERT INTO agent_state_threads AS s (thread_id, head, last_id) VALUES ($1, 1, 1)
                     ON CONFLICT (thread_id) DO UPDATE
                     SET head = greatest(s.last_id, s.retired) + 1,
                         last_id = greatest(s.last_id, s.retired) + 1
                     WHERE s.head = 0 RETURNING last_id
                 ) {INSERT_SELECT}"
            ))
            .await?,
            append_next: prepare(format!(
                "WITH t AS (
                     UPDATE agent_state_threads
                     SET head = greatest(last_id, retired) + 1, last_id = greatest(last_id, retired) + 1
                     WHERE thread_id = $1 AND head = $11::bigint AND head > 0 RETURNING last_id
                 ) {INSERT_SELECT}"
            ))
            .await?,
            head_id: prepare("SELECT head FROM agent_state_threads WHERE thread_id = $1".into())
                .await?,
            // A thread whose head record is gone reads as such, not as a
            // new thread: hence the outer join, and the head beside it.
            head: prepare(format!(
                "SELECT {COLUMNS}, t.head, t.last_id FROM agent_state_threads t
                 LEFT JOIN agent_state_checkpoints c ON c.thread_id = t.thread_id AND c.id = t.head
                 WHERE t.thread_id = $1"
            ))
            .await?,
            // Each step of the walk looks its parent up by the whole primary
            // key, in a LATERAL subquery that OFFSET 0 keeps from being
            // flattened into a join: a join lets the planner, misled by
            // stale statistics (a thread that grew since the last ANALYZE),
            // scan the whole thread at every step, O(history) per record.
            // It goes to strictly older ids only, so it ends whatever the
            // rows hold (a loop would keep the server busy after the client
            // gave up); the loader names a break.
            chain: prepare(format!(
                "WITH RECURSIVE chain AS (
                     SELECT {COLUMNS}, c.snapshot::text AS snapshot FROM agent_state_checkpoints c
                     WHERE c.thread_id = $1 AND c.id = $2
                     UNION ALL
                     SELECT p.* FROM chain, LATERAL (
                         SELECT {COLUMNS}, c.snapshot::text AS snapshot
                         FROM agent_state_checkpoints c
                         WHERE c.thread_id = $1 AND c.id = chain.parent_id
                         OFFSET 0
                     ) p
                     WHERE chain.snapshot IS NULL AND chain.parent_id < chain.id
                 )
                 SELECT * FROM chain ORDER BY id"
            ))
            .await?,
            list: prepare(format!(
                "SELECT {COLUMNS} FROM agent_state_checkpoints c
                 WHERE c.thread_id = $1 AND c.id < $2 ORDER BY c.id DESC LIMIT $3"
            ))
            .await?,
            snapshot: prepare(
                "UPDATE agent_state_checkpoints
                 SET snapshot = $3::text::jsonb, log_bytes = 0, base_bytes = $4
                 WHERE thread_id = $1 AND id = $2"
                    .into(),
            )
            .await?,
            // One statement, so a writer racing the delete either lands
            // wholly before it (and is deleted) or wholly after it.
            delete: prepare(
                "WITH t AS (DELETE FROM agent_state_threads WHERE thread_id = $1 RETURNING 1),
                      c AS (DELETE FROM agent_state_checkpoints WHERE thread_id = $1),
                      p AS (DELETE FROM agent_state_pending WHERE thread_id = $1)
                 SELECT count(*) FROM t"
                    .into(),
            )
            .await?,
            truncate: prepare(TRUNCATE.into()).await?,
            put_pending: prepare(PUT_PENDING.into()).await?,
            pending: prepare(PENDING.into()).await?,
            drop_before: prepare(DROP_BEFORE.into()).await?,
            collect_pending: prepare(COLLECT_PENDING.into()).await?,
            delete_children: prepare(DELETE_CHILDREN.into()).await?,
        })
    }
}

/// Checkpoints in a PostgreSQL database, shared by every instance that
/// connects to it.
pub struct PostgresCheckpointer {
    client: Client,
    st: Statements,
    policy: Option<SnapshotPolicy>,
}

/// A PostgreSQL failure, as [`CheckpointError::Backend`]'s source: what the
/// server said (its message, SQLSTATE code, detail and hint) in the text,
/// where the driver's own text is only `db error`. Its source is the
/// driver's error.
///
/// ```no_run
/// # async fn run(err: agent_state::checkpoint::CheckpointError) {
/// use agent_state::checkpoint::postgres::PostgresError;
/// use agent_state::checkpoint::CheckpointError;
///
/// if let CheckpointError::Backend { source, .. } = &err {
///     if let Some(pg) = source.downcast_ref::<PostgresError>() {
///         eprintln!("SQLSTATE {:?}: {err}", pg.code());
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct PostgresError(pub(crate) tokio_postgres::Error);

impl PostgresError {
    /// The server's SQLSTATE code (`23514` for a check violation); `None`
    /// when the server did not answer (a lost connection, ..).
    pub fn code(&self) -> Option<&str> {
        self.0.as_db_error().map(|db| db.code().code())
    }

    /// The server's message; `None` when the server did not answer.
    pub fn message(&self) -> Option<&str> {
        self.0.as_db_error().map(|db| db.message())
    }

    /// The server's detail, when it gave one.
    pub fn detail(&self) -> Option<&str> {
        self.0.as_db_error().and_then(|db| db.detail())
    }
}

impl fmt::Display for PostgresError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(db) = self.0.as_db_error() else {
            // The driver's text and its causes ("error connecting to
            // server: Connection refused").
            write!(f, "{}", self.0)?;
            let mut cause = self.0.source();
            while let Some(error) = cause {
                write!(f, ": {error}")?;
                cause = error.source();
            }
            return Ok(());
        };
        write!(
            f,
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        )?;
        if let Some(detail) = db.detail() {
            write!(f, "; detail: {detail}")?;
        }
        if let Some(hint) = db.hint() {
            write!(f, "; hint: {hint}")?;
        }
        Ok(())
    }
}

impl Error for PostgresError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.0)
    }
}

/// Why [`connect_driven`] gave no client.
pub(crate) enum Connect {
    /// Not called from within a Tokio runtime, which must drive the
    /// connection.
    NoRuntime,
    /// The driver's error.
    Failed(tokio_postgres::Error),
}

/// A client on `config` (no TLS), its connection driven by a task of the
/// current Tokio runtime from then on: what the checkpointer and the
/// store connect with.
pub(crate) async fn connect_driven(config: &str) -> Result<Client, Connect> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| Connect::NoRuntime)?;
    let (client, connection) = tokio_postgres::connect(config, NoTls)
        .await
        .map_err(Connect::Failed)?;
    // Errors of the connection surface as errors of the calls made on the
    // client, so the task's own result carries nothing more.
    handle.spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn pg_err(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> CheckpointError {
    move |e| CheckpointError::backend(operation, PostgresError(e))
}

impl PostgresCheckpointer {
    /// Connects with a libpq-style configuration (`host=.. user=..
    /// dbname=..` or a `postgresql://` URL), creates the tables if needed
    /// and prepares the statements. Must run inside a Tokio runtime, which
    /// drives the connection from then on.
    pub async fn connect(config: &str) -> Result<Self, CheckpointError> {
        let client = connect_driven(config).await.map_err(|e| match e {
            Connect::NoRuntime => CheckpointError::backend(
                "connect",
                "the PostgreSQL checkpointer needs a Tokio runtime (call it from within one)",
            ),
            Connect::Failed(e) => pg_err("connect")(e),
        })?;
        Self::from_client(client).await
    }

    /// Uses a client the caller connected (TLS, a pool's connection, ...):
    /// creates the tables if needed and prepares the statements. The caller
    /// drives the client's connection.
    pub async fn from_client(client: Client) -> Result<Self, CheckpointError> {
        client
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {SCHEMA} COMMIT;"
            ))
            .await
            .map_err(pg_err("create tables"))?;
        let st = Statements::prepare(&client).await?;
        Ok(Self {
            client,
            st,
            policy: None,
        })
    }

    /// Takes snapshots by `policy` instead of the default.
    #[must_use]
    pub fn with_snapshot_policy(mut self, policy: SnapshotPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The client, for queries of your own on the same connection.
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn append_async(
        &self,
        thread_id: &str,
        expected: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> Result<CheckpointMeta, CheckpointError> {
        check_thread_id(thread_id)?;
        refuse_nul(&record.writes, true)?;
        if let Some(snapshot) = &record.snapshot {
            refuse_nul(snapshot, false)?;
        }
        let created_at_ms = now_ms();
        let parent = record.parent.map(|p| to_sql(p.0));
        let step = record.step;
        let source = record.source.as_str();
        let version = i64::from(record.version);
        let created = to_sql(created_at_ms);
        let log_bytes = to_sql(record.log_bytes);
        let base_bytes = to_sql(record.base_bytes);
        let head = expected.map(|h| to_sql(h.0));
        // The two statements share their first ten parameters; the CAS on
        // an existing thread adds the expected head.
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            &thread_id,
            &parent,
            &step,
            &source,
            &version,
            &created,
            &record.writes,
            &log_bytes,
            &base_bytes,
            &record.snapshot,
        ];
        let statement = match &head {
            None => &self.st.append_new,
            Some(head) => {
                params.push(head);
                &self.st.append_next
            }
        };
        let row = self
            .client
            .query_opt(statement, &params)
            .await
            .map_err(pg_err("append"))?;
        let Some(row) = row else {
            let found = self
                .client
                .query_opt(&self.st.head_id, &[&thread_id])
                .await
                .map_err(pg_err("append"))?
                .map(|r| from_sql(r.get(0)))
                .filter(|&head| head > 0)
                .map(CheckpointId);
            return Err(CheckpointError::Conflict {
                thread_id: thread_id.to_owned(),
                expected,
                found,
            });
        };
        Ok(CheckpointMeta {
            thread_id: thread_id.to_owned(),
            id: CheckpointId(from_sql(row.get(0))),
            parent: record.parent,
            step: record.step,
            source: record.source,
            version: record.version,
            created_at_ms,
        })
    }

    async fn chain_async(
        &self,
        thread_id: &str,
        id: CheckpointId,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let rows = self
            .client
            .query(&self.st.chain, &[&thread_id, &to_sql(id.0)])
            .await
            .map_err(pg_err("load"))?;
        if rows.is_empty() {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(id),
            });
        }
        rows.iter()
            .map(|r| read_row(r, thread_id, Some(id), true))
            .collect()
    }

    async fn head_async(
        &self,
        thread_id: &str,
    ) -> Result<Option<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let Some(row) = self
            .client
            .query_opt(&self.st.head, &[&thread_id])
            .await
            .map_err(pg_err("head"))?
        else {
            return Ok(None);
        };
        let found: Option<i64> = row.try_get(1).map_err(pg_err("head"))?;
        let head: i64 = row.try_get(10).map_err(pg_err("head"))?;
        let last: i64 = row.try_get(11).map_err(pg_err("head"))?;
        if head == 0 && last == 0 {
            // A truncation took every record off: no checkpoint.
            return Ok(None);
        }
        let broken = |reason: String| CheckpointError::Malformed {
            thread_id: thread_id.to_owned(),
            checkpoint: CheckpointId(from_sql(head)),
            reason,
        };
        if found.is_none() {
            return Err(broken("the thread's head checkpoint is missing".to_owned()));
        }
        // Every append makes its new id the head: a head behind the last id
        // given out was moved back by hand (its newer checkpoints lost).
        if head != last {
            return Err(broken(format!(
                "the thread's head was moved back: checkpoint {last} was stored after it"
            )));
        }
        read_row(&row, thread_id, None, false).map(Some)
    }

    async fn list_async(
        &self,
        thread_id: &str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<StoredCheckpoint>, CheckpointError> {
        check_thread_id(thread_id)?;
        let before = before.map_or(i64::MAX, |b| to_sql(b.0));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(&self.st.list, &[&thread_id, &before, &limit])
            .await
            .map_err(pg_err("list"))?;
        rows.iter()
            .map(|r| read_row(r, thread_id, None, false))
            .collect()
    }
}

impl PostgresCheckpointer {
    async fn truncate_async(
        &self,
        thread_id: &str,
        keep: Option<CheckpointId>,
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let keep_sql = keep.map_or(0, |id| to_sql(id.0));
        let mut seen = None;
        for _ in 0..TRUNCATE_TRIES {
            let row = self
                .client
                .query_one(&self.st.truncate, &[&thread_id, &keep_sql])
                .await
                .map_err(pg_err("truncate"))?;
            let moved: i64 = row.get(0);
            let dropped: i64 = row.get(1);
            let kept: bool = row.get(3);
            seen = row.get::<_, Option<i64>>(2);
            if moved > 0 {
                return Ok(from_sql(dropped));
            }
            if seen.is_none() || !kept {
                return match keep {
                    None => Ok(0),
                    Some(id) => Err(CheckpointError::NotFound {
                        thread_id: thread_id.to_owned(),
                        checkpoint: Some(id),
                    }),
                };
            }
        }
        // Appends kept moving the head: the caller's writer is still at it.
        let found = self.head_async(thread_id).await?.map(|h| h.meta.id);
        Err(CheckpointError::Conflict {
            thread_id: thread_id.to_owned(),
            expected: seen.map(from_sql).filter(|&h| h > 0).map(CheckpointId),
            found,
        })
    }

    async fn drop_before_async(
        &self,
        thread_id: &str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        let mut ids = Vec::with_capacity(snapshots.len());
        let mut sizes = Vec::with_capacity(snapshots.len());
        let mut texts = Vec::with_capacity(snapshots.len());
        for (id, text) in snapshots {
            refuse_nul(&text, false)?;
            ids.push(to_sql(id.0));
            sizes.push(to_sql(text.len() as u64));
            texts.push(text);
        }
        let row = self
            .client
            .query_one(
                &self.st.drop_before,
                &[&thread_id, &to_sql(oldest.0), &ids, &texts, &sizes],
            )
            .await
            .map_err(pg_err("drop_before"))?;
        let found: bool = row.get(1);
        let missing: Option<i64> = row.get(2);
        let orphan: Option<Vec<Option<i64>>> = row.get(3);
        let not_found = |id| CheckpointError::NotFound {
            thread_id: thread_id.to_owned(),
            checkpoint: Some(id),
        };
        match (found, missing, orphan) {
            (false, _, _) => Err(not_found(oldest)),
            (_, Some(id), _) => Err(not_found(CheckpointId(from_sql(id)))),
            (_, _, Some(pair)) => {
                let at = |i: usize| {
                    pair.get(i)
                        .copied()
                        .flatten()
                        .map(|n| CheckpointId(from_sql(n)))
                };
                let id = at(0).unwrap_or(oldest);
                Err(lost_parent(thread_id, id, at(1)))
            }
            _ => Ok(from_sql(row.get(0))),
        }
    }

    async fn collect_pending_async(&self, thread_id: &str) -> Result<u64, CheckpointError> {
        check_thread_id(thread_id)?;
        self.client
            .execute(&self.st.collect_pending, &[&thread_id])
            .await
            .map_err(pg_err("collect_pending"))
    }

    async fn put_pending_async(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        check_thread_id(thread_id)?;
        if writes.is_empty() {
            return Ok(());
        }
        let id = to_sql(checkpoint.0);
        let mut tasks = Vec::with_capacity(writes.len());
        let mut keys = Vec::with_capacity(writes.len());
        let mut values = Vec::with_capacity(writes.len());
        // A later write of one task and key replaces an earlier one: keep
        // the last, since one statement cannot update a row twice.
        for w in &writes {
            refuse_nul(&w.value, false)?;
        }
        for w in writes.into_iter().rev() {
            if !tasks
                .iter()
                .zip(&keys)
                .any(|(t, k)| *t == w.task && *k == w.key)
            {
                tasks.push(w.task);
                keys.push(w.key);
                values.push(w.value);
            }
        }
        let rows = self
            .client
            .query(
                &self.st.put_pending,
                &[&thread_id, &id, &tasks, &keys, &values],
            )
            .await
            .map_err(pg_err("put_pending"))?;
        if rows.is_empty() {
            return Err(CheckpointError::NotFound {
                thread_id: thread_id.to_owned(),
                checkpoint: Some(checkpoint),
            });
        }
        Ok(())
    }

    async fn pending_async(
        &self,
        thread_id: &str,
        checkpoint: CheckpointId,
    ) -> Result<Vec<PendingWrite>, CheckpointError> {
        check_thread_id(thread_id)?;
        let rows = self
            .client
            .query(&self.st.pending, &[&thread_id, &to_sql(checkpoint.0)])
            .await
            .map_err(pg_err("pending"))?;
        rows.iter()
            .map(|r| {
                Ok(PendingWrite {
                    task: r.try_get(0)?,
                    key: r.try_get(1)?,
                    value: r.try_get(2)?,
                })
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(pg_err("pending"))
    }
}

fn read_row(
    row: &Row,
    thread_id: &str,
    loading: Option<CheckpointId>,
    with_snapshot: bool,
) -> Result<StoredCheckpoint, CheckpointError> {
    RawRow::read(row, thread_id, loading, with_snapshot)?.into_stored()
}

impl Columns for Row {
    type Error = tokio_postgres::Error;

    fn text(&self, at: usize) -> Result<String, Self::Error> {
        self.try_get(at)
    }

    fn opt_text(&self, at: usize) -> Result<Option<String>, Self::Error> {
        self.try_get(at)
    }

    fn int(&self, at: usize) -> Result<i64, Self::Error> {
        self.try_get(at)
    }

    fn opt_int(&self, at: usize) -> Result<Option<i64>, Self::Error> {
        self.try_get(at)
    }
}

/// Refuses JSON text holding U+0000, which `jsonb` cannot store: naming the
/// field it is in. Looks for the escape first, so text without one (every
/// step, nearly) costs one scan. `writes`: `json` is a record's `writes`
/// column (which may hold a run's input).
fn refuse_nul(json: &str, writes: bool) -> Result<(), CheckpointError> {
    if !json.contains("\\u0000") {
        return Ok(());
    }
    // The escape may be text (`\\u0000`): find a real U+0000, if any.
    let Ok(mut value) = serde_json::from_str::<Value>(json) else {
        return Ok(());
    };
    // A run's input held by its `input` checkpoint, in place of its
    // writes: look in its writes or first state.
    if let Some(inner) = held_content(&value).filter(|_| writes) {
        value = inner.clone();
    }
    let field = match &value {
        // A step's writes: the field of a node's update.
        Value::Array(writes) => writes
            .iter()
            .filter_map(|w| w.get("update").and_then(Value::as_object))
            .find_map(nul_field),
        // A snapshot: a field of the state.
        Value::Object(fields) => nul_field(fields),
        _ => None,
    };
    let field = match field {
        Some(field) => field,
        None if holds_nul(&value) => String::new(),
        None => return Ok(()),
    };
    Err(CheckpointError::Rejected(StateError::new(
        field,
        ErrorKind::NotStorable {
            reason: "U+0000 in a string: PostgreSQL's `jsonb` cannot store it".to_owned(),
        },
    )))
}

fn nul_field(fields: &serde_json::Map<String, Value>) -> Option<String> {
    fields
        .iter()
        .find(|(name, value)| name.contains('\0') || holds_nul(value))
        .map(|(name, _)| name.clone())
}

impl Checkpointer for PostgresCheckpointer {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        Box::pin(self.append_async(thread_id, expected_head, record))
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            refuse_nul(&snapshot, false)?;
            let bytes = to_sql(snapshot.len() as u64);
            let changed = self
                .client
                .execute(
                    &self.st.snapshot,
                    &[&thread_id, &to_sql(id.0), &snapshot, &bytes],
                )
                .await
                .map_err(pg_err("snapshot"))?;
            if changed == 0 {
                return Err(CheckpointError::NotFound {
                    thread_id: thread_id.to_owned(),
                    checkpoint: Some(id),
                });
            }
            Ok(())
        })
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        Box::pin(self.head_async(thread_id))
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(self.chain_async(thread_id, id))
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(self.list_async(thread_id, before, limit))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let row = self
                .client
                .query_one(&self.st.delete, &[&thread_id])
                .await
                .map_err(pg_err("delete"))?;
            let deleted: i64 = row.get(0);
            Ok(deleted > 0)
        })
    }

    fn put_pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(self.put_pending_async(thread_id, checkpoint, writes))
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(self.truncate_async(thread_id, keep))
    }

    fn pending<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<PendingWrite>, CheckpointError>> {
        Box::pin(self.pending_async(thread_id, checkpoint))
    }

    fn drop_before<'a>(
        &'a self,
        thread_id: &'a str,
        oldest: CheckpointId,
        snapshots: Vec<(CheckpointId, String)>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(self.drop_before_async(thread_id, oldest, snapshots))
    }

    fn collect_pending<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(self.collect_pending_async(thread_id))
    }

    fn delete_children<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move {
            check_thread_id(thread_id)?;
            let (from, to) = children_range(thread_id);
            let row = self
                .client
                .query_one(&self.st.delete_children, &[&from, &to])
                .await
                .map_err(pg_err("delete_children"))?;
            Ok(from_sql(row.get(0)))
        })
    }
}
