//! Threads and runs as the API shows them, and to and from the text
//! columns they are stored in.

use serde_json::{Map, Value};

use super::{Arg, TextRow};

/// A thread as the API shows it.
#[derive(Debug, Clone)]
pub(crate) struct ThreadRow {
    pub thread_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub state_updated_at: String,
    pub metadata: Map<String, Value>,
    pub status: String,
    pub config: Value,
    pub values: Option<Value>,
    pub error: Option<Value>,
    pub interrupts: Value,
}

/// A run as the API shows it.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: String,
    pub thread_id: String,
    pub assistant_id: String,
    pub metadata: Value,
    pub status: String,
    pub kwargs: Value,
    pub multitask_strategy: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A thread's columns after its id and creation time, in table order.
pub(super) fn thread_args(t: &ThreadRow) -> Vec<Arg> {
    vec![
        t.updated_at.as_str().into(),
        t.state_updated_at.as_str().into(),
        Value::Object(t.metadata.clone()).to_string().into(),
        t.status.as_str().into(),
        t.config.to_string().into(),
        t.values.as_ref().map(Value::to_string).into(),
        t.error.as_ref().map(Value::to_string).into(),
        t.interrupts.to_string().into(),
    ]
}

pub(super) fn text0(row: TextRow) -> String {
    row.into_iter().next().flatten().unwrap_or_default()
}

/// Reads a row's columns in order.
struct Columns(std::vec::IntoIter<Option<String>>);

impl Columns {
    fn text(&mut self) -> String {
        self.0.next().flatten().unwrap_or_default()
    }

    /// A JSON column; a value that does not parse (written by hand) reads
    /// as null rather than failing the whole listing.
    fn json(&mut self) -> Value {
        self.0
            .next()
            .flatten()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    fn json_opt(&mut self) -> Option<Value> {
        Some(self.json()).filter(|v| !v.is_null())
    }
}

pub(super) fn thread_row(row: TextRow) -> ThreadRow {
    let mut c = Columns(row.into_iter());
    ThreadRow {
        thread_id: c.text(),
        created_at: c.text(),
        updated_at: c.text(),
        state_updated_at: c.text(),
        metadata: match c.json() {
            Value::Object(map) => map,
            _ => Map::new(),
        },
        status: c.text(),
        config: c.json(),
        values: c.json_opt(),
        error: c.json_opt(),
        interrupts: c.json(),
    }
}

pub(super) fn run_row(row: TextRow) -> RunRow {
    let mut c = Columns(row.into_iter());
    RunRow {
        run_id: c.text(),
        thread_id: c.text(),
        assistant_id: c.text(),
        metadata: c.json(),
        status: c.text(),
        kwargs: c.json(),
        multitask_strategy: c.text(),
        created_at: c.text(),
        updated_at: c.text(),
    }
}
