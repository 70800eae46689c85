//! What the SQL backends share: integer conversions and the checks a stored
//! row goes through before it is a [`StoredCheckpoint`].

use super::record::{CheckpointId, CheckpointMeta, Source, StoredCheckpoint};
use super::CheckpointError;

/// SQL integers are signed; ids, times and sizes never reach 2^63.
pub(crate) fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The reverse of [`to_sql`]; a negative value (never written) reads as 0.
pub(crate) fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A checkpoint row as the driver read it, before its source and version
/// are checked. Columns in the order of the backends' `COLUMNS`.
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
    /// The checked record; an unknown source or an out-of-range version is
    /// [`CheckpointError::Malformed`], naming the thread and checkpoint.
    pub(crate) fn into_stored(self) -> Result<StoredCheckpoint, CheckpointError> {
        let id = CheckpointId(from_sql(self.id));
        let malformed = |reason: String| CheckpointError::Malformed {
            thread_id: self.thread_id.clone(),
            checkpoint: id,
            reason,
        };
        let source = Source::parse(&self.source)
            .ok_or_else(|| malformed(format!("unknown source `{}`", self.source)))?;
        let version = u32::try_from(self.version)
            .map_err(|_| malformed(format!("version {} out of range", self.version)))?;
        Ok(StoredCheckpoint {
            meta: CheckpointMeta {
                thread_id: self.thread_id,
                id,
                parent: self.parent.map(|p| CheckpointId(from_sql(p))),
                step: self.step,
                source,
                version,
                created_at_ms: from_sql(self.created_at_ms),
            },
            writes: self.writes,
            log_bytes: from_sql(self.log_bytes),
            base_bytes: from_sql(self.base_bytes),
            snapshot: self.snapshot,
        })
    }
}
