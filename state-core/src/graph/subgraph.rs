//! A compiled graph as a node of another: its state a part of the
//! parent's, or mapped by two functions; its steps checkpointed on a
//! thread of its own under the parent's (`<parent>|<task>/<step>`); its
//! interrupts surfaced to the parent and resumed through it.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::context::{Interrupt, NodeContext, Resume, Signal};
use super::into_node::{form, BuiltNode, IntoNode};
use super::node::{
    BoxError, Command, NodeOutput, NodeResult, ParentCommand, SnapshotFuture, SubgraphRunner,
};
use super::stream::channel::Channel;
use super::stream::mode::NodeSink;
use super::stream::StreamModes;
use super::{Graph, GraphError, GraphState, Input, NodeFn, Run, RunOutput, StateSnapshot};
use crate::checkpoint::{Checkpointer, Thread};
use crate::part::HasPart;
use crate::schema::ReducerKind;
use crate::state::{AgentState, StateUpdate};
use crate::write::OVERWRITE_KEY;

type InputMap<S, C> = Box<dyn Fn(&S) -> C + Send + Sync>;
/// The child's writes as the parent's updates.
type Lift<S, C> =
    fn(Vec<<C as AgentState>::Update>, &C) -> Result<Vec<<S as AgentState>::Update>, BoxError>;
type OutputMap<S, C> = Box<dyn Fn(&C) -> <S as AgentState>::Update + Send + Sync>;

/// How the child's state relates to the parent's.
enum Mapping<S: AgentState, C> {
    /// The child's state is the parent's part `C`: it starts as the part,
    /// and its writes go into the part through the part's reducers.
    Part,
    /// Two functions: the child's first state from the parent's, and the
    /// parent's update from the child's last state.
    Mapped {
        input: InputMap<S, C>,
        output: OutputMap<S, C>,
    },
}

struct Subgraph<S: AgentState, C: AgentState> {
    child: Graph<C>,
    mapping: Mapping<S, C>,
    part_of: fn(&S) -> C,
    lift: Lift<S, C>,
}

/// A compiled graph as a node whose state is the parent's flattened part
/// `C` (`#[state(flatten)]`): the child starts from the part, runs to its
/// end, and its writes apply to the part as one step of the parent (a
/// field the child overwrote, or a plain field, gets its last value; the
/// others each of the child's writes in order, through the part's
/// reducers, so writes of other nodes of the step compose with them). On a
/// thread, the child's steps are checkpointed on `<thread>|<name>/<step>`;
/// its interrupts pause the parent, and resuming the parent with values
/// for them resumes the child.
// Listing it under a failed node would only add noise.
#[diagnostic::do_not_recommend]
impl<S, C> IntoNode<S, form::Subgraph<C>> for Graph<C>
where
    S: AgentState + HasPart<C> + Send + Sync + 'static,
    S::Update: Send,
    C: GraphState,
{
    fn into_node(self) -> BuiltNode<S> {
        let runner: Subgraph<S, C> = Subgraph {
            child: self,
            mapping: Mapping::Part,
            part_of: |s: &S| <S as HasPart<C>>::part_of(s).clone(),
            lift: lift_part::<S, C>,
        };
        BuiltNode::plain(NodeFn::Subgraph(Box::new(runner)))
    }
}

/// A compiled graph whose state is mapped from and to its parent's, made
/// by [`Graph::mapped`]; a node as `add_node` takes one.
pub struct Mapped<C: AgentState, I, O> {
    child: Graph<C>,
    input: I,
    output: O,
}

impl<C: GraphState> Graph<C> {
    /// This graph as a node of a parent whose state is not made of `C`:
    /// `input` makes the child's first state from the parent's, `output`
    /// the parent's update from the child's last state. Checkpoints,
    /// interrupts and resumes as for a subgraph over a part.
    pub fn mapped<S, I, O>(self, input: I, output: O) -> Mapped<C, I, O>
    where
        S: AgentState,
        I: Fn(&S) -> C + Send + Sync + 'static,
        O: Fn(&C) -> S::Update + Send + Sync + 'static,
    {
        Mapped {
            child: self,
            input,
            output,
        }
    }
}

// Listing it under a failed node would only add noise.
#[diagnostic::do_not_recommend]
impl<S, C, I, O> IntoNode<S, form::Subgraph<(C, I)>> for Mapped<C, I, O>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
    C: GraphState,
    I: Fn(&S) -> C + Send + Sync + 'static,
    O: Fn(&C) -> S::Update + Send + Sync + 'static,
{
    fn into_node(self) -> BuiltNode<S> {
        let runner: Subgraph<S, C> = Subgraph {
            child: self.child,
            mapping: Mapping::Mapped {
                input: Box::new(self.input),
                output: Box::new(self.output),
            },
            part_of: |_| unreachable!("a mapped subgraph maps its input"),
            lift: |_, _| unreachable!("a mapped subgraph maps its output"),
        };
        BuiltNode::plain(NodeFn::Subgraph(Box::new(runner)))
    }
}

