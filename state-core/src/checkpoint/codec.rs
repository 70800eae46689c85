//! A step's writes and a state's snapshot to and from the JSON text a
//! store keeps.

use serde::ser::SerializeMap;
use serde_json::Value;

use super::record::{CheckpointId, NodeWrite, Source, StoredCheckpoint};
use super::CheckpointError;
use crate::state::{AgentState, FieldView, StateUpdate, Stored};
use crate::storable::{encode_object, Fields};
use crate::StateError;

/// Applies a stored step's writes, once, with the step rules.
pub(super) fn replay<S: AgentState>(
    state: &mut S,
    record: &StoredCheckpoint,
) -> Result<(), CheckpointError> {
    let writes = decode_writes::<S>(record)?;
    state
        .apply_all(writes.into_iter().map(|w| w.update))
        .map_err(|error| corrupt(record, error))
}

fn corrupt(record: &StoredCheckpoint, error: StateError) -> CheckpointError {
    CheckpointError::Corrupt {
        thread_id: record.meta.thread_id.clone(),
        checkpoint: record.meta.id,
        error,
    }
}

fn malformed(record: &StoredCheckpoint, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Malformed {
        thread_id: record.meta.thread_id.clone(),
        checkpoint: record.meta.id,
        reason: reason.into(),
    }
}

/// Brings JSON stored under an older version up to `S::VERSION`, one
/// version at a time through the state's migration.
fn upgrade<S: AgentState>(
    record: &StoredCheckpoint,
    kind: Stored,
    value: Value,
) -> Result<Value, CheckpointError> {
    let meta = &record.meta;
    upgrade_value::<S>(&meta.thread_id, meta.id, meta.version, kind, value)
}

/// Brings JSON stored under state version `stored` (in checkpoint
/// `checkpoint` of `thread_id`, or kept with it) up to `S::VERSION`, one
/// version at a time through the state's migration.
pub(crate) fn upgrade_value<S: AgentState>(
    thread_id: &str,
    checkpoint: CheckpointId,
    stored: u32,
    kind: Stored,
    mut value: Value,
) -> Result<Value, CheckpointError> {
    if stored > S::VERSION {
        return Err(CheckpointError::NewerVersion {
            thread_id: thread_id.to_owned(),
            checkpoint,
            stored,
            current: S::VERSION,
        });
    }
    for from in stored..S::VERSION {
        value = S::migrate(from, kind, value).map_err(|error| CheckpointError::Migration {
            thread_id: thread_id.to_owned(),
            checkpoint,
            from,
            error,
        })?;
    }
    Ok(value)
}

/// Reads a snapshot, through the migration when it is older.
pub(super) fn decode_state<S: AgentState>(
    record: &StoredCheckpoint,
    text: &str,
) -> Result<S, CheckpointError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| malformed(record, format!("snapshot is not JSON: {e}")))?;
    let value = upgrade::<S>(record, Stored::State, value)?;
    S::from_json(value).map_err(|error| corrupt(record, error))
}

/// Reads a stored step's writes as updates, through the migration when
/// they are older. An `input` checkpoint holding its run's input (see
/// [`hold_writes`]) has none: the input applies in the step after it.
pub(super) fn decode_writes<S: AgentState>(
    record: &StoredCheckpoint,
) -> Result<Vec<NodeWrite<S::Update>>, CheckpointError> {
    if is_held(&record.writes) {
        // Checked, not applied: the input applies in the next step.
        let _ = held_value(record)?;
        return Ok(Vec::new());
    }
    let writes: Vec<NodeWrite<Value>> = serde_json::from_str(&record.writes).map_err(|e| {
        malformed(
            record,
            format!("writes are not a JSON list of {{node, update}}: {e}"),
        )
    })?;
    updates_of::<S>(record, writes)
}

/// Reads writes as JSON into updates.
fn updates_of<S: AgentState>(
    record: &StoredCheckpoint,
    writes: Vec<NodeWrite<Value>>,
) -> Result<Vec<NodeWrite<S::Update>>, CheckpointError> {
    writes
        .into_iter()
        .map(|w| {
            let value = upgrade::<S>(record, Stored::Update, w.update)?;
            let update = S::Update::from_json(value).map_err(|error| corrupt(record, error))?;
            Ok(NodeWrite {
                node: w.node,
                update,
                goto: w.goto,
                send: w.send,
            })
        })
        .collect()
}

/// A run's input as its `input` checkpoint holds it: stored with the state
/// before it, in the same record, so a crash before the input is applied
/// (the next checkpoint) keeps it, and a resume applies it (LangGraph keeps
/// it so, in the checkpoint's `__start__` channel).
pub(crate) enum HeldInput<S: AgentState> {
    /// The input's writes (`__start__`'s, with the gotos of a thread
    /// stopped midway), applied as the next step.
    Writes(Vec<NodeWrite<S::Update>>),
    /// A new thread's whole first state, stored as the next step.
    State(S),
}

/// The key of a held input's writes, and of a held first state.
const HELD_WRITES: &str = "input";
const HELD_STATE: &str = "input_state";

