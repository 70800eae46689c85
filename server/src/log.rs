//! A run's events as they were sent, kept while the run lives: what a
//! client that reconnects (`Last-Event-ID`) or joins a run's stream
//! replays, then follows.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::sse::frame_with_id;

/// The events of one run, numbered from 1 in the order they were sent.
pub(crate) struct RunLog {
    frames: Mutex<Vec<(Cow<'static, str>, String)>>,
    /// How many events there are, and whether the run ended.
    progress: watch::Sender<(usize, bool)>,
}

impl RunLog {
    /// An empty log.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(RunLog {
            frames: Mutex::default(),
            progress: watch::channel((0, false)).0,
        })
    }

    /// Adds an event (its SSE name and JSON data); its id.
    pub(crate) fn push(&self, event: Cow<'static, str>, data: String) -> usize {
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        frames.push((event, data));
        let n = frames.len();
        self.progress.send_replace((n, false));
        n
    }

    /// Marks the run ended: followers stop once they have sent the rest.
    pub(crate) fn close(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    /// Sends the events after id `after`, each with its `id:` line, then
    /// each new one as it comes, until the run ends or `tx`'s client
    /// leaves.
    pub(crate) fn follow(self: Arc<Self>, after: usize, tx: mpsc::Sender<String>) {
        let mut progress = self.progress.subscribe();
        tokio::spawn(async move {
            let mut next = after;
            loop {
                let (count, ended) = *progress.borrow_and_update();
                for id in next + 1..=count {
                    if tx.send(self.framed(id)).await.is_err() {
                        return;
                    }
                }
                next = next.max(count);
                if ended || progress.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// `f` of event `id`'s data.
    pub(crate) fn with_data<T>(&self, id: usize, f: impl FnOnce(&str) -> T) -> T {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        f(&frames[id - 1].1)
    }

    fn framed(&self, id: usize) -> String {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        let (event, data) = &frames[id - 1];
        frame_with_id(event, data, id)
    }
}
