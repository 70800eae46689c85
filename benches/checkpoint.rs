//! What a checkpoint costs per node step as a debate's history grows, for
//! every checkpointer: memory, a SQLite file and (built with `--features
//! postgres`) PostgreSQL.
//!
//! ```sh
//! cargo bench --bench checkpoint                        # memory, SQLite
//! cargo bench --bench checkpoint --features postgres    # + PostgreSQL
//! cargo bench --bench checkpoint -- --rounds 10,100,1000 --backends sqlite
//! cargo bench --bench checkpoint -- --trace steps.csv  # every step, as CSV
//! cargo bench --bench checkpoint --features postgres -- --pg-async-commit
//! ```
//!
//! One debate of `max(--rounds)` rounds (default 1,000) per backend, three
//! node steps a round (optimist, skeptic, moderator), each one AI message of
//! 150-300 characters whose id `save_step` assigns; the skeptic also bumps
//! `round`, the last moderator sets `status`. Every node step is one
//! [`Thread::save_step`] (`Source::Loop`), so a 1,000-round debate stores
//! 3,000 checkpoints on top of the thread's initial one.
//!
//! Timed, per step: `save_step` alone (assigning ids, encoding the writes,
//! staging, the backend's `append`, applying, and the snapshot when the
//! [`SnapshotPolicy`] takes one), with [`Instant`]. Not timed: building the
//! update. Bytes are counted by a [`Checkpointer`] that wraps the backend
//! ([`Counting`]): the writes' JSON of every record appended, plus every
//! snapshot (the thread's initial state and those `put_snapshot` stores),
//! that is what each backend is handed to store (before its own row and
//! index overhead).
//!
//! At each reported round R, over the 30 steps of rounds R-9..=R: median,
//! mean and max µs per step, and the median record bytes per step; since the
//! start: bytes per step including snapshots (amortized). Then a second
//! handle opens the thread (`Thread::open`: head, the chain from the nearest
//! snapshot, decode, replay), median of a few loads, and must see the same
//! state as the writer. A closing line per backend gives the ratio of the
//! last reported round's µs/step to the first's: near 1 is flat.
//!
//! The PostgreSQL server is a throwaway one started from Debian's server
//! binaries by `tests/support/pg.rs` (or `AGENT_STATE_PG_URL`), driven from
//! a current-thread Tokio runtime, talking over a Unix socket. The SQLite
//! file lives in a directory under `target/` that is removed afterwards.
//!
//! For each SQLite backend, a bare `INSERT` of a row as large as each
//! step's record, into a table laid out as the checkpointer's, in a file of
//! its own with the same settings, runs right after each step ([`Floor`]):
//! what SQLite itself costs here. Closing lines give a durable step's
//! goal (the median step at most 10 µs at every reported round, flat from
//! the first to the last) and each window's step ÷ that floor, ratios
//! from one run.
//!
//! Reading the figures: a window's median is the step itself; its mean and
//! max also catch the rare steps that take a snapshot (O(state), paid for
//! by as many bytes of log) and, for SQLite, the WAL checkpoint that runs
//! inside the commit of about every 300th step (it copies the WAL into the
//! file and fsyncs both, so it costs what the disk takes to flush ~4 MiB).
//! "Since start" is the mean over every step so far, all of that included.
//! PostgreSQL's steps wait for the WAL to reach the disk (`fdatasync` per
//! commit); `--pg-async-commit` shows the cost without that wait.

#[cfg(feature = "postgres")]
#[allow(dead_code)]
#[path = "../tests/support/pg.rs"]
mod pg;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_state::checkpoint::{
    BoxFuture, CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, NewCheckpoint,
    SnapshotPolicy, Source, StoredCheckpoint, Thread,
};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::{ai, human, AgentState, Messages};

/// Where the workflow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
enum DebateStatus {
    Running,
    Completed,
}

