//! Serve [agent-state](https://docs.rs/agent-state) graphs over LangGraph's
//! Agent Server API, so the clients LangGraph users already have (the
//! Python and JS `langgraph-sdk`, `useStream`, Agent Chat UI, Studio) talk
//! to a graph written in Rust, from one binary on one SQLite file.
//!
//! ```no_run
//! use agent_state::graph::{StateGraph, START};
//! use agent_state::AgentState;
//! use agent_state_server::Server;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Count {
//!     n: u32,
//! }
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let graph = StateGraph::<Count>::new()
//!     .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
//!     .add_edge(START, "inc")
//!     .compile()?;
//! Server::new()
//!     .database("threads.db")
//!     .graph("count", graph)
//!     .serve("127.0.0.1:2024")
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! What a client meets:
//!
//! * one assistant per graph, its id derived from the graph's name as the
//!   official server derives it, so it survives restarts; a run's
//!   `assistant_id` may be the graph's name; its `/graph` (nodes and
//!   edges) and, for a graph registered with
//!   [`Server::graph_with_schemas`], its input, output and state JSON
//!   Schemas;
//! * threads (create, read, patch, delete, search, count, state, state at
//!   a checkpoint, history), their
//!   status `idle | busy | interrupted | error` with the pending
//!   interrupts; a thread's first run stamps `graph_id` and `assistant_id`
//!   into its metadata;
//! * runs streamed as server-sent events (`metadata` first, then the
//!   `values`, `updates`, `messages-tuple`, `custom`, `tasks` and
//!   `checkpoints` modes, `error` when the run fails), waited for, listed
//!   and read, or started in the background and joined (its output, or
//!   its stream: from the start, or after the `Last-Event-ID` a client
//!   reconnects with; `stream_resumable` numbers a stream's events);
//!   stateless runs on a thread of their own; an interrupt answered with
//!   `command.resume`; cancelled (`POST .../runs/{run_id}/cancel`);
//!   a new input on a paused thread run from the start; `multitask_strategy`
//!   `reject`, `enqueue` or `interrupt`; `on_disconnect` `cancel`
//!   (the run stops at the first event or heartbeat its client cannot
//!   get) or `continue`; a `: heartbeat` comment after 5 s of silence;
//! * refusals as `{"detail": ..}` with 404, 409, 413 or 422, each logged;
//!   a body over 2 MiB is refused, and a client slower than
//!   [`Server::read_timeout`] to send its headers or its body is cut off.
//!
//! A run's input is read through the graph's input type: a client cannot
//! set a `private` or `omit_from_input` field, and a bad value is a 422
//! naming the field. A state's `immutable` fields (a debate's topic) are
//! set by the input that starts a thread, which builds its first state,
//! and by no later one. [`Server::routes`] serves routes of your own (a
//! page, say) beside the API, as LangGraph's `http.app` does. Threads, runs and assistants are stored in the same
//! SQLite file as the checkpoints; a run that was in flight when the
//! process died is marked `error` at the next start.
//!
//! # Where it differs from LangGraph's own server
//!
//! On purpose: a run's input is checked against the graph's input type
//! before the run starts (the official server runs it and fails inside a
//! node); bodies over 2 MiB are refused (413) and slow clients cut off; a
//! thread that ran one graph refuses a run of another (409: its state is
//! typed); `GET /assistants/{id}` also takes the graph's name; a state's
//! values hold every field, defaults included (LangGraph leaves out
//! channels never written); interrupt and checkpoint ids are the
//! runtime's (opaque either way); a thread's `interrupts` are keyed by
//! node; a join stream replays a live run from its start. LangGraph has
//! no immutable fields: here an input naming one starts a thread from a
//! state built from it, and on a thread that has a state the run fails
//! (`ThreadExists`) with the state unchanged.
//!
//! Not served yet (refused with a 422 naming the option, never ignored):
//! the `messages`, `events` and `debug` stream modes, `command.update` and
//! `command.goto`, `interrupt_before` / `interrupt_after`, runs from a
//! `checkpoint_id`, the `rollback` strategy and cancel action, and
//! history's `before` / `metadata` filters. Assistants are one per graph
//! (no create or update), and there are no crons, store or thread copy.

#![warn(missing_docs)]

mod access;
mod app;
mod assistants;
mod body;
mod cors;
mod error;
mod events;
mod ids;
mod listen;
mod log;
mod modes;
mod runner;
mod runs;
mod served;
mod server;
mod snapshot;
mod sse;
mod store;
mod task;
mod threads;

pub use server::{Listening, Server, ServerError};
