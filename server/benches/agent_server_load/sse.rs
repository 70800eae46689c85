//! Server-sent events read as they arrive: each event's name counted, the
//! last `values` event's data kept.

use std::collections::BTreeMap;

use crate::Error;

/// A stream's parser; bytes go in as they come off the socket.
#[derive(Default)]
pub struct Reader {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    /// The event being read: its name and data lines.
    name: String,
    data: String,
    counts: BTreeMap<String, usize>,
    last_values: Option<String>,
    error: Option<String>,
}

impl Reader {
    /// Reads `bytes`, dispatching every event they complete.
    pub fn push(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&self.partial[start..start + end]).into_owned();
            self.line(line.trim_end_matches('\r'));
            start += end + 1;
        }
        self.partial.drain(..start);
    }

    fn line(&mut self, line: &str) {
        if line.is_empty() {
            self.dispatch();
        } else if let Some(name) = line.strip_prefix("event:") {
            self.name = name.trim_start().to_owned();
        } else if let Some(data) = line.strip_prefix("data:") {
            self.data.push_str(data.trim_start());
        }
        // `id:` lines and `:` comments (heartbeats) carry nothing counted.
    }

    fn dispatch(&mut self) {
        if self.name.is_empty() && self.data.is_empty() {
            return;
        }
        let name = std::mem::take(&mut self.name);
        let data = std::mem::take(&mut self.data);
        if name == "values" {
            self.last_values = Some(data);
        } else if name == "error" {
            self.error.get_or_insert(data);
        }
        *self.counts.entry(name).or_default() += 1;
    }

    /// Whether a `values` or `messages` event has come: what a client
    /// shows first.
    pub fn seen_content(&self) -> bool {
        self.counts
            .keys()
            .any(|n| n == "values" || n.starts_with("messages"))
    }

    /// The events counted by name and the last `values` event's data, or
    /// the stream's `error` event.
    pub fn finish(mut self) -> Result<(BTreeMap<String, usize>, Option<String>), Error> {
        self.dispatch();
        match self.error {
            Some(error) => Err(format!("the run failed: {error}").into()),
            None => Ok((self.counts, self.last_values)),
        }
    }
}