/// A finished debate stays finished.
fn status_reducer(current: &DebateStatus, next: DebateStatus) -> Result<DebateStatus, String> {
    match current {
        DebateStatus::Running => Ok(next),
        done if *done == next => Ok(next),
        done => Err(format!("a {done:?} debate cannot become {next:?}")),
    }
}

/// The seed's debate state (as in `examples/debate_state.rs`).
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
struct DebateState {
    /// Complete conversation history.
    #[reducer(messages)]
    messages: Messages,
    /// Current round; the skeptic bumps it.
    round: u32,
    /// The debate subject.
    #[reducer(immutable)]
    topic: String,
    /// Rounds before the debate ends.
    #[reducer(immutable)]
    #[state(default = 3)]
    max_rounds: u32,
    /// Workflow status.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    status: DebateStatus,
}

const TOPIC: &str = "Should frontier AI models be regulated?";
const THREAD: &str = "debate-bench";
/// Loads per reported round; the median is reported.
const LOADS: usize = 5;
/// Rounds per reported window (3 steps each).
const WINDOW_ROUNDS: u32 = 10;

const OPTIMIST: [&str; 3] = [
    "Regulation done well is an enabler: clear rules on evaluation and incident reporting let \
     companies ship with confidence, and users trust what they can audit.",
    "Look at aviation and medicine: both are heavily regulated and both innovate constantly. \
     Licensing the largest training runs would cost little and buy real accountability.",
    "Open benchmarks, third-party red-teaming and liability for negligent deployment are \
     modest, proportionate measures; none of them stops a student from training a model.",
];
const SKEPTIC: [&str; 3] = [
    "Rules written today will encode today's guesses about a technology that changes every \
     six months, and the compliance burden falls hardest on small labs and open-source teams.",
    "Capability thresholds measured in training FLOPs are already obsolete: distillation and \
     better data make small models strong. A law keyed to compute regulates the wrong thing.",
    "Regulators lack the staff to evaluate frontier systems, so licensing becomes paperwork \
     that incumbents can afford and challengers cannot: regulatory capture by design.",
];
const MODERATOR: [&str; 2] = [
    "Both sides agree that incident reporting is cheap; they disagree on compute thresholds. \
     Next round, please address enforcement across borders.",
    "The optimist leans on precedent from aviation, the skeptic on the speed of change. I \
     ask each of you for one concrete, testable rule before we continue.",
];

