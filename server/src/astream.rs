//! The `events` stream mode: LangChain's `astream_events` v2 events, as
//! the official server streams them for a run (the graph's
//! `on_chain_start` / `on_chain_end`, each node's `on_chain_start` /
//! `on_chain_stream` / `on_chain_end`, a subgraph's own chain around its
//! nodes' events, and `on_chat_model_start` / `on_chat_model_stream` /
//! `on_chat_model_end` for the message pieces a node streams), built
//! from the runtime's task and message events (a subgraph's as JSON).

use std::collections::HashMap;

use agent_state::MessageChunk;
use serde_json::{json, Map, Value};

use crate::ids::new_id;
use crate::partial::full_message;

/// A node's run, or a subgraph's: what its events share.
struct ChainRun {
    run_id: String,
    name: String,
    tags: Value,
    input: Value,
    meta: Map<String, Value>,
    /// The runs it is nested in, outermost first.
    parents: Vec<String>,
}

/// A subgraph's run, under the task that runs it.
struct SubgraphRun {
    chain: ChainRun,
    /// Its step, counted as its tasks start (a step's tasks all start
    /// before any ends) since its events carry no step.
    step: i64,
    running: usize,
}

/// A chat model's run inside a node: its pieces so far.
struct ModelRun {
    run_id: String,
    task: String,
    so_far: MessageChunk,
}

/// The state of a run's `events` stream. Tasks are keyed by their
/// namespace and id (`child:child|inc`), so a subgraph's nodes and the
/// parent's do not meet.
pub(crate) struct Events {
    graph: ChainRun,
    tasks: HashMap<String, ChainRun>,
    subgraphs: HashMap<String, SubgraphRun>,
    models: HashMap<String, ModelRun>,
}

/// A task's key: its namespace, then its id.
fn key(ns: &[String], task: &str) -> String {
    let mut key = ns.join("|");
    key.push('#');
    key.push_str(task);
    key
}

/// The key of the task that runs the subgraph of namespace `ns`
/// (its last entry is `node:task`).
fn runner_key(ns: &[String]) -> Option<String> {
    let (last, up) = ns.split_last()?;
    let task = last.split_once(':').map_or(last.as_str(), |(_, t)| t);
    Some(key(up, task))
}

impl Events {
    /// The events of run `run_id` of graph `graph`; `meta` is the run's
    /// metadata.
    pub(crate) fn new(graph: &str, run_id: &str, meta: &Map<String, Value>) -> Self {
        let mut meta = meta.clone();
        meta.insert("ls_integration".into(), json!("langgraph"));
        let graph = ChainRun {
            run_id: run_id.to_owned(),
            name: graph.to_owned(),
            tags: json!([]),
            input: Value::Null,
            meta,
            parents: vec![],
        };
        Self {
            graph,
            tasks: HashMap::new(),
            subgraphs: HashMap::new(),
            models: HashMap::new(),
        }
    }

    /// The graph's `on_chain_start`, with the run's input.
    pub(crate) fn start(&self, input: Value) -> Value {
        chain_event(&self.graph, "on_chain_start", json!({ "input": input }))
    }

    /// The graph's `on_chain_end`, with its output.
    pub(crate) fn end(&self, output: Value) -> Value {
        chain_event(&self.graph, "on_chain_end", json!({ "output": output }))
    }

    /// A node's `on_chain_start` as its task starts (`start` is the
    /// `tasks` event: `{id, name, input, triggers}`), after its
    /// subgraph's `on_chain_start` for the first task of a subgraph.
    /// `step` is the runtime's; `None` for a subgraph's task.
    pub(crate) fn task_start(
        &mut self,
        ns: &[String],
        start: &Value,
        step: Option<i64>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let (step, base, parents) = match self.enter(ns, &mut out) {
            Some(sub) => {
                if sub.running == 0 {
                    sub.step += 1;
                }
                sub.running += 1;
                let mut parents = sub.chain.parents.clone();
                parents.push(sub.chain.run_id.clone());
                (sub.step, sub.chain.meta.clone(), parents)
            }
            None => (
                step.unwrap_or(0),
                self.graph.meta.clone(),
                vec![self.graph.run_id.clone()],
            ),
        };
        let task = start["id"].as_str().unwrap_or_default();
        let run = node_run(start, ns, step, base, parents);
        out.push(chain_event(
            &run,
            "on_chain_start",
            json!({"input": run.input}),
        ));
        self.tasks.insert(key(ns, task), run);
        out
    }

