//! What a client sees when the database fails: never a file path or a
//! connection string, and a SQLite file deleted or replaced under a
//! running server is noticed, not written into unseen.

mod support;

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use support::http::{get, new_thread, post, THREAD};
use support::{frames, fresh_file, start, Db};

/// Starts a streamed run of 2 s, deletes the file once its first event
/// arrived, and reads the rest: every event's `(name, data)`.
async fn stream_then_delete(c: &Client, base: &str, db: &Db) -> Vec<(String, Value)> {
    post(c, format!("{base}/threads"), json!({"thread_id": THREAD})).await;
    let run = json!({"assistant_id": "countdown", "input": {"n": 20}, "stream_mode": "values"});
    let url = format!("{base}/threads/{THREAD}/runs/stream");
    let mut r = c.post(url).json(&run).send().await.expect("stream");
    let mut body = String::new();
    let first = r.chunk().await.expect("a chunk").expect("the first event");
    body.push_str(&String::from_utf8_lossy(&first));
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::remove_file(db.path()).expect("delete the file");
    while let Some(chunk) = r.chunk().await.expect("a chunk") {
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    frames(&body)
}

/// What every later request gets: 503, saying the file went away, naming
/// no path.
async fn assert_unavailable(c: &Client, base: &str, db: &Db) {
    let dir = db.path().parent().expect("dir").display().to_string();
    let answers = [
        get(c, format!("{base}/threads/{THREAD}")).await,
        post(c, format!("{base}/threads"), json!({})).await,
        post(c, format!("{base}/threads/search"), json!({})).await,
    ];
    for (status, body) in answers {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let detail = body["detail"].as_str().expect("detail");
        assert!(detail.contains("deleted or replaced"), "{detail}");
        assert!(!detail.contains(&dir), "{detail}");
    }
}

/// The file deleted mid-run: the run fails saying so, and the server
/// answers 503 until it is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_file_deleted_while_serving_fails_the_run_and_later_requests() {
    let db = fresh_file();
    let server = start(&db).await;
    let c = Client::new();
    let events = stream_then_delete(&c, &server.base, &db).await;
    let (name, error) = events.last().expect("events");
    assert_eq!(
        (name.as_str(), &error["error"]),
        ("error", &json!("Checkpoint"))
    );
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("database file was deleted or replaced"),
        "{message}"
    );
    assert_unavailable(&c, &server.base, &db).await;
    server.stop().await;
}

/// Another file moved to the path (a restore, say) is not written into
/// either: what this server opened is no longer what is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_file_replaced_while_serving_is_noticed() {
    let db = fresh_file();
    let server = start(&db).await;
    let c = Client::new();
    new_thread(&c, &server.base, THREAD).await;
    let other = db.path().with_extension("other");
    std::fs::copy(db.path(), &other).expect("copy the file");
    std::fs::rename(&other, db.path()).expect("replace the file");
    assert_unavailable(&c, &server.base, &db).await;
    server.stop().await;
}

/// The database's own error (here a table dropped under the server) is a
/// 500 with a generic detail; its text, which may name the file or the
/// host, is only logged.
async fn database_errors_are_a_generic_500(
    db: Db,
    drop_table: impl std::future::Future<Output = ()>,
) {
    let server = start(&db).await;
    let (c, b) = (Client::new(), &server.base);
    post(&c, format!("{b}/threads"), json!({"thread_id": THREAD})).await;
    drop_table.await;
    let (status, body) = get(&c, format!("{b}/threads/{THREAD}/runs")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body, json!({"detail": "Internal server error"}));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_error_is_a_generic_500() {
    let db = fresh_file();
    let path = db.path().clone();
    let drop_table = async move {
        let file = rusqlite::Connection::open(path).expect("open");
        file.execute_batch("DROP TABLE server_runs").expect("drop");
    };
    database_errors_are_a_generic_500(db, drop_table).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_error_is_a_generic_500() {
    let db = support::db::fresh_pg();
    let url = db.url();
    let drop_table = async move {
        let client = support::db::connect(&url).await;
        client
            .batch_execute("DROP TABLE server_runs")
            .await
            .expect("drop");
    };
    database_errors_are_a_generic_500(db, drop_table).await;
}