/// The updates of the three node steps of `round` (1-based) of a debate of
/// `rounds` rounds, with the node names.
fn round_steps(round: u32, rounds: u32) -> [(&'static str, DebateStateUpdate); 3] {
    let i = round as usize;
    let optimist = format!("Round {round}. {}", OPTIMIST[i % OPTIMIST.len()]);
    let skeptic = format!("Round {round}. {}", SKEPTIC[i % SKEPTIC.len()]);
    let moderator = format!(
        "Round {round} of {rounds}. {}",
        MODERATOR[i % MODERATOR.len()]
    );
    let mut closing = DebateStateUpdate::new().message(ai(moderator).with_name("moderator"));
    if round == rounds {
        closing = closing.status(DebateStatus::Completed);
    }
    [
        (
            "optimist",
            DebateStateUpdate::new().message(ai(optimist).with_name("optimist")),
        ),
        (
            "skeptic",
            DebateStateUpdate::new()
                .message(ai(skeptic).with_name("skeptic"))
                .round(round),
        ),
        ("moderator", closing),
    ]
}

/// A backend wrapped to count what it is handed to store.
struct Counting<C> {
    inner: C,
    /// Bytes of the writes' JSON of every record appended.
    record_bytes: AtomicU64,
    /// Bytes of every snapshot stored (with a record or by `put_snapshot`).
    snapshot_bytes: AtomicU64,
    /// Snapshots stored.
    snapshots: AtomicU64,
    /// What the last `chain` (a load) read: records and bytes.
    chain_records: AtomicU64,
    chain_bytes: AtomicU64,
    /// How long the last `chain` took, in nanoseconds.
    chain_nanos: AtomicU64,
}

impl<C> Counting<C> {
    fn new(inner: C) -> Self {
        Self {
            inner,
            record_bytes: AtomicU64::new(0),
            snapshot_bytes: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            chain_records: AtomicU64::new(0),
            chain_bytes: AtomicU64::new(0),
            chain_nanos: AtomicU64::new(0),
        }
    }

    fn records(&self) -> u64 {
        self.record_bytes.load(Ordering::Relaxed)
    }

    fn total(&self) -> u64 {
        self.records() + self.snapshot_bytes.load(Ordering::Relaxed)
    }

    fn add_snapshot(&self, bytes: usize) {
        self.snapshot_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.snapshots.fetch_add(1, Ordering::Relaxed);
    }
}

impl<C: Checkpointer> Checkpointer for Counting<C> {
    fn append<'a>(
        &'a self,
        thread_id: &'a str,
        expected_head: Option<CheckpointId>,
        record: NewCheckpoint,
    ) -> BoxFuture<'a, Result<CheckpointMeta, CheckpointError>> {
        let writes = record.writes.len() as u64;
        let snapshot = record.snapshot.as_ref().map(String::len);
        Box::pin(async move {
            let meta = self.inner.append(thread_id, expected_head, record).await?;
            self.record_bytes.fetch_add(writes, Ordering::Relaxed);
            if let Some(bytes) = snapshot {
                self.add_snapshot(bytes);
            }
            Ok(meta)
        })
    }

    fn put_snapshot<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
        snapshot: String,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let bytes = snapshot.len();
        Box::pin(async move {
            self.inner.put_snapshot(thread_id, id, snapshot).await?;
            self.add_snapshot(bytes);
            Ok(())
        })
    }

    fn head<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCheckpoint>, CheckpointError>> {
        self.inner.head(thread_id)
    }

    fn chain<'a>(
        &'a self,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        Box::pin(async move {
            let start = Instant::now();
            let chain = self.inner.chain(thread_id, id).await?;
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.chain_nanos.store(nanos, Ordering::Relaxed);
            let bytes: usize = chain
                .iter()
                .map(|r| r.writes.len() + r.snapshot.as_ref().map_or(0, String::len))
                .sum();
            self.chain_records
                .store(chain.len() as u64, Ordering::Relaxed);
            self.chain_bytes.store(bytes as u64, Ordering::Relaxed);
            Ok(chain)
        })
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredCheckpoint>, CheckpointError>> {
        self.inner.list(thread_id, before, limit)
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, CheckpointError>> {
        self.inner.delete_thread(thread_id)
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.inner.snapshot_policy()
    }

    fn truncate_after<'a>(
        &'a self,
        thread_id: &'a str,
        keep: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.inner.truncate_after(thread_id, keep)
    }
}

/// The floor of a SQLite step: a bare `INSERT` of a row as large as the
/// step's record, into a table laid out as the checkpointer's, in a file of
/// its own with the same settings (WAL, `synchronous = NORMAL`, and the
/// same locking mode), one autocommit statement, prepared once. Run right
/// after each step, so a slow spell on the machine lands on both.
struct Floor {
    conn: rusqlite::Connection,
    next: i64,
}

