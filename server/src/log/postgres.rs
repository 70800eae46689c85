//! Runs' events in PostgreSQL, so a client on any server joins a run's
//! stream, or reconnects to it with `Last-Event-ID`, and misses nothing
//! and gets nothing twice.
//!
//! * Writing: each run's events go to a task of its own ([`Appender`]),
//!   which writes all those waiting in one statement (the events, the
//!   run's last id, and a `NOTIFY` naming the run and that id), then the
//!   next batch: a run never waits for the database, and a fast stream
//!   costs one round trip per batch, not per token. The run's end is
//!   written last (`ended`), about when the run is recorded as ended: a
//!   follower that finds the run ended gives its end two quiet polls to
//!   come before it stops (a dead server's never comes).
//! * Reading: a follower reads the events after the last id it sent, in
//!   id order (a batch is committed whole, and the next is written once
//!   it is, so what is read has no gap), then waits for a notification of
//!   the run ([`notify`](super::notify)) or, at most [`POLL`], reads
//!   again; it stops at the run's end, or once the run is recorded ended
//!   and nothing came (its server died before writing the end).
//! * Keeping: a run's events stay while it runs and for the TTL after
//!   it ended (120 s by default, as the official server keeps a resumable
//!   stream), then a sweep deletes them; they go at once with their run
//!   or their thread.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

use crate::log::notify::Listener;
use crate::open::PoolSettings;
use crate::sse::frame_with_id;
use crate::store::postgres::new_pool;
use crate::store::{Store, StoreError};

/// The tables: one row per run that streamed (its last id, whether it
/// ended, when it was last written), one per event.
pub(crate) const TABLES: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS server_run_streams (
    run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, last_seq BIGINT NOT NULL,
    ended BOOLEAN NOT NULL, updated_at TIMESTAMPTZ NOT NULL)",
    "CREATE TABLE IF NOT EXISTS server_run_events (
    run_id TEXT NOT NULL, seq BIGINT NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq))",
    "CREATE INDEX IF NOT EXISTS server_run_streams_thread ON server_run_streams (thread_id);
    CREATE INDEX IF NOT EXISTS server_run_streams_updated ON server_run_streams (updated_at)",
];

/// Serializes creating the tables, so servers starting together on an
/// empty database do not race.
const SCHEMA_LOCK: &str = "hashtextextended('agent-state-server/run-events', 0)";

/// Deletes the events of the thread `$1`'s runs.
pub(crate) const DELETE_THREAD_EVENTS: &str = "WITH gone AS
    (DELETE FROM server_run_streams WHERE thread_id = $1 RETURNING run_id)
    DELETE FROM server_run_events WHERE run_id IN (SELECT run_id FROM gone)";

/// Deletes the events of run `$1`.
pub(crate) const DELETE_RUN_EVENTS: &str = "WITH gone AS
    (DELETE FROM server_run_streams WHERE run_id = $1)
    DELETE FROM server_run_events WHERE run_id = $1";

/// Writes a batch: the events (unless the run's record is gone: deleted,
/// rolled back, its thread deleted; written again, as when a write's
/// answer was lost and it is tried again, they are kept once), the
/// stream's last id and end, and the notification. One round trip.
const WRITE: &str = "WITH live AS (SELECT 1 FROM server_runs WHERE run_id = $1::text),
    stream AS (INSERT INTO server_run_streams (run_id, thread_id, last_seq, ended, updated_at)
      SELECT $1::text, $2::text, $3::bigint, $4::boolean, now() FROM live
      ON CONFLICT (run_id) DO UPDATE SET
      last_seq = GREATEST(server_run_streams.last_seq, excluded.last_seq),
      ended = excluded.ended, updated_at = excluded.updated_at),
    events AS (INSERT INTO server_run_events (run_id, seq, event, data)
      SELECT $1::text, t.seq, t.event, t.data
      FROM unnest($5::bigint[], $6::text[], $7::text[]) AS t(seq, event, data)
      WHERE EXISTS (SELECT 1 FROM live) ON CONFLICT DO NOTHING)
    SELECT pg_notify('agent_state_server_events', $1::text || ' ' || $3::bigint::text || ' ' || $2::text)
    FROM live";

/// Reads a page of events after `$2`, with the stream's last id and end,
/// in one snapshot.
const READ: &str = "SELECT s.last_seq, s.ended, e.seq, e.event, e.data
    FROM server_run_streams s LEFT JOIN LATERAL
    (SELECT seq, event, data FROM server_run_events
     WHERE run_id = s.run_id AND seq > $2 ORDER BY seq LIMIT 500) e ON true
    WHERE s.run_id = $1 ORDER BY e.seq";