    /// The subgraph of namespace `ns` (`None` for the run's own graph),
    /// its `on_chain_start` sent to `out` when it is new.
    fn enter(&mut self, ns: &[String], out: &mut Vec<Value>) -> Option<&mut SubgraphRun> {
        let runner = runner_key(ns)?;
        let id = ns.join("|");
        if !self.subgraphs.contains_key(&id) {
            let by = self.tasks.get(&runner)?;
            let mut meta = by.meta.clone();
            meta.insert("checkpoint_ns".into(), json!(id));
            let mut parents = by.parents.clone();
            parents.push(by.run_id.clone());
            let chain = ChainRun {
                run_id: new_id(),
                name: "LangGraph".to_owned(),
                tags: json!(["seq:step:1"]),
                input: by.input.clone(),
                meta,
                parents,
            };
            out.push(chain_event(
                &chain,
                "on_chain_start",
                json!({"input": chain.input}),
            ));
            let sub = SubgraphRun {
                chain,
                step: 0,
                running: 0,
            };
            self.subgraphs.insert(id.clone(), sub);
        }
        self.subgraphs.get_mut(&id)
    }

    /// A node's `on_chain_stream` and `on_chain_end` (its update; `end`
    /// is the `tasks` event `{id, name, error, result, interrupts}`),
    /// after the chat models and the subgraphs it left open end; a task
    /// that failed or paused ends without them, as in LangChain.
    pub(crate) fn task_end(&mut self, ns: &[String], end: &Value) -> Vec<Value> {
        let task_key = key(ns, end["id"].as_str().unwrap_or_default());
        let mut out = self.close_models(&task_key);
        if let Some(sub) = self.subgraphs.get_mut(&ns.join("|")) {
            sub.running = sub.running.saturating_sub(1);
        }
        let Some(run) = self.tasks.remove(&task_key) else {
            return out;
        };
        let paused = end["interrupts"].as_array().is_some_and(|i| !i.is_empty());
        if end["error"].is_null() && !paused {
            let update = end["result"].clone();
            out.extend(self.close_subgraphs(&task_key, &update));
            out.push(chain_event(
                &run,
                "on_chain_stream",
                json!({"chunk": update}),
            ));
            let data = json!({"output": update, "input": run.input});
            out.push(chain_event(&run, "on_chain_end", data));
        }
        out
    }

    /// The `on_chain_end` of the subgraphs the task `task_key` ran, with
    /// the task's update: what the subgraph's run returned to it.
    fn close_subgraphs(&mut self, task_key: &str, update: &Value) -> Vec<Value> {
        let mut ran: Vec<String> = self
            .subgraphs
            .keys()
            .filter(|id| runner_key(&split(id)).as_deref() == Some(task_key))
            .cloned()
            .collect();
        ran.sort();
        ran.iter()
            .filter_map(|id| self.subgraphs.remove(id))
            .map(|sub| {
                let data = json!({"output": update, "input": sub.chain.input});
                chain_event(&sub.chain, "on_chain_end", data)
            })
            .collect()
    }

