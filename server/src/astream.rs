//! The `events` stream mode: LangChain's `astream_events` v2 events, as
//! the official server streams them for a run (the graph's
//! `on_chain_start` / `on_chain_end`, each node's `on_chain_start` /
//! `on_chain_stream` / `on_chain_end`, and `on_chat_model_start` /
//! `on_chat_model_stream` / `on_chat_model_end` for the message pieces a
//! node streams), built from the runtime's task and message events.

use std::collections::HashMap;

use agent_state::graph::MessageEvent;
use agent_state::MessageChunk;
use serde_json::{json, Map, Value};

use crate::ids::new_id;

/// A node's run: what its events share.
struct TaskRun {
    run_id: String,
    node: String,
    step: i64,
    input: Value,
    meta: Map<String, Value>,
}

/// A chat model's run inside a node: its pieces so far.
struct ModelRun {
    run_id: String,
    task: String,
    so_far: MessageChunk,
}

/// The state of a run's `events` stream.
pub(crate) struct Events {
    graph: String,
    run_id: String,
    meta: Map<String, Value>,
    tasks: HashMap<String, TaskRun>,
    models: HashMap<String, ModelRun>,
}

impl Events {
    /// The events of run `run_id` of graph `graph`; `meta` is the run's
    /// metadata.
    pub(crate) fn new(graph: &str, run_id: &str, meta: &Map<String, Value>) -> Self {
        let mut meta = meta.clone();
        meta.insert("ls_integration".into(), json!("langgraph"));
        Self {
            graph: graph.to_owned(),
            run_id: run_id.to_owned(),
            meta,
            tasks: HashMap::new(),
            models: HashMap::new(),
        }
    }

    /// The graph's `on_chain_start`, with the run's input.
    pub(crate) fn start(&self, input: Value) -> Value {
        let data = json!({ "input": input });
        self.graph_event("on_chain_start", data)
    }

    /// The graph's `on_chain_end`, with its output.
    pub(crate) fn end(&self, output: Value) -> Value {
        let data = json!({ "output": output });
        self.graph_event("on_chain_end", data)
    }

    fn graph_event(&self, event: &str, data: Value) -> Value {
        json!({
            "event": event, "data": data, "name": self.graph, "tags": [],
            "run_id": self.run_id, "metadata": self.meta, "parent_ids": [],
        })
    }

    /// A node's `on_chain_start`, as its task starts.
    pub(crate) fn task_start(&mut self, task: &str, start: &Value, step: i64) -> Value {
        let node = start["name"].as_str().unwrap_or_default().to_owned();
        let triggers = start["triggers"].clone();
        let entry = match triggers.as_array() {
            Some(t) if t.iter().any(|t| t == "__pregel_push") => "__pregel_push",
            _ => "__pregel_pull",
        };
        let mut meta = self.meta.clone();
        meta.insert("langgraph_step".into(), json!(step));
        meta.insert("langgraph_node".into(), json!(node));
        meta.insert("langgraph_triggers".into(), triggers);
        meta.insert("langgraph_path".into(), json!([entry, node]));
        meta.insert(
            "langgraph_checkpoint_ns".into(),
            json!(format!("{node}:{task}")),
        );
        let run = TaskRun {
            run_id: new_id(),
            node,
            step,
            input: start["input"].clone(),
            meta,
        };
        let event = self.task_event(&run, "on_chain_start", json!({"input": run.input}));
        self.tasks.insert(task.to_owned(), run);
        event
    }

    /// A node's `on_chain_stream` and `on_chain_end` (its update), once
    /// the chat models it left open end; a task that failed or paused
    /// ends without them, as in LangChain.
    pub(crate) fn task_end(&mut self, task: &str, result: &Value) -> Vec<Value> {
        let mut out = self.close_models(task);
        let Some(run) = self.tasks.remove(task) else {
            return out;
        };
        if result["error"].is_null() && result["interrupts"].as_array().is_none_or(Vec::is_empty) {
            let update = result["result"].clone();
            out.push(self.task_event(&run, "on_chain_stream", json!({"chunk": update})));
            let data = json!({"output": update, "input": run.input});
            out.push(self.task_event(&run, "on_chain_end", data));
        }
        out
    }

    fn task_event(&self, run: &TaskRun, event: &str, data: Value) -> Value {
        json!({
            "event": event, "data": data, "name": run.node,
            "tags": [format!("graph:step:{}", run.step)], "run_id": run.run_id,
            "metadata": run.meta, "parent_ids": [self.run_id],
        })
    }

    /// A piece of a message a node streams: `on_chat_model_start` at its
    /// first piece, `on_chat_model_stream`, and `on_chat_model_end` at
    /// its last. A message a node returned whole made no model call.
    pub(crate) fn message(&mut self, m: &MessageEvent) -> Vec<Value> {
        if m.message.is_some() {
            return vec![];
        }
        let id = m.chunk.id.clone().unwrap_or_else(|| m.task.clone());
        let mut out = Vec::with_capacity(3);
        match self.models.get_mut(&id) {
            Some(model) => {
                if let Err(error) = model.so_far.add(m.chunk.clone()) {
                    tracing::warn!(%error, %id, "a streamed piece does not add to its message");
                }
            }
            None => {
                let model = ModelRun {
                    run_id: new_id(),
                    task: m.task.clone(),
                    so_far: m.chunk.clone(),
                };
                out.push(self.model_event(&model, "on_chat_model_start", json!({"input": {}})));
                self.models.insert(id.clone(), model);
            }
        }
        let model = &self.models[&id];
        out.push(self.model_event(model, "on_chat_model_stream", json!({"chunk": m.chunk})));
        if m.chunk.last {
            out.extend(self.end_model(&id));
        }
        out
    }

    /// The `on_chat_model_end` of the models a task left open.
    fn close_models(&mut self, task: &str) -> Vec<Value> {
        let mut open: Vec<String> = self
            .models
            .iter()
            .filter(|(_, m)| m.task == task)
            .map(|(id, _)| id.clone())
            .collect();
        open.sort();
        open.iter().filter_map(|id| self.end_model(id)).collect()
    }

    fn end_model(&mut self, id: &str) -> Option<Value> {
        let model = self.models.remove(id)?;
        let output = model.so_far.clone().into_message();
        let data = json!({"output": output, "input": {}});
        Some(self.model_event(&model, "on_chat_model_end", data))
    }

    fn model_event(&self, model: &ModelRun, event: &str, data: Value) -> Value {
        let task = self.tasks.get(&model.task);
        let mut meta = task.map_or_else(|| self.meta.clone(), |t| t.meta.clone());
        meta.insert("ls_integration".into(), json!("langchain_chat_model"));
        meta.insert("ls_model_type".into(), json!("chat"));
        let ns = meta.get("langgraph_checkpoint_ns").cloned();
        meta.insert("checkpoint_ns".into(), ns.unwrap_or_default());
        let mut parents = vec![json!(self.run_id)];
        parents.extend(task.map(|t| json!(t.run_id)));
        json!({
            "event": event, "data": data, "name": "chat_model", "tags": ["seq:step:1"],
            "run_id": model.run_id, "metadata": meta, "parent_ids": parents,
        })
    }
}
