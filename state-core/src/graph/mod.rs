//! The graph runtime: nodes read the state and return updates, the runtime
//! applies them with LangGraph's step semantics, and checkpoints each step.
//!
//! * One way to add a node, [`StateGraph::add_node`], which reads the
//!   function's argument list ([`IntoNode`]): a function of the state
//!   (sync, or async taking an `Arc<State>`), with a [`NodeContext`] (to
//!   [`interrupt`](NodeContext::interrupt) the run for a value from
//!   outside) or without, of a [`Send`]'s input ([`Sent`]), or a whole
//!   compiled graph; in a [`Node`] with its policies. It returns an update,
//!   a [`Command`] (update plus routing), or nothing ([`IntoNodeResult`]).
//! * Edges, joins (`add_edge(["a", "b"], "c")`), conditional edges
//!   ([`Next`], [`Send`]s included), [`START`] and [`END`]. Several targets
//!   run together as one superstep (sync nodes on threads of their own,
//!   async ones polled together), and their updates apply as one step in
//!   node-name order, then the `Send` tasks' in the order they were made
//!   ([`AgentState::apply_all`] rules: two writes to a plain field are an
//!   error).
//! * Middleware ([`Middleware`]): `before_agent` / `after_agent` hooks, run
//!   once per invocation, each its own step, so each sees the updates of
//!   those before it: `before_agent` in registration order, `after_agent`
//!   in reverse (LangChain v1's order).
//! * Streaming ([`Run::stream`]): LangGraph's stream modes (`values`,
//!   `updates`, `messages`, `custom`, `checkpoints`, `tasks`, `debug`) as a
//!   `futures::Stream`, with backpressure; dropping it cancels the run.
//! * A recursion limit, a step callback, and per-thread runs over a
//!   [`Checkpointer`](crate::checkpoint::Checkpointer) that resume after a
//!   crash from the last saved step without re-applying anything, and
//!   without re-running the tasks of an unfinished step that had finished.
//! * Pauses: interrupts and static breakpoints (`interrupt_before`,
//!   `interrupt_after`), kept in the checkpoint and resumed from any
//!   process ([`Input::ResumeWith`]); reading and editing a thread
//!   ([`Graph::get_state`], [`Graph::update_state`], time travel with
//!   [`Run::from_checkpoint`]).
//! * Node policies ([`Node`]): [`RetryPolicy`], timeouts; cancelling a run
//!   ([`CancelToken`], or dropping its future).
//!
//! ```
//! use agent_state::checkpoint::block_on;
//! use agent_state::graph::{Input, StateGraph, END, START};
//! use agent_state::{ai, AgentState, Messages};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[reducer(messages)]
//!     messages: Messages,
//!     turns: u32,
//! }
//!
//! let graph = StateGraph::<Chat>::new()
//!     .add_node("bot", |s: &Chat| ChatUpdate::new().message(ai("hi")).turns(s.turns + 1))
//!     .add_edge(START, "bot")
//!     .add_conditional_edges("bot", |s: &Chat| if s.turns < 3 { "bot" } else { END })
//!     .compile()?;
//!
//! let out = block_on(graph.run(Input::Update(ChatUpdate::new())))?;
//! assert_eq!(out.state.turns, 3);
//! assert_eq!(out.state.messages.len(), 3);
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```
//!
//! # Running a graph
//!
//! * A graph's state is a `GraphState`:
//!   `AgentState + Default + Clone + Send + Sync + 'static`. A state that
//!   lacks one of these (usually `Clone`) is an error at `StateGraph::new`
//!   naming the missing trait.
//! * Nodes of one superstep (fan-out edges) run together (sync nodes each on
//!   a thread of their own, a lone node inline; async nodes polled together),
//!   and their updates apply as one step in node-name order, with
//!   `apply_all`'s rules: two writes to a plain field fail the step, naming
//!   the field, and nothing is applied.
//! * `add_node` is the one way to add a node; it reads the function's
//!   arguments: `fn(&State)`, `fn(&State, &NodeContext)`, async
//!   `fn(Arc<State>)` or `fn(Arc<State>, NodeContext)` (for model calls),
//!   `fn(Sent<T>, ..)` for a `Send`'s input, or a compiled subgraph; a
//!   function that is none of these is a compile error listing the forms. A
//!   node returns an update, a `Command` (update and goto), an `Option`, or a
//!   `Result` of these.
//! * `add_middleware` adds `before_agent` / `after_agent` hooks
//!   ([`Middleware`]), run once per invocation, each as its own step:
//!   `before_agent` in registration order, `after_agent` in reverse
//!   (LangChain v1's order); names must be unique.
//! * `.on_step(|event| ..)` streams each step (the nodes' writes, the state
//!   after it, its checkpoint, what runs next); `.stop_after(n)` stops a run
//!   midway; `with_recursion_limit(n)` (default 10,000) bounds a run.
//! * `.context(value)` gives a run what it needs but is not state (the user
//!   it serves, a client: LangGraph's `context=`); a node reads it by type,
//!   `ctx.context::<User>()`, and `ctx.remaining_steps()` tells it how many
//!   steps are left before the recursion limit (LangGraph's `RemainingSteps`).
//! * Steps are numbered as LangGraph numbers them: a run's input is stored
//!   twice, as step -1 (source `input`: the state before it, `__start__`
//!   next) and 0 (source `loop`: the input applied), so the first node's step
//!   is 1; a later run on the thread goes on from its head's step. An input
//!   that cannot apply is refused before anything is stored; the step -1
//!   checkpoint holds the input, so after a crash between the two,
//!   `Input::Resume` applies it and runs on.
//! * `.durability(Durability::..)` says when a run on a thread stores its
//!   steps (LangGraph's `durability`): `Sync` (the default) every step before
//!   the next; `Async` each step while the next one runs, waited for before
//!   the next store and before the run returns (a crash can lose the last
//!   step applied); `Exit` once, when the run ends, pauses or fails (a crash
//!   loses every step since the run's last store; the steps in between are not
//!   in the history).
//! * `Input::Update` to a thread stopped midway (a breakpoint, `stop_after`, a
//!   failed node, a crash) is applied, and the run carries on where it
//!   stopped; to a finished thread, it starts a new run from `START`.
//!
//! # Interrupts: pausing for a person
//!
//! A node that takes a [`NodeContext`] as its second argument pauses the run
//! with `ctx.interrupt(payload)?`, LangGraph's `interrupt()`. The pause is
//! kept in the checkpoint: any process can read it and resume with a typed
//! value.
//!
//! ```
//! use agent_state::checkpoint::{block_on, MemoryCheckpointer};
//! use agent_state::graph::{BoxError, Input, NodeContext, Resume, StateGraph, START};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Post {
//!     draft: String,
//!     status: String,
//! }
//!
//! let graph = StateGraph::<Post>::new()
//!     .add_node("write", |_: &Post| PostUpdate::new().draft("Hello, world".to_owned()))
//!     .add_node("review", |s: &Post, ctx: &NodeContext| -> Result<PostUpdate, BoxError> {
//!         let approved: bool = ctx.interrupt(format!("Publish {:?}?", s.draft))?;
//!         Ok(PostUpdate::new().status(if approved { "published" } else { "rejected" }.to_owned()))
//!     })
//!     .add_edge(START, "write")
//!     .add_edge("write", "review")
//!     .compile()?;
//!
//! let saver = MemoryCheckpointer::new();
//! let paused = block_on(graph.run(Input::Update(PostUpdate::new())).on_thread(&saver, "post-1"))?;
//! assert_eq!(paused.next, ["review"]);
//! let question = &paused.interrupts[0]; // its id, its node, its payload
//! assert_eq!(question.value, "Publish \"Hello, world\"?");
//!
//! // Later, maybe in another process: what is it waiting for? Answer it.
//! assert_eq!(block_on(graph.get_state(&saver, "post-1"))?.interrupts[0].id, question.id);
//! let resume = Resume::new().answer(&question.id, true); // or Resume::value(true): the only one
//! let done = block_on(graph.run(Input::ResumeWith(resume)).on_thread(&saver, "post-1"))?;
//! assert_eq!(done.state.status, "published");
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```
//!
//! * A resumed node runs again **from its start** (as in LangGraph); each
//!   `interrupt` call returns its answer, several calls in one node matched
//!   by order. What the node did before the call happens again: keep it free
//!   of side effects, or wrap them in `ctx.once("key", || ..)` /
//!   `ctx.once_async(..)`, which run once per step and return the kept value
//!   when the node runs again (across processes).
//! * Parallel nodes that pause each get an interrupt with its own id; answer
//!   some or all (`Resume::new().answer(id, v)..`); the nodes of the step that
//!   finished are kept and do not run again.
//! * A value for a thread with nodes to run but no interrupt pending (its
//!   state was updated since it paused, or it stopped at a breakpoint) goes
//!   to the first interrupt the next step raises, as in LangGraph.
//! * Errors, each leaving the pause as it was: resume values for a thread
//!   with nothing to run (`NotInterrupted`), an id not pending (`UnknownInterrupt`, listing
//!   the pending ones), `Resume::value` with several pending
//!   (`AmbiguousResume`), a value of the wrong type (`ResumeType`, naming the
//!   type the node asked for), new input to a paused thread (`Paused`). A
//!   run without a checkpointer pauses at an interrupt too, as LangGraph's
//!   does; there is no thread to resume it on (`NoThread`).
//! * Static breakpoints: `.interrupt_before(["node"])`, `.interrupt_after([..])`
//!   pause the run with `next` naming what comes; `Input::Resume` goes on.
//!
//! # Map-reduce with `Send`
//!
//! A router (or a node's `Command`) returns `Send`s; each is one task of a
//! node whose first argument is `Sent<T>` (the `Send`'s input instead of the
//! state), all in the next superstep, concurrently.
//!
//! ```
//! use agent_state::checkpoint::block_on;
//! use agent_state::graph::{self, Input, Next, Sent, StateGraph, END, START};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Essay {
//!     sections: Vec<String>,
//!     #[reducer(append)]
//!     summaries: Vec<String>,
//! }
//!
//! let graph = StateGraph::<Essay>::new()
//!     .add_node("summarize", |Sent(section): Sent<String>| {
//!         EssayUpdate::new().summaries(vec![format!("{} words", section.split(' ').count())])
//!     })
//!     .add_conditional_edges(START, |s: &Essay| {
//!         Next::send(s.sections.iter().map(|text| graph::Send::new("summarize", text.clone())))
//!     })
//!     .add_edge("summarize", END)
//!     .compile()?;
//!
//! let input = EssayUpdate::new().sections(vec!["one two".to_owned(), "three".to_owned()]);
//! let out = block_on(graph.run(Input::Update(input)))?;
//! assert_eq!(out.state.summaries, ["2 words", "1 words"]);
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```
//!
//! * Writes apply in a fixed order: the step's nodes on the state in
//!   node-name order, then the `Send` tasks in the order they were made (as
//!   LangGraph does). A task's name is `node[k]` (`ctx.task()`).
//! * A `Send` to a node that reads the state, an edge to a `Send` node, or an
//!   input of the wrong type is an error naming the node. `graph::Send`
//!   shares its name with the marker trait: import it by path.
//!
//! # Joins and subgraphs
//!
//! `add_edge(["a", "b"], "c")` runs `c` once both have finished since `c`
//! last ran, even in different supersteps; the progress survives a resume.
//!
//! `add_node("name", child)` runs a compiled graph whose state is a
//! flattened part of the parent's (`add_node("name", child.mapped(into,
//! out))` maps it with two functions instead). The child's steps are stored
//! on the thread `<parent thread>|<name>/<step>`, its interrupts pause the
//! parent (their ids prefixed `<name>/<step>|`), and resuming the parent
//! resumes the child. A child's node may command the parent instead
//! (LangGraph's `Command.PARENT`): `Err(ParentCommand::goto("next")
//! .with_update(parent_update).into())` ends the child, writes the update in
//! the parent and routes it.
//!
//! ```
//! use agent_state::checkpoint::{block_on, MemoryCheckpointer};
//! use agent_state::graph::{BoxError, Input, NodeContext, Resume, StateGraph, START};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Review {
//!     #[reducer(append)]
//!     pub notes: Vec<String>,
//! }
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! pub struct Desk {
//!     #[state(flatten)]
//!     pub review: Review,
//!     pub done: bool,
//! }
//!
//! let child = StateGraph::<Review>::new()
//!     .add_node("ask", |_: &Review, ctx: &NodeContext| -> Result<ReviewUpdate, BoxError> {
//!         let note: String = ctx.interrupt("note?")?;
//!         Ok(ReviewUpdate::new().notes(vec![note]))
//!     })
//!     .add_edge(START, "ask")
//!     .compile()?;
//! let graph = StateGraph::<Desk>::new()
//!     .add_node("a", |_: &Desk| DeskUpdate::new())
//!     .add_node("b", |_: &Desk| DeskUpdate::new())
//!     .add_node("review", child)
//!     .add_node("close", |_: &Desk| DeskUpdate::new().done(true))
//!     .add_edge(START, "a")
//!     .add_edge(START, "review")
//!     .add_edge("a", "b")
//!     .add_edge(["b", "review"], "close") // a join
//!     .compile()?;
//!
//! let saver = MemoryCheckpointer::new();
//! let paused = block_on(graph.run(Input::Update(DeskUpdate::new())).on_thread(&saver, "d"))?;
//! assert!(paused.interrupts[0].id.starts_with("review/1|ask/"));
//! let done = block_on(graph.run(Input::ResumeWith(Resume::value("fine"))).on_thread(&saver, "d"))?;
//! assert_eq!((done.state.review.notes.clone(), done.state.done), (vec!["fine".to_owned()], true));
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```
//!
//! # Editing a thread
//!
//! * `graph.get_state(&saver, thread)`: the values, the nodes that run next,
//!   the pending interrupts, the checkpoint (`get_state_at` for an older one).
//!   `get_state_with_subgraphs` adds, under each subgraph's task, the
//!   subgraph's own snapshot (`tasks[i].state`): where a paused child stands.
//! * `graph.update_state(&saver, thread, update, Some("node"))` applies an
//!   update as if that node had written it (a step of source `update`), and
//!   the thread goes on where that node's routing leads; `None` names the node
//!   of the last step. A name that is not a node is an error; so is resuming a
//!   thread whose stored step names one.
//! * `graph.update_state_at(&saver, thread, checkpoint_id, update, as_node)`
//!   edits an older checkpoint instead (LangGraph's `update_state` with a
//!   `checkpoint_id`): the update becomes a step whose parent is that
//!   checkpoint, the thread's new head, and the thread goes on from it; the
//!   steps after it stay in the history.
//! * `graph.state_history(&saver, thread, limit)`: snapshots newest first;
//!   `run(Input::Resume).on_thread(..).from_checkpoint(id)` is time travel: a
//!   fork of checkpoint `id` (a step of its own, `id`'s plus one, reported to
//!   `on_step` and the `checkpoints` stream) becomes the head and the run goes
//!   on from there.
//!
//! # Node policies and cancelling
//!
//! A node's policies attach to it in one place, `add_node("fetch",
//! Node::new(fetch).retry(policy).timeout(duration))`:
//! `RetryPolicy::new(3).initial_interval(..).retry_on(|e| ..)` runs a failing
//! node again with backoff; a timeout fails an async node that runs longer
//! (`NodeTimeout`). `.cache(CachePolicy::new().ttl(..).key(..))` reuses the
//! node's output for an input it has seen (LangGraph's `cache_policy`), in
//! memory, shared by every run of the compiled graph. `.defer()` makes a node
//! reached by several branches wait until nothing else is left to run, then
//! run once (LangGraph's `defer=True`). A run stops when its future is
//! dropped or its `CancelToken` (`.cancel_on(token)`) is cancelled: the
//! thread stays at its last saved step, and the tasks of the cut step that had
//! finished are kept, so a resume does not run them again (the agent's tools
//! node keeps each tool call's answer the same way). No async runtime is
//! needed: timers run on a helper thread.
//!
//! # Streaming
//!
//! `run.stream(modes)` makes a run a `futures::Stream` of `StreamEvent`s in
//! LangGraph's stream modes, several at once: `values` (the state after each
//! step), `updates` (each node's writes), `messages` (model tokens as they
//! arrive, with the node, step and task), `custom` (what a node writes through
//! `ctx.writer()`), `checkpoints` (each stored step), `tasks` (each task as it
//! starts and ends), `debug` (the last two). It ends with `StreamEvent::End`
//! (what `.await` returns) or the run's error.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_state::checkpoint::block_on;
//! use agent_state::futures::StreamExt;
//! use agent_state::graph::{BoxError, Input, NodeContext, StateGraph, StreamEvent, StreamMode, START};
//! use agent_state::{AgentState, MessageChunk, MessageChunks, Messages};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[reducer(messages)]
//!     messages: Messages,
//! }
//!
//! let graph = StateGraph::<Chat>::new()
//!     .add_node("bot", |_: Arc<Chat>, ctx: NodeContext| async move {
//!         let (writer, mut pieces) = (ctx.writer(), MessageChunks::new());
//!         for token in ["Hel", "lo"] {
//!             let piece = MessageChunk::ai(token).with_id("msg-1");
//!             writer.message(piece.clone()).await; // `messages` mode
//!             pieces.push(piece)?; // added up as LangChain adds chunks
//!         }
//!         writer.send(serde_json::json!({"done": true})).await?; // `custom` mode
//!         Ok::<_, BoxError>(ChatUpdate::new().messages(pieces.into_messages()))
//!     })
//!     .add_edge(START, "bot")
//!     .compile()?;
//!
//! let mut stream = graph
//!     .run(Input::Update(ChatUpdate::new()))
//!     .stream([StreamMode::Messages, StreamMode::Custom]);
//! let mut text = String::new();
//! while let Some(event) = block_on(stream.next()) {
//!     match event? {
//!         StreamEvent::Message(m) => text.push_str(&m.chunk.text()), // m.node == "bot"
//!         StreamEvent::Custom(c) => assert_eq!(c.value["done"], true),
//!         StreamEvent::End(out) => assert_eq!(out.state.messages[0].text(), text),
//!         _ => {}
//!     }
//! }
//! assert_eq!(text, "Hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! * As in LangGraph, `messages` also carries the whole messages a node
//!   returns in its update (`m.message` set, `AIMessage` rather than a chunk
//!   in JSON), once each: a message whose id was streamed in pieces, already
//!   returned, or in the state the run started from is not repeated.
//! * When a node pauses on `interrupt`, `updates` yields
//!   `{"__interrupt__": [..]}` and `values` the state again with its
//!   `__interrupt__` (`StreamEvent::Values { interrupts, .. }`), once per
//!   paused task; `RunOutput::to_json` is what LangGraph's `invoke` returns,
//!   `__interrupt__` included. A breakpoint yields `{"__interrupt__": []}`
//!   in `updates` only.
//! * The run goes as far as the stream is polled (no task, no runtime), into
//!   a bounded buffer (`.buffer(n)`, default 64 events): a slow consumer slows
//!   the run down, and memory stays flat. Dropping the stream cancels the
//!   run; the thread stays at its last stored step, and `Input::Resume`
//!   carries on from there.
//! * `MessageChunk` is LangChain's `AIMessageChunk` (and kin): read and
//!   written in its JSON, added as LangChain adds chunks (content, tool call
//!   pieces by index, usage, metadata), ending as the `Message` the state
//!   keeps. The agent streams its model's tokens this way.
//! * `event.name()` and `event.to_json()` are the SSE event and payload
//!   LangGraph's server sends; `RunStream::shared(graph, saver, thread, ..)`
//!   owns what it borrows, for a response body (see `agent-state-server`).
//! * `.stream(modes).subgraphs(true)` is LangGraph's `subgraphs=True`: a
//!   subgraph's events in every mode asked for come as they happen, as
//!   `StreamEvent::Subgraph`, under the namespace of the task that ran it
//!   (`event.namespace()`: `["child:child"]`, one entry per level);
//!   `event.sse_name()` is the server's event name (`updates|child:child`),
//!   and `sub.event::<ChildState>()` the child's own typed event.
//!
//! # Tracing
//!
//! Runs, steps, nodes, model and tool calls are `tracing` spans: `graph.run`
//! (`thread_id`, `steps`), `graph.step` (`step`, `nodes`), `graph.node`
//! (`node`, `step`), `agent.model` (`input_tokens`, `output_tokens`),
//! `agent.tool` (`tool`, `call_id`), each recording `duration_us` when it
//! closes. With no subscriber installed, a span costs a check of its
//! callsite: no clock read, nothing formatted or allocated.
//!
//! # Drawing a graph
//!
//! `graph.to_mermaid()` draws a compiled graph in Mermaid as LangGraph's
//! `draw_mermaid()` does: static edges solid, conditional edges dashed to the
//! targets the router declared (`add_conditional_edges_to(from, router,
//! [targets])`, LangGraph's `path_map`; a router that declares none is not
//! drawn, as in LangGraph). The repository's debate example draws its graph
//! with `cargo run -p debate -- --mermaid`.
//!
//! ```
//! use agent_state::graph::{StateGraph, END, START};
//! use agent_state::AgentState;
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Flag {
//!     on: bool,
//! }
//!
//! let graph = StateGraph::<Flag>::new()
//!     .add_node("switch", |_: &Flag| FlagUpdate::new().on(true))
//!     .add_edge(START, "switch")
//!     .add_edge("switch", END)
//!     .compile()?;
//! assert!(graph.to_mermaid().contains("__start__ --> switch;"));
//! # Ok::<(), agent_state::graph::GraphError>(())
//! ```

mod builder;
mod cache;
mod context;
mod edit;
mod error;
mod into_node;
mod joins;
mod mermaid;
mod node;
mod outline;
mod output;
mod pending;
mod policy;
mod resume;
mod route_cache;
mod run;
mod step;
pub(crate) mod stream;
mod subgraph;
mod tasks;
pub(crate) mod timer;
pub(crate) mod trace;
mod unknown;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// [`checkpoint::block_on`](crate::checkpoint::block_on), beside the runs
/// it drives: `graph::block_on(graph.invoke(..))`.
#[doc(no_inline)]
pub use crate::checkpoint::block_on;
pub use crate::send::Send;
pub use builder::{EdgeSources, StateGraph};
pub use cache::CachePolicy;
pub use context::{Interrupt, Interrupted, NodeContext, Resume};
pub use error::GraphError;
pub use into_node::{form, IntoNode, Node, Sent};
pub use node::{BoxError, Command, IntoNodeResult, Next, NodeOutput, ParentCommand};
pub use outline::Outline;
pub use output::RunOutput;
pub use policy::{CancelToken, NodeTimeout, RetryPolicy};
pub use run::{Durability, Input, Run, StepEvent};
pub use stream::{
    CustomEvent, MessageEvent, RunStream, StreamEvent, StreamMode, StreamModes, StreamWriter,
    SubgraphEvent, TaskInput, TaskOutcome, UnknownStreamMode,
};
pub use subgraph::Mapped;
pub use tasks::SnapshotTask;
pub use tasks::StateSnapshot;

use crate::send::SendArg;
use crate::state::AgentState;
use node::NodeFn;

/// The graph's entry: edges from `START` name the first nodes.
pub const START: &str = "__start__";
/// The graph's exit: routing to `END` finishes the run.
pub const END: &str = "__end__";

/// A middleware: state hooks that run once per invocation, as LangChain's
/// `AgentMiddleware.before_agent` / `after_agent`. Each hook runs as its own
/// step (named `<name>.before_agent` / `<name>.after_agent` in the stream
/// and the checkpoints): `before_agent` hooks in registration order,
/// `after_agent` hooks in reverse, so the first middleware wraps the others
/// as in LangChain v1.
///
/// For a model ↔ tools loop with `before_model`, `wrap_model_call` and the
/// other agent hooks, see the `agent` module's `AgentMiddleware`.
///
/// Write it generic over every state that has what it needs, and add it to
/// as many graphs as you like.
pub trait Middleware<S: AgentState>: std::marker::Send + Sync {
    /// The middleware's name; unique within a graph.
    fn name(&self) -> &str;

    /// Runs before the first node. `None`: no change.
    fn before_agent(&self, state: &S) -> Result<Option<S::Update>, BoxError> {
        let _ = state;
        Ok(None)
    }

    /// Runs after the graph reached `END`. `None`: no change.
    fn after_agent(&self, state: &S) -> Result<Option<S::Update>, BoxError> {
        let _ = state;
        Ok(None)
    }

    /// Whether [`before_agent`](Self::before_agent) does anything; a hook
    /// that does not costs no step.
    fn has_before_agent(&self) -> bool {
        true
    }

    /// Whether [`after_agent`](Self::after_agent) does anything.
    fn has_after_agent(&self) -> bool {
        true
    }
}

type Router<S> = Box<dyn Fn(&S) -> Next + std::marker::Send + Sync>;

/// An edge out of a node, resolved.
enum Edge {
    To(Target),
    /// A conditional edge: the router at this index in `Graph::routers`.
    Router(usize),
    /// A conditional edge taken only when the node's write routes nowhere
    /// itself (no goto, no `Send`): how a node that always routes by
    /// `Command` (the agent's) still leads somewhere when
    /// `update_state(.., as_node)` writes as it, as LangChain's agent,
    /// routed by edges, does.
    Fallback(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Node(usize),
    End,
}

/// What the runtime needs of a graph's state, on top of [`AgentState`]:
/// `Default` (a run starts from the default state), `Clone` (the state is
/// shared with async nodes and copied on write), `Send + Sync + 'static`
/// (nodes run on any thread), an update that is `Clone + Send + Sync` and a
/// staged step that is `Send`.
///
/// Implemented for every type that has all of these; required by
/// [`StateGraph::new`], so a state that lacks one is told there which,
/// rather than later that a run "is not a future".
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the state of a graph: it lacks a trait the runtime needs",
    label = "not a graph state",
    note = "a graph's state must be `AgentState + Default + Clone + Send + Sync + 'static` (derive `Clone` next to `AgentState`), with an update that is `Clone + Send + Sync`"
)]
pub trait GraphState:
    AgentState<Update: Clone + std::marker::Send + Sync, Staged: std::marker::Send>
    + Default
    + Clone
    + std::marker::Send
    + Sync
    + 'static
{
}

impl<S> GraphState for S where
    S: AgentState<Update: Clone + std::marker::Send + Sync, Staged: std::marker::Send>
        + Default
        + Clone
        + std::marker::Send
        + Sync
        + 'static
{
}

/// A join (`add_edge(["a", "b"], "c")`): `target` runs once every source
/// has finished since it last ran.
pub(crate) struct Join {
    /// `join:a+b:c`, sources sorted: names its progress in a checkpoint.
    pub(crate) key: String,
    pub(crate) sources: Vec<usize>,
    pub(crate) target: usize,
}

/// One of [`Middleware`]'s hooks, called on a middleware.
type Hook<S> = fn(&dyn Middleware<S>, &S) -> Result<Option<<S as AgentState>::Update>, BoxError>;

/// A middleware hook as a node: its `Option` of an update is what a node
/// returning an `Option` gives.
fn hook_node<S: AgentState + 'static>(
    middleware: &Arc<dyn Middleware<S>>,
    hook: Hook<S>,
) -> NodeFn<S, S::Update> {
    let middleware = Arc::clone(middleware);
    NodeFn::Sync(Box::new(move |s: &S| {
        hook(middleware.as_ref(), s).and_then(IntoNodeResult::into_node_result)
    }))
}

/// Node index by name. foldhash, not SipHash: a router's target is looked
/// up on every step it routes, and the names are the graph's own.
pub(crate) type NameIndex = HashMap<String, usize, foldhash::fast::RandomState>;

/// A compiled graph: run it with [`run`](Self::run).
pub struct Graph<S: AgentState> {
    names: Vec<String>,
    /// The names again, shared: a task's key and its context's node name
    /// are these (a count bumped, not a string copied, every step).
    shared_names: Vec<Arc<str>>,
    fns: Vec<NodeFn<S, S::Update>>,
    index: NameIndex,
    routes: Vec<Vec<Edge>>,
    entry: Vec<Edge>,
    routers: Vec<Router<S>>,
    /// Per router, the targets it declared, if it did.
    router_ends: Vec<Option<Vec<String>>>,
    first_after: Option<usize>,
    is_after: Vec<bool>,
    rank: Vec<usize>,
    recursion_limit: usize,
    joins: Vec<Join>,
    /// Per node: the joins it is a source of, with its bit in each.
    join_of: Vec<Vec<(usize, usize)>>,
    before: Vec<bool>,
    after: Vec<bool>,
    retry: Vec<Option<RetryPolicy>>,
    timeout: Vec<Option<Duration>>,
    /// Per node: whether it is deferred ([`Node::defer`]).
    deferred: Vec<bool>,
    has_deferred: bool,
    /// Per node whose edges are all plain (no router): the nodes that run
    /// after it, in task order, whatever the state.
    fixed: Vec<Option<Vec<usize>>>,
    /// What the drawing shows beyond the routing.
    drawing: mermaid::Drawing,
    /// The store its runs get unless given one ([`Graph::with_store`]).
    store: Option<context::SharedStore>,
}

/// One task of a superstep: a node on the state, or a node on a
/// [`Send`]'s input (the `k`-th `Send` of the step).
#[derive(Clone)]
pub(crate) struct Task {
    pub(crate) node: usize,
    pub(crate) send: Option<(usize, SendArg)>,
}

/// What routing produced, before it is put in order.
#[derive(Default)]
pub(crate) struct Routed {
    pub(crate) pull: Vec<usize>,
    pub(crate) push: Vec<(usize, SendArg)>,
}

impl Routed {
    pub(crate) fn clear(&mut self) {
        self.pull.clear();
        self.push.clear();
    }
}

impl<S: AgentState> Graph<S> {
    /// Gives the graph's runs `store` (LangGraph's `compile(store=..)`),
    /// replacing the one it had: its nodes read it with
    /// [`NodeContext::store`], an agent's tools and middleware through
    /// their runtime and requests. A run given a store of its own
    /// ([`Run::store`]) uses that one instead.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_state::graph::{StateGraph, START};
    /// use agent_state::store::MemoryStore;
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { n: u32 }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("inc", |s: &S| SUpdate::new().n(s.n + 1))
    ///     .add_edge(START, "inc")
    ///     .compile()?;
    /// assert!(graph.store().is_none());
    /// let graph = graph.with_store(Arc::new(MemoryStore::new()));
    /// assert!(graph.store().is_some());
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The store the graph's runs get unless given one; `None` when it has
    /// none.
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// The node names, hooks included, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// Whether node `name` takes a [`Send`]'s input (its function's first
    /// argument is [`Sent<T>`](Sent)) rather than the state; `None` when
    /// the graph has no such node. What a caller checks before it routes
    /// a `Send` that it builds from outside (a server's `command.goto`).
    ///
    /// ```
    /// use agent_state::graph::{Sent, StateGraph, START};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct S { n: u32 }
    ///
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("plan", |_: &S| SUpdate::new())
    ///     .add_node("work", |Sent(n): Sent<u32>| SUpdate::new().n(n))
    ///     .add_edge(START, "plan")
    ///     .compile()?;
    /// assert_eq!(graph.takes_send("work"), Some(true));
    /// assert_eq!(graph.takes_send("plan"), Some(false));
    /// assert_eq!(graph.takes_send("nope"), None);
    /// # Ok::<(), agent_state::graph::GraphError>(())
    /// ```
    pub fn takes_send(&self, name: &str) -> Option<bool> {
        self.index.get(name).map(|&i| self.fns[i].takes_send())
    }

    /// A task's key: the node's name, or `node[k]` for a `Send` task.
    pub(crate) fn task_key(&self, task: &Task) -> String {
        match &task.send {
            None => self.names[task.node].clone(),
            Some((k, _)) => format!("{}[{k}]", self.names[task.node]),
        }
    }

    /// [`task_key`](Self::task_key), shared: for a task on the state, the
    /// node's own name (no copy).
    pub(crate) fn shared_task_key(&self, task: &Task) -> Arc<str> {
        match &task.send {
            None => Arc::clone(&self.shared_names[task.node]),
            Some((k, _)) => format!("{}[{k}]", self.names[task.node]).into(),
        }
    }

    /// Node `node`'s name, shared.
    pub(crate) fn shared_name(&self, node: usize) -> &Arc<str> {
        &self.shared_names[node]
    }

    /// The node of a name, for routing: a node that reads the state.
    fn pull_target(&self, name: &str, from: &dyn Fn() -> String) -> Result<Target, GraphError> {
        if name == END {
            return Ok(Target::End);
        }
        let &i = self
            .index
            .get(name)
            .ok_or_else(|| GraphError::UnknownTarget {
                from: from(),
                target: name.to_owned(),
                nodes: self.names.clone(),
            })?;
        if self.fns[i].takes_send() {
            return Err(GraphError::EdgeToSendNode {
                node: name.to_owned(),
                from: from(),
            });
        }
        Ok(Target::Node(i))
    }

    /// The node of a `Send`: one that takes a `Send`'s input.
    fn push_target(&self, send: &Send, from: &dyn Fn() -> String) -> Result<usize, GraphError> {
        let &i = self
            .index
            .get(send.node())
            .ok_or_else(|| GraphError::UnknownTarget {
                from: from(),
                target: send.node().to_owned(),
                nodes: self.names.clone(),
            })?;
        if !self.fns[i].takes_send() {
            return Err(GraphError::SendToStateNode {
                node: send.node().to_owned(),
                from: from(),
            });
        }
        Ok(i)
    }

    /// Where routing from `from` (a node, or `None` for START) leads on
    /// `state`, plus a `Command`'s `goto` targets and `Send`s; END taken to
    /// the after hooks first.
    pub(crate) fn route_into(
        &self,
        from: Option<usize>,
        goto: &[String],
        sends: &[Send],
        state: &S,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let directed = !goto.is_empty() || !sends.is_empty();
        if directed {
            self.route_targets(from, goto, sends, out)?;
        }
        let edges = match from {
            None => &self.entry,
            Some(i) => &self.routes[i],
        };
        for edge in edges {
            match edge {
                Edge::To(target) => self.push_pull(from, *target, out),
                Edge::Router(r) => self.route_router(from, *r, state, out)?,
                Edge::Fallback(r) if !directed => self.route_router(from, *r, state, out)?,
                Edge::Fallback(_) => {}
            }
        }
        Ok(())
    }

    /// Where router `r` leads from `from` on `state`.
    fn route_router(
        &self,
        from: Option<usize>,
        r: usize,
        state: &S,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let next = (self.routers[r])(state);
        self.route_next(from, r, &next, out)
    }

    /// Where router `r`'s answer `next` leads from `from`.
    fn route_next(
        &self,
        from: Option<usize>,
        r: usize,
        next: &Next,
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        if let Some(declared) = &self.router_ends[r] {
            self.check_declared(from, declared, next)?;
        }
        if !next.sends().is_empty() {
            self.route_targets(from, &[], next.sends(), out)?;
        }
        let from_name = || self.source_name(from);
        for name in next.names() {
            let target = self.pull_target(name, &from_name)?;
            self.push_pull(from, target, out);
        }
        Ok(())
    }

    /// Routes to named targets and `Send`s only (a `Command`'s).
    pub(crate) fn route_targets(
        &self,
        from: Option<usize>,
        goto: &[String],
        sends: &[Send],
        out: &mut Routed,
    ) -> Result<(), GraphError> {
        let from_name = || self.source_name(from);
        for name in goto {
            let target = self.pull_target(name, &from_name)?;
            self.push_pull(from, target, out);
        }
        for send in sends {
            let i = self.push_target(send, &from_name)?;
            out.push.push((i, send.arg().clone()));
        }
        Ok(())
    }

    /// A declared router's answer names only its declared targets.
    fn check_declared(
        &self,
        from: Option<usize>,
        declared: &[String],
        next: &Next,
    ) -> Result<(), GraphError> {
        let names = next.names().iter().map(|n| n.as_ref());
        let sends = next.sends().iter().map(Send::node);
        match names
            .chain(sends)
            .find(|n| !declared.iter().any(|d| d == n))
        {
            None => Ok(()),
            Some(target) => Err(GraphError::UndeclaredTarget {
                from: self.source_name(from),
                target: target.to_owned(),
                declared: declared.to_vec(),
            }),
        }
    }

    fn source_name(&self, from: Option<usize>) -> String {
        from.map_or(START.to_owned(), |i| self.names[i].clone())
    }

    /// A target of routing from `from`: END leads to the after hooks first
    /// (unless `from` is one).
    fn push_pull(&self, from: Option<usize>, target: Target, out: &mut Routed) {
        if let Some(node) = self.pulled(from, target) {
            out.pull.push(node);
        }
    }

    /// The node a target of routing from `from` runs, if any: END's is
    /// the first after hook (unless `from` is one).
    fn pulled(&self, from: Option<usize>, target: Target) -> Option<usize> {
        match target {
            Target::Node(i) => Some(i),
            Target::End => self
                .first_after
                .filter(|_| !from.is_some_and(|i| self.is_after[i])),
        }
    }

    /// What routing from each node whose edges are all plain gives, once
    /// for all (see [`Graph::fixed_next`]).
    pub(crate) fn fixed_routes(&self) -> Vec<Option<Vec<usize>>> {
        (0..self.names.len())
            .map(|i| {
                let mut routed = Routed::default();
                for edge in &self.routes[i] {
                    match edge {
                        Edge::To(target) => self.push_pull(Some(i), *target, &mut routed),
                        Edge::Router(_) | Edge::Fallback(_) => return None,
                    }
                }
                routed.pull.sort_unstable_by_key(|&n| self.rank[n]);
                routed.pull.dedup();
                Some(routed.pull)
            })
            .collect()
    }

    /// Whether a step of `tasks` may leave pending writes to keep with a
    /// stored checkpoint: several tasks (each one's writes kept when done),
    /// a node taking a context (it may pause or run a subgraph), a retry
    /// policy, or a join waiting. Under `Exit` and `Async` only such a step
    /// stores the state it starts from first.
    pub(crate) fn may_leave_pending(&self, tasks: &[Task]) -> bool {
        tasks.len() > 1
            || self.keeps_progress()
            || tasks
                .iter()
                .any(|t| self.fns[t.node].wants_context() || self.retry[t.node].is_some())
    }

    /// The nodes that run after a step of the one node `node` whose writes
    /// route nowhere themselves, when that does not depend on the state
    /// (no router, no join): what [`route_into`](Self::route_into) and
    /// [`settle`](Self::settle) would give, without their work.
    pub(crate) fn fixed_next(&self, node: usize) -> Option<&[usize]> {
        if self.keeps_progress() {
            return None;
        }
        self.fixed[node].as_deref()
    }

    /// Whether runs keep progress beside the state: joins waiting, or
    /// deferred nodes reached ([`JoinState`](joins::JoinState)).
    pub(crate) fn keeps_progress(&self) -> bool {
        !self.joins.is_empty() || self.has_deferred
    }

    /// The tasks of the next superstep: the nodes on the state in node-name
    /// order without repeats, then the `Send` tasks in the order they were
    /// made.
    pub(crate) fn settle(&self, routed: &mut Routed, tasks: &mut Vec<Task>) {
        tasks.clear();
        if let ([node], true) = (&routed.pull[..], routed.push.is_empty()) {
            // One node next (most steps): nothing to order.
            tasks.push(Task {
                node: *node,
                send: None,
            });
            return;
        }
        routed.pull.sort_unstable_by_key(|&i| self.rank[i]);
        routed.pull.dedup();
        tasks.extend(routed.pull.iter().map(|&node| Task { node, send: None }));
        tasks.extend(
            routed
                .push
                .drain(..)
                .enumerate()
                .map(|(k, (node, arg))| Task {
                    node,
                    send: Some((k, arg)),
                }),
        );
    }

    /// The names of tasks' nodes, in task order.
    pub(crate) fn names_of(&self, tasks: &[Task]) -> Vec<String> {
        tasks.iter().map(|t| self.names[t.node].clone()).collect()
    }

    /// Checks a `Command`'s targets before its step is stored: stored, a
    /// bad one would fail every resume the same way.
    pub(crate) fn check_targets(
        &self,
        node: &str,
        goto: &[String],
        sends: &[Send],
    ) -> Result<(), GraphError> {
        let from = || node.to_owned();
        for name in goto {
            self.pull_target(name, &from)?;
        }
        for send in sends {
            self.push_target(send, &from)?;
        }
        Ok(())
    }
}
