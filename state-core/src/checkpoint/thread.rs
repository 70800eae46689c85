//! One thread's typed state over a [`Checkpointer`]: load by snapshot plus
//! replay, save a step as check → store → apply.

use std::sync::Arc;

use super::chain::check_chain;
use super::codec::{
    decode_input, decode_state, decode_writes, encode_state, encode_writes, hold_state,
    hold_writes, replay, HeldInput,
};
use super::record::{
    CheckpointId, CheckpointMeta, NewCheckpoint, NodeWrite, SnapshotPolicy, Source,
    StoredCheckpoint,
};
use super::{check_thread_id, CheckpointError, Checkpointer};
use crate::state::{AgentState, StateUpdate, StepRule};

/// The head as a writer needs it: where it is and what the snapshot policy
/// has to know.
#[derive(Debug, Clone)]
struct Head {
    meta: CheckpointMeta,
    log_bytes: u64,
    base_bytes: u64,
}

/// One thread of a [`Checkpointer`], with its state in memory.
///
/// Open it (the latest state, or the default for a new thread), save steps,
/// and read its history. [`save_step`](Self::save_step) is atomic across the
/// state and the store: the step is checked, then stored (compare-and-swap on
/// the thread's head), and only then applied. A rejected step or a lost race
/// with another writer leaves the state and the store as they were.
///
/// ```
/// use agent_state::checkpoint::{block_on, MemoryCheckpointer, Source, Thread};
/// use agent_state::{ai, AgentState, Messages};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[reducer(messages)]
///     messages: Messages,
///     turns: u32,
/// }
///
/// # block_on(async {
/// let saver = MemoryCheckpointer::new();
/// let mut a = Thread::<Chat, _>::open(&saver, "t").await?;
/// let mut b = Thread::<Chat, _>::open(&saver, "t").await?;
/// a.save_step(Source::Loop, [("a", ChatUpdate::new().turns(1))]).await?;
///
/// // `b` loaded before `a` saved: its step is refused, not lost or doubled.
/// let err = b.save_step(Source::Loop, [("b", ChatUpdate::new().turns(7))]).await.unwrap_err();
/// assert!(err.is_conflict());
/// b.reload().await?;
/// assert_eq!(b.state().turns, 1);
/// # Ok::<(), agent_state::checkpoint::CheckpointError>(())
/// # }).unwrap();
/// ```
pub struct Thread<'c, S, C: ?Sized> {
    saver: &'c C,
    thread_id: String,
    // Shared so async graph nodes can hold the state across an await; the
    // runtime drops their copies before a commit, so nothing is cloned.
    state: Arc<S>,
    head: Option<Head>,
    policy: SnapshotPolicy,
    /// Steps applied to the state but not stored yet (the graph runtime's
    /// `Durability::Exit`): stored as one checkpoint by `flush`.
    unsaved: Option<Box<Unsaved>>,
    /// The step applied and being stored by the caller (the graph
    /// runtime's `Durability::Async`), until it hands the stored record
    /// back with `stored`.
    storing: Option<i64>,
    /// The run's input, as the next `input` checkpoint this handle stores
    /// holds it (not applied there; see [`hold_input`](Self::hold_input)).
    held: Option<String>,
    /// Set on a handle opened at an older checkpoint to branch from it
    /// ([`branch`](Self::branch)): the store's head its next step must
    /// find, while the step's parent is the older checkpoint.
    branch_head: Option<Option<CheckpointId>>,
}

/// The last of the steps applied but not stored: what the checkpoint that
/// stores them says of itself (the state goes in as its snapshot).
#[derive(Debug, Clone)]
struct Unsaved {
    step: i64,
    source: Source,
    /// The step's writes, encoded: a resume routes from them.
    writes: String,
}

/// A stored step as read back: where it sits and what each node wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord<U> {
    /// Where and when.
    pub meta: CheckpointMeta,
    /// The step's writes, in the order they were applied.
    pub writes: Vec<NodeWrite<U>>,
}