/// An `input` checkpoint's `writes` column holding the input's `writes`
/// (from [`encode_writes`]): `{"input": [..]}`, which no step's writes
/// (a JSON list) can be, and which a version that does not know it refuses
/// to load rather than misreads.
pub(crate) fn hold_writes(writes: &str) -> String {
    format!(r#"{{"{HELD_WRITES}":{writes}}}"#)
}

/// An `input` checkpoint's `writes` column holding a new thread's first
/// state (its `snapshot`): `{"input_state": {..}}`.
pub(crate) fn hold_state(snapshot: &str) -> String {
    format!(r#"{{"{HELD_STATE}":{snapshot}}}"#)
}

/// What a held input's JSON (a `writes` column's `{"input": ..}` or
/// `{"input_state": ..}`) holds, if `value` is one.
#[cfg(feature = "postgres")]
pub(crate) fn held_content(value: &Value) -> Option<&Value> {
    match value {
        Value::Object(map) if map.len() == 1 => {
            map.get(HELD_WRITES).or_else(|| map.get(HELD_STATE))
        }
        _ => None,
    }
}

fn is_held(writes: &str) -> bool {
    writes.trim_start().starts_with('{')
}

/// A held input's JSON.
enum HeldJson {
    Writes(Value),
    State(Value),
}

/// The held input's JSON, checked to be on an `input` checkpoint and in
/// the held form.
fn held_value(record: &StoredCheckpoint) -> Result<HeldJson, CheckpointError> {
    let value: Value = serde_json::from_str(&record.writes)
        .map_err(|e| malformed(record, format!("writes are not JSON: {e}")))?;
    let Value::Object(mut map) = value else {
        unreachable!("is_held saw an object");
    };
    let held = match (map.remove(HELD_WRITES), map.remove(HELD_STATE), map.is_empty()) {
        (Some(writes), None, true) => HeldJson::Writes(writes),
        (None, Some(state), true) => HeldJson::State(state),
        _ => {
            return Err(malformed(
                record,
                format!("writes are an object, neither a JSON list of {{node, update}} nor a run's input (`{{\"{HELD_WRITES}\": [..]}}` or `{{\"{HELD_STATE}\": {{..}}}}`)"),
            ))
        }
    };
    if record.meta.source != Source::Input {
        return Err(malformed(
            record,
            format!(
                "its writes hold a run's input, but it is a `{}` checkpoint, not `input`",
                record.meta.source.as_str()
            ),
        ));
    }
    Ok(held)
}

/// The run's input an `input` checkpoint holds, read back (through the
/// migration when older); `None` for a checkpoint holding none (any other,
/// and an `input` checkpoint stored before inputs were held).
pub(super) fn decode_input<S: AgentState>(
    record: &StoredCheckpoint,
) -> Result<Option<HeldInput<S>>, CheckpointError> {
    if !is_held(&record.writes) {
        return Ok(None);
    }
    match held_value(record)? {
        HeldJson::Writes(writes) => {
            let writes: Vec<NodeWrite<Value>> = serde_json::from_value(writes).map_err(|e| {
                malformed(
                    record,
                    format!("its held input is not a JSON list of {{node, update}}: {e}"),
                )
            })?;
            Ok(Some(HeldInput::Writes(updates_of::<S>(record, writes)?)))
        }
        HeldJson::State(state) => {
            let state = upgrade::<S>(record, Stored::State, state)?;
            let state = S::from_json(state).map_err(|error| corrupt(record, error))?;
            Ok(Some(HeldInput::State(state)))
        }
    }
}

/// A state's fields, as its snapshot holds them.
struct StateFields<'a, S>(&'a S);

impl<S: AgentState> Fields for StateFields<'_, S> {
    fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        self.0.serialize_fields(map, FieldView::Stored)
    }
}

/// An update's set fields.
struct UpdateFields<'a, U>(&'a U);

impl<U: StateUpdate> Fields for UpdateFields<'_, U> {
    fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        self.0.serialize_fields(map)
    }
}

/// The snapshot of a state: its `to_json`, as text, or the error naming
/// the field that cannot be stored and read back.
pub(super) fn encode_state<S: AgentState>(state: &S) -> Result<String, StateError> {
    let mut out = Vec::with_capacity(256);
    encode_object(&mut out, &StateFields(state))?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A step's writes, `[{"node": .., "update": {..}, "goto": [..], "send":
/// [{"node": .., "arg": ..}]}, ..]`,
/// written straight from the updates (no `Value` in between), or the error
/// naming the field that cannot be stored and read back.
pub(crate) fn encode_writes<U: StateUpdate>(writes: &[NodeWrite<U>]) -> Result<String, StateError> {
    let mut out = Vec::with_capacity(256);
    out.push(b'[');
    for (i, write) in writes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"node":"#);
        serde_json::to_writer(&mut out, &write.node).expect("a string serializes");
        out.extend_from_slice(br#","update":"#);
        encode_object(&mut out, &UpdateFields(&write.update))?;
        if !write.goto.is_empty() {
            out.extend_from_slice(br#","goto":"#);
            serde_json::to_writer(&mut out, &write.goto).expect("strings serialize");
        }
        if !write.send.is_empty() {
            out.extend_from_slice(br#","send":"#);
            serde_json::to_writer(&mut out, &write.send).map_err(|e| {
                StateError::new(
                    "send",
                    crate::error::ErrorKind::NotStorable {
                        reason: format!("a Send's input does not serialize: {e}"),
                    },
                )
            })?;
        }
        out.push(b'}');
    }
    out.push(b']');
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}
