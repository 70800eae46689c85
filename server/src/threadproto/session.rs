//! One run's events, as the runtime streams them on the wire (`values`,
//! `updates`, `messages` tuples, `error`, a subgraph's as `name|ns`),
//! turned into the thread protocol's envelopes on the thread's tape:
//! `lifecycle` (the run's and each subgraph's), `values`, `messages` as
//! content-block events, and `input.requested` for each interrupt, in
//! the official server's order and with its `event_id`s.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::tape::Tape;

/// A subgraph namespace the run entered, and whether it is still open.
struct Space {
    namespace: Vec<String>,
    open: bool,
}

/// The message being streamed: its id and its text so far.
struct Open {
    id: String,
    namespace: Vec<String>,
    text: String,
}

/// The state of one run's translation.
pub(crate) struct Session {
    tape: Arc<Tape>,
    run_id: String,
    graph_name: String,
    spaces: Vec<Space>,
    asked: Vec<String>,
    /// The root's terminal lifecycle went out (an interrupt or an error).
    ended: bool,
    message: Option<Open>,
    /// The wire event being translated: its id, and how many envelopes
    /// it made so far.
    source: (String, usize),
    sources: usize,
}

impl Session {
    /// Starts a run's translation: its root `running` lifecycle.
    pub(crate) fn start(tape: Arc<Tape>, run_id: &str, graph_name: &str) -> Self {
        let mut session = Session {
            tape,
            run_id: run_id.to_owned(),
            graph_name: graph_name.to_owned(),
            spaces: Vec::new(),
            asked: Vec::new(),
            ended: false,
            message: None,
            source: (String::new(), 0),
            sources: 0,
        };
        session.lifecycle(&[], "running", None);
        session
    }

    /// Translates one wire event (`name` as `mode|ns|..`).
    pub(crate) fn ingest(&mut self, name: &str, data: Value) {
        self.sources += 1;
        self.source = (format!("{}-{}", now_millis(), self.sources), 0);
        let mut parts = name.split('|');
        let mode = parts.next().unwrap_or_default();
        let namespace: Vec<String> = parts.map(str::to_owned).collect();
        match mode {
            "values" => self.values(&namespace, data),
            "updates" => self.updates(&namespace, data),
            "messages" => self.message(&namespace, data),
            "error" => self.failed(&data),
            _ => {}
        }
    }

    /// The run is over: open subgraphs complete, then the root with
    /// `status` (`completed`, `interrupted`, `failed`) unless an interrupt
    /// or an error already ended it.
    pub(crate) fn finish(&mut self, status: &str) {
        self.close_message();
        self.close_spaces(|_| true);
        if !self.ended {
            self.ended = true;
            self.lifecycle(&[], status, None);
        }
    }

    fn values(&mut self, ns: &[String], mut data: Value) {
        self.close_message();
        let asked = take_interrupts(&mut data);
        self.ask(ns, asked);
        let has_state = !matches!(&data, Value::Object(m) if m.is_empty());
        if has_state {
            self.push("values", ns, data, None);
        }
        self.enter(ns);
    }

    /// `updates` are not forwarded (the official server sends none); a
    /// node's update closes its subgraph's namespace, and an interrupt's
    /// asks for input.
    fn updates(&mut self, ns: &[String], data: Value) {
        let Value::Object(map) = data else { return };
        for (node, value) in map {
            if node == "__interrupt__" {
                let asked = interrupt_requests(&value);
                self.ask(ns, asked);
                continue;
            }
            let inside = |s: &Space| {
                let last = s.namespace.last().map(String::as_str).unwrap_or("");
                s.namespace.len() == ns.len() + 1
                    && s.namespace.starts_with(ns)
                    && (last == node || last.starts_with(&format!("{node}:")))
            };
            let Some(i) = self.spaces.iter().position(|s| s.open && inside(s)) else {
                continue;
            };
            let done = self.spaces[i].namespace.clone();
            self.spaces[i].open = false;
            self.lifecycle(&done, "completed", None);
        }
    }

    fn failed(&mut self, data: &Value) {
        self.close_message();
        let message = data["message"].as_str().unwrap_or("the run failed");
        self.ended = true;
        self.lifecycle(&[], "failed", Some(message));
    }

