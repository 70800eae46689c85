//! The debate workflow served over LangGraph's Agent Server API
//! ([`agent_state_server`]), beside the approval example's graph and the
//! `middleware_schemas` example's deep agent, with a page that shows a
//! debate live.
//!
//! | graph id | what it is | input |
//! | --- | --- | --- |
//! | `debate` | [`debate`]: an optimist and a skeptic streaming their arguments token by token, a moderator closing each round | `{"topic": "..", "maxRounds": 3}` |
//! | `approval` | [`approval`]: a draft that pauses for a person's verdict | `{"topic": ".."}`, then `command.resume` `{"approve": true, "comment": ".."}` |
//! | `agent` | [`agent`]: the deep agent's five middleware on a scripted model | `{"messages": [{"role": "user", "content": ".."}]}` |
//!
//! Any LangGraph client talks to it (the Python or JS `langgraph-sdk`,
//! `useStream`, Agent Chat UI); the page at `/` ([`page`]) is one too,
//! written by hand. Threads, runs and checkpoints are in one SQLite file
//! ([`Store::Sqlite`]), or in a PostgreSQL database ([`Store::Postgres`])
//! that any number of these servers share: any of them serves, resumes or
//! cancels any thread, one run per thread at a time across them all.

pub mod agent;
pub mod approval;
pub mod bounds;
pub mod debate;
pub mod page;

use std::path::PathBuf;

use agent_state_server::Server;
use debate::Model;

/// Where threads, runs and checkpoints are kept.
#[derive(Debug, Clone)]
pub enum Store {
    /// A SQLite file: one server.
    Sqlite(PathBuf),
    /// A PostgreSQL database (a `postgresql://` URL or `host=.. user=..`):
    /// any number of servers.
    Postgres(String),
}

/// The server of the three graphs on `store`, the debaters on `model`,
/// the page at `/`.
pub fn server(store: Store, model: Model) -> Result<Server, Box<dyn std::error::Error>> {
    let server = match store {
        Store::Sqlite(path) => Server::new().database(path),
        Store::Postgres(url) => Server::new().postgres(url),
    };
    Ok(server
        .routes(page::routes())
        .graph("debate", debate::build_graph(model)?)
        .graph("approval", approval::build_graph()?)
        .graph("agent", agent::build_graph()?))
}