    /// A piece of a message that task `task` of namespace `ns` streams:
    /// `on_chat_model_start` at its first piece, `on_chat_model_stream`,
    /// and `on_chat_model_end` at its last.
    pub(crate) fn message(&mut self, ns: &[String], task: &str, chunk: MessageChunk) -> Vec<Value> {
        let task_key = key(ns, task);
        let id = chunk.id.clone().unwrap_or_else(|| task_key.clone());
        let mut out = Vec::with_capacity(3);
        let chunk_json = json!(chunk);
        let last = chunk.last;
        match self.models.get_mut(&id) {
            Some(model) => {
                if let Err(error) = model.so_far.add(chunk) {
                    tracing::warn!(%error, %id, "a streamed piece does not add to its message");
                }
            }
            None => {
                let model = ModelRun {
                    run_id: new_id(),
                    task: task_key,
                    so_far: chunk,
                };
                out.push(self.model_event(&model, "on_chat_model_start", json!({"input": {}})));
                self.models.insert(id.clone(), model);
            }
        }
        let model = &self.models[&id];
        out.push(self.model_event(model, "on_chat_model_stream", json!({"chunk": chunk_json})));
        if last {
            out.extend(self.end_model(&id));
        }
        out
    }

    /// The `on_chat_model_end` of the models a task left open.
    fn close_models(&mut self, task_key: &str) -> Vec<Value> {
        let mut open: Vec<String> = self
            .models
            .iter()
            .filter(|(_, m)| m.task == task_key)
            .map(|(id, _)| id.clone())
            .collect();
        open.sort();
        open.iter().filter_map(|id| self.end_model(id)).collect()
    }

    fn end_model(&mut self, id: &str) -> Option<Value> {
        let model = self.models.remove(id)?;
        let output = full_message(json!(model.so_far.clone().into_message()));
        let data = json!({"output": output, "input": {}});
        Some(self.model_event(&model, "on_chat_model_end", data))
    }

    fn model_event(&self, model: &ModelRun, event: &str, data: Value) -> Value {
        let task = self.tasks.get(&model.task).unwrap_or(&self.graph);
        let mut meta = task.meta.clone();
        meta.insert("ls_integration".into(), json!("langchain_chat_model"));
        meta.insert("ls_model_type".into(), json!("chat"));
        let ns = meta.get("langgraph_checkpoint_ns").cloned();
        meta.entry("checkpoint_ns")
            .or_insert(ns.unwrap_or_default());
        let mut parents = task.parents.clone();
        parents.push(task.run_id.clone());
        json!({
            "event": event, "data": data, "name": "chat_model", "tags": ["seq:step:1"],
            "run_id": model.run_id, "metadata": meta, "parent_ids": parents,
        })
    }
}

/// A namespace from its joined form.
fn split(id: &str) -> Vec<String> {
    id.split('|').map(str::to_owned).collect()
}

/// A node's run from its `tasks` start event: its metadata LangGraph's
/// `langgraph_*` keys on top of `base` (the run's, or its subgraph's).
fn node_run(
    start: &Value,
    ns: &[String],
    step: i64,
    base: Map<String, Value>,
    parents: Vec<String>,
) -> ChainRun {
    let node = start["name"].as_str().unwrap_or_default().to_owned();
    let task = start["id"].as_str().unwrap_or_default();
    let triggers = start["triggers"].clone();
    let entry = match triggers.as_array() {
        Some(t) if t.iter().any(|t| t == "__pregel_push") => "__pregel_push",
        _ => "__pregel_pull",
    };
    let mut path = ns.to_vec();
    path.push(format!("{node}:{task}"));
    let mut meta = base;
    meta.insert("langgraph_step".into(), json!(step));
    meta.insert("langgraph_node".into(), json!(node));
    meta.insert("langgraph_triggers".into(), triggers);
    meta.insert("langgraph_path".into(), json!([entry, node]));
    meta.insert("langgraph_checkpoint_ns".into(), json!(path.join("|")));
    ChainRun {
        run_id: new_id(),
        tags: json!([format!("graph:step:{step}")]),
        name: node,
        input: start["input"].clone(),
        meta,
        parents,
    }
}

fn chain_event(run: &ChainRun, event: &str, data: Value) -> Value {
    json!({
        "event": event, "data": data, "name": run.name, "tags": run.tags,
        "run_id": run.run_id, "metadata": run.meta, "parent_ids": run.parents,
    })
}
