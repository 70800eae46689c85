//! Notices the SQLite file being deleted or replaced while the server
//! runs. SQLite keeps writing to the file it opened, so without this a
//! deleted file swallows every later step and a restart finds nothing.
//! The file's device and inode are taken at open and compared with the
//! path's before every statement (a `stat`, about a microsecond); once
//! they differ the server stops writing: runs fail saying why, requests
//! get 503, until a restart opens the file now at the path.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_state::checkpoint::{BoxFuture, CheckpointError, Checkpointer, SnapshotPolicy};

use crate::gate::Gate;
use crate::store::{StoreError, GONE};

/// The file opened at a path, and whether it is still the one there.
pub(crate) struct FileWatch {
    path: PathBuf,
    opened: Option<(u64, u64)>,
    gone: AtomicBool,
}

impl FileWatch {
    /// The file now at `path` (opened just before).
    pub(crate) fn new(path: &Path) -> Self {
        FileWatch {
            path: path.to_owned(),
            opened: identity(path),
            gone: AtomicBool::new(false),
        }
    }

    /// `Err(Gone)` once the path no longer holds the file opened.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        if self.gone.load(Ordering::Relaxed) {
            return Err(StoreError::Gone);
        }
        if self.opened.is_some() && identity(&self.path) != self.opened {
            // Logged once, with the path: the operator's to see, not a
            // client's.
            if !self.gone.swap(true, Ordering::Relaxed) {
                tracing::error!(path = %self.path.display(), "{GONE}");
            }
            return Err(StoreError::Gone);
        }
        Ok(())
    }
}

/// The device and inode of the file at `path`; `None` when there is none
/// (or on a system without inodes, where nothing is watched).
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The error a run fails with when the file went away; its text is
/// [`GONE`], which names no path.
#[derive(Debug)]
pub(crate) struct FileGone;

impl std::fmt::Display for FileGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(GONE)
    }
}

impl std::error::Error for FileGone {}

/// Whether the store failed because its file went away (a snapshot's
/// failure carries the store's inside it).
pub(crate) fn file_gone(error: &CheckpointError) -> bool {
    match error {
        CheckpointError::Backend { source, .. } => source.is::<FileGone>(),
        CheckpointError::Snapshot { error, .. } => file_gone(error),
        _ => false,
    }
}

/// The checkpointer on the file, reached only while the file is the one
/// opened.
pub(crate) struct Watched<C> {
    pub inner: Arc<C>,
    pub watch: Arc<FileWatch>,
}

impl<C: Checkpointer + 'static> Gate for Watched<C> {
    type Inner = C;

    fn open(&self, operation: &'static str) -> BoxFuture<'_, Result<Arc<C>, CheckpointError>> {
        let checked = self
            .watch
            .check()
            .map(|()| Arc::clone(&self.inner))
            .map_err(|_| CheckpointError::backend(operation, FileGone));
        Box::pin(std::future::ready(checked))
    }

    fn snapshot_policy(&self) -> SnapshotPolicy {
        self.inner.snapshot_policy()
    }
}