impl<S, C> SubgraphRunner<S, S::Update> for Subgraph<S, C>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
    C: GraphState,
{
    fn run<'a>(
        &'a self,
        state: Arc<S>,
        ctx: NodeContext,
        saver: Option<&'a dyn Checkpointer>,
    ) -> Pin<Box<dyn Future<Output = NodeResult<S::Update>> + Send + 'a>> {
        Box::pin(async move {
            let first = match &self.mapping {
                Mapping::Part => (self.part_of)(&state),
                Mapping::Mapped { input, .. } => input(&state),
            };
            drop(state);
            let ran = match (saver, ctx.thread_id()) {
                (Some(saver), Some(parent)) => {
                    let thread_id = format!("{parent}|{}", child_suffix(&ctx));
                    self.run_on_thread(saver, &thread_id, first, &ctx).await
                }
                _ => self.run_plain(first, &ctx).await,
            };
            let (out, writes) = match ran {
                Ok(ran) => ran,
                Err(error) => return to_parent(error),
            };
            if !out.interrupts.is_empty() || !out.next.is_empty() {
                return Err(pause(&ctx, &out));
            }
            match &self.mapping {
                Mapping::Mapped { output, .. } => Ok(NodeOutput::Update(output(&out.state))),
                Mapping::Part => {
                    let updates = (self.lift)(writes, &out.state)?;
                    Ok(NodeOutput::Batch(
                        updates.into_iter().map(Command::update).collect(),
                    ))
                }
            }
        })
    }

    fn snapshot<'a>(
        &'a self,
        saver: &'a dyn Checkpointer,
        thread_id: String,
        prefix: String,
    ) -> SnapshotFuture<'a> {
        Box::pin(async move { self.child_snapshot(saver, &thread_id, &prefix).await })
    }

    fn outline(&self, depth: usize) -> super::Outline {
        self.child.outline(depth)
    }
}

impl<S, C> Subgraph<S, C>
where
    S: AgentState,
    C: GraphState,
{
    /// The child's snapshot on `thread_id`, as its parent's task shows it.
    async fn child_snapshot(
        &self,
        saver: &dyn Checkpointer,
        thread_id: &str,
        prefix: &str,
    ) -> Result<StateSnapshot<Value>, GraphError> {
        let snapshot = self
            .child
            .get_state_with_subgraphs(saver, thread_id)
            .await?;
        Ok(snapshot.into_task_state(prefix))
    }
}

/// The child's failure as the parent node's result: a
/// [`ParentCommand`] one of its nodes returned becomes the node's command
/// (LangGraph's `Command.PARENT`); any other error stays the node's.
fn to_parent<U: crate::StateUpdate>(error: BoxError) -> NodeResult<U> {
    let command = match error.downcast::<GraphError>() {
        Ok(graph_error) => match *graph_error {
            GraphError::Node { error, .. } if error.is::<ParentCommand>() => error
                .downcast::<ParentCommand>()
                .expect("checked just above"),
            other => return Err(Box::new(other)),
        },
        Err(error) => return Err(error),
    };
    Ok(NodeOutput::Command(command.into_command()?))
}

/// `<task>/<step>`: the child's thread under the parent's.
fn child_suffix(ctx: &NodeContext) -> String {
    let prefix = ctx.inner.child_prefix();
    prefix.trim_end_matches('|').to_owned()
}

/// Pauses the parent's task on the child's interrupts (ids prefixed with
/// the task's), or on its breakpoint.
fn pause<C>(ctx: &NodeContext, out: &RunOutput<C>) -> BoxError {
    let prefix = ctx.inner.child_prefix();
    let interrupts = if out.interrupts.is_empty() {
        // A breakpoint in the child: the parent pauses with it, and
        // `Input::Resume` of the parent passes it.
        vec![Interrupt {
            id: format!("{prefix}breakpoint"),
            node: out.next.first().cloned().unwrap_or_default(),
            value: Value::Null,
        }]
    } else {
        out.interrupts
            .iter()
            .map(|i| Interrupt {
                id: format!("{prefix}{}", i.id),
                node: i.node.clone(),
                value: i.value.clone(),
            })
            .collect()
    };
    ctx.inner.set_signal(Signal::Paused(interrupts));
    "the subgraph paused".into()
}