impl Floor {
    fn open(path: &std::path::Path, exclusive: bool) -> Self {
        let conn = rusqlite::Connection::open(path).expect("the floor's file opens");
        if exclusive {
            conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
                .expect("locking mode");
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "NORMAL")
            .expect("synchronous");
        conn.execute_batch(
            "CREATE TABLE rows (
                thread_id TEXT NOT NULL, id INTEGER NOT NULL, parent_id INTEGER,
                step INTEGER NOT NULL, source TEXT NOT NULL, version INTEGER NOT NULL,
                created_at_ms INTEGER NOT NULL, writes TEXT NOT NULL,
                log_bytes INTEGER NOT NULL, base_bytes INTEGER NOT NULL, snapshot TEXT,
                PRIMARY KEY (thread_id, id)
            ) WITHOUT ROWID;",
        )
        .expect("the floor's table");
        Self { conn, next: 1 }
    }

    /// Inserts a row whose writes are `bytes` long; how long it took.
    fn insert(&mut self, bytes: u64) -> Duration {
        let writes = "x".repeat(usize::try_from(bytes).unwrap_or(0));
        let id = self.next;
        self.next += 1;
        let start = Instant::now();
        self.conn
            .prepare_cached(
                "INSERT INTO rows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut st| {
                st.execute(rusqlite::params![
                    THREAD,
                    id,
                    id - 1,
                    id,
                    "loop",
                    1,
                    1_700_000_000_000_i64,
                    writes,
                    0,
                    0,
                    Option::<String>::None
                ])
            })
            .expect("the floor's insert");
        start.elapsed()
    }
}

/// One reported round.
struct Row {
    round: u32,
    steps: usize,
    messages: usize,
    state_bytes: usize,
    median_us: f64,
    /// The bare insert's median over the window (SQLite only).
    floor_us: Option<f64>,
    mean_us: f64,
    amortized_us: f64,
    max_us: f64,
    median_record_bytes: u64,
    amortized_bytes: f64,
    snapshots: u64,
    load: Duration,
    /// Of which the backend's `chain` (the read).
    load_chain: Duration,
    load_records: u64,
    load_bytes: u64,
}

/// One step as measured, for `--trace`.
struct Step {
    time: Duration,
    record_bytes: u64,
    snapshot_bytes: u64,
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median<T: Copy + PartialOrd>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    sorted[sorted.len() / 2]
}

/// Runs the debate through `saver`, reporting at each of `report` (sorted,
/// the last is the debate's length).
async fn run<C: Checkpointer>(
    saver: &Counting<C>,
    report: &[u32],
    mut floor: Option<&mut Floor>,
) -> Result<(Vec<Row>, Vec<Step>), CheckpointError> {
    let rounds = *report.last().expect("at least one round to report");
    let initial = DebateState {
        messages: [human(format!("Debate topic: {TOPIC}")).with_id("topic")]
            .into_iter()
            .collect(),
        topic: TOPIC.to_owned(),
        max_rounds: rounds,
        ..Default::default()
    };
    let mut thread = Thread::create(saver, THREAD, initial).await?;
    // Per step: time, record bytes, snapshot bytes.
    let mut times: Vec<Duration> = Vec::with_capacity(3 * rounds as usize);
    let mut bytes: Vec<u64> = Vec::with_capacity(3 * rounds as usize);
    let mut snapshot_bytes: Vec<u64> = Vec::with_capacity(3 * rounds as usize);
    let mut floor_times: Vec<Duration> = Vec::new();
    let mut rows = Vec::new();
    for round in 1..=rounds {
        for (node, update) in round_steps(round, rounds) {
            let (records, all) = (saver.records(), saver.total());
            let start = Instant::now();
            thread.save_step(Source::Loop, [(node, update)]).await?;
            times.push(start.elapsed());
            let record = saver.records() - records;
            if let Some(floor) = floor.as_deref_mut() {
                floor_times.push(floor.insert(record));
            }
            bytes.push(record);
            snapshot_bytes.push(saver.total() - all - record);
        }
        if !report.contains(&round) {
            continue;
        }
        let first = 3 * round.saturating_sub(WINDOW_ROUNDS) as usize;
        let window = &times[first..];
        let window_us: Vec<f64> = window.iter().copied().map(micros).collect();
        let mut loads = Vec::with_capacity(LOADS);
        let mut chains = Vec::with_capacity(LOADS);
        for _ in 0..LOADS {
            let start = Instant::now();
            let loaded = Thread::<DebateState, _>::open(saver, THREAD).await?;
            loads.push(start.elapsed());
            chains.push(Duration::from_nanos(
                saver.chain_nanos.load(Ordering::Relaxed),
            ));
            assert_eq!(
                loaded.state(),
                thread.state(),
                "a load sees the writer's state"
            );
            assert_eq!(loaded.head(), thread.head());
        }
        let state = thread.state();
        rows.push(Row {
            round,
            steps: times.len(),
            messages: state.messages.len(),
            state_bytes: state.to_json().to_string().len(),
            median_us: median(&window_us),
            floor_us: (!floor_times.is_empty()).then(|| micros(median(&floor_times[first..]))),
            mean_us: window_us.iter().sum::<f64>() / window_us.len() as f64,
            amortized_us: micros(times.iter().sum::<Duration>()) / times.len() as f64,
            max_us: window_us.iter().copied().fold(0.0, f64::max),
            median_record_bytes: median(&bytes[first..]),
            amortized_bytes: saver.total() as f64 / times.len() as f64,
            snapshots: saver.snapshots.load(Ordering::Relaxed),
            load: median(&loads),
            load_chain: median(&chains),
            load_records: saver.chain_records.load(Ordering::Relaxed),
            load_bytes: saver.chain_bytes.load(Ordering::Relaxed),
        });
    }
    let state = thread.state();
    assert_eq!(state.round, rounds);
    assert_eq!(state.status, DebateStatus::Completed);
    assert_eq!(state.messages.len(), 1 + 3 * rounds as usize);
    assert!(
        state.messages.iter().all(|m| m.id.is_some()),
        "ids assigned"
    );
    let steps = (0..times.len())
        .map(|i| Step {
            time: times[i],
            record_bytes: bytes[i],
            snapshot_bytes: snapshot_bytes[i],
        })
        .collect();
    Ok((rows, steps))
}

