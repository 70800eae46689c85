//! What the SQL backends share: integer conversions and the checks a stored
//! row goes through before it is a [`StoredCheckpoint`].

use std::fmt::Display;

use super::record::{CheckpointId, CheckpointMeta, Source, StoredCheckpoint};
use super::CheckpointError;

/// SQL integers are signed; ids, times and sizes never reach 2^63.
pub(crate) fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The reverse of [`to_sql`], for values the database itself produced (a
/// row count, a head it keeps); a negative value reads as 0.
pub(crate) fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A driver's row, read column by column (in the order of the backends'
/// `COLUMNS`), each read failing with the driver's error.
pub(crate) trait Columns {
    /// The driver's error.
    type Error: std::error::Error;
    /// A text column.
    fn text(&self, at: usize) -> Result<String, Self::Error>;
    /// A text column that may be `NULL`.
    fn opt_text(&self, at: usize) -> Result<Option<String>, Self::Error>;
    /// An integer column.
    fn int(&self, at: usize) -> Result<i64, Self::Error>;
    /// An integer column that may be `NULL`.
    fn opt_int(&self, at: usize) -> Result<Option<i64>, Self::Error>;
}

/// A checkpoint row as the driver read it, before its values are checked.
pub(crate) struct RawRow {
    pub(crate) thread_id: String,
    pub(crate) id: i64,
    pub(crate) parent: Option<i64>,
    pub(crate) step: i64,
    pub(crate) source: String,
    pub(crate) version: i64,
    pub(crate) created_at_ms: i64,
    pub(crate) writes: String,
    pub(crate) log_bytes: i64,
    pub(crate) base_bytes: i64,
    pub(crate) snapshot: Option<String>,
}

impl RawRow {
    /// Reads a row of `thread_id`; a column of the wrong type is
    /// [`CheckpointError::Malformed`], naming the thread, the checkpoint and
    /// the column. `loading` is the checkpoint being loaded, named when the
    /// row's own id does not read.
    pub(crate) fn read<R: Columns>(
        row: &R,
        thread_id: &str,
        loading: Option<CheckpointId>,
        with_snapshot: bool,
    ) -> Result<Self, CheckpointError> {
        let id = row
            .int(1)
            .map_err(|e| unreadable_id(thread_id, loading, &with_sources(&e)))?;
        let bad = |column: &str, e: R::Error| CheckpointError::Malformed {
            thread_id: thread_id.to_owned(),
            checkpoint: CheckpointId(from_sql(id)),
            reason: format!(
                "column `{column}` does not read as its type: {}",
                with_sources(&e)
            ),
        };
        Ok(RawRow {
            thread_id: row.text(0).map_err(|e| bad("thread_id", e))?,
            id,
            parent: row.opt_int(2).map_err(|e| bad("parent_id", e))?,
            step: row.int(3).map_err(|e| bad("step", e))?,
            source: row.text(4).map_err(|e| bad("source", e))?,
            version: row.int(5).map_err(|e| bad("version", e))?,
            created_at_ms: row.int(6).map_err(|e| bad("created_at_ms", e))?,
            writes: row.text(7).map_err(|e| bad("writes", e))?,
            log_bytes: row.int(8).map_err(|e| bad("log_bytes", e))?,
            base_bytes: row.int(9).map_err(|e| bad("base_bytes", e))?,
            snapshot: if with_snapshot {
                row.opt_text(10).map_err(|e| bad("snapshot", e))?
            } else {
                None
            },
        })
    }

    /// The checked record; an unknown source or a number out of its range is
    /// [`CheckpointError::Malformed`], naming the thread and checkpoint.
    pub(crate) fn into_stored(self) -> Result<StoredCheckpoint, CheckpointError> {
        let id = CheckpointId(from_sql(self.id));
        let malformed = |reason: String| CheckpointError::Malformed {
            thread_id: self.thread_id.clone(),
            checkpoint: id,
            reason,
        };
        let out_of_range =
            |column: &str, n: i64| malformed(format!("`{column}` {n} is out of range"));
        let source = Source::parse(&self.source)
            .ok_or_else(|| malformed(format!("unknown source `{}`", self.source)))?;
        let version = u32::try_from(self.version)
            .map_err(|_| malformed(format!("version {} out of range", self.version)))?;
        let count = |column: &str, n: i64| u64::try_from(n).map_err(|_| out_of_range(column, n));
        if self.id < 1 {
            return Err(out_of_range("id", self.id));
        }
        let parent = match self.parent {
            Some(p) if p < 1 => return Err(out_of_range("parent_id", p)),
            other => other.map(|p| CheckpointId(from_sql(p))),
        };
        if self.step < -1 {
            return Err(out_of_range("step", self.step));
        }
        let created_at_ms = count("created_at_ms", self.created_at_ms)?;
        let log_bytes = count("log_bytes", self.log_bytes)?;
        let base_bytes = count("base_bytes", self.base_bytes)?;
        Ok(StoredCheckpoint {
            meta: CheckpointMeta {
                thread_id: self.thread_id,
                id,
                parent,
                step: self.step,
                source,
                version,
                created_at_ms,
            },
            writes: self.writes,
            log_bytes,
            base_bytes,
            snapshot: self.snapshot,
        })
    }
}

/// An error and its sources, `a: b: c` (a driver's top error often says
/// only "error deserializing column 3").
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A row whose id does not read: named by the checkpoint being loaded, or
/// by the thread alone.
fn unreadable_id(
    thread_id: &str,
    loading: Option<CheckpointId>,
    error: &dyn Display,
) -> CheckpointError {
    let reason =
        format!("a record of its chain has an id that does not read as an integer: {error}");
    match loading {
        Some(checkpoint) => CheckpointError::Malformed {
            thread_id: thread_id.to_owned(),
            checkpoint,
            reason,
        },
        None => CheckpointError::backend(
            "read",
            format!("thread `{thread_id}`: a checkpoint's id does not read as an integer: {error}"),
        ),
    }
}
