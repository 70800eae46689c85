//! What a run hands back and reports: its output, and the events of a
//! finished step.

use super::*;

impl<'a, S, C> Run<'a, S, C>
where
    S: GraphState,
    C: Checkpointer + ?Sized + 'a,
{
    /// What the run returns: where it ended, or, paused on interrupts,
    /// the state with the finished tasks' writes and the tasks still to run.
    pub(super) fn output(
        &self,
        sink: Sink<'a, S, C>,
        at: &Progress<S::Update>,
        paused: Paused<S>,
    ) -> RunOutput<S> {
        let checkpoint = sink.head().cloned();
        let unwrap = |state: Arc<S>| Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone());
        let next = match paused.interrupts.is_empty() {
            true => self.graph.names_of(&at.tasks),
            false => paused.next,
        };
        let state = match (paused.state, sink) {
            (Some(state), _) => unwrap(state),
            (None, Sink::Plain { state, .. }) => unwrap(state),
            (None, Sink::Saved(thread, _)) => thread.into_state(),
        };
        RunOutput {
            state,
            next,
            steps: at.steps,
            checkpoint,
            interrupts: paused.interrupts,
        }
    }

    /// Tells the step callback and the stream about the step just applied
    /// (its writes, when they were copied for the callback).
    pub(super) async fn emit(
        &mut self,
        sink: &mut Sink<'a, S, C>,
        writes: Option<Vec<NodeWrite<S::Update>>>,
        next: &[Task],
    ) -> Result<(), GraphError> {
        if self.shows_checkpoints() {
            sink.settle_now().await?;
        }
        let step = sink.next_step() - 1;
        if let Some(observer) = &mut self.observer {
            let names = self.graph.names_of(next);
            observer(&StepEvent {
                step,
                source: Source::Loop,
                writes: writes.as_deref().unwrap_or(&[]),
                state: sink.state(),
                checkpoint: sink.head(),
                next: &names,
            });
        }
        if let Some(channel) = &self.stream {
            let news = StepNews {
                step,
                state: sink.shared(),
                checkpoint: sink.head(),
                next,
            };
            channel.publish(self.graph, news).await;
        }
        Ok(())
    }
}
