//! The error of stores: every case names the operation's namespace, key,
//! field or operator, and a refused batch wrote nothing.

use std::error::Error;
use std::fmt;

/// Why a store operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A namespace was refused before anything ran: empty where an item
    /// needs one, a label that is empty, holds a `.` or a NUL, or a root
    /// label `langgraph` (reserved, as in LangGraph).
    InvalidNamespace {
        /// The namespace as given.
        namespace: Vec<String>,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// A key was refused (empty, or holding a NUL).
    InvalidKey {
        /// The namespace of the item.
        namespace: Vec<String>,
        /// The key as given.
        key: String,
    },
    /// A value was not a JSON object, or holds what would not read back as
    /// itself (a non-finite number, a NUL in a string, nesting deeper than
    /// [`MAX_FIELD_DEPTH`](crate::MAX_FIELD_DEPTH)).
    InvalidValue {
        /// The namespace of the item.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A search filter was refused: an operator LangGraph does not have
    /// (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`), or a comparison of
    /// order against something that is not a number.
    InvalidFilter {
        /// The filter's field (a dotted path into the value).
        field: String,
        /// What was wrong with it.
        reason: String,
    },
    /// Another argument was refused (a TTL that is not positive, index
    /// fields on a store without an index, a bad path).
    InvalidArgument {
        /// What was wrong.
        reason: String,
    },
    /// The embeddings model failed or answered with the wrong number or
    /// size of vectors; nothing of the batch was written.
    Embedding {
        /// What failed.
        reason: String,
    },
    /// The database failed; nothing of the batch was written.
    Backend {
        /// The operation that failed (`put`, `search`, ...).
        operation: &'static str,
        /// The driver's error.
        source: Box<dyn Error + Send + Sync>,
    },
    /// A stored row no longer reads as an item (a value that is not JSON,
    /// a namespace of another store's layout): named, never skipped.
    Corrupt {
        /// The item's namespace, as stored.
        namespace: String,
        /// The item's key.
        key: String,
        /// What was wrong.
        reason: String,
    },
}

impl StoreError {
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn backend(
        operation: &'static str,
    ) -> impl FnOnce(Box<dyn Error + Send + Sync>) -> StoreError {
        move |source| StoreError::Backend { operation, source }
    }

    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn argument(reason: impl Into<String>) -> Self {
        StoreError::InvalidArgument {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::InvalidNamespace { namespace, reason } => {
                write!(f, "invalid namespace {namespace:?}: {reason}")
            }
            StoreError::InvalidKey { namespace, key } => {
                write!(f, "invalid key {key:?} in namespace {namespace:?}: a key is a non-empty string without NUL")
            }
            StoreError::InvalidValue {
                namespace,
                key,
                reason,
            } => write!(
                f,
                "value of {key:?} in namespace {namespace:?} cannot be stored: {reason}"
            ),
            StoreError::InvalidFilter { field, reason } => {
                write!(f, "invalid filter on `{field}`: {reason}")
            }
            StoreError::InvalidArgument { reason } => f.write_str(reason),
            StoreError::Embedding { reason } => write!(f, "embedding failed: {reason}"),
            StoreError::Backend { operation, source } => {
                write!(f, "store {operation} failed: {source}")
            }
            StoreError::Corrupt {
                namespace,
                key,
                reason,
            } => write!(
                f,
                "stored item {key:?} in namespace {namespace:?} is corrupt: {reason}"
            ),
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            StoreError::Backend { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