/// How many events a read returns at most (`LIMIT` in [`READ`]).
const PAGE: usize = 500;

/// Deletes the events of runs not running whose stream was last written
/// more than `$1` seconds ago.
const SWEEP: &str = "WITH gone AS (DELETE FROM server_run_streams s
    WHERE s.updated_at < now() - make_interval(secs => $1)
    AND NOT EXISTS (SELECT 1 FROM server_runs r
      WHERE r.run_id = s.run_id AND r.status IN ('pending', 'running'))
    RETURNING run_id)
    DELETE FROM server_run_events WHERE run_id IN (SELECT run_id FROM gone)";

/// How long a follower waits for a notification before it reads again.
pub(crate) const POLL: Duration = Duration::from_secs(1);

/// The most events (and bytes of data) one write carries.
const BATCH: usize = 500;
const BATCH_BYTES: usize = 1 << 20;

/// How long a batch that cannot be written is tried again before it is
/// dropped (its run's followers then miss it).
const KEEP_TRYING: Duration = Duration::from_secs(60);

/// How long a run's end waits for its events to be written.
const FINISH: Duration = Duration::from_secs(10);

/// How many connections write events: a pool of their own, so a burst of
/// events never keeps requests waiting for a connection, nor the reverse.
const WRITERS: usize = 4;

/// The stored events of every run of this server's database.
pub(crate) struct StoredEvents {
    /// Requests' pool: reads and sweeps.
    pool: Pool,
    /// The writers' own.
    writers: Pool,
    listener: Arc<Listener>,
    ttl: Duration,
}

/// One event to write, or the run's end.
enum Entry {
    Event(i64, String, String),
    End,
    /// The run moved to another server, which numbers on from the last
    /// event written: what waits is written, without an end.
    Release,
}

/// What the run's log hands its events to: a task that writes them.
pub(crate) struct Appender {
    tx: mpsc::UnboundedSender<Entry>,
    written: Mutex<Option<oneshot::Receiver<()>>>,
    /// Set when the run's end stopped waiting for its events: a batch
    /// still refused is then dropped, not tried again (after a handover
    /// the next server numbers on from what is stored, and a late batch
    /// would clash with its ids).
    abandoned: Arc<std::sync::atomic::AtomicBool>,
}

impl Appender {
    /// Queues event `seq` to be written.
    pub(crate) fn append(&self, seq: usize, event: &str, data: &str) {
        let entry = Entry::Event(seq as i64, event.to_owned(), data.to_owned());
        let _ = self.tx.send(entry);
    }

    /// Marks the end, and waits (at most [`FINISH`]) until every event is
    /// written.
    pub(crate) async fn finish(&self) {
        self.last(Entry::End).await;
    }

    /// Writes what waits without marking the end: the run goes on on
    /// another server (see [`Entry::Release`]).
    pub(crate) async fn release(&self) {
        self.last(Entry::Release).await;
    }

    /// Sends `entry`, the log's last, and waits (a bounded time) until
    /// everything before it is written.
    async fn last(&self, entry: Entry) {
        let _ = self.tx.send(entry);
        let written = self
            .written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(written) = written {
            if tokio::time::timeout(FINISH, written).await.is_err() {
                self.abandoned
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                tracing::error!("a run's events were not all written in time: the rest dropped");
            }
        }
    }
}

/// Events waiting to be written, as the columns [`WRITE`] takes.
#[derive(Default)]
struct Batch {
    seqs: Vec<i64>,
    names: Vec<String>,
    data: Vec<String>,
    bytes: usize,
    ended: bool,
    released: bool,
}

impl Batch {
    fn add(&mut self, entry: Entry) {
        match entry {
            Entry::Event(seq, name, data) => {
                self.bytes += data.len();
                self.seqs.push(seq);
                self.names.push(name);
                self.data.push(data);
            }
            Entry::End => self.ended = true,
            Entry::Release => self.released = true,
        }
    }

    fn full(&self) -> bool {
        self.ended || self.released || self.seqs.len() >= BATCH || self.bytes >= BATCH_BYTES
    }

    fn clear(&mut self) {
        self.seqs.clear();
        self.names.clear();
        self.data.clear();
        self.bytes = 0;
    }
}

/// A page of a run's stored events.
struct Page {
    /// Whether the run stored anything (and it was not deleted).
    exists: bool,
    last_seq: i64,
    ended: bool,
    events: Vec<(i64, String, String)>,
}

