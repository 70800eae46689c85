//! Seed 004's debate served over HTTP: an axum server whose endpoint starts
//! or resumes a debate thread and streams its events as server-sent events,
//! and a page that shows the debate live.
//!
//! Threads are stored in a SQLite file by default, or in PostgreSQL when
//! the server is given a connection string: then the servers are stateless
//! and any of them can serve (and resume) any thread, as when a deployment
//! outgrows one machine.
//!
//! * [`debate`]: the state, the graph, the scripted model.
//! * [`api`]: the routes and how a request becomes a run's stream.
//! * [`lease`]: one run per thread at a time, across servers.
//! * [`serve`]: opening the store and serving.

pub mod api;
pub mod debate;
pub mod lease;

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use agent_state::checkpoint::postgres::PostgresCheckpointer;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::checkpoint::Checkpointer;

use api::App;
use debate::{build_graph, Model};
use lease::Leases;

/// Where threads are stored.
#[derive(Debug, Clone)]
pub enum Store {
    /// A SQLite file: one server.
    Sqlite(PathBuf),
    /// A PostgreSQL database (a `postgresql://` URL or `host=.. user=..`):
    /// any number of servers.
    Postgres(String),
}

/// Opens the store, builds the graph on `model`, and makes the routes.
pub async fn app(store: &Store, model: Model) -> Result<axum::Router, Box<dyn Error>> {
    let (saver, leases): (Arc<dyn Checkpointer>, Leases) = match store {
        Store::Sqlite(path) => (Arc::new(SqliteCheckpointer::open(path)?), Leases::local()),
        Store::Postgres(url) => (
            Arc::new(PostgresCheckpointer::connect(url).await?),
            Leases::Postgres(url.clone()),
        ),
    };
    let app = App {
        graph: Arc::new(build_graph(model)?),
        saver,
        leases,
    };
    Ok(api::router(Arc::new(app)))
}

/// Serves `router` on `addr` until Ctrl-C, printing the address it listens
/// on (`listening on http://127.0.0.1:3000`; with port 0, the port the
/// system chose) once it accepts connections.
pub async fn serve(addr: SocketAddr, router: axum::Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