impl<S, C> Subgraph<S, C>
where
    S: AgentState,
    C: GraphState,
{
    /// Runs the child without a checkpointer, collecting its writes.
    async fn run_plain(
        &self,
        first: C,
        ctx: &NodeContext,
    ) -> Result<(RunOutput<C>, Vec<C::Update>), BoxError> {
        let writes = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&writes);
        let run = self
            .child
            .run(Input::State(first))
            .shared_context(ctx.inner.scope.context.clone())
            .shared_store(ctx.inner.scope.store.clone())
            .on_step(move |e| {
                let mut w = sink.lock().unwrap_or_else(PoisonError::into_inner);
                w.extend(e.writes.iter().map(|w| w.update.clone()));
            });
        let out = streamed(run, ctx).await?;
        let writes = std::mem::take(&mut *writes.lock().unwrap_or_else(PoisonError::into_inner));
        Ok((out, writes))
    }

    /// Runs (or resumes) the child on its thread; its writes are read back
    /// from the thread's history, so a child resumed in another process
    /// gives all of them.
    async fn run_on_thread(
        &self,
        saver: &dyn Checkpointer,
        thread_id: &str,
        first: C,
        ctx: &NodeContext,
    ) -> Result<(RunOutput<C>, Vec<C::Update>), BoxError> {
        let exists = saver.head(thread_id).await?.is_some();
        let input = if !exists {
            Input::State(first)
        } else if ctx.inner.child_resume.is_empty() {
            Input::Resume
        } else {
            Input::ResumeWith(Resume {
                by_id: ctx.inner.child_resume.clone().into_iter().collect(),
                ..Resume::default()
            })
        };
        let run = self
            .child
            .run(input)
            .shared_context(ctx.inner.scope.context.clone())
            .shared_store(ctx.inner.scope.store.clone())
            .on_thread(saver, thread_id);
        let out = streamed(run, ctx).await?;
        if matches!(self.mapping, Mapping::Mapped { .. }) {
            return Ok((out, Vec::new()));
        }
        let thread = Thread::<C, dyn Checkpointer>::open(saver, thread_id).await?;
        let mut records = thread.history(None, usize::MAX).await?;
        records.reverse();
        let writes = records
            .into_iter()
            .flat_map(|r| r.writes.into_iter().map(|w| w.update))
            .collect();
        Ok((out, writes))
    }
}

/// The child's run, streaming into its parent's stream when the parent's
/// consumer asked for subgraphs' events: under `node:task`, the interrupt
/// ids as the parent resumes them.
async fn streamed<C, D>(run: Run<'_, C, D>, ctx: &NodeContext) -> Result<RunOutput<C>, GraphError>
where
    C: GraphState,
    D: Checkpointer + ?Sized,
{
    let writer = ctx.writer();
    let wanted = |s: &&Arc<dyn NodeSink>| s.subgraphs() && s.modes() != StreamModes::none();
    let Some(parent) = writer.sink().filter(wanted) else {
        return run.await;
    };
    let entry = format!("{}:{}", ctx.node(), ctx.task());
    let channel = Channel::forwarding(Arc::clone(parent), entry, ctx.inner.child_prefix());
    run.streaming(Arc::new(channel)).traced().await
}

/// The child's writes as updates of the parent: each field the child
/// overwrote gets one overwrite with its last value, each plain field its
/// last value (in a first update), and every other write goes in order, so
/// the part's reducers apply them as the child's steps did.
fn lift_part<S, C>(writes: Vec<C::Update>, last: &C) -> Result<Vec<S::Update>, BoxError>
where
    S: AgentState + HasPart<C>,
    C: AgentState,
{
    let kinds: HashMap<&str, &ReducerKind> = C::schema()
        .fields
        .iter()
        .map(|f| (f.name, &f.reducer))
        .collect();
    let objects: Vec<Map<String, Value>> = writes
        .iter()
        .filter_map(|u| match u.to_json() {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect();
    let overwritten: HashSet<String> = objects
        .iter()
        .flat_map(|o| o.iter())
        .filter(|(_, v)| is_overwrite(v))
        .map(|(k, _)| k.clone())
        .collect();
    let last_json = last.to_json();
    let mut first = Map::new();
    for key in &overwritten {
        let value = last_json.get(key).cloned().unwrap_or(Value::Null);
        first.insert(key.clone(), serde_json::json!({ OVERWRITE_KEY: value }));
    }
    let plain = |k: &str| {
        matches!(
            kinds.get(k),
            Some(
                ReducerKind::Replace
                    | ReducerKind::Untracked
                    | ReducerKind::Ephemeral
                    | ReducerKind::AnyValue
            ) | None
        )
    };
    let mut rest = Vec::new();
    for object in objects {
        let mut reduced = Map::new();
        for (k, v) in object {
            if overwritten.contains(&k) {
                continue;
            }
            if plain(&k) {
                first.insert(k, v);
            } else {
                reduced.insert(k, v);
            }
        }
        if !reduced.is_empty() {
            rest.push(reduced);
        }
    }
    std::iter::once(first)
        .filter(|m| !m.is_empty())
        .chain(rest)
        .map(|m| {
            let update = C::Update::from_json(Value::Object(m))?;
            Ok(S::lift(update))
        })
        .collect()
}

fn is_overwrite(value: &Value) -> bool {
    matches!(value, Value::Object(m) if m.len() == 1 && m.contains_key(OVERWRITE_KEY))
}
