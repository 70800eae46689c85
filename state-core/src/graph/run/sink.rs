//! Where a run's state lives, in memory or on a thread, and how a step's
//! writes reach it.

use super::*;

/// Where a run's state lives: in memory only, or in a thread of a store.
pub(crate) enum Sink<'c, S: AgentState, C: ?Sized> {
    Plain {
        state: Arc<S>,
        next_step: i64,
    },
    /// A thread, and the store of its last step while it is under way
    /// (`Durability::Async`).
    Saved(Thread<'c, S, C>, Option<Box<InFlight<'c>>>),
}

/// A step's store under way, with what its head will say.
pub(crate) struct InFlight<'c> {
    // In a mutex only so the sink stays `Sync`; never contended.
    future: std::sync::Mutex<BoxFuture<'c, Result<CheckpointMeta, CheckpointError>>>,
    log_bytes: u64,
    base_bytes: u64,
}

impl<'c, S, C> Sink<'c, S, C>
where
    S: AgentState + Default + Clone,
    C: Checkpointer + ?Sized,
{
    pub(super) fn shared(&self) -> Arc<S> {
        match self {
            Sink::Plain { state, .. } => Arc::clone(state),
            Sink::Saved(thread, _) => thread.shared_state(),
        }
    }

    pub(crate) fn state(&self) -> &S {
        match self {
            Sink::Plain { state, .. } => state,
            Sink::Saved(thread, _) => thread.state(),
        }
    }

    pub(super) fn next_step(&self) -> i64 {
        match self {
            Sink::Plain { next_step, .. } => *next_step,
            Sink::Saved(thread, _) => thread.next_step(),
        }
    }

    pub(super) fn head(&self) -> Option<&CheckpointMeta> {
        match self {
            Sink::Plain { .. } => None,
            Sink::Saved(thread, _) => thread.head(),
        }
    }

    /// Where the step being run keeps its pending writes.
    pub(super) fn store(&self) -> Option<Store<'_>> {
        match self {
            Sink::Plain { .. } => None,
            Sink::Saved(thread, _) => thread.head().map(|head| Store {
                saver: thread.saver().as_dyn(),
                thread_id: thread.thread_id(),
                checkpoint: head.id,
            }),
        }
    }

    /// Applies (and stores) one step's writes as one. The updates are
    /// taken out of `writes`; the buffer stays the caller's.
    pub(crate) async fn apply(
        &mut self,
        source: Source,
        writes: &mut Vec<NodeWrite<S::Update>>,
        durability: Durability,
    ) -> Result<(), GraphError> {
        let step = self.next_step();
        match self {
            Sink::Plain { .. } => self.apply_plain_writes(writes),
            Sink::Saved(thread, in_flight) => {
                for send in writes.iter().flat_map(|w| &w.send) {
                    send.arg_json().map_err(|error| GraphError::SendArg {
                        node: send.node().to_owned(),
                        error,
                    })?;
                }
                let saved = match durability {
                    Durability::Sync => thread.save_writes(source, writes).await.map(|_| ()),
                    Durability::Async => {
                        Self::store_meanwhile(thread, in_flight, source, writes).await
                    }
                    Durability::Exit => thread.apply_unsaved(source, writes),
                };
                match saved {
                    Ok(()) => Ok(()),
                    Err(CheckpointError::Rejected(error)) => Err(GraphError::InvalidUpdate {
                        step,
                        nodes: writes.drain(..).map(|w| w.node).collect(),
                        error,
                    }),
                    Err(other) => Err(GraphError::Checkpoint(other)),
                }
            }
        }
    }

    /// Checks a run's input and makes the `input` checkpoint stored next
    /// hold it, so an input that cannot apply stores nothing (a plain run
    /// checks it as it applies it, and keeps nothing).
    pub(super) fn hold_input(
        &mut self,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(), GraphError>
    where
        S::Update: Clone,
    {
        let Sink::Saved(thread, _) = self else {
            return Ok(());
        };
        match thread.hold_input(writes) {
            Ok(()) => Ok(()),
            Err(CheckpointError::Rejected(error)) => Err(GraphError::InvalidUpdate {
                step: thread.next_step() + 1,
                nodes: writes.iter().map(|w| w.node.clone()).collect(),
                error,
            }),
            Err(other) => Err(GraphError::Checkpoint(other)),
        }
    }

    /// A plain run's step of `writes`: [`apply`](Self::apply) without a
    /// future (nothing to store, nothing to wait for). The updates are
    /// taken out of `writes`.
    pub(super) fn apply_plain_writes(
        &mut self,
        writes: &mut Vec<NodeWrite<S::Update>>,
    ) -> Result<(), GraphError> {
        let step = self.next_step();
        let updates = writes.iter_mut().map(|w| std::mem::take(&mut w.update));
        self.apply_plain(updates)
            .map_err(|error| GraphError::InvalidUpdate {
                step,
                nodes: writes.drain(..).map(|w| w.node).collect(),
                error,
            })
    }

    /// A plain run's step, applied in place (no future, nothing stored).
    pub(super) fn apply_plain(
        &mut self,
        updates: impl IntoIterator<Item = S::Update>,
    ) -> Result<(), StateError> {
        let Sink::Plain { state, next_step } = self else {
            unreachable!("called on a plain run's sink")
        };
        let staged = state.stage(updates, StepRule::Superstep)?;
        Arc::make_mut(state).commit(staged);
        *next_step += 1;
        Ok(())
    }

    /// A plain run's step of one update (the fast paths), through the
    /// state's `apply` of one update: every field is staged before any is
    /// written, so an update that fails leaves the state as it was.
    pub(super) fn apply_one_plain(&mut self, update: S::Update) -> Result<(), StateError> {
        let Sink::Plain { state, next_step } = self else {
            unreachable!("called on a plain run's sink")
        };
        Arc::make_mut(state).apply(update)?;
        *next_step += 1;
        Ok(())
    }

    /// Stores what is not stored yet: waits for the store under way (under
    /// [`Durability::Async`]), stores the steps applied but not stored
    /// (under [`Durability::Exit`]).
    pub(super) async fn flush(&mut self) -> Result<(), GraphError> {
        match self {
            Sink::Plain { .. } => Ok(()),
            Sink::Saved(thread, in_flight) => {
                Self::settle(thread, in_flight).await?;
                Ok(thread.flush().await?)
            }
        }
    }

    /// Waits for the store under way, if any, so the head is the last step
    /// applied: what a reported checkpoint must name (a backend that
    /// stores later, as PostgreSQL does, would otherwise be a step behind).
    pub(super) async fn settle_now(&mut self) -> Result<(), GraphError> {
        if let Sink::Saved(thread, in_flight) = self {
            Self::settle(thread, in_flight).await?;
        }
        Ok(())
    }

    /// Waits for the store under way, if any, and takes it as the head.
    pub(super) async fn settle(
        thread: &mut Thread<'c, S, C>,
        in_flight: &mut Option<Box<InFlight<'c>>>,
    ) -> Result<(), CheckpointError> {
        let Some(in_flight) = in_flight.take() else {
            return Ok(());
        };
        let InFlight {
            future,
            log_bytes,
            base_bytes,
        } = *in_flight;
        let future = future
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        thread.stored(future.await?, log_bytes, base_bytes).await
    }

    /// Applies a step now and starts its store, polled once here (a backend
    /// that stores inside the call is done then) and waited for by the next
    /// [`flush`](Self::flush) (`Durability::Async`).
    pub(super) async fn store_meanwhile(
        thread: &mut Thread<'c, S, C>,
        in_flight: &mut Option<Box<InFlight<'c>>>,
        source: Source,
        writes: &mut [NodeWrite<S::Update>],
    ) -> Result<(), CheckpointError> {
        Self::settle(thread, in_flight).await?;
        thread.flush().await?;
        let record = thread.apply_for_storing(source, writes)?;
        let (log_bytes, base_bytes) = (record.log_bytes, record.base_bytes);
        let (saver, thread_id) = (thread.saver(), thread.thread_id().to_owned());
        let mut future: BoxFuture<'c, _> =
            Box::pin(async move { saver.append(&thread_id, record.parent, record).await });
        let polled = {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            future.as_mut().poll(&mut cx)
        };
        match polled {
            std::task::Poll::Ready(meta) => thread.stored(meta?, log_bytes, base_bytes).await,
            std::task::Poll::Pending => {
                *in_flight = Some(Box::new(InFlight {
                    future: std::sync::Mutex::new(future),
                    log_bytes,
                    base_bytes,
                }));
                Ok(())
            }
        }
    }

    /// Keeps `entries` as pending writes of the thread's head (nothing
    /// for a plain run).
    pub(super) async fn keep_pending(
        &self,
        entries: Vec<PendingWrite>,
    ) -> Result<(), CheckpointError> {
        let Sink::Saved(thread, _) = self else {
            return Ok(());
        };
        let Some(head) = thread.head() else {
            return Ok(());
        };
        let (saver, thread_id) = (thread.saver(), thread.thread_id());
        saver.put_pending(thread_id, head.id, entries).await
    }

    /// Keeps the joins' progress with the head, for a resume.
    pub(super) async fn keep_joins(
        &mut self,
        graph: &Graph<S>,
        joins: &JoinState,
        fired: &[usize],
    ) -> Result<(), GraphError> {
        if !graph.keeps_progress() {
            return Ok(());
        }
        // The progress is kept with a stored checkpoint.
        self.flush().await?;
        let Sink::Saved(thread, _) = &*self else {
            return Ok(());
        };
        let Some(head) = thread.head() else {
            return Ok(());
        };
        let entry = super::pending::joins_entry(&joins.entry(graph, fired));
        thread
            .saver()
            .put_pending(thread.thread_id(), head.id, vec![entry])
            .await?;
        Ok(())
    }
}
