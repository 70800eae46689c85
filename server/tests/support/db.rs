//! The database a test server runs on: a fresh SQLite file, or (with the
//! `postgres` feature) a fresh database on the throwaway PostgreSQL
//! server. `fresh_db` picks by `AGENT_STATE_SERVER_BACKEND` (`sqlite`, the
//! default, or `postgres`), so the whole suite runs on either backend:
//! `AGENT_STATE_SERVER_BACKEND=postgres cargo test -p agent-state-server
//! --features postgres`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_state_server::Server;

/// Where a test server keeps its state.
#[derive(Debug, Clone)]
pub enum Db {
    File(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres {
        /// The throwaway server's connection string, for `postgres`.
        admin: String,
        /// This test's database on it.
        name: String,
    },
}

static N: AtomicUsize = AtomicUsize::new(0);

/// A fresh database of the backend the environment asks for.
pub fn fresh_db() -> Db {
    match std::env::var("AGENT_STATE_SERVER_BACKEND").as_deref() {
        Ok("postgres") => postgres_or_panic(),
        Ok("sqlite") | Err(_) => fresh_file(),
        Ok(other) => panic!("AGENT_STATE_SERVER_BACKEND={other}: not `sqlite` or `postgres`"),
    }
}

#[cfg(feature = "postgres")]
fn postgres_or_panic() -> Db {
    fresh_pg()
}

#[cfg(not(feature = "postgres"))]
fn postgres_or_panic() -> Db {
    panic!("AGENT_STATE_SERVER_BACKEND=postgres needs `--features postgres`")
}

/// A fresh SQLite file under the system's temporary directory.
pub fn fresh_file() -> Db {
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("agent-state-server-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Db::File(dir.join("server.db"))
}

/// A fresh database on the test PostgreSQL server (created when a server
/// first starts on it).
#[cfg(feature = "postgres")]
pub fn fresh_pg() -> Db {
    let n = N.fetch_add(1, Ordering::Relaxed);
    Db::Postgres {
        admin: super::pg::url().to_owned(),
        name: format!("server_{}_{n}", std::process::id()),
    }
}

impl Db {
    /// The SQLite file (a test of the file itself).
    pub fn path(&self) -> &PathBuf {
        match self {
            Db::File(path) => path,
            #[cfg(feature = "postgres")]
            Db::Postgres { .. } => panic!("not a SQLite database"),
        }
    }

    /// The connection string of this test's PostgreSQL database.
    #[cfg(feature = "postgres")]
    pub fn url(&self) -> String {
        match self {
            Db::Postgres { admin, name } => format!("{admin} dbname={name}"),
            Db::File(_) => panic!("not a PostgreSQL database"),
        }
    }

    /// Creates the PostgreSQL database if it is not there yet.
    pub async fn create(&self) {
        #[cfg(feature = "postgres")]
        if let Db::Postgres { admin, name } = self {
            let client = connect(admin).await;
            let exists = client
                .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[name])
                .await
                .expect("list databases");
            if exists.is_none() {
                let sql = format!("CREATE DATABASE {name}");
                client.batch_execute(&sql).await.expect("create database");
            }
        }
    }

    /// `server` set to keep its state here.
    pub fn configure(&self, server: Server) -> Server {
        match self {
            Db::File(path) => server.database(path),
            #[cfg(feature = "postgres")]
            // A small pool: many test servers share the test database
            // server's 100 connections.
            Db::Postgres { .. } => server.postgres(self.url()).pool_size(4),
        }
    }
}

/// A client of the test PostgreSQL server (`url`: a connection string).
#[cfg(feature = "postgres")]
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test server");
    tokio::spawn(connection);
    client
}
