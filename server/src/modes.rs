//! `stream_mode` as clients send it: one name or a list, and what each
//! name asks of the runtime.

use agent_state::graph::{StreamMode, StreamModes};
use serde_json::Value;

use crate::error::ApiError;

/// Every name the official server accepts.
const KNOWN: [&str; 9] = [
    "values",
    "messages",
    "messages-tuple",
    "tasks",
    "checkpoints",
    "updates",
    "events",
    "debug",
    "custom",
];

/// The modes a run streams on the wire, and the runtime's modes that
/// feed them (`messages`, `messages-tuple` and `events` share the
/// runtime's message chunks; `events` reads its tasks too).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Modes {
    /// What the runtime is asked for.
    pub core: StreamModes,
    /// The modes asked for by their runtime name (`messages` here is
    /// `messages-tuple` on the wire).
    pub wire: StreamModes,
    /// `messages`: each message as it builds up (`messages/partial`).
    pub partial: bool,
    /// `events`: LangChain's `astream_events` v2 events.
    pub events: bool,
}

impl Modes {
    /// Whether the runtime's events of `mode` go on the wire as they are.
    pub(crate) fn streams(&self, mode: StreamMode) -> bool {
        self.wire.contains(mode)
    }
}

/// The modes of a request (`values` when it names none), and their names
/// as the run's record keeps them. A name that is no mode is a 422
/// naming it.
pub(crate) fn parse(value: &Value) -> Result<(Modes, Vec<String>), ApiError> {
    let names: Vec<&Value> = match value {
        Value::Null => vec![],
        Value::Array(list) => list.iter().collect(),
        one => vec![one],
    };
    let mut modes = Modes::default();
    let mut kept = Vec::new();
    for name in names {
        let name = name.as_str().unwrap_or_default();
        add(&mut modes, name)?;
        kept.push(name.to_owned());
    }
    if kept.is_empty() {
        add(&mut modes, "values")?;
        kept.push("values".to_owned());
    }
    // Both message modes asked for: the official server streams the
    // tuples alone.
    if modes.wire.contains(StreamMode::Messages) {
        modes.partial = false;
    }
    Ok((modes, kept))
}

fn add(modes: &mut Modes, name: &str) -> Result<(), ApiError> {
    let mode = match name {
        "values" => StreamMode::Values,
        "updates" => StreamMode::Updates,
        "messages-tuple" => StreamMode::Messages,
        "custom" => StreamMode::Custom,
        "tasks" => StreamMode::Tasks,
        "checkpoints" => StreamMode::Checkpoints,
        "debug" => StreamMode::Debug,
        "messages" => {
            modes.partial = true;
            modes.core = modes.core.with(StreamMode::Messages);
            return Ok(());
        }
        "events" => {
            modes.events = true;
            modes.core = modes
                .core
                .with(StreamMode::Messages)
                .with(StreamMode::Tasks);
            return Ok(());
        }
        other => {
            return Err(ApiError::Invalid(format!(
                "stream_mode: `{other}` is not a stream mode; expected one of {}",
                KNOWN.join(", ")
            )))
        }
    };
    modes.core = modes.core.with(mode);
    modes.wire = modes.wire.with(mode);
    Ok(())
}

/// `stream_subgraphs`: a boolean, `false` when left out.
pub(crate) fn subgraphs(value: &Value) -> Result<bool, ApiError> {
    match value {
        Value::Null => Ok(false),
        Value::Bool(on) => Ok(*on),
        other => Err(ApiError::Invalid(format!(
            "stream_subgraphs: expected true or false, found {other}"
        ))),
    }
}
