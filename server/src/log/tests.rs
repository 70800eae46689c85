//! The stored log against a real PostgreSQL server (the tests' throwaway
//! one): a server taking a run over numbers on from the last event its
//! first server stored.

use std::sync::Arc;
use std::time::Duration;

use super::postgres::StoredEvents;
use super::RunLog;
use crate::open::PoolSettings;
use crate::store::postgres::PgDb;
use crate::store::{Db, Store};

#[allow(dead_code)]
#[path = "../../../tests/support/pg.rs"]
mod pg;

/// A fresh database with the server's tables and one run, `r1`: its
/// stored events, and the store.
async fn stored_events() -> (Arc<StoredEvents>, Store) {
    let admin = pg::url();
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    static DATABASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = DATABASES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let name = format!("unit_events_{}_{n}", std::process::id());
    let create = format!("CREATE DATABASE {name}");
    client.batch_execute(&create).await.expect("a database");
    let url = format!("{admin} dbname={name}");
    let db = PgDb::connect(&url, PoolSettings::default())
        .await
        .expect("the tables");
    let run = "INSERT INTO server_runs VALUES ('r1', 't1', 'a', '{}', 'running', '{}',
        'enqueue', '', '', 'first-server')";
    let client = db.pool().get().await.expect("a connection");
    client.batch_execute(run).await.expect("a run");
    let (ttl, pool) = (Duration::from_secs(120), db.pool().clone());
    let events = StoredEvents::open(&url, pool, ttl)
        .await
        .expect("stored events");
    (
        events,
        Store::new(Db::Postgres(db), "second-server".to_owned()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_handed_over_numbers_on_and_a_new_attempt_from_its_range() {
    let (stored, store) = stored_events().await;
    let first = RunLog::continuing_in(&stored, "r1", "t1", 1)
        .await
        .expect("a log");
    let ids: Vec<usize> = (0..3)
        .map(|n| first.push("values".into(), format!("{{\"n\":{n}}}")))
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    // Its server dies: the log goes without an end; what it queued is
    // written all the same.
    drop(first);
    let mut last = 0;
    for _ in 0..100 {
        last = stored.last_seq("r1").await.expect("the last id");
        if last == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(last, 3);
    // Handed over (the same attempt): numbered on.
    let second = RunLog::continuing_in(&stored, "r1", "t1", 1)
        .await
        .expect("a log");
    assert_eq!(second.push("values".into(), "{\"n\":3}".to_owned()), 4);
    assert!(!second.holds_after(2) && second.holds_after(3));
    second.release().await;
    // Taken over after a death (attempt 2): from the attempt's own range.
    let third = RunLog::continuing_in(&stored, "r1", "t1", 2)
        .await
        .expect("a log");
    let first_of_two = super::ATTEMPT_IDS + 1;
    assert_eq!(
        third.push("values".into(), "{\"n\":4}".to_owned()),
        first_of_two
    );
    assert!(!third.holds_after(4) && third.holds_after(super::ATTEMPT_IDS));
    third.close().await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let stored = Arc::clone(&stored);
    let follow = tokio::spawn(async move { stored.follow(&store, "t1", "r1", 0, tx).await });
    let mut frames = Vec::new();
    while let Some(frame) = rx.recv().await {
        frames.push(frame);
    }
    follow.await.expect("the replay");
    let ids: Vec<&str> = frames
        .iter()
        .filter_map(|f| f.split("\r\n").find_map(|l| l.strip_prefix("id: ")))
        .collect();
    let last = first_of_two.to_string();
    assert_eq!(ids, ["1", "2", "3", "4", last.as_str()]);
    assert!(frames[3].contains("data: {\"n\":3}"));
    assert!(frames[4].contains("data: {\"n\":4}"));
}

/// The ids of the frames a follower of run `r1` gets from the start.
async fn replayed(stored: &Arc<StoredEvents>, store: Store) -> Vec<String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let stored = Arc::clone(stored);
    let follow = tokio::spawn(async move { stored.follow(&store, "t1", "r1", 0, tx).await });
    let mut ids = Vec::new();
    while let Some(frame) = rx.recv().await {
        let id = frame.split("\r\n").find_map(|l| l.strip_prefix("id: "));
        ids.extend(id.map(str::to_owned));
    }
    follow.await.expect("the replay");
    ids
}

/// A database that refuses the events for a while (a constraint no event
/// meets, then dropped): the batch is kept and written once it can be,
/// with those that came since, so followers miss nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_refused_for_a_moment_are_written_once_they_can_be() {
    let (stored, store) = stored_events().await;
    let admin = store
        .pg()
        .expect("postgres")
        .client()
        .await
        .expect("a client");
    let refuse = "ALTER TABLE server_run_events ADD CONSTRAINT refused CHECK (seq < 0) NOT VALID";
    admin.batch_execute(refuse).await.expect("refuse");
    let log = RunLog::continuing_in(&stored, "r1", "t1", 1)
        .await
        .expect("a log");
    for n in 0..3 {
        log.push("values".into(), format!("{{\"n\":{n}}}"));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    log.push("values".into(), "{\"n\":3}".to_owned());
    assert_eq!(
        stored.last_seq("r1").await.expect("last"),
        0,
        "refused so far"
    );
    let accept = "ALTER TABLE server_run_events DROP CONSTRAINT refused";
    admin.batch_execute(accept).await.expect("accept");
    log.close().await;
    assert_eq!(replayed(&stored, store).await, ["1", "2", "3", "4"]);
}
