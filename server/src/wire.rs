//! A run's events turned into what goes on the wire, mode by mode: one
//! runtime event may make several SSE events (a message piece in
//! `messages-tuple`, `messages` and `events` at once), or none (the
//! runtime's tasks that only `events` asked for).

use std::borrow::Cow;

use agent_state::graph::{
    GraphError, GraphState, MessageEvent, StreamEvent, StreamMode, SubgraphEvent,
};
use agent_state::MessageChunk;
use serde_json::{Map, Value};

use crate::astream::Events;
use crate::events::{
    debug_json, error_json, message_with_meta, stream_style_interrupts, task_metadata, wire,
};
use crate::modes::Modes;
use crate::partial::Partial;
use crate::served::RunEvent;

/// The state of one run's wire: the modes asked for, the run's metadata,
/// and what the `messages` and `events` modes remember between events.
pub(crate) struct Wire {
    modes: Modes,
    meta: Map<String, Value>,
    /// Whether the client asked for subgraphs' events (`events` asks the
    /// runtime for them too, for its own use).
    subgraphs: bool,
    partial: Partial,
    events: Option<Events>,
    /// `updates` held back until their task's end (`events` on).
    held: Vec<RunEvent>,
}

fn event(name: impl Into<Cow<'static, str>>, data: Value) -> RunEvent {
    RunEvent::Event(name.into(), data)
}

impl Wire {
    /// The wire of a run of graph `graph` with `input`; the events that
    /// open its stream (the graph's `on_chain_start` in `events` mode).
    pub(crate) fn new(
        modes: Modes,
        meta: Map<String, Value>,
        subgraphs: bool,
        graph: &str,
        input: Value,
    ) -> (Self, Vec<RunEvent>) {
        let run_id = meta.get("run_id").and_then(Value::as_str).unwrap_or("");
        let events = modes.events.then(|| Events::new(graph, run_id, &meta));
        let opening = events
            .iter()
            .map(|e| event("events", e.start(input.clone())))
            .collect();
        let wire = Self {
            modes,
            meta,
            subgraphs,
            partial: Partial::default(),
            events,
            held: Vec::new(),
        };
        (wire, opening)
    }

    /// What one event of the runtime's stream sends. With `events` on, a
    /// task's `updates` wait for its end, so they follow its node's
    /// `on_chain_end` as on the official server.
    pub(crate) fn translate<S: GraphState>(
        &mut self,
        item: Result<StreamEvent<S>, GraphError>,
    ) -> Vec<RunEvent> {
        let (mut sent, ended) = match &item {
            Err(error) => (vec![RunEvent::Failed(error_json(error))], false),
            Ok(ev @ StreamEvent::Updates { .. }) if self.events.is_some() => {
                let mut update = self.send(ev);
                self.held.append(&mut update);
                return update;
            }
            Ok(ev) => (self.send(ev), matches!(ev, StreamEvent::TaskEnd { .. })),
        };
        if ended {
            sent.append(&mut self.held);
        } else if !self.held.is_empty() {
            let mut out = std::mem::take(&mut self.held);
            out.append(&mut sent);
            sent = out;
        }
        sent
    }

    fn send<S: GraphState>(&mut self, ev: &StreamEvent<S>) -> Vec<RunEvent> {
        match ev {
            StreamEvent::End(out) => {
                let output = out.state.to_output_json();
                let mut sent: Vec<RunEvent> = (self.events.iter())
                    .map(|e| event("events", e.end(output.clone())))
                    .collect();
                sent.push(RunEvent::Done {
                    output,
                    next: out.next.clone(),
                    interrupts: out.interrupts.clone(),
                });
                sent
            }
            StreamEvent::Subgraph(sub) => self.subgraph(sub),
            StreamEvent::Message(m) => self.message(ev, m),
            StreamEvent::TaskStart { .. } | StreamEvent::TaskEnd { .. } => self.task(ev),
            StreamEvent::Debug { .. } => vec![event("debug", debug_json(ev.to_json(), &self.meta))],
            _ => wire(ev, &self.meta)
                .map(|(name, data)| event(name, data))
                .into_iter()
                .collect(),
        }
    }

