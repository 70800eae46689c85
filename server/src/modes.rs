//! `stream_mode` as clients send it: one name or a list.

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

/// The modes of a request (`values` when it names none), and their names
/// as the run's record keeps them. A name that is no mode, or one this
/// server does not stream yet, is a 422 naming it.
pub(crate) fn parse(value: &Value) -> Result<(StreamModes, Vec<String>), ApiError> {
    let names: Vec<&Value> = match value {
        Value::Null => return Ok((StreamMode::Values.into(), vec!["values".to_owned()])),
        Value::Array(list) => list.iter().collect(),
        one => vec![one],
    };
    let mut modes = StreamModes::none();
    let mut kept = Vec::new();
    for name in names {
        let name = name.as_str().unwrap_or_default();
        modes = modes.with(one(name)?);
        kept.push(name.to_owned());
    }
    Ok((modes, kept))
}

fn one(name: &str) -> Result<StreamMode, ApiError> {
    Ok(match name {
        "values" => StreamMode::Values,
        "updates" => StreamMode::Updates,
        "messages-tuple" => StreamMode::Messages,
        "custom" => StreamMode::Custom,
        "tasks" => StreamMode::Tasks,
        "checkpoints" => StreamMode::Checkpoints,
        known if KNOWN.contains(&known) => {
            return Err(ApiError::Invalid(format!(
                "stream_mode: `{known}` is not streamed by this server yet"
            )))
        }
        other => {
            return Err(ApiError::Invalid(format!(
                "stream_mode: `{other}` is not a stream mode; expected one of {}",
                KNOWN.join(", ")
            )))
        }
    })
}