    /// A subgraph's first event announces it (`lifecycle` `started`).
    fn enter(&mut self, ns: &[String]) {
        if ns.is_empty() || self.spaces.iter().any(|s| s.namespace == ns) {
            return;
        }
        self.spaces.push(Space {
            namespace: ns.to_vec(),
            open: true,
        });
        let last = ns.last().map(String::as_str).unwrap_or_default();
        let (name, call) = last.split_once(':').unwrap_or((last, ""));
        let data = json!({"event": "started", "graph_name": name, "namespace": ns, "trigger_call_id": call});
        self.push("lifecycle", ns, data, None);
    }

    /// Completes the open namespaces `which` picks, deepest first.
    fn close_spaces(&mut self, which: impl Fn(&[String]) -> bool) {
        let mut done: Vec<Vec<String>> = Vec::new();
        for space in self.spaces.iter_mut().filter(|s| s.open) {
            if which(&space.namespace) {
                space.open = false;
                done.push(space.namespace.clone());
            }
        }
        done.sort_by_key(|ns| std::cmp::Reverse(ns.len()));
        for ns in done {
            self.lifecycle(&ns, "completed", None);
        }
    }

    /// Each new interrupt on the `input` channel; the run then stands
    /// interrupted.
    fn ask(&mut self, ns: &[String], asked: Vec<Value>) {
        let mut any = false;
        for request in asked {
            let id = request["interrupt_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if id.is_empty() || self.asked.contains(&id) {
                continue;
            }
            let event_id = format!("synth:{}:input|{}|{id}", self.run_id, key(ns));
            self.push("input.requested", ns, request, Some(event_id));
            self.asked.push(id);
            any = true;
        }
        if any && !self.ended {
            self.ended = true;
            self.lifecycle(&[], "interrupted", None);
        }
    }

    fn lifecycle(&mut self, ns: &[String], status: &str, error: Option<&str>) {
        let graph_name = match ns.last() {
            None => self.graph_name.clone(),
            Some(last) => last.split(':').next().unwrap_or_default().to_owned(),
        };
        let mut data = json!({"event": status, "graph_name": graph_name});
        if let Some(error) = error {
            data["error"] = json!(error);
        }
        let event_id = format!("synth:{}:lc|{}|{status}", self.run_id, key(ns));
        self.push("lifecycle", ns, data, Some(event_id));
    }

    /// Puts an envelope on the tape; without `event_id`, it takes the
    /// wire event's (`<ms>-<n>`, then `.1`, `.2` for the next envelopes
    /// the same wire event makes).
    fn push(&mut self, method: &str, ns: &[String], data: Value, event_id: Option<String>) {
        let event_id = event_id.unwrap_or_else(|| {
            let (base, made) = &mut self.source;
            *made += 1;
            match *made {
                1 => base.clone(),
                n => format!("{base}.{}", n - 1),
            }
        });
        let params = json!({"namespace": ns, "timestamp": now_millis(), "data": data});
        self.tape.push(|seq| {
            json!({"type": "event", "event_id": event_id, "seq": seq, "method": method, "params": params})
        });
    }
}

mod messages;

/// Milliseconds since the Unix epoch: an envelope's `timestamp`.
fn now_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
}

/// A namespace as the official server keys it in synthetic event ids.
fn key(ns: &[String]) -> String {
    ns.join("\u{0}")
}

/// Takes `__interrupt__` out of a `values` payload: its input requests.
fn take_interrupts(data: &mut Value) -> Vec<Value> {
    let Value::Object(map) = data else {
        return Vec::new();
    };
    match map.remove("__interrupt__") {
        Some(list) => interrupt_requests(&list),
        None => Vec::new(),
    }
}

/// Interrupts (`{id, value}`) as the `input` channel's requests
/// (`{interrupt_id, payload}`).
fn interrupt_requests(list: &Value) -> Vec<Value> {
    let Some(list) = list.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| {
            let id = entry.get("id")?.as_str()?;
            let mut request = Map::new();
            request.insert("interrupt_id".into(), json!(id));
            if let Some(value) = entry.get("value") {
                request.insert("payload".into(), value.clone());
            }
            Some(Value::Object(request))
        })
        .collect()
}
