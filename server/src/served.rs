//! A compiled graph behind a trait object that speaks JSON: what lets one
//! server hold graphs of different state types.

use std::borrow::Cow;
use std::sync::Arc;

use agent_state::checkpoint::{
    CheckpointError, CheckpointId, CheckpointMeta, Checkpointer, NodeWrite, Pruned, Source, Thread,
};
use agent_state::futures::future::{self, BoxFuture};
use agent_state::futures::stream::{self, BoxStream, StreamExt};
use agent_state::graph::{
    Graph, GraphError, GraphState, Input, Interrupt, Resume, RunStream, Send as Sent,
    StateSnapshot, StreamEvent, StreamModes, START,
};
use agent_state::schema::ReducerKind;
use agent_state::{StateInput, StateUpdate};
use serde_json::{json, Map, Value};

use crate::control::{Control, Goto};
use crate::modes::Modes;
use crate::wire::Wire;

/// What a run is asked to do.
pub(crate) struct RunSpec {
    /// `input`: read through the graph's input type.
    pub input: Option<Value>,
    /// `command.resume`: the value for the pending interrupt.
    pub resume: Option<Value>,
    /// The stream modes.
    pub modes: Modes,
    /// Whether a subgraph's events stream too (`stream_subgraphs`).
    pub subgraphs: bool,
    /// The run's metadata (`run_id`, `graph_id`, ...), added to the
    /// events that carry metadata.
    pub meta: Map<String, Value>,
    /// `command.update` / `goto`, the checkpoint to run from, durability
    /// and breakpoints.
    pub control: Control,
    /// The server's Store, which the run's nodes, tools and middleware
    /// reach (in place of one the graph was compiled with, as the
    /// official server does): what `/store` serves is what runs see.
    pub store: Arc<dyn agent_state::store::Store>,
    /// Tools the caller executes (AG-UI's `tools`), given to the run as
    /// its context: an agent offers them to its model.
    pub client_tools: Option<agent_state::agent::ClientTools>,
    /// Its assistant's and its own `configurable` and `context`, given to
    /// its nodes (unless it has `client_tools`).
    pub config: Option<crate::RunConfig>,
}

/// What a running graph yields.
pub(crate) enum RunEvent {
    /// An SSE event: its name (`mode`, or `mode|node:task` for a
    /// subgraph's) and data.
    Event(Cow<'static, str>, Value),
    /// The run ended: its output and its interrupts.
    Done {
        output: Value,
        next: Vec<String>,
        interrupts: Vec<Interrupt>,
    },
    /// The run failed: `{"error", "message"}`.
    Failed(Value),
}

/// A thread's state at a checkpoint, the state as output JSON (the fields
/// of the runtime's `StateSnapshot` the server shows).
pub(crate) struct Snapshot {
    /// The graph's output view of the state.
    pub values: Value,
    /// The nodes that run next.
    pub next: Vec<String>,
    /// The interrupts the thread is paused on.
    pub interrupts: Vec<Interrupt>,
    /// The checkpoint; `None` for a thread with none.
    pub checkpoint: Option<CheckpointMeta>,
}

/// A graph the server serves, whatever its state type.
pub(crate) trait ServedGraph: Send + Sync {
    /// Starts a run on a thread; a bad input is an error naming the field.
    fn start(
        &self,
        saver: Arc<dyn Checkpointer>,
        thread_id: String,
        spec: RunSpec,
    ) -> Result<BoxStream<'static, RunEvent>, String>;

    /// The thread's latest state.
    fn state<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Snapshot, GraphError>>;

    /// The thread's state at checkpoint `id`.
    fn state_at<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Snapshot, GraphError>>;

    /// Up to `limit` of the thread's states at checkpoints before `before`
    /// (all when `None`), newest first.
    fn history<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, GraphError>>;

    /// Writes `values` (an update) as node `as_node` would have: on the
    /// thread's head, or on checkpoint `at` (a fork there).
    fn update_state<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        values: Value,
        as_node: Option<String>,
        at: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<CheckpointMeta, UpdateError>>;

    /// Keeps only the thread's `keep` newest checkpoints and collects its
    /// landed steps' pending writes ([`Thread::keep_last`], which needs
    /// the state's type to snapshot the oldest kept).
    fn keep_last<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<Pruned, CheckpointError>>;

    /// The nodes and edges, as `/assistants/{id}/graph` lists them, the
    /// subgraph nodes drawn expanded `depth` levels down (`xray`).
    fn drawing(&self, depth: usize) -> Value;

