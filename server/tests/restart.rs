//! What a restart keeps: threads, runs, histories and assistants, in the
//! SQLite file or the PostgreSQL database; and no run left `running` by a
//! process that died.

mod support;

use reqwest::Client;
use serde_json::json;
use support::http::{get, post, APPROVAL, THREAD};
use support::{fresh_file, start, Db};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_threads_runs_and_assistants() {
    restart_keeps_threads_runs_and_assistants(fresh_file()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_threads_runs_and_assistants_on_postgres() {
    restart_keeps_threads_runs_and_assistants(support::db::fresh_pg()).await;
}

async fn restart_keeps_threads_runs_and_assistants(db: Db) {
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.clone());
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    let (_, before) = get(&c, format!("{b}/assistants/{APPROVAL}")).await;
    server.stop().await;
    let server = start(&db).await;
    let b = &server.base;
    let (_, t) = get(&c, format!("{b}/threads/{THREAD}")).await;
    assert_eq!(t["status"], "interrupted");
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}/runs"))
            .await
            .1
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        get(&c, format!("{b}/assistants/{APPROVAL}")).await.1,
        before
    );
    let (_, history) = post(&c, format!("{b}/threads/{THREAD}/history"), json!({})).await;
    assert_eq!(history.as_array().map(Vec::len), Some(3), "{history}");
    let resume = json!({"assistant_id": "approval", "command": {"resume": false}});
    let (_, out) = post(&c, format!("{b}/threads/{THREAD}/runs/wait"), resume).await;
    assert_eq!(out["log"], json!(["draft:x", "review"]));
    server.stop().await;
}

/// A run the process died in (left `running` in the file) is marked
/// `error` at the next start, its thread too: nothing stays busy forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_running_by_a_dead_process_is_marked_failed() {
    let db = fresh_file();
    let server = start(&db).await;
    let (c, b) = (Client::new(), server.base.clone());
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "approval", "input": {"topic": "x"}});
    post(&c, format!("{b}/threads/{THREAD}/runs/wait"), run).await;
    server.stop().await;
    // What a crash mid-run leaves behind.
    let file = rusqlite::Connection::open(db.path()).unwrap();
    file.execute_batch(
        "UPDATE server_runs SET status = 'running'; UPDATE server_threads SET status = 'busy';",
    )
    .unwrap();
    drop(file);
    let server = start(&db).await;
    let b = &server.base;
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}")).await.1["status"],
        "error"
    );
    assert_eq!(
        get(&c, format!("{b}/threads/{THREAD}/runs")).await.1[0]["status"],
        "error"
    );
    server.stop().await;
}

/// A file made before runs recorded the server that owns them opens: the
/// column is added, and its runs read as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_before_runs_had_owners_opens() {
    let db = fresh_file();
    std::fs::create_dir_all(db.path().parent().unwrap()).unwrap();
    let file = rusqlite::Connection::open(db.path()).unwrap();
    file.execute_batch(&format!(
        "CREATE TABLE server_runs (
            run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL,
            metadata TEXT NOT NULL, status TEXT NOT NULL, kwargs TEXT NOT NULL,
            multitask_strategy TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
         INSERT INTO server_runs VALUES ('{RUN}', '{THREAD}', '{APPROVAL}', '{{}}', 'success',
            '{{}}', 'enqueue', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00');"
    ))
    .unwrap();
    drop(file);
    let server = start(&db).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    let (_, run) = get(&c, format!("{b}/threads/{THREAD}/runs/{RUN}")).await;
    assert_eq!(run["status"], "success", "{run}");
    server.stop().await;
}

const RUN: &str = "55555555-5555-5555-5555-555555555555";