impl<'c, S, C> Thread<'c, S, C>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    /// The thread's latest state, or the default state for a thread with no
    /// checkpoints (its first step then becomes its first checkpoint).
    pub async fn open(saver: &'c C, thread_id: impl Into<String>) -> Result<Self, CheckpointError> {
        let thread_id = thread_id.into();
        check_thread_id(&thread_id)?;
        let mut thread = Self::empty(saver, thread_id, S::default());
        thread.reload().await?;
        Ok(thread)
    }

    /// Starts a new thread from `initial` (a state built with its immutable
    /// fields, say), stored as the thread's first checkpoint: source
    /// `input`, step -1. [`CheckpointError::Conflict`] if the thread exists.
    pub async fn create(
        saver: &'c C,
        thread_id: impl Into<String>,
        initial: S,
    ) -> Result<Self, CheckpointError> {
        let thread_id = thread_id.into();
        check_thread_id(&thread_id)?;
        let snapshot = encode_state(&initial)?;
        let mut thread = Self::empty(saver, thread_id, initial);
        thread
            .append_snapshot(-1, Source::Input, "[]".to_owned(), snapshot)
            .await?;
        Ok(thread)
    }

    /// The state at an older checkpoint, to read. Saving a step from it fails
    /// with a conflict unless it is still the head; to continue from it, use
    /// [`fork`](Self::fork).
    pub async fn open_at(
        saver: &'c C,
        thread_id: impl Into<String>,
        id: CheckpointId,
    ) -> Result<Self, CheckpointError> {
        let thread_id = thread_id.into();
        check_thread_id(&thread_id)?;
        let (state, head) = load(saver, &thread_id, id).await?;
        let mut thread = Self::empty(saver, thread_id, state);
        thread.head = Some(head);
        Ok(thread)
    }

    /// Continues the thread from an older checkpoint: stores a `fork`
    /// checkpoint whose parent is `from` as the new head, and opens it. The
    /// steps after `from` stay in the history. The fork is a step of its
    /// own, `from`'s plus one, as LangGraph numbers it.
    pub async fn fork(
        saver: &'c C,
        thread_id: impl Into<String>,
        from: CheckpointId,
    ) -> Result<Self, CheckpointError> {
        let mut thread = Self::branch(saver, thread_id, from).await?;
        let from_head = thread.head.take().expect("a branch opens at `from`");
        let record = NewCheckpoint {
            parent: Some(from),
            step: from_head.meta.step + 1,
            source: Source::Fork,
            version: S::VERSION,
            writes: "[]".to_owned(),
            log_bytes: from_head.log_bytes,
            base_bytes: from_head.base_bytes,
            snapshot: None,
        };
        let current = thread.branch_head.take().flatten();
        let meta = saver.append(&thread.thread_id, current, record).await?;
        thread.head = Some(Head {
            meta,
            log_bytes: from_head.log_bytes,
            base_bytes: from_head.base_bytes,
        });
        Ok(thread)
    }

    /// The state at an older checkpoint `from`, whose next saved step
    /// becomes the thread's head with `from` as its parent, the steps after
    /// `from` staying in the history (LangGraph's `update_state` at a
    /// `checkpoint_id`). Unlike [`fork`](Self::fork), nothing is stored
    /// until that step.
    pub(crate) async fn branch(
        saver: &'c C,
        thread_id: impl Into<String>,
        from: CheckpointId,
    ) -> Result<Self, CheckpointError> {
        let thread_id = thread_id.into();
        check_thread_id(&thread_id)?;
        let current = saver.head(&thread_id).await?.map(|h| h.meta.id);
        let (state, head) = load(saver, &thread_id, from).await?;
        let mut thread = Self::empty(saver, thread_id, state);
        thread.head = Some(head);
        thread.branch_head = Some(current);
        Ok(thread)
    }

    fn empty(saver: &'c C, thread_id: String, state: S) -> Self {
        let policy = saver.snapshot_policy();
        Self {
            saver,
            thread_id,
            state: Arc::new(state),
            head: None,
            policy,
            unsaved: None,
            storing: None,
            held: None,
            branch_head: None,
        }
    }

    /// Reloads the latest state, after a [conflict](CheckpointError::Conflict)
    /// say. A thread with no checkpoints loads as the default state.
    pub async fn reload(&mut self) -> Result<(), CheckpointError> {
        self.unsaved = None;
        self.storing = None;
        self.held = None;
        match self.saver.head(&self.thread_id).await? {
            None => {
                self.state = Arc::new(S::default());
                self.head = None;
            }
            Some(head) => {
                let (state, head) = load(self.saver, &self.thread_id, head.meta.id).await?;
                self.state = Arc::new(state);
                self.head = Some(head);
            }
        }
        Ok(())
    }

    /// The state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The state, shared: cheap to hand to async code. Hold it only while
    /// no step is being saved, or the next save clones the state once.
    pub fn shared_state(&self) -> Arc<S> {
        Arc::clone(&self.state)
    }

    /// The state, giving up the handle.
    pub fn into_state(self) -> S {
        Arc::try_unwrap(self.state).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The saver the thread is stored in.
    pub fn saver(&self) -> &'c C {
        self.saver
    }

    /// The thread id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The checkpoint the state is at; `None` before the first step.
    pub fn head(&self) -> Option<&CheckpointMeta> {
        self.head.as_ref().map(|h| &h.meta)
    }

    /// The step number the next saved step gets: -1 for a thread's first,
    /// then one more than the head's.
    pub fn next_step(&self) -> i64 {
        if let Some(step) = self.storing {
            return step + 1;
        }
        match &self.unsaved {
            Some(unsaved) => unsaved.step + 1,
            None => self.head.as_ref().map_or(-1, |h| h.meta.step + 1),
        }
    }

    /// The step number a step made by `source` gets: [`next_step`](Self::next_step),
    /// but 0 for an update to a new thread, as LangGraph numbers it.
    pub(crate) fn step_for(&self, source: Source) -> i64 {
        match (&self.head, source) {
            (None, Source::Update) => 0,
            _ => self.next_step(),
        }
    }

    /// Uses `policy` for this handle's snapshots instead of the store's.
    pub fn set_snapshot_policy(&mut self, policy: SnapshotPolicy) {
        self.policy = policy;
    }

    /// Saves one step (the writes of the nodes of one superstep, applied
    /// with [`StepRule::Superstep`]) and applies it.
    ///
    /// Order: the step is staged against the state (a
    /// [`Rejected`](CheckpointError::Rejected) error stores nothing), then
    /// stored as the thread's new head if the head is still the one this
    /// handle loaded (else [`Conflict`](CheckpointError::Conflict), nothing
    /// stored), and only then committed to the state. So when this returns
    /// `Ok`, the step is stored and applied exactly once; when it returns an
    /// error other than [`Snapshot`](CheckpointError::Snapshot), it is
    /// neither.
    pub async fn save_step<I, W>(
        &mut self,
        source: Source,
        writes: I,
    ) -> Result<&CheckpointMeta, CheckpointError>
    where
        I: IntoIterator<Item = W>,
        W: Into<NodeWrite<S::Update>>,
    {
        let mut writes: Vec<NodeWrite<S::Update>> = writes.into_iter().map(Into::into).collect();
        self.save_writes(source, &mut writes).await
    }

    /// [`save_step`](Self::save_step) on writes the caller keeps: their
    /// updates are moved out into the step, their node names stay, so the
    /// graph runtime can name the nodes of a rejected step without copying
    /// them on every step.
    pub(crate) async fn save_writes(
        &mut self,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<&CheckpointMeta, CheckpointError> {
        self.flush().await?;
        let (record, staged) = self.prepare(source, writes)?;
        let (log_bytes, base_bytes) = (record.log_bytes, record.base_bytes);
        let expected = self.branch_head.unwrap_or(record.parent);
        let meta = self.saver.append(&self.thread_id, expected, record).await?;
        self.branch_head = None;
        Arc::make_mut(&mut self.state).commit(staged);
        self.stored(meta, log_bytes, base_bytes).await?;
        Ok(self.head().expect("a head was just stored"))
    }

    /// A step's record (ids assigned, writes encoded and checked) and its
    /// staged change, as the next step after the head.
    fn prepare(
        &mut self,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(NewCheckpoint, S::Staged), CheckpointError> {
        for write in writes.iter_mut() {
            write.update.assign_message_ids();
        }
        let text = encode_writes(writes)?;
        let updates = writes.iter_mut().map(|w| std::mem::take(&mut w.update));
        let staged = self.state.stage(updates, StepRule::Superstep)?;
        let (log_bytes, base_bytes) = match &self.head {
            Some(h) => (h.log_bytes + text.len() as u64, h.base_bytes),
            None => (text.len() as u64, 0),
        };
        let step = self.step_for(source);
        // An `input` checkpoint holds its run's input, not applied there.
        let text = match (source, self.held.take()) {
            (Source::Input, Some(held)) => held,
            _ => text,
        };
        let record = NewCheckpoint {
            parent: self.head.as_ref().map(|h| h.meta.id),
            step,
            source,
            version: S::VERSION,
            writes: text,
            log_bytes,
            base_bytes,
            snapshot: None,
        };
        Ok((record, staged))
    }

    /// Takes a stored step as the head, with the snapshot the policy asks
    /// for.
    pub(crate) async fn stored(
        &mut self,
        meta: CheckpointMeta,
        log_bytes: u64,
        base_bytes: u64,
    ) -> Result<(), CheckpointError> {
        let id = meta.id;
        self.storing = None;
        self.head = Some(Head {
            meta,
            log_bytes,
            base_bytes,
        });
        if self.policy.due(log_bytes, base_bytes) {
            self.snapshot()
                .await
                .map_err(|error| CheckpointError::Snapshot {
                    thread_id: self.thread_id.clone(),
                    checkpoint: id,
                    error: Box::new(error),
                })?;
        }
        Ok(())
    }

    /// Applies one step now and gives its record, for the caller to store
    /// while it goes on (the graph runtime's `Durability::Async`); it then
    /// hands the stored head back with [`stored`](Self::stored) before the
    /// next step is saved. Until then the step counts as the head's.
    pub(crate) fn apply_for_storing(
        &mut self,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<NewCheckpoint, CheckpointError> {
        let (record, staged) = self.prepare(source, writes)?;
        Arc::make_mut(&mut self.state).commit(staged);
        self.storing = Some(record.step);
        Ok(record)
    }

    /// Applies one step as [`save_writes`](Self::save_writes) does (ids
    /// assigned, the writes encoded and checked, staged, committed) without
    /// storing it: [`flush`](Self::flush) stores the state then reached as
    /// one checkpoint. A crash before that loses these steps.
    pub(crate) fn apply_unsaved(
        &mut self,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(), CheckpointError> {
        let (record, staged) = self.prepare(source, writes)?;
        Arc::make_mut(&mut self.state).commit(staged);
        let last = Unsaved {
            step: record.step,
            source,
            writes: record.writes,
        };
        match &mut self.unsaved {
            Some(unsaved) => **unsaved = last,
            None => self.unsaved = Some(Box::new(last)),
        }
        Ok(())
    }

    /// Stores the steps applied by [`apply_unsaved`](Self::apply_unsaved)
    /// since the head, if any, as one checkpoint: the last step's number,
    /// source and writes (a resume routes from them), with the state as its
    /// snapshot, child of the head. The steps in between are not in the
    /// history.
    pub(crate) async fn flush(&mut self) -> Result<(), CheckpointError> {
        let Some(unsaved) = self.unsaved.take() else {
            return Ok(());
        };
        let snapshot = encode_state(&*self.state)?;
        self.append_snapshot(unsaved.step, unsaved.source, unsaved.writes, snapshot)
            .await
    }

    /// Stores a checkpoint holding the whole state as `snapshot` (the
    /// state this handle holds, or is about to), child of the head, as the
    /// new head: a thread's first state, the steps applied but not stored,
    /// a whole-state input.
    async fn append_snapshot(
        &mut self,
        step: i64,
        source: Source,
        writes: String,
        snapshot: String,
    ) -> Result<(), CheckpointError> {
        let base_bytes = snapshot.len() as u64;
        let parent = self.head.as_ref().map(|h| h.meta.id);
        let record = NewCheckpoint {
            parent,
            step,
            source,
            version: S::VERSION,
            writes,
            log_bytes: 0,
            base_bytes,
            snapshot: Some(snapshot),
        };
        let meta = self.saver.append(&self.thread_id, parent, record).await?;
        self.head = Some(Head {
            meta,
            log_bytes: 0,
            base_bytes,
        });
        Ok(())
    }

    /// Checks a run's input `writes` as a step (they encode and stage
    /// against the state, storing nothing), then makes the next `input`
    /// checkpoint this handle stores hold them: kept with the state before
    /// them in one record, so an input that cannot apply stores nothing, a
    /// crash before it is applied as the next step loses nothing, and a
    /// resume applies it ([`held_input`](Self::held_input)).
    pub(crate) fn hold_input(
        &mut self,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(), CheckpointError>
    where
        S::Update: Clone,
    {
        for write in writes.iter_mut() {
            write.update.assign_message_ids();
        }
        let text = encode_writes(writes)?;
        let updates = writes.iter().map(|w| w.update.clone());
        self.state.stage(updates, StepRule::Superstep)?;
        self.held = Some(hold_writes(&text));
        Ok(())
    }

    /// Makes the next `input` checkpoint this handle stores hold a new
    /// thread's first state, as its `snapshot` text (from
    /// [`encode`](Self::encode)), as [`hold_input`](Self::hold_input) holds
    /// writes.
    pub(crate) fn hold_first_state(&mut self, snapshot: &str) {
        self.held = Some(hold_state(snapshot));
    }

    /// The input the head holds, when it is a run's `input` checkpoint
    /// whose input was not applied (a crash came between the two), or a
    /// fork of one: what a resume applies before it goes on, with that
    /// checkpoint.
    pub(crate) async fn held_input(
        &self,
    ) -> Result<Option<(CheckpointMeta, HeldInput<S>)>, CheckpointError> {
        let Some(mut meta) = self.head().cloned() else {
            return Ok(None);
        };
        if let (Source::Fork, Some(parent)) = (meta.source, meta.parent) {
            meta = self.record(parent).await?.meta;
        }
        if meta.source != Source::Input {
            return Ok(None);
        }
        let record = self.record(meta.id).await?;
        Ok(decode_input::<S>(&record)?.map(|held| (record.meta, held)))
    }

    /// `state` as a snapshot, or why it cannot be stored.
    pub(crate) fn encode(state: &S) -> Result<String, CheckpointError> {
        Ok(encode_state(state)?)
    }

    /// Stores `state` as a step of its own (no writes, the whole state as
    /// its `snapshot`, from [`encode`](Self::encode)) and makes it the
    /// state: a graph run's whole-state input, applied on top of the
    /// thread's `input` checkpoint.
    pub(crate) async fn save_state(
        &mut self,
        source: Source,
        state: S,
        snapshot: String,
    ) -> Result<&CheckpointMeta, CheckpointError> {
        self.append_snapshot(self.next_step(), source, "[]".to_owned(), snapshot)
            .await?;
        self.state = Arc::new(state);
        Ok(self.head().expect("a head was just stored"))
    }

    /// Stores a snapshot of the state at the head now, whatever the policy
    /// says. Loading from the head then reads no log.
    pub async fn snapshot(&mut self) -> Result<(), CheckpointError> {
        let Some(head) = &mut self.head else {
            return Err(CheckpointError::NotFound {
                thread_id: self.thread_id.clone(),
                checkpoint: None,
            });
        };
        let snapshot = encode_state(&*self.state)?;
        let bytes = snapshot.len() as u64;
        self.saver
            .put_snapshot(&self.thread_id, head.meta.id, snapshot)
            .await?;
        head.log_bytes = 0;
        head.base_bytes = bytes;
        Ok(())
    }

    /// The stored step `id` with its writes.
    pub async fn step(&self, id: CheckpointId) -> Result<StepRecord<S::Update>, CheckpointError> {
        let record = self.record(id).await?;
        let writes = decode_writes::<S>(&record)?;
        Ok(StepRecord {
            meta: record.meta,
            writes,
        })
    }

    /// The stored record `id`, as the store keeps it.
    async fn record(&self, id: CheckpointId) -> Result<StoredCheckpoint, CheckpointError> {
        // The newest record below `id + 1` is `id` itself, if it exists: one
        // row, without the chain a load would read.
        let found = self
            .saver
            .list(&self.thread_id, Some(CheckpointId(id.0 + 1)), 1)
            .await?;
        found
            .into_iter()
            .next()
            .filter(|r| r.meta.id == id)
            .ok_or_else(|| CheckpointError::NotFound {
                thread_id: self.thread_id.clone(),
                checkpoint: Some(id),
            })
    }

    /// Up to `limit` stored steps of the thread with ids below `before` (all
    /// when `None`), newest first, with their writes read back as updates.
    pub async fn history(
        &self,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<StepRecord<S::Update>>, CheckpointError> {
        let records = self.saver.list(&self.thread_id, before, limit).await?;
        records
            .into_iter()
            .map(|record| {
                let writes = decode_writes::<S>(&record)?;
                Ok(StepRecord {
                    meta: record.meta,
                    writes,
                })
            })
            .collect()
    }
}

/// Loads the state at checkpoint `id`: the nearest snapshot, then the writes
/// after it, each step applied once, in order.
async fn load<S, C>(
    saver: &C,
    thread_id: &str,
    id: CheckpointId,
) -> Result<(S, Head), CheckpointError>
where
    S: AgentState + Default,
    C: Checkpointer + ?Sized,
{
    let chain = saver.chain(thread_id, id).await?;
    check_chain(thread_id, id, &chain)?;
    let Some((first, rest)) = chain.split_first() else {
        unreachable!("check_chain refuses an empty chain");
    };
    let mut state = match &first.snapshot {
        Some(text) => decode_state::<S>(first, text)?,
        None => {
            let mut state = S::default();
            replay(&mut state, first)?;
            state
        }
    };
    for record in rest {
        replay(&mut state, record)?;
    }
    let last = chain.last().expect("the chain is not empty");
    let head = Head {
        meta: last.meta.clone(),
        log_bytes: last.log_bytes,
        base_bytes: last.base_bytes,
    };
    Ok((state, head))
}
