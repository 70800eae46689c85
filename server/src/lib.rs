//! Serve [agent-state](https://docs.rs/agent-state) graphs over LangGraph's
//! Agent Server API, so the clients LangGraph users already have (the
//! Python and JS `langgraph-sdk`, `useStream`, Agent Chat UI, Studio) talk
//! to a graph written in Rust, from one binary on one SQLite file, or,
//! with the `postgres` feature, from several servers on one PostgreSQL
//! database (`Server::postgres`).
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
//! * an assistant of each graph's own, its id derived from the graph's name as the
//!   official server derives it, so it survives restarts; a run's
//!   `assistant_id` may be the graph's name; its `/graph` (nodes and
//!   edges; with `xray`, `true` or a depth, each node that is a graph of
//!   its own drawn expanded, its nodes named `node:child`, as the official
//!   server draws it) and, for a graph registered with
//!   [`Server::graph_with_schemas`], its input, output and state JSON
//!   Schemas;
//! * assistants searched by graph, name, metadata, sorted and `select`ed,
//!   and counted;
//! * assistants created (`POST /assistants`: a served `graph_id`, an
//!   optional `assistant_id`, `config`, `context`, `metadata`, `name`,
//!   `description`, `if_exists` `raise` (409) or `do_nothing`), changed
//!   (`PATCH /assistants/{id}`: each change a new version, its metadata
//!   merged), set back to a version (`POST /assistants/{id}/latest`), their
//!   versions listed (`POST /assistants/{id}/versions`: by `metadata`,
//!   `limit`, `offset`), deleted (`DELETE /assistants/{id}`, with
//!   `?delete_threads=true` the threads that name it), and stored with
//!   their versions beside the threads (a graph's own assistant may be
//!   changed or deleted as well, and comes back at the next start); a run
//!   of an assistant gets its `config.configurable` and `context` under
//!   the run's own (its nodes read them as [`RunConfig`]) and its metadata
//!   under the run's; `GET /assistants/{id}/subgraphs` (and
//!   `/subgraphs/{namespace}`, `?recurse=true`) lists the graph's
//!   subgraphs by namespace (`child`, `child|grandchild`);
//! * threads (create, read, patch, delete, search and count by ids,
//!   status, metadata and values, sorted and `select`ed, copy, state,
//!   state at a checkpoint (`GET /threads/{id}/state/{checkpoint_id}`, or
//!   `POST /threads/{id}/state/checkpoint` with a checkpoint config, what
//!   the SDKs' `get_state(thread, checkpoint=..)` sends), a state update
//!   on the head or, with `checkpoint_id` / `checkpoint`, forking the
//!   thread at that checkpoint, history (`POST`: below `before`, the one
//!   state at `checkpoint`, by `metadata`; `GET`: `limit` and `before` in
//!   the query), their
//!   status `idle | busy | interrupted | error` with the pending
//!   interrupts; a thread's first run stamps `graph_id` and `assistant_id`
//!   into its metadata;
//! * threads' time-to-live (`ttl: {"strategy": "delete" | "keep_latest",
//!   "ttl": minutes}` on `POST` and `PATCH /threads`, shown with
//!   `?include=ttl`; a default with [`Server::thread_ttl`]), swept every
//!   [`Server::ttl_sweep_interval`], and `POST /threads/prune`; with
//!   [`Server::keep_checkpoints`] a thread keeps only its last
//!   checkpoints, and the pending writes of steps that landed are always
//!   collected after a run, so storage stays bounded;
//! * runs streamed as server-sent events (`metadata` first, then the
//!   `values`, `updates`, `messages-tuple`, `messages` (the message so
//!   far: `messages/metadata`, `messages/partial`, `messages/complete`),
//!   `custom`, `tasks`, `checkpoints`, `debug` and `events`
//!   (`astream_events` v2: the graph's, each node's and each streamed chat
//!   model's start, stream and end) modes, a subgraph's events under
//!   `mode|node:task` with `stream_subgraphs`, `error` when the run
//!   fails), waited for, listed
//!   and read, or started in the background and joined (its output, or
//!   its stream: from the start, or after the `Last-Event-ID` a client
//!   reconnects with; `stream_resumable` numbers a stream's events);
//!   on PostgreSQL, a run's stream joined or resumed on any server, during
//!   the run and for `Server::stream_ttl` after it, missing nothing and
//!   repeating nothing;
//!   stateless runs on a thread of their own (streamed, waited for, or in
//!   the background with `POST /runs`, several at once with `POST
//!   /runs/batch`), deleted once the run ends unless `on_completion` is
//!   `keep`; a thread's runs followed as they come (`GET
//!   /threads/{id}/stream`, the SDKs' `threads.join_stream`: each run's
//!   events, then `metadata` `{"status": "run_done", "run_id"}`; on
//!   PostgreSQL the runs of every server; `stream_modes` `run_modes`,
//!   `lifecycle` or `state_update`; ids `<ms>-<n>`, which
//!   `Last-Event-ID` resumes after); an interrupt answered with
//!   `command.resume`, several at once with a map of their ids to values
//!   (LangGraph's `Command(resume={id: value})`: a map whose keys are all
//!   interrupt ids, pending or of their form `task/step/n`, one not
//!   pending failing the run with `UnknownInterrupt`; any other value
//!   answers the one pending, or with none pending the first interrupt
//!   the thread's next step raises);
//!   `command.update` (written as an update of the
//!   thread's last node, which then goes on) and `command.goto` (the named
//!   nodes run next, or a `Send`'s node on its input); `interrupt_before` / `interrupt_after` (a list of
//!   nodes, or `"*"`); a run from a `checkpoint_id` (or `checkpoint`),
//!   which forks the thread there; `durability` `sync`, `async` or `exit`;
//!   cancelled (`POST .../runs/{run_id}/cancel`, action `interrupt` or
//!   `rollback`; several at once with `POST /runs/cancel`: a thread's
//!   `run_ids`, or every run whose `status` is `pending`, `running` or
//!   `all`); deleted (`DELETE .../runs/{run_id}`);
//!   a new input on a paused thread run from the start; `multitask_strategy`
//!   `reject`, `enqueue`, `interrupt` or `rollback` (the run holding the
//!   thread is stopped, and it and the steps it stored are deleted: in
//!   one transaction of the checkpointer, `Checkpointer::truncate_after`,
//!   so the checkpoints before it keep their ids, its own are never given
//!   out again, and a crash leaves the thread before or after it);
//!   `on_disconnect` `cancel`
//!   (the run stops at the first event or heartbeat its client cannot
//!   get) or `continue`; a `: heartbeat` comment after 5 s of silence;
//! * AG-UI (<https://docs.ag-ui.com>, what CopilotKit's `HttpAgent`
//!   speaks): `POST /ag-ui/{assistant_id}` with a `RunAgentInput` runs the
//!   graph on the server's thread for its `threadId` (that id if it is a
//!   UUID, else one derived from it; `agui_thread_id` in its metadata) and
//!   answers with AG-UI's events: `RUN_STARTED`, a step per node,
//!   `TEXT_MESSAGE_*` and `TOOL_CALL_*` as the model streams them,
//!   `TOOL_CALL_RESULT`, `STATE_SNAPSHOT` (the state but its messages),
//!   `MESSAGES_SNAPSHOT`, then `RUN_FINISHED` (its `outcome` the
//!   interrupts the run paused on, or the browser's tool calls left to
//!   answer) or `RUN_ERROR`. The browser's `tools` are offered to an
//!   agent's model (`agent::ClientTools`): a call of one ends the run, and
//!   the `tool` message of the next run answers it. A `resolved` `resume`
//!   entry (or `forwardedProps.command.resume`) answers an interrupt. A bad
//!   input is a 422 listing each problem by where it is, as AG-UI's
//!   FastAPI adapters answer;
//! * the thread-centric protocol of the newest clients (`useStream` in
//!   `@langchain/react`, the JS SDK's `client.threads.stream`): `POST
//!   /threads/{id}/commands` (`run.start`, `input.respond`, and the
//!   subscription commands' HTTP answers) and `POST
//!   /threads/{id}/stream/events`, an SSE stream of the thread's runs as
//!   protocol envelopes (`lifecycle`, `values`, `messages` as content
//!   blocks, `input.requested`) filtered by channels, namespaces and
//!   depth, resumed after a `since` sequence number;
//! * refusals as `{"detail": ..}` with 404, 409, 413 or 422, each logged;
//!   a body over 2 MiB is refused, and a client slower than
//!   [`Server::read_timeout`] to send its headers or its body, or to take
//!   what is written to it (a stream it stopped reading), is cut off;
//! * each body checked for its route's shape before anything runs, as the
//!   official server checks it against its schema: not a JSON object, or
//!   a documented field of the wrong type or out of range (`limit` 1 to
//!   1,000, a thread `status`, a run's `config`, `config.recursion_limit`
//!   of at least 1, `context`, `on_completion`, `if_not_exists`,
//!   `after_seconds`, `webhook`, `feedback_keys`, ...), a 422 that names
//!   the field (`config.recursion_limit: expected an integer of at least
//!   1`); a path id that is not UTF-8, the 422 of an id that
//!   is no UUID.
//!
//! A run's input is read through the graph's input type: a client cannot
//! set a `private` or `omit_from_input` field, and a bad value is a 422
//! naming the field. A state's `immutable` fields (a debate's topic) are
//! set by the input that starts a thread, which builds its first state,
//! and by no later one. [`Server::routes`] serves routes of your own (a
//! page, say) beside the API, as LangGraph's `http.app` does.
//!
//! Custom auth, as LangGraph's `Auth` does it ([`auth`]): a hook that
//! says who a request comes from or refuses it (401,
//! [`Server::authenticate`]), and hooks per resource and action
//! ([`Server::authorize`]) that refuse (403) or scope a caller to a
//! filter on metadata: stamped into the threads they create, everything
//! else answered 404 or left out of lists; a Store hook may put each
//! caller's items under a namespace of their own.
//!
//! # Where state lives
//!
//! Threads, runs and assistants are stored beside the checkpoints: in the
//! same SQLite file ([`Server::database`], the default), or in the same
//! PostgreSQL database (`Server::postgres`). A restart keeps them all.
//!
//! * On SQLite, one server owns the file: a run that was in flight when
//!   the process died is marked `error` at the next start. The file is
//!   watched: deleted or replaced while the server runs (SQLite would go
//!   on writing into the unlinked file, and lose it all), the run in
//!   progress fails saying so, and every later request is answered 503
//!   until a restart opens the file now at the path.
//! * On PostgreSQL, any number of servers share the database and serve
//!   the same threads: any server answers any request for any thread or
//!   run. A background run (`POST /threads/{id}/runs`) is queued in the
//!   runs table, and every server's worker takes the oldest whose thread
//!   is free (`FOR UPDATE SKIP LOCKED`, woken by a `NOTIFY`, at most
//!   `Server::max_runs` at once); a streamed or waited-for run is run by
//!   the server its client talks to, in its turn. A thread runs one run
//!   at a time across all of them, in the order they came. A server holds
//!   a lease on each of its runs (`Server::lease`, 10 s by default,
//!   renewed every fifth of it); a run whose server died (killed, or cut
//!   from the database) is taken over by another once its lease expires,
//!   its `attempt` one more, and resumed from its last stored step (the
//!   steps it stored are not done again). Ctrl-C or SIGTERM: the server
//!   takes no more runs, lets its runs finish within
//!   `Server::shutdown_grace` (30 s by default) and hands the rest over
//!   to the others. A run is cancelled, and the `interrupt` and
//!   `rollback` strategies stop the runs before them, on any server (a
//!   `NOTIFY` to the one running it). Requests share a bounded pool of
//!   connections (`Server::pool_size`, 16 by default); one that waits
//!   longer than `Server::pool_wait` (30 s by default) for a connection
//!   is answered 503. A lost connection (a database restart) is opened
//!   again at the next request; only what was in flight when it broke
//!   fails.
//!
//! A database error is answered 500 `{"detail": "Internal server
//! error"}` and logged in full: what a client sees never holds a file
//! path or a connection string.
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
//! node; a join stream replays a live run from its start; a store that
//! cannot serve (its file gone, its pool exhausted) is a 503 saying why.
//! On PostgreSQL a run's events are stored as they are sent, so its join
//! stream and a `Last-Event-ID` reconnect work on any server; a new
//! attempt of a run taken over after its server died numbers its events
//! from `(attempt - 1) * 2^32` (the dead server may have sent ids it never
//! stored). LangGraph has
//! no immutable fields: here an input naming one starts a thread from a
//! state built from it, and on a thread that has a state the run fails
//! (`ThreadExists`) with the state unchanged.
//!
//! In the streams: a task's id, and the task part of a namespace
//! (`updates|child:child`), is the task's name (the official server's, a
//! hash); messages inside states and updates leave out their empty
//! fields (those of `messages` and of a chat model's events are whole);
//! the metadata of `messages` and `messages-tuple` has the run's keys and
//! `langgraph_node`, `langgraph_step`, `langgraph_task` and
//! `langgraph_checkpoint_ns`, not `langgraph_triggers`, `langgraph_path`
//! or the `ls_*` keys (`events` has `langgraph_triggers` and
//! `langgraph_path`); a subgraph's `debug` checkpoints name its own
//! thread with an empty `checkpoint_ns` (no `checkpoint_map` or
//! `parents`), and a checkpoint's task that runs a subgraph shows
//! `state: null` (the official server, the subgraph's `checkpoint`). In
//! `events`, a chat model is named `chat_model` and its start and end
//! carry no `input` (the runtime sees the pieces a node streams, not the
//! model call), and a subgraph's steps are counted as its tasks start
//! (from 1, also in a subgraph that resumes); a message a node returns
//! whole has no chat model events, as in LangChain.
//!
//! AG-UI: a run sends the graph only the messages its thread does not
//! have (by id), so an edited old message is not rewritten; `context` is
//! accepted and not given to the graph; activity and reasoning messages
//! are left out of the input; a resume answers one interrupt per run,
//! and the new messages of a resuming request are not added. An interrupt is sent both as
//! `RUN_FINISHED.outcome` (AG-UI 1.0) and as a CUSTOM `on_interrupt`
//! event, as `@ag-ui/langgraph` sends it.
//!
//! In the thread protocol: on SQLite a stream holds the runs started
//! through `run.start` / `input.respond`, not those started through
//! `/runs`; on PostgreSQL it holds every run of the thread whose events
//! are still stored (`Server::stream_ttl` after its end), started on any
//! server; either way kept per thread in memory (the last 10,000 events
//! of the last 1,024 threads), and `seq` numbers this server's copy (a
//! client reconnecting with `since` to another server may be off after
//! a restart, as the official server numbers `seq` per stream); it ends
//! after 60 s without an event once no run of the thread is in progress
//! here (the official server's stays open), so a graceful stop is not
//! held by idle streams; a batch `input.respond` answers its interrupts
//! in one run, as one resume map (with an `update` or `goto` it is
//! refused as `unsupported`, as `command.resume` with them is below);
//! `updates`, `custom`,
//! `tasks`, `checkpoints` and `tools` are accepted channels with no
//! events, as on the official server 0.16.7 for these graphs; `run.cancel`
//! is no command there or here (cancel through `/runs/{id}/cancel`).
//! With custom auth, both routes are checked as a thread's `update`
//! (another user's thread is not found), and under a filter that scopes
//! threads a `run.start` does not create the thread (create it with
//! `POST /threads`, which stamps it).
//!
//! A bad `xray` is a 422 whose detail names it and its value (the
//! official server's says `Invalid xray value`).
//!
//! Run and thread routes: `POST /threads/{id}/state/checkpoint` (and a
//! state update) naming a checkpoint the thread does not have is a 404,
//! as `GET /threads/{id}/state/{checkpoint_id}` answers it (the official
//! server answers 200 with an empty state). A run resumed on some of its
//! interrupts answers with the state that holds the writes of the nodes
//! that finished (the official server's `wait` answer leaves them out
//! until the step ends; its state shows them). `POST /runs/batch` checks
//! every run before it starts any, so a bad one starts none (the official
//! server may have started those before it); a refusal names the run
//! (`[i]: ...`). `POST /runs/cancel` with an unknown `action` is a 422,
//! as for one run. On PostgreSQL a stateless background run whose thread
//! is deleted once it ends runs on the server that took it (as a streamed
//! run does), so its join there answers its output; a join on another
//! server, once the thread is gone, answers `{}`. A thread's join stream (`GET /threads/{id}/stream`)
//! of an unknown thread is a 404 (the official server keeps it open,
//! streaming nothing); a run in progress as a client joins is streamed
//! from its start, as a run's join stream is (the official server's,
//! from the join on); its ids are `<ms>-<n>` as the official server's
//! (a Redis stream id), `ms` the run's creation time and `n` the event's
//! number in the run, and a `Last-Event-ID` of another form is a 422
//! naming it; on SQLite a run that ended before the reconnect has no
//! events left to replay; the stream ends when the server stops, and
//! after 60 s without an event once no run of the thread is pending or
//! running (the official server's stays open). The SDKs send the modes
//! as `stream_mode`, which the official server does not read (it reads
//! `stream_modes`): neither does this one, so both stream `run_modes`.
//!
//! Assistants: a subgraph's schemas are `null` (the runtime keeps no
//! schema of a subgraph apart from its parent's; the official server
//! derives them); a search's `x-pagination-total` is how many were
//! found (the official server's says `offset + limit + 1` while more
//! follow; `x-pagination-next` is the same); a body field of the wrong type is a 422 whose detail starts with
//! the field's name (the official server quotes its JSON Schema). A
//! graph's own assistant is stored once (the official server's dev server
//! adds a version 1 at each start). With custom auth, `delete_threads`
//! deletes the threads the caller's threads `delete` filter admits, once
//! for all of them (the official server asks the hook of each thread); a
//! denied threads `delete` refuses the request (403) before anything is
//! deleted. Every route that runs an assistant (a batch item, AG-UI, the
//! thread protocol's `run.start`) checks it as an assistants `read`. An
//! AG-UI run with browser tools gets them as its context, not a
//! [`RunConfig`].
//!
//! Hostile input: a refusal names the field in words of its own (the
//! official server quotes its JSON Schema's error); a
//! `config.recursion_limit` below 1 is a 422 (the official server runs
//! and fails the run); a valid one (the run's, else its assistant's)
//! bounds the run in place of the graph's own limit, and without one
//! the graph's holds (`with_recursion_limit`, 10,000 unless set: the
//! official server's default is 25); a run that reaches it fails with
//! the error `GraphRecursionError`, as on the official server; a malformed body (a bad
//! chunk size) is a 400 `{"detail"}` (the official server's is plain
//! text); a request with both `Transfer-Encoding` and `Content-Length`
//! is read by its chunks and its connection closed after the answer (the
//! official server answers 400); a header over hyper's limits is a 431,
//! a URL over them a 414 (the official server answers 400 or serves
//! them); a client that waits for `100 Continue` with a `Content-Length`
//! over the limit is refused at once; a stream's client that takes
//! nothing for [`Server::read_timeout`] is disconnected (the official
//! server's waits for it). A negative `limit` or `offset` of a run list
//! or a store search is a 422 (the official server answers `[]` or
//! ignores it).
//!
//! Run control: a `command.goto`, `interrupt_before` or `interrupt_after`
//! naming no node of the graph is a 422 naming it (the official server
//! ignores it); a `checkpoint_id` this thread does not have is a 404, one
//! that is no id of this server a 422 (the official server runs and fails
//! the run); a `command.goto` on a thread with nodes still to run runs the
//! named nodes instead of those (the official server applies the update
//! and runs the pending nodes); a cancel with an unknown `action` is a 422
//! (the official server takes it as `interrupt`), and a rolled-back run is
//! always deleted before the cancel's `wait` answers. A thread copy keeps
//! the original's status, values and interrupts (the official server's
//! copy says `idle` until its next run), and copying an unknown thread is
//! a 404 (the official server answers 409). A `command.update` on a
//! thread with no state runs the graph with the update as its input (the official server
//! fails the run).
//! On PostgreSQL, a run taken over from a dead server (or handed over
//! by one that stopped) starts again from the thread's last stored step,
//! as LangGraph resumes a run from its checkpoint; the official server
//! runs the whole run again on its next attempt. A cancel with
//! `wait=true` of a run on another server answers 200 `{}` once it
//! stopped, as for a run of this server. A run taken over then rolled
//! back takes its steps of every attempt off.
//!
//! Not served yet (refused with a 422 naming the option, never ignored):
//! a thread search's `extract`, and `command.resume` together with
//! `command.update` or `command.goto` (send them as two runs). For the
//! latter the official server writes the update into the paused step's
//! state before its tasks run (no checkpoint of its own) and runs the
//! goto's nodes in the resumed step beside the paused ones; the runtime
//! resumes a step only with the tasks its stored head leads to, on the
//! state stored there, and has no way yet to add a write or a task to it
//! that a crash in the middle of the step would keep. There are no
//! crons or store.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod access;
mod agui;
mod app;
mod assistants;
mod astream;
pub mod auth;
mod background;
mod body;
mod configured;
mod control;
mod copy;
mod cors;
mod drawing;
mod error;
mod events;
mod gate;
mod history;
mod ids;
mod items;
mod joined;
mod lease;
mod listen;
mod listing;
mod log;
mod modes;
mod open;
mod partial;
#[cfg(feature = "postgres")]
mod queue;
#[cfg(feature = "postgres")]
mod reconnect;
mod remote;
mod retention;
mod runner;
mod runs;
mod served;
mod server;
mod shape;
mod snapshot;
mod sse;
mod store;
mod task;
mod threadproto;
mod threads;
mod watch;
mod wire;
#[cfg(feature = "postgres")]
mod worker;

pub use configured::RunConfig;
pub use retention::{ThreadTtl, TtlStrategy};
pub use server::{Listening, Server, ServerError};

/// The workspace README's examples (the recipe for serving a graph needs
/// this crate, so they are tested here), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct WorkspaceReadmeDoctests;

/// This crate's README example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