    /// The graph's nodes, edges and, `depth` levels down, subgraphs (what
    /// `/assistants/{id}/subgraphs` lists).
    fn outline(&self, depth: usize) -> agent_state::graph::Outline;

    /// The graph's nodes, by name (what `command.goto` and breakpoints may
    /// name).
    fn node_names(&self) -> Vec<String>;

    /// The nodes that take a `Send`'s input (what a `Send` in
    /// `command.goto` may name).
    fn send_targets(&self) -> Vec<String>;
}

/// Why a state update was refused.
pub(crate) enum UpdateError {
    /// The values are not an update of the state.
    Values(String),
    /// The graph refused it (an unknown `as_node`, ...).
    Graph(GraphError),
}

/// The type-erasing wrapper.
pub(crate) struct Erased<S: GraphState>(pub(crate) Arc<Graph<S>>);

/// The run's input: a resume value, an input read through the graph's
/// input type (so `private` and `omit_from_input` fields are refused), or
/// nothing (continue the thread).
fn read_input<S: GraphState>(spec: &mut RunSpec) -> Result<Input<S>, String> {
    if spec.resume.is_some() {
        // Read once the pending interrupts are known (`resume_for`).
        return Ok(Input::Resume);
    }
    match spec.input.take() {
        None | Some(Value::Null) => Ok(Input::Resume),
        Some(Value::Object(map)) if sets_immutable::<S>(&map) => first_state(map),
        Some(value) => {
            let input = S::Input::from_json(value).map_err(|e| format!("input: {e}"))?;
            Ok(Input::Update(input.into()))
        }
    }
}

/// Whether an input names an immutable field (a debate's topic).
fn sets_immutable<S: GraphState>(input: &Map<String, Value>) -> bool {
    immutable_fields::<S>().any(|name| input.contains_key(name))
}

fn immutable_fields<S: GraphState>() -> impl Iterator<Item = &'static str> {
    S::schema()
        .fields
        .iter()
        .filter(|f| f.reducer == ReducerKind::Immutable)
        .map(|f| f.name)
}

/// An input that sets immutable fields builds a new thread's first state,
/// the only time they can be set: they are read into a state of defaults,
/// the other fields through the input type (visibility enforced) and
/// applied to it. The runtime refuses such a state for a thread that has
/// one already (`ThreadExists`), so an immutable field is never changed.
fn first_state<S: GraphState>(mut input: Map<String, Value>) -> Result<Input<S>, String> {
    let fixed: Map<String, Value> = immutable_fields::<S>()
        .filter_map(|name| input.remove_entry(name))
        .collect();
    let mut state = S::from_json(Value::Object(fixed)).map_err(|e| format!("input: {e}"))?;
    let update = S::Input::from_json(Value::Object(input)).map_err(|e| format!("input: {e}"))?;
    state
        .apply(update.into())
        .map_err(|e| format!("input: {e}"))?;
    Ok(Input::State(state))
}

fn snapshot_json<S: GraphState>(s: StateSnapshot<S>) -> Snapshot {
    Snapshot {
        values: s.values.to_output_json(),
        next: s.next,
        interrupts: s.interrupts,
        checkpoint: s.checkpoint,
    }
}

/// What a run starts from, read from its request: its input, and what
/// its `command` writes first.
struct Opening<S: GraphState> {
    input: Input<S>,
    /// `command.resume`, as sent.
    resume: Option<Value>,
    update: Option<S::Update>,
    control: Control,
    store: Arc<dyn agent_state::store::Store>,
    client_tools: Option<agent_state::agent::ClientTools>,
    config: Option<crate::RunConfig>,
}

