//! Seed 004's debate served over LangGraph's Agent Server API
//! ([`agent_state_server`]), beside the approval example's graph and seed
//! 003's agent, with a page that shows a debate live.
//!
//! | graph id | what it is | input |
//! | --- | --- | --- |
//! | `debate` | [`debate`]: an optimist and a skeptic streaming their arguments token by token, a moderator closing each round | `{"topic": "..", "maxRounds": 3}` |
//! | `approval` | [`approval`]: a draft that pauses for a person's verdict | `{"topic": ".."}`, then `command.resume` `{"approve": true, "comment": ".."}` |
//! | `agent` | [`agent`]: seed 003's five middleware on a scripted model | `{"messages": [{"role": "user", "content": ".."}]}` |
//!
//! Any LangGraph client talks to it (the Python or JS `langgraph-sdk`,
//! `useStream`, Agent Chat UI); the page at `/` ([`page`]) is one too,
//! written by hand. Threads, runs and checkpoints are in one SQLite file.

pub mod agent;
pub mod approval;
pub mod bounds;
pub mod debate;
pub mod page;

use std::path::PathBuf;

use agent_state_server::Server;
use debate::Model;

/// The server of the three graphs on `db`, the debaters on `model`, the
/// page at `/`.
pub fn server(db: impl Into<PathBuf>, model: Model) -> Result<Server, Box<dyn std::error::Error>> {
    Ok(Server::new()
        .database(db)
        .routes(page::routes())
        .graph("debate", debate::build_graph(model)?)
        .graph("approval", approval::build_graph()?)
        .graph("agent", agent::build_graph()?))
}