fn kib(bytes: impl Into<f64>) -> String {
    format!("{:.1}", bytes.into() / 1024.0)
}

/// Prints a backend's table and closing line; with `--trace`, appends its
/// steps to the CSV file.
fn report(key: &str, name: &str, rows: &[Row], steps: &[Step], config: &Config) {
    let mut out = String::new();
    let _ = writeln!(out, "\n### {name}\n");
    let _ = writeln!(
        out,
        "| round | steps | messages | state KiB | µs/step median | µs/step mean | µs/step max \
         | µs/step since start | record B/step median | B/step amortized | snapshots \
         | load ms (of which read) | load reads (records, KiB) |"
    );
    let _ = writeln!(
        out,
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.0} | {:.1} | {} | {:.0} | {} | {:.2} ({:.2}) | {}, {} |",
            r.round,
            r.steps,
            r.messages,
            kib(u32::try_from(r.state_bytes).unwrap_or(u32::MAX)),
            r.median_us,
            r.mean_us,
            r.max_us,
            r.amortized_us,
            r.median_record_bytes,
            r.amortized_bytes,
            r.snapshots,
            r.load.as_secs_f64() * 1e3,
            r.load_chain.as_secs_f64() * 1e3,
            r.load_records,
            kib(u32::try_from(r.load_bytes).unwrap_or(u32::MAX)),
        );
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        let _ = writeln!(
            out,
            "\n{name}: µs/step at round {} / round {}: median {:.2}x ({:.1} → {:.1} µs), \
             mean {:.2}x; record bytes/step {} → {}",
            last.round,
            first.round,
            last.median_us / first.median_us,
            first.median_us,
            last.median_us,
            last.mean_us / first.mean_us,
            first.median_record_bytes,
            last.median_record_bytes,
        );
    }
    durable_goal(&mut out, name, rows, steps);
    print!("{out}");
    if let Some(path) = &config.trace {
        let mut csv = String::new();
        for (i, step) in steps.iter().enumerate() {
            let _ = writeln!(
                csv,
                "{key},{},{:.3},{},{}",
                i + 1,
                micros(step.time),
                step.record_bytes,
                step.snapshot_bytes
            );
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .expect("the trace file opens");
        std::io::Write::write_all(&mut file, csv.as_bytes()).expect("the trace is written");
    }
}

