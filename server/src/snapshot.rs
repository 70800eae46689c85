//! A thread's state at a checkpoint as `/state` and `/history` show it
//! (LangGraph's `ThreadState`).

use agent_state::checkpoint::CheckpointMeta;
use serde_json::{json, Map, Value};

use crate::events::state_interrupts;
use crate::ids::from_millis;
use crate::served::Snapshot;

/// The state of a thread that has no checkpoint.
pub(crate) fn empty() -> Value {
    json!({
        "values": {}, "next": [], "tasks": [], "metadata": null, "created_at": null,
        "checkpoint": null, "parent_checkpoint": null, "interrupts": [],
        "checkpoint_id": null, "parent_checkpoint_id": null,
    })
}

/// The snapshot, with the thread's metadata merged into its checkpoint's.
pub(crate) fn to_json(s: &Snapshot, thread_metadata: &Map<String, Value>) -> Value {
    let Some(cp) = &s.checkpoint else {
        return empty();
    };
    let mut metadata = thread_metadata.clone();
    metadata.insert("thread_id".into(), json!(cp.thread_id));
    metadata.insert("source".into(), json!(cp.source.as_str()));
    metadata.insert("step".into(), json!(cp.step));
    metadata.insert("parents".into(), json!({}));
    let parent = cp
        .parent
        .map(|p| checkpoint_ref(&cp.thread_id, &p.to_string()));
    json!({
        "values": s.values,
        "next": s.next,
        "tasks": tasks(s),
        "metadata": metadata,
        "created_at": from_millis(cp.created_at_ms),
        "checkpoint": checkpoint_ref(&cp.thread_id, &cp.id.to_string()),
        "parent_checkpoint": parent,
        "interrupts": state_interrupts(&s.interrupts),
        "checkpoint_id": cp.id.to_string(),
        "parent_checkpoint_id": cp.parent.map(|p| p.to_string()),
    })
}

/// `{"checkpoint_id", "thread_id", "checkpoint_ns"}`.
pub(crate) fn checkpoint_ref(thread_id: &str, id: &str) -> Value {
    json!({"checkpoint_id": id, "thread_id": thread_id, "checkpoint_ns": ""})
}

/// What `POST /threads/{id}/state` answers: the new checkpoint.
pub(crate) fn updated(cp: &CheckpointMeta) -> Value {
    let at = checkpoint_ref(&cp.thread_id, &cp.id.to_string());
    json!({"checkpoint": at, "configurable": at, "checkpoint_id": cp.id.to_string()})
}

/// The tasks that run next, each with the interrupts it paused on.
fn tasks(s: &Snapshot) -> Vec<Value> {
    s.next
        .iter()
        .map(|name| {
            let mine: Vec<_> = s
                .interrupts
                .iter()
                .filter(|i| i.node == *name)
                .cloned()
                .collect();
            json!({
                "id": name, "name": name, "path": ["__pregel_pull", name], "error": null,
                "interrupts": state_interrupts(&mine), "checkpoint": null, "state": null,
                "result": null,
            })
        })
        .collect()
}