    /// A message of the run's own graph: the message modes, and its chat
    /// model's events (a message returned whole made no model call).
    fn message<S: GraphState>(&mut self, ev: &StreamEvent<S>, m: &MessageEvent) -> Vec<RunEvent> {
        let mut sent = Vec::new();
        if self.modes.partial || self.modes.streams(StreamMode::Messages) {
            let pair = message_with_meta(ev.to_json(), &self.meta);
            sent = self.messages(pair, "messages".into());
        }
        if let (Some(events), None) = (&mut self.events, &m.message) {
            let made = events.message(&[], &m.task, m.chunk.clone());
            sent.extend(made.into_iter().map(|e| event("events", e)));
        }
        sent
    }

    /// A message pair: the tuple (`messages-tuple`, under `name`) and the
    /// message so far (`messages`, never namespaced, as the official
    /// server sends it).
    fn messages(&mut self, pair: Value, name: Cow<'static, str>) -> Vec<RunEvent> {
        let mut sent = Vec::new();
        if self.modes.partial {
            let partial = self.partial.push(&pair);
            sent.extend(partial.into_iter().map(|(n, data)| event(n, data)));
        }
        if self.modes.streams(StreamMode::Messages) {
            sent.push(event(name, pair));
        }
        sent
    }

    /// A task's start or end: `tasks` as it is, and the node's events.
    fn task<S: GraphState>(&mut self, ev: &StreamEvent<S>) -> Vec<RunEvent> {
        let step = match ev {
            StreamEvent::TaskStart { step, .. } => Some(*step),
            _ => None,
        };
        self.tasks(ev.to_json(), &[], step, "tasks".into())
    }

    /// A `tasks` event (a task's start has `triggers`, its end not):
    /// the node's events, and the event itself, with the run's metadata
    /// on a start as the official server sends it.
    fn tasks(
        &mut self,
        mut json: Value,
        ns: &[String],
        step: Option<i64>,
        name: Cow<'static, str>,
    ) -> Vec<RunEvent> {
        let start = json.get("triggers").is_some();
        let mut sent = Vec::new();
        if let Some(events) = &mut self.events {
            let made = match start {
                true => events.task_start(ns, &json, step),
                false => events.task_end(ns, &json),
            };
            sent.extend(made.into_iter().map(|e| event("events", e)));
        }
        let asked = ns.is_empty() || self.subgraphs;
        if asked && self.modes.streams(StreamMode::Tasks) {
            if let (true, Value::Object(map)) = (start, &mut json) {
                map.insert("metadata".into(), task_metadata(&self.meta));
            }
            sent.push(event(name, json));
        }
        sent
    }

    /// A subgraph's event under its namespace (`mode|node:task`), in the
    /// modes asked for.
    fn subgraph(&mut self, sub: &SubgraphEvent) -> Vec<RunEvent> {
        let (mode, ns) = (sub.name(), sub.namespace());
        let name: Cow<'static, str> = format!("{mode}|{}", ns.join("|")).into();
        match mode {
            "tasks" => self.tasks(sub.to_json(), ns, None, name),
            "messages" => self.subgraph_message(sub, name),
            _ if !self.subgraphs => vec![],
            "debug" if self.modes.streams(StreamMode::Debug) => {
                vec![event(name, debug_json(sub.to_json(), &self.meta))]
            }
            other => match other.parse::<StreamMode>() {
                Ok(m) if self.modes.streams(m) => {
                    vec![event(name, stream_style_interrupts(sub.to_output_json()))]
                }
                _ => vec![],
            },
        }
    }

    /// A message piece a subgraph streamed: its chat model's events, and
    /// the message modes (namespaced when the client asked for
    /// subgraphs; when only `events` made the runtime stream them, the
    /// piece goes out as the parent's, where the runtime would have sent
    /// it).
    fn subgraph_message(&mut self, sub: &SubgraphEvent, name: Cow<'static, str>) -> Vec<RunEvent> {
        let pair = message_with_meta(sub.to_json(), &self.meta);
        let mut sent = Vec::new();
        if let Some(events) = &mut self.events {
            let task = pair[1]["langgraph_task"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let is_chunk = pair[0]["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("Chunk"));
            if let (true, Ok(chunk)) = (is_chunk, MessageChunk::from_json(pair[0].clone())) {
                let made = events.message(sub.namespace(), &task, chunk);
                sent.extend(made.into_iter().map(|e| event("events", e)));
            }
        }
        let name = if self.subgraphs {
            name
        } else {
            "messages".into()
        };
        sent.extend(self.messages(pair, name));
        sent
    }
}