impl StoredEvents {
    /// Creates the tables in the database `pool` reaches (at `url`, where
    /// the writers and the notifications have connections of their own),
    /// keeps finished runs' events `ttl`.
    pub(crate) async fn open(
        url: &str,
        pool: Pool,
        ttl: Duration,
    ) -> Result<Arc<Self>, StoreError> {
        let client = pool.get().await.map_err(StoreError::db)?;
        let batch = format!(
            "BEGIN; SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); {}; COMMIT;",
            TABLES.join(";\n")
        );
        client.batch_execute(&batch).await.map_err(StoreError::db)?;
        drop(client);
        let settings = PoolSettings {
            size: WRITERS,
            wait: Duration::from_secs(30),
        };
        let events = Arc::new(StoredEvents {
            writers: new_pool(url, settings)?,
            pool,
            listener: Listener::start(url),
            ttl,
        });
        sweep_forever(&events);
        Ok(events)
    }

    /// A writer of run `run_id`'s events.
    pub(crate) fn appender(self: &Arc<Self>, run_id: &str, thread_id: &str) -> Appender {
        let (tx, rx) = mpsc::unbounded_channel();
        let (done, written) = oneshot::channel();
        let ids = (run_id.to_owned(), thread_id.to_owned());
        let abandoned = Arc::default();
        let writer = Arc::clone(self).write_all(ids, rx, done, Arc::clone(&abandoned));
        tokio::spawn(writer);
        Appender {
            tx,
            written: Mutex::new(Some(written)),
            abandoned,
        }
    }