/// The run's stream, once what it asks is written: a `command` as a step
/// of its own, or a new input on a paused thread as `START`'s update.
fn open_run<S: GraphState>(
    graph: Arc<Graph<S>>,
    saver: Arc<dyn Checkpointer>,
    thread_id: String,
    mut opening: Opening<S>,
    modes: StreamModes,
    subgraphs: bool,
) -> BoxStream<'static, Result<StreamEvent<S>, GraphError>> {
    let opened = async move {
        let (input, from) = prepare(&graph, &*saver, &thread_id, &mut opening).await?;
        let Control {
            durability,
            before,
            after,
            recursion_limit,
            ..
        } = opening.control;
        let (store, client_tools) = (opening.store, opening.client_tools);
        let config = opening.config;
        Ok(
            RunStream::shared(graph, saver, thread_id, input, modes, move |run| {
                let run = match (client_tools, config) {
                    (Some(tools), _) => run.context(tools),
                    (None, Some(config)) => run.context(config),
                    (None, None) => run,
                };
                let run = run
                    .store(store)
                    .durability(durability)
                    .interrupt_before(before)
                    .interrupt_after(after);
                let run = match recursion_limit {
                    Some(limit) => run.recursion_limit(limit),
                    None => run,
                };
                match from {
                    Some(id) => run.from_checkpoint(id),
                    None => run,
                }
            })
            .subgraphs(subgraphs),
        )
    };
    stream::once(opened)
        .flat_map(
            |opened: Result<RunStream<'static, S>, GraphError>| match opened {
                Ok(run) => run.boxed(),
                Err(error) => stream::once(future::ready(Err(error))).boxed(),
            },
        )
        .boxed()
}

/// Writes what the run's `command` asks, and says what the run then
/// starts from (and the checkpoint it forks, if it still has to).
///
/// `goto` is stored as an input step whose routing is the gotos (and
/// `update` its update), as LangGraph writes a `Command` input; `update`
/// alone is an `update_state` as the thread's last node, so the thread
/// goes on where it was. On a thread paused on interrupts the official
/// server drops the pause for a new input and runs it from the start; here
/// the input is written as `START`'s update, which routes the same way.
async fn prepare<S: GraphState>(
    graph: &Graph<S>,
    saver: &dyn Checkpointer,
    thread_id: &str,
    o: &mut Opening<S>,
) -> Result<(Input<S>, Option<CheckpointId>), GraphError> {
    let from = o.control.from;
    if let Some(value) = o.resume.take() {
        let pending = match from {
            Some(id) => graph.get_state_at(saver, thread_id, id).await?,
            None => graph.get_state(saver, thread_id).await?,
        };
        return Ok((
            Input::ResumeWith(resume_for(value, &pending.interrupts)),
            from,
        ));
    }
    if !o.control.goto.is_empty() {
        let mut thread = match from {
            Some(id) => Thread::<S, _>::fork(saver, thread_id, id).await?,
            None => Thread::<S, _>::open(saver, thread_id).await?,
        };
        let mut write = NodeWrite::new(START, o.update.take().unwrap_or_default());
        for goto in std::mem::take(&mut o.control.goto) {
            match goto {
                Goto::Node(node) => write.goto.push(node),
                Goto::Send(node, input) => write.send.push(Sent::new(node, input)),
            }
        }
        thread.save_step(Source::Input, [write]).await?;
        return Ok((Input::Resume, None));
    }
    if let Some(update) = o.update.take() {
        match from {
            Some(id) => {
                graph
                    .update_state_at(saver, thread_id, id, update, None)
                    .await?
            }
            None => graph.update_state(saver, thread_id, update, None).await?,
        };
        return Ok((Input::Resume, None));
    }
    let input = std::mem::replace(&mut o.input, Input::Resume);
    let Input::Update(update) = input else {
        return Ok((input, from));
    };
    let paused = from.is_none()
        && !graph
            .get_state(saver, thread_id)
            .await?
            .interrupts
            .is_empty();
    if !paused {
        return Ok((Input::Update(update), from));
    }
    graph
        .update_state(saver, thread_id, update, Some(START))
        .await?;
    Ok((Input::Resume, None))
}

/// `command.resume` as LangGraph reads it: a map whose keys are all ids
/// of the interrupts the thread is paused on answers each by its id (the
/// ones it leaves out pause again); anything else is the value for the one
/// pending interrupt.
fn resume_for(value: Value, pending: &[Interrupt]) -> Resume {
    // Keyed by ids: those pending, or of the form this server gives them
    // (`node/step/n`), so a map resent after its interrupts were answered
    // is refused as naming none pending, not taken as one value.
    let by_id = match &value {
        Value::Object(map) if !map.is_empty() => map
            .keys()
            .all(|k| pending.iter().any(|i| i.id == *k) || looks_like_interrupt_id(k)),
        _ => false,
    };
    let Value::Object(map) = value else {
        return Resume::value(value);
    };
    if !by_id {
        return Resume::value(Value::Object(map));
    }
    map.into_iter().fold(Resume::new(), |resume, (id, answer)| {
        resume.answer(id, answer)
    })
}

