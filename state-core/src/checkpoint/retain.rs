//! Keeping a thread's storage bounded: only its last checkpoints, and no
//! pending writes a resume can no longer read. The backends delete in one
//! atomic change ([`Checkpointer::drop_before`],
//! [`Checkpointer::collect_pending`]); this module computes what they need
//! from the typed state: a snapshot for each kept checkpoint whose chain
//! reached back into the records taken off.

use super::codec::encode_state;
use super::record::CheckpointId;
use super::{check_thread_id, CheckpointError, Checkpointer, Thread};
use crate::AgentState;

/// What [`Thread::keep_last`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Checkpoints taken off the thread.
    pub checkpoints: u64,
    /// Pending writes collected (those of steps that landed).
    pub writes: u64,
}

impl<'c, S, C> Thread<'c, S, C>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    /// Keeps only the thread's `keep` newest checkpoints (by id, so forks
    /// count too) and collects the pending writes of steps that landed:
    /// run after each run, a long-lived thread's storage stays bounded.
    ///
    /// The head and its pending writes always stay, so a paused run
    /// resumes as before. A kept checkpoint whose chain of updates went
    /// back into the records taken off gets a snapshot of its whole state
    /// first, so every kept checkpoint still loads, and its history starts
    /// there (it has no parent any more). One atomic change per backend:
    /// a crash leaves the thread as it was or pruned, never half-deleted.
    ///
    /// `keep` of 0 is refused ([`CheckpointError::InvalidArgument`] naming
    /// `keep`): a thread keeps at least its head. A thread with `keep`
    /// checkpoints or fewer loses none; an unknown thread has nothing to
    /// delete. A writer that forks from a checkpoint being taken off at
    /// the same moment makes it fail with [`CheckpointError::Malformed`]
    /// and change nothing: call it again.
    ///
    /// ```
    /// use agent_state::checkpoint::{block_on, MemoryCheckpointer, Source, Thread};
    /// use agent_state::AgentState;
    ///
    /// #[derive(AgentState, Debug, Clone, PartialEq)]
    /// struct Counter {
    ///     #[reducer(append)]
    ///     seen: Vec<u32>,
    /// }
    ///
    /// block_on(async {
    ///     let saver = MemoryCheckpointer::new();
    ///     let mut thread = Thread::<Counter, _>::open(&saver, "t").await?;
    ///     for n in 0..10 {
    ///         thread.save_step(Source::Loop, [("n", CounterUpdate::new().add_seen(n))]).await?;
    ///     }
    ///     let pruned = Thread::<Counter, _>::keep_last(&saver, "t", 3).await?;
    ///     assert_eq!(pruned.checkpoints, 7);
    ///
    ///     // The state is whole; the history is the last 3 checkpoints.
    ///     let thread = Thread::<Counter, _>::open(&saver, "t").await?;
    ///     assert_eq!(thread.state().seen, (0..10).collect::<Vec<_>>());
    ///     assert_eq!(thread.history(None, 100).await?.len(), 3);
    ///     Ok::<(), agent_state::checkpoint::CheckpointError>(())
    /// })?;
    /// # Ok::<(), agent_state::checkpoint::CheckpointError>(())
    /// ```
    pub async fn keep_last(
        saver: &'c C,
        thread_id: &str,
        keep: usize,
    ) -> Result<Pruned, CheckpointError> {
        if keep == 0 {
            return Err(CheckpointError::InvalidArgument {
                name: "keep",
                reason: "a thread keeps at least its head: keep 1 checkpoint or more",
            });
        }
        check_thread_id(thread_id)?;
        let kept = saver.list(thread_id, None, keep).await?;
        let mut pruned = Pruned::default();
        if let Some(oldest) = kept.last().map(|r| r.meta.id) {
            if !saver.list(thread_id, Some(oldest), 1).await?.is_empty() {
                let mut snapshots = Vec::new();
                for record in kept
                    .iter()
                    .filter(|r| r.meta.parent.is_some_and(|p| p < oldest))
                {
                    if let Some(snapshot) =
                        Self::snapshot_of(saver, thread_id, record.meta.id).await?
                    {
                        snapshots.push((record.meta.id, snapshot));
                    }
                }
                pruned.checkpoints = saver.drop_before(thread_id, oldest, snapshots).await?;
            }
        }
        pruned.writes = saver.collect_pending(thread_id).await?;
        Ok(pruned)
    }

    /// The whole state at checkpoint `id` as a snapshot, unless it has one.
    async fn snapshot_of(
        saver: &'c C,
        thread_id: &str,
        id: CheckpointId,
    ) -> Result<Option<String>, CheckpointError> {
        let chain = saver.chain(thread_id, id).await?;
        if chain.len() == 1 && chain[0].snapshot.is_some() {
            return Ok(None);
        }
        let thread = Self::open_at(saver, thread_id, id).await?;
        Ok(Some(encode_state(thread.state())?))
    }
}