    /// Writes the run's events as they come, each batch all that waited.
    /// A batch that cannot be written is kept and tried again, with what
    /// came since, for [`KEEP_TRYING`] (or until the run's end stops
    /// waiting, `abandoned`): a database that is away for a moment leaves
    /// no gap in the run's stored events.
    async fn write_all(
        self: Arc<Self>,
        (run_id, thread_id): (String, String),
        mut rx: mpsc::UnboundedReceiver<Entry>,
        done: oneshot::Sender<()>,
        abandoned: Arc<std::sync::atomic::AtomicBool>,
    ) {
        let (mut batch, mut last) = (Batch::default(), 0);
        let mut failing: Option<std::time::Instant> = None;
        loop {
            if failing.is_none() {
                if batch.ended || batch.released {
                    break;
                }
                // The log dropped without an end: its run was dropped.
                let Some(first) = rx.recv().await else { break };
                batch.add(first);
            }
            while !batch.full() {
                let Ok(next) = rx.try_recv() else { break };
                batch.add(next);
            }
            last = batch.seqs.last().copied().unwrap_or(last);
            if batch.seqs.is_empty() && !batch.ended {
                continue;
            }
            match self.write(&run_id, &thread_id, last, &batch).await {
                Ok(()) => failing = None,
                Err(e) => {
                    let since = *failing.get_or_insert_with(std::time::Instant::now);
                    let events = batch.seqs.len();
                    let given_up = abandoned.load(std::sync::atomic::Ordering::SeqCst);
                    if since.elapsed() < KEEP_TRYING && !given_up {
                        tracing::warn!(%run_id, events, error = ?e, "could not store a run's events yet");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                    tracing::error!(%run_id, events, error = ?e, "could not store a run's events: dropped");
                    failing = None;
                }
            }
            batch.clear();
        }
        let _ = done.send(());
    }

    /// One batch, tried three times.
    async fn write(&self, run: &str, thread: &str, last: i64, b: &Batch) -> Result<(), StoreError> {
        let mut tries = 0;
        loop {
            let result = async {
                let client = self.writers.get().await.map_err(StoreError::db)?;
                let stmt = client.prepare_cached(WRITE).await.map_err(StoreError::db)?;
                let args: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
                    [&run, &thread, &last, &b.ended, &b.seqs, &b.names, &b.data];
                client.query(&stmt, &args).await.map_err(StoreError::db)
            };
            match result.await {
                Ok(_) => return Ok(()),
                Err(e) if tries == 2 => return Err(e),
                Err(_) => tries += 1,
            }
            tokio::time::sleep(Duration::from_millis(100 << tries)).await;
        }
    }

    /// Wakes for the events of any run of thread `thread_id` as they are
    /// written.
    pub(crate) fn wake_on_thread(&self, thread_id: &str) -> super::notify::Wake {
        self.listener.subscribe_thread(thread_id)
    }

    /// The last id stored of run `run_id`'s events (0 when none): what a
    /// server taking the run over numbers on from.
    pub(crate) async fn last_seq(&self, run_id: &str) -> Result<usize, StoreError> {
        let client = self.pool.get().await.map_err(StoreError::db)?;
        let sql = "SELECT last_seq FROM server_run_streams WHERE run_id = $1";
        let row = client
            .query_opt(sql, &[&run_id])
            .await
            .map_err(StoreError::db)?;
        let last: i64 = row
            .map_or(Ok(0), |r| r.try_get(0))
            .map_err(StoreError::db)?;
        Ok(usize::try_from(last).unwrap_or(0))
    }

    async fn read(&self, run_id: &str, after: i64) -> Result<Page, StoreError> {
        let client = self.pool.get().await.map_err(StoreError::db)?;
        let stmt = client.prepare_cached(READ).await.map_err(StoreError::db)?;
        let rows = client
            .query(&stmt, &[&run_id, &after])
            .await
            .map_err(StoreError::db)?;
        let mut page = Page {
            exists: !rows.is_empty(),
            last_seq: 0,
            ended: false,
            events: Vec::with_capacity(rows.len()),
        };
        for row in rows {
            page.last_seq = row.try_get(0).map_err(StoreError::db)?;
            page.ended = row.try_get(1).map_err(StoreError::db)?;
            let seq: Option<i64> = row.try_get(2).map_err(StoreError::db)?;
            if let Some(seq) = seq {
                let event = row.try_get(3).map_err(StoreError::db)?;
                page.events
                    .push((seq, event, row.try_get(4).map_err(StoreError::db)?));
            }
        }
        Ok(page)
    }

    /// Sends `tx` the run's events after id `after`, then each new one,
    /// until the run ends or the client leaves.
    pub(crate) async fn follow(
        &self,
        store: &Store,
        thread_id: &str,
        run_id: &str,
        after: i64,
        tx: mpsc::Sender<String>,
    ) {
        if let Err(e) = self
            .follow_or_fail(store, thread_id, run_id, after, &tx)
            .await
        {
            tracing::error!(%run_id, error = %e, "could not read a run's stored events");
        }
    }

    async fn follow_or_fail(
        &self,
        store: &Store,
        thread_id: &str,
        run_id: &str,
        mut after: i64,
        tx: &mpsc::Sender<String>,
    ) -> Result<(), StoreError> {
        // Subscribed before the first read: no notification is missed.
        let mut wake = self.listener.subscribe(run_id);
        let mut quiet = false;
        loop {
            wake.seen();
            let page = self.read(run_id, after).await?;
            let full = page.events.len() == PAGE;
            for (seq, event, data) in page.events {
                let id = usize::try_from(seq).unwrap_or(0);
                if tx.send(frame_with_id(&event, &data, id)).await.is_err() {
                    return Ok(());
                }
                after = seq;
            }
            if full {
                continue;
            }
            if page.ended && after >= page.last_seq {
                return Ok(());
            }
            // Nothing stored: a run that is not live has nothing to come
            // (its events swept, or it never ran), so no wait for it.
            if !page.exists && !live(store, thread_id, run_id).await? {
                return Ok(());
            }
            tokio::select! {
                () = wake.next() => continue,
                () = tokio::time::sleep(POLL) => {}
                () = tx.closed() => return Ok(()),
            }
            // No word for a while: a run recorded ended whose end never
            // came (its server died) ends here, after one more look.
            let live = live(store, thread_id, run_id).await?;
            if !live && (quiet || !page.exists) {
                return Ok(());
            }
            quiet = !live;
        }
    }

    /// Deletes the events of runs that ended more than the TTL ago: how
    /// many events.
    pub(crate) async fn sweep(&self) -> Result<u64, StoreError> {
        let client = self.pool.get().await.map_err(StoreError::db)?;
        let secs = self.ttl.as_secs_f64();
        client
            .execute(SWEEP, &[&secs])
            .await
            .map_err(StoreError::db)
    }
}

/// Sweeps every half TTL (between 0.5 s and a minute) while the server is
/// up.
/// Whether the run is stored and not finished (`pending`, `running`).
async fn live(store: &Store, thread_id: &str, run_id: &str) -> Result<bool, StoreError> {
    let run = store.run(thread_id, run_id).await?;
    Ok(run.is_some_and(|r| matches!(r.status.as_str(), "pending" | "running")))
}

fn sweep_forever(events: &Arc<StoredEvents>) {
    let every = (events.ttl / 2).clamp(Duration::from_millis(500), Duration::from_secs(60));
    let events = Arc::downgrade(events);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(events) = events.upgrade() else {
                return;
            };
            match events.sweep().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(events = n, "expired run events deleted"),
                Err(e) => tracing::warn!(error = %e, "could not delete expired run events"),
            }
        }
    });
}