/// The durable step's goal, for a SQLite backend: the median step at each
/// reported round against the goal (≤ 10 µs), its flatness (last round ÷
/// first), and each window's median against the bare insert's (the floor).
fn durable_goal(out: &mut String, name: &str, rows: &[Row], steps: &[Step]) {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return;
    };
    if first.floor_us.is_none() {
        return;
    }
    let all = micros(median(&steps.iter().map(|s| s.time).collect::<Vec<_>>()));
    let worst = rows.iter().map(|r| r.median_us).fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "{name}, goal: median µs/step ≤ 10 at every reported round: worst window {worst:.1} µs \
         ({}); over all steps {all:.1} µs; flat: round {} ÷ round {} = {:.2}×",
        if worst <= 10.0 { "met" } else { "not met" },
        last.round,
        first.round,
        last.median_us / first.median_us,
    );
    for r in rows {
        let floor = r.floor_us.unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "  round {}: step {:.1} µs ÷ bare INSERT of the same size, same settings {floor:.1} µs = {:.2}×",
            r.round,
            r.median_us,
            r.median_us / floor,
        );
    }
}

fn bench<C: Checkpointer>(
    key: &str,
    name: &str,
    saver: C,
    config: &Config,
    floor: Option<&mut Floor>,
) {
    let saver = Counting::new(saver);
    match agent_state::checkpoint::block_on(run(&saver, &config.rounds, floor)) {
        Ok((rows, steps)) => report(key, name, &rows, &steps, config),
        Err(e) => panic!("{name}: {e}"),
    }
}

