//! The JSON of the events whose shape is LangGraph's own: a task's
//! `updates`, the `tasks` results, the `debug` envelope and its checkpoint
//! payload, and the timestamps they carry.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::checkpoint::{CheckpointId, CheckpointMeta, NodeWrite};
use crate::graph::tasks::{result, written, SnapshotTask, TaskOutcome};
use crate::state::StateUpdate;

/// One task's `updates` event, `{node: update}`: `null` when it wrote no
/// field; a list of one-field objects when it wrote a field twice.
pub(crate) fn updates<U: StateUpdate>(writes: &[NodeWrite<U>], cached: bool) -> Value {
    let Some(node) = writes.first().map(|w| w.node.clone()) else {
        return json!({});
    };
    let fields = written(writes);
    let repeated = fields
        .iter()
        .enumerate()
        .any(|(i, (k, _))| fields[..i].iter().any(|(seen, _)| seen == k));
    let update = match fields.len() {
        0 => Value::Null,
        _ if repeated => fields
            .into_iter()
            .map(|(k, v)| Value::Object(Map::from_iter([(k, v)])))
            .collect(),
        _ => Value::Object(fields.into_iter().collect()),
    };
    let mut event = Map::from_iter([(node, update)]);
    if cached {
        event.insert("__metadata__".to_owned(), json!({"cached": true}));
    }
    Value::Object(event)
}

/// A `tasks` event as a task ends: `{id, name, error, result,
/// interrupts}`.
pub(crate) fn task_result<U: StateUpdate>(
    task: &str,
    node: &str,
    outcome: &TaskOutcome,
    writes: &[NodeWrite<U>],
) -> Value {
    let (error, interrupts) = match outcome {
        TaskOutcome::Finished => (Value::Null, json!([])),
        TaskOutcome::Paused(interrupts) => (Value::Null, json!(interrupts)),
        TaskOutcome::Failed(error) => (Value::from(error.as_str()), json!([])),
    };
    json!({
        "id": task,
        "name": node,
        "error": error,
        "result": result(writes),
        "interrupts": interrupts,
    })
}

/// A checkpoint as LangGraph's `checkpoints` and `debug` modes show it.
pub(crate) fn checkpoint_payload(
    meta: &CheckpointMeta,
    values: Value,
    next: &[String],
    tasks: &[SnapshotTask],
) -> Value {
    let config = |id: CheckpointId| json!({"configurable": {"checkpoint_ns": "", "thread_id": meta.thread_id, "checkpoint_id": id}});
    json!({
        "config": config(meta.id),
        "parent_config": meta.parent.map(config),
        "values": values,
        "metadata": {"source": meta.source.as_str(), "step": meta.step, "parents": {}},
        "next": next,
        "tasks": tasks.iter().map(checkpoint_task).collect::<Vec<_>>(),
    })
}

/// A task of a checkpoint's payload: its error if it failed, else its
/// interrupts (and its result, if it finished).
fn checkpoint_task(task: &SnapshotTask) -> Value {
    let mut value = json!({"id": task.id, "name": task.name});
    if let Some(error) = &task.error {
        value["error"] = Value::from(error.as_str());
    } else {
        if let Some(result) = &task.result {
            value["result"] = result.clone();
        }
        value["interrupts"] = json!(task.interrupts);
    }
    value["state"] = Value::Null;
    value
}

/// `2025-01-31T12:00:00.123456+00:00`, as Python's
/// `datetime.now(timezone.utc).isoformat()` writes it (no fraction when it
/// is zero).
pub(crate) fn iso_timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    let (hour, minute, second) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let fraction = match since.subsec_micros() {
        0 => String::new(),
        micros => format!(".{micros:06}"),
    };
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}+00:00")
}

/// The proleptic Gregorian date `days` days after 1970-01-01, counted in
/// 400-year eras (146,097 days each) that start on March 1st, so the leap
/// day falls at the end of a year.
fn civil_date(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468; // 0000-03-01 to 1970-01-01
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // March = 0
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_read_as_python_writes_them() {
        let at = |secs: u64, micros: u64| {
            iso_timestamp(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00+00:00");
        // 2000-02-29, a leap day of a century year divisible by 400.
        assert_eq!(at(951_782_400, 1), "2000-02-29T00:00:00.000001+00:00");
        assert_eq!(at(951_868_799, 0), "2000-02-29T23:59:59+00:00");
        // 2100 is not a leap year: March 1st follows February 28th.
        assert_eq!(at(4_107_456_000, 0), "2100-02-28T00:00:00+00:00");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00+00:00");
        assert_eq!(
            at(1_764_105_746, 778_355),
            "2025-11-25T21:22:26.778355+00:00"
        );
    }
}