/// Whether `key` has the form of an interrupt id: `task/step/n`, the
/// task perhaps a subgraph's path, `n` perhaps a scope's (`scope:n`).
fn looks_like_interrupt_id(key: &str) -> bool {
    let mut parts = key.rsplit('/');
    let (Some(last), Some(step), Some(task)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let index = last.rsplit(':').next().unwrap_or(last);
    !task.is_empty()
        && step.parse::<i64>().is_ok()
        && !index.is_empty()
        && index.bytes().all(|b| b.is_ascii_digit())
}

impl<S: GraphState> ServedGraph for Erased<S> {
    fn start(
        &self,
        saver: Arc<dyn Checkpointer>,
        thread_id: String,
        mut spec: RunSpec,
    ) -> Result<BoxStream<'static, RunEvent>, String> {
        // What the run was given, as `events` shows it (and only it
        // needs): a resume as the `Command` it is.
        let asked = match (&spec.resume, spec.modes.events) {
            (_, false) => Value::Null,
            (Some(r), true) => json!({"graph": null, "update": null, "resume": r, "goto": null}),
            (None, true) => spec.input.clone().unwrap_or_default(),
        };
        let input = read_input::<S>(&mut spec)?;
        let resume = spec.resume.take();
        let update = match spec.control.update.take() {
            Some(values) => {
                Some(S::Update::from_json(values).map_err(|e| format!("command.update: {e}"))?)
            }
            None => None,
        };
        let opening = Opening {
            input,
            resume,
            update,
            control: spec.control,
            store: spec.store,
            client_tools: spec.client_tools,
            config: spec.config,
        };
        let graph = Arc::clone(&self.0);
        // `events` reads a subgraph's tasks whether or not the client
        // asked for them.
        let (modes, subgraphs) = (spec.modes.core, spec.subgraphs || spec.modes.events);
        let stream = open_run(graph, saver, thread_id, opening, modes, subgraphs);
        let name = spec.meta.get("graph_id").and_then(Value::as_str);
        let name = name.unwrap_or("LangGraph").to_owned();
        let (mut wire, opening) = Wire::new(spec.modes, spec.meta, spec.subgraphs, &name, asked);
        let events = stream.flat_map(move |event| stream::iter(wire.translate(event)));
        Ok(stream::iter(opening).chain(events).boxed())
    }

    fn state<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Snapshot, GraphError>> {
        Box::pin(async move { Ok(snapshot_json(self.0.get_state(saver, thread_id).await?)) })
    }

    fn state_at<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        id: CheckpointId,
    ) -> BoxFuture<'a, Result<Snapshot, GraphError>> {
        Box::pin(async move {
            let at = self.0.get_state_at(saver, thread_id, id).await?;
            Ok(snapshot_json(at))
        })
    }

    fn history<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, GraphError>> {
        Box::pin(async move {
            let records = saver.list(thread_id, before, limit).await?;
            let mut out = Vec::with_capacity(records.len());
            for record in records {
                let at = self.0.get_state_at(saver, thread_id, record.meta.id);
                out.push(snapshot_json(at.await?));
            }
            Ok(out)
        })
    }

    fn update_state<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        values: Value,
        as_node: Option<String>,
        at: Option<CheckpointId>,
    ) -> BoxFuture<'a, Result<CheckpointMeta, UpdateError>> {
        Box::pin(async move {
            let update =
                S::Update::from_json(values).map_err(|e| UpdateError::Values(e.to_string()))?;
            let (graph, node) = (&self.0, as_node.as_deref());
            let written = match at {
                Some(id) => {
                    graph
                        .update_state_at(saver, thread_id, id, update, node)
                        .await
                }
                None => graph.update_state(saver, thread_id, update, node).await,
            };
            written.map_err(UpdateError::Graph)
        })
    }

    fn keep_last<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: &'a str,
        keep: usize,
    ) -> BoxFuture<'a, Result<Pruned, CheckpointError>> {
        Box::pin(Thread::<S, dyn Checkpointer>::keep_last(
            saver, thread_id, keep,
        ))
    }

    fn drawing(&self, depth: usize) -> Value {
        crate::drawing::to_json(&self.0.outline(depth))
    }

    fn outline(&self, depth: usize) -> agent_state::graph::Outline {
        self.0.outline(depth)
    }

    fn node_names(&self) -> Vec<String> {
        self.0.node_names().map(str::to_owned).collect()
    }

    fn send_targets(&self) -> Vec<String> {
        let graph = &self.0;
        let takes = |n: &&str| graph.takes_send(n) == Some(true);
        graph
            .node_names()
            .filter(takes)
            .map(str::to_owned)
            .collect()
    }
}