/// A SQLite file shared with other handles (`open`), or this handle's
/// alone (`open_exclusive`).
#[cfg(feature = "sqlite")]
fn bench_sqlite(config: &Config, exclusive: bool) {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("checkpoint-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("threads.db");
    let (key, name, saver) = if exclusive {
        (
            "sqlite-exclusive",
            "SQLite file, one handle (WAL, synchronous=NORMAL, locking_mode=EXCLUSIVE)",
            SqliteCheckpointer::open_exclusive(path),
        )
    } else {
        (
            "sqlite",
            "SQLite file (WAL, synchronous=NORMAL)",
            SqliteCheckpointer::open(path),
        )
    };
    let mut floor = Floor::open(&dir.join("floor.db"), exclusive);
    bench(
        key,
        name,
        saver.expect("the SQLite file opens"),
        config,
        Some(&mut floor),
    );
    drop(floor);
    std::fs::remove_dir_all(&dir).expect("the bench's SQLite directory is removed");
}

#[cfg(feature = "postgres")]
fn bench_postgres(config: &Config) {
    use agent_state::checkpoint::postgres::PostgresCheckpointer;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(async {
        let saver = PostgresCheckpointer::connect(pg::url())
            .await
            .expect("the throwaway PostgreSQL server accepts a connection");
        let name = if config.pg_async_commit {
            // What the checkpointer costs without waiting for the disk.
            saver
                .client()
                .batch_execute("SET synchronous_commit = off")
                .await
                .expect("synchronous_commit is set");
            "PostgreSQL (Unix socket, synchronous_commit=off)"
        } else {
            "PostgreSQL (Unix socket)"
        };
        // A server of one's own (AGENT_STATE_PG_URL) may hold an older run.
        saver
            .delete_thread(THREAD)
            .await
            .expect("the old thread goes");
        let saver = Counting::new(saver);
        match run(&saver, &config.rounds, None).await {
            Ok((rows, steps)) => report("postgres", name, &rows, &steps, config),
            Err(e) => panic!("PostgreSQL: {e}"),
        }
    });
}

const USAGE: &str = "usage: checkpoint [--rounds 10,100,1000] [--backends memory,sqlite,sqlite-exclusive,postgres] \
                     [--trace steps.csv] [--pg-async-commit]";

const BACKENDS: [&str; 4] = ["memory", "sqlite", "sqlite-exclusive", "postgres"];

/// What to run, from the command line.
struct Config {
    /// Rounds to report at, sorted; the last is the debate's length.
    rounds: Vec<u32>,
    backends: Vec<String>,
    /// A CSV file to write every step to (backend, step, µs, record bytes,
    /// snapshot bytes).
    trace: Option<std::path::PathBuf>,
    /// PostgreSQL commits without waiting for the WAL to reach the disk
    /// (`synchronous_commit = off` on the checkpointer's session).
    pg_async_commit: bool,
}

/// Reads `--rounds`, `--backends`, `--trace` (either `--x v` or `--x=v`)
/// and `--pg-async-commit`; ignores the `--bench` cargo passes.
fn parse_args() -> Result<Config, String> {
    let mut config = Config {
        rounds: vec![10, 100, 1000],
        backends: BACKENDS.map(String::from).to_vec(),
        trace: None,
        pg_async_commit: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{key} needs a value\n{USAGE}"))
        };
        match key.as_str() {
            "--bench" => {}
            "--rounds" => {
                config.rounds = value()?
                    .split(',')
                    .map(|r| match r.trim().parse::<u32>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(format!("--rounds: `{r}` is not a positive number\n{USAGE}")),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--backends" => {
                config.backends = value()?.split(',').map(|b| b.trim().to_owned()).collect();
                if let Some(bad) = config
                    .backends
                    .iter()
                    .find(|b| !BACKENDS.contains(&b.as_str()))
                {
                    return Err(format!("--backends: unknown backend `{bad}`\n{USAGE}"));
                }
            }
            "--trace" => config.trace = Some(value()?.into()),
            "--pg-async-commit" => config.pg_async_commit = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            _ => return Err(format!("unknown argument `{arg}`\n{USAGE}")),
        }
    }
    config.rounds.sort_unstable();
    config.rounds.dedup();
    if config.rounds.is_empty() {
        return Err(format!("--rounds: no rounds\n{USAGE}"));
    }
    Ok(config)
}

fn main() {
    let config = parse_args().unwrap_or_else(|message| {
        eprintln!("{message}");
        std::process::exit(2);
    });
    if let Some(path) = &config.trace {
        std::fs::write(path, "backend,step,us,record_bytes,snapshot_bytes\n")
            .expect("the trace file is created");
    }
    let wants = |b: &str| config.backends.iter().any(|x| x == b);
    println!(
        "Checkpointing a {}-round debate, 3 node steps a round, one save_step each; \
         window: the {WINDOW_ROUNDS} rounds ({} steps) ending at each round.",
        config.rounds.last().expect("rounds"),
        3 * WINDOW_ROUNDS
    );
    if wants("memory") {
        bench(
            "memory",
            "memory",
            agent_state::checkpoint::MemoryCheckpointer::new(),
            &config,
            None,
        );
    }
    for (backend, exclusive) in [("sqlite", false), ("sqlite-exclusive", true)] {
        if wants(backend) {
            #[cfg(feature = "sqlite")]
            bench_sqlite(&config, exclusive);
            #[cfg(not(feature = "sqlite"))]
            println!("\n({backend} skipped: built without the `sqlite` feature, {exclusive})");
        }
    }
    if wants("postgres") {
        #[cfg(feature = "postgres")]
        bench_postgres(&config);
        #[cfg(not(feature = "postgres"))]
        println!("\n(PostgreSQL skipped: build with `--features postgres` to include it)");
    }
}
