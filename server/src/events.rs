//! A run's events as the official server writes them on the wire.

use agent_state::graph::{GraphError, Interrupt, StreamEvent};
use agent_state::AgentState;
use serde_json::{json, Map, Value};

use crate::store::GONE;
use crate::watch::file_gone;

/// Interrupts as a stream shows them (`values`, `updates`, `runs/wait`).
pub(crate) fn stream_interrupts(interrupts: &[Interrupt]) -> Value {
    interrupts
        .iter()
        .map(|i| json!({"value": i.value, "id": i.id, "response_schema": null}))
        .collect()
}

/// A subgraph's `values` or `updates` with its `__interrupt__` entries
/// (the runtime's `{id, node, value}`) as a stream shows interrupts.
pub(crate) fn stream_style_interrupts(mut data: Value) -> Value {
    if let Some(Value::Array(list)) = data.get_mut("__interrupt__") {
        for entry in list.iter_mut() {
            *entry = json!({"value": entry["value"], "id": entry["id"], "response_schema": null});
        }
    }
    data
}

/// Interrupts as a thread's state shows them.
pub(crate) fn state_interrupts(interrupts: &[Interrupt]) -> Value {
    interrupts
        .iter()
        .map(|i| json!({"id": i.id, "value": i.value}))
        .collect()
}

/// The graph's output with `__interrupt__` when it paused on some.
pub(crate) fn with_interrupts(mut output: Value, interrupts: &[Interrupt]) -> Value {
    if let (false, Value::Object(map)) = (interrupts.is_empty(), &mut output) {
        map.insert("__interrupt__".to_owned(), stream_interrupts(interrupts));
    }
    output
}

/// An event's SSE name and data; `None` for the last event, which the
/// runner handles. `meta` is merged into the metadata of `messages`.
pub(crate) fn wire<S: AgentState>(
    event: &StreamEvent<S>,
    meta: &Map<String, Value>,
) -> Option<(&'static str, Value)> {
    let data = match event {
        StreamEvent::End(_) => return None,
        StreamEvent::Values {
            state, interrupts, ..
        } => with_interrupts(state.to_output_json(), interrupts),
        StreamEvent::Interrupt { interrupts } => {
            json!({"__interrupt__": stream_interrupts(interrupts)})
        }
        StreamEvent::Message(_) => message_with_meta(event.to_json(), meta),
        other => other.to_json(),
    };
    Some((event.name(), data))
}

/// `[chunk, metadata]` with the run's keys (`thread_id`, `run_id`,
/// `graph_id`, ...) in the metadata, as clients read them.
pub(crate) fn message_with_meta(mut pair: Value, meta: &Map<String, Value>) -> Value {
    if let Some(Value::Object(m)) = pair.get_mut(1) {
        for (k, v) in meta {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let node = m.get("langgraph_node").cloned().unwrap_or(Value::Null);
        m.entry("langgraph_checkpoint_ns").or_insert(node);
    }
    pair
}

/// A `debug` event as the official server sends it: a checkpoint's
/// configs name the run, the graph and the assistant too, and the
/// checkpoint and its parent come again as `checkpoint` and
/// `parent_checkpoint` (`{checkpoint_id, thread_id, checkpoint_ns}`); a
/// task carries the run's metadata (without `thread_id`).
pub(crate) fn debug_json(mut debug: Value, meta: &Map<String, Value>) -> Value {
    let kind = debug["type"].as_str().unwrap_or_default().to_owned();
    let Some(Value::Object(payload)) = debug.get_mut("payload") else {
        return debug;
    };
    match kind.as_str() {
        "checkpoint" => {
            for key in ["config", "parent_config"] {
                let configurable = payload.get_mut(key).and_then(|c| c.get_mut("configurable"));
                if let Some(Value::Object(c)) = configurable {
                    for k in ["run_id", "graph_id", "assistant_id"] {
                        if let Some(v) = meta.get(k) {
                            c.entry(k).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
            let checkpoint = checkpoint_of(payload.get("config"));
            let parent = checkpoint_of(payload.get("parent_config"));
            payload.insert("checkpoint".into(), checkpoint);
            payload.insert("parent_checkpoint".into(), parent);
        }
        "task" => {
            payload.insert("metadata".into(), task_metadata(meta));
        }
        _ => {}
    }
    debug
}

/// The metadata a task's start carries (`debug`, `tasks`): the run's,
/// without the thread (LangGraph leaves its own keys out).
pub(crate) fn task_metadata(meta: &Map<String, Value>) -> Value {
    let mut meta = meta.clone();
    meta.remove("thread_id");
    Value::Object(meta)
}

/// The checkpoint a config names, or `null`.
fn checkpoint_of(config: Option<&Value>) -> Value {
    let Some(c) = config.map(|c| &c["configurable"]) else {
        return Value::Null;
    };
    if c["checkpoint_id"].is_null() {
        return Value::Null;
    }
    let ns = c["checkpoint_ns"].as_str().unwrap_or("");
    json!({"checkpoint_id": c["checkpoint_id"], "thread_id": c["thread_id"], "checkpoint_ns": ns})
}

/// A failed run's `{"error", "message"}`: the error's kind (its variant's
/// name, or LangGraph's for the recursion limit) and its text. A storage failure is logged whole and shown
/// without its cause, which may name the server's files.
pub(crate) fn error_json(error: &GraphError) -> Value {
    if let GraphError::Checkpoint(cause) = error {
        tracing::error!(%cause, "a run's step could not be stored");
        // The cause may name a file or a host: only the file going away
        // is worth telling the client, in words of its own.
        let message = match file_gone(cause) {
            true => GONE,
            false => "the run's state could not be stored",
        };
        return json!({"error": "Checkpoint", "message": message});
    }
    // LangGraph's name where it has the same error: clients match on it.
    if let GraphError::AmbiguousResume { pending } = error {
        // The core's text names its Rust API; a client answers by id.
        let message = format!(
            "several interrupts are pending ({}): send `command.resume` as a map of interrupt id to value",
            pending.join(", ")
        );
        return json!({"error": "AmbiguousResume", "message": message});
    }
    let kind: String = match error {
        GraphError::RecursionLimit { .. } => "GraphRecursionError".to_owned(),
        _ => format!("{error:?}")
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect(),
    };
    json!({"error": kind, "message": error.to_string()})
}
