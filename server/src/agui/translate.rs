//! A run's events (the `messages-tuple`, `updates`, `tasks`, `values` and
//! `error` modes, as the server streams them) turned into AG-UI's: each
//! node a step, a streamed AI message its text and tool calls piece by
//! piece (a message a node returns whole, at once), a tool message its
//! result, each new state a snapshot, and the run's end a
//! `MESSAGES_SNAPSHOT` and `RUN_FINISHED` (with the interrupts it paused
//! on) or `RUN_ERROR`.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use super::messages::{agui_call, text_of, to_agui};

/// A tool call being streamed: its message, its index there, its id.
struct OpenCall {
    message: String,
    index: Value,
    id: String,
}

/// What has been said so far, to say the rest in order.
pub(crate) struct Translator {
    thread_id: String,
    run_id: String,
    /// The text message being streamed.
    text: Option<String>,
    calls: Vec<OpenCall>,
    /// Messages whose text or calls went out, by id.
    said: HashSet<String>,
    /// Tool calls started in this run, and those answered.
    called: Vec<String>,
    answered: HashSet<String>,
    /// Steps started and not finished, by node.
    steps: Vec<String>,
    /// The last state sent, and the last values seen.
    snapshot: Option<Value>,
    values: Option<Value>,
    /// A terminal event went out.
    over: bool,
}

/// An event of `kind` with `fields`, stamped with the time.
fn event(kind: &str, fields: Value) -> Value {
    let mut out = json!({"type": kind});
    if let (Value::Object(out), Value::Object(fields)) = (&mut out, fields) {
        out.extend(fields);
    }
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    out["timestamp"] = json!(u64::try_from(ms).unwrap_or(u64::MAX));
    out
}

impl Translator {
    /// For the client's thread and run ids (echoed in every run event).
    pub(crate) fn new(thread_id: String, run_id: String) -> Self {
        Self {
            thread_id,
            run_id,
            text: None,
            calls: Vec::new(),
            said: HashSet::new(),
            called: Vec::new(),
            answered: HashSet::new(),
            steps: Vec::new(),
            snapshot: None,
            values: None,
            over: false,
        }
    }

    /// `RUN_STARTED`.
    pub(crate) fn started(&self) -> Value {
        event(
            "RUN_STARTED",
            json!({"threadId": self.thread_id, "runId": self.run_id}),
        )
    }

    /// The AG-UI events for one of the run's events (`name`, `data`).
    pub(crate) fn event(&mut self, name: &str, data: Value) -> Vec<Value> {
        let mut out = Vec::new();
        if self.over {
            return out;
        }
        match name {
            "messages" => self.chunk(&data[0], &mut out),
            "updates" => self.updates(&data, &mut out),
            "tasks" => self.task(&data, &mut out),
            "values" => self.state(data, &mut out),
            "error" => self.failed(&data, &mut out),
            _ => {}
        }
        out
    }

    /// A piece of an AI message: its text, then its tool calls' pieces.
    fn chunk(&mut self, chunk: &Value, out: &mut Vec<Value>) {
        let Some(id) = chunk.get("id").and_then(Value::as_str) else {
            return;
        };
        match chunk.get("type").and_then(Value::as_str) {
            Some("AIMessageChunk" | "ai") => {}
            // A tool's answer, as the tools node wrote it.
            Some("tool" | "ToolMessageChunk") => return self.result(id, chunk, out),
            _ => return,
        }
        let delta = text_of(chunk.get("content"));
        if !delta.is_empty() {
            if self.text.as_deref() != Some(id) {
                self.close(out);
                out.push(event(
                    "TEXT_MESSAGE_START",
                    json!({"messageId": id, "role": "assistant"}),
                ));
                self.text = Some(id.to_owned());
            }
            out.push(event(
                "TEXT_MESSAGE_CONTENT",
                json!({"messageId": id, "delta": delta}),
            ));
            self.said.insert(id.to_owned());
        }
        let pieces = chunk.get("tool_call_chunks").and_then(Value::as_array);
        for piece in pieces.into_iter().flatten() {
            self.call_piece(id, piece, out);
        }
        if chunk.get("chunk_position").and_then(Value::as_str) == Some("last") {
            self.close(out);
        }
    }

    /// A piece of a tool call: its start (with its id and name), then its
    /// arguments' text.
    fn call_piece(&mut self, message: &str, piece: &Value, out: &mut Vec<Value>) {
        let index = piece.get("index").cloned().unwrap_or(Value::Null);
        let open = self
            .calls
            .iter()
            .position(|c| c.message == message && c.index == index);
        let at = match open {
            Some(at) => at,
            None => {
                let id = piece.get("id").and_then(Value::as_str);
                let name = piece.get("name").and_then(Value::as_str);
                let (Some(id), Some(name)) = (id, name) else {
                    return;
                };
                self.close_text(out);
                out.push(event(
                    "TOOL_CALL_START",
                    json!({"toolCallId": id, "toolCallName": name, "parentMessageId": message}),
                ));
                self.said.insert(message.to_owned());
                self.called.push(id.to_owned());
                let id = id.to_owned();
                let message = message.to_owned();
                self.calls.push(OpenCall { message, index, id });
                self.calls.len() - 1
            }
        };
        let args = piece.get("args").and_then(Value::as_str).unwrap_or("");
        if !args.is_empty() {
            let id = &self.calls[at].id;
            out.push(event(
                "TOOL_CALL_ARGS",
                json!({"toolCallId": id, "delta": args}),
            ));
        }
    }

    /// Ends the text message being streamed, if any.
    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(event("TEXT_MESSAGE_END", json!({"messageId": id})));
        }
    }

    /// Ends the text message and the tool calls being streamed.
    fn close(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        for call in self.calls.drain(..) {
            out.push(event("TOOL_CALL_END", json!({"toolCallId": call.id})));
        }
    }

    /// A node's update: the messages it wrote that were not streamed.
    fn updates(&mut self, data: &Value, out: &mut Vec<Value>) {
        let Some(nodes) = data.as_object() else {
            return;
        };
        for update in nodes.values() {
            let messages = update.get("messages").and_then(Value::as_array);
            for message in messages.into_iter().flatten() {
                self.whole(message, out);
            }
        }
    }

    /// A message written whole: an AI message's text and calls, or a
    /// tool's result for a call of this run.
    fn whole(&mut self, m: &Value, out: &mut Vec<Value>) {
        let Some(id) = m.get("id").and_then(Value::as_str) else {
            return;
        };
        match m.get("type").and_then(Value::as_str) {
            Some("ai") => {
                let text = text_of(m.get("content"));
                let fresh = self.said.insert(id.to_owned());
                if fresh || self.text.as_deref() == Some(id) {
                    self.close(out);
                }
                if fresh && !text.is_empty() {
                    let start = json!({"messageId": id, "role": "assistant"});
                    out.push(event("TEXT_MESSAGE_START", start));
                    let content = json!({"messageId": id, "delta": text});
                    out.push(event("TEXT_MESSAGE_CONTENT", content));
                    out.push(event("TEXT_MESSAGE_END", json!({"messageId": id})));
                }
                let calls = m.get("tool_calls").and_then(Value::as_array);
                // Calls not streamed (a model that streams its text only).
                for call in calls.into_iter().flatten().filter_map(agui_call) {
                    if !self.called.iter().any(|c| *c == call["id"]) {
                        self.close(out);
                        self.whole_call(id, &call, out);
                    }
                }
            }
            Some("tool") => self.result(id, m, out),
            _ => {}
        }
    }

    /// A tool call given whole: its start, arguments and end.
    fn whole_call(&mut self, message: &str, call: &Value, out: &mut Vec<Value>) {
        let id = call["id"].as_str().unwrap_or_default().to_owned();
        let name = &call["function"]["name"];
        let start = json!({"toolCallId": id, "toolCallName": name, "parentMessageId": message});
        out.push(event("TOOL_CALL_START", start));
        let args = json!({"toolCallId": id, "delta": call["function"]["arguments"]});
        out.push(event("TOOL_CALL_ARGS", args));
        out.push(event("TOOL_CALL_END", json!({"toolCallId": id})));
        self.called.push(id);
    }

    /// A tool message answering a call of this run: `TOOL_CALL_RESULT`.
    fn result(&mut self, id: &str, m: &Value, out: &mut Vec<Value>) {
        let Some(call) = m.get("tool_call_id").and_then(Value::as_str) else {
            return;
        };
        if !self.called.iter().any(|c| c == call) || !self.answered.insert(call.to_owned()) {
            return;
        }
        self.close(out);
        let content = text_of(m.get("content"));
        out.push(event(
            "TOOL_CALL_RESULT",
            json!({"messageId": id, "toolCallId": call, "content": content, "role": "tool"}),
        ));
    }

    /// A task's start or end: a step.
    fn task(&mut self, data: &Value, out: &mut Vec<Value>) {
        let Some(name) = data.get("name").and_then(Value::as_str) else {
            return;
        };
        if data.get("input").is_some() {
            self.steps.push(name.to_owned());
            out.push(event("STEP_STARTED", json!({"stepName": name})));
        } else if let Some(at) = self.steps.iter().position(|s| s == name) {
            self.close(out);
            self.steps.remove(at);
            out.push(event("STEP_FINISHED", json!({"stepName": name})));
        }
    }

    /// New values: a `STATE_SNAPSHOT` of the state but its messages,
    /// when it changed.
    fn state(&mut self, values: Value, out: &mut Vec<Value>) {
        let Value::Object(map) = &values else {
            return;
        };
        if map.keys().all(|k| k.starts_with("__")) {
            // Only the interrupts: the state did not change.
            return;
        }
        let shown: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| *k != "messages" && !k.starts_with("__"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let shown = Value::Object(shown);
        if self.snapshot.as_ref() != Some(&shown) {
            out.push(event("STATE_SNAPSHOT", json!({"snapshot": shown})));
            self.snapshot = Some(shown);
        }
        self.values = Some(values);
    }

    /// The run failed: what is open is closed, then `RUN_ERROR`.
    fn failed(&mut self, error: &Value, out: &mut Vec<Value>) {
        self.wind_up(out);
        let message = error.get("message").and_then(Value::as_str);
        let code = error.get("error").and_then(Value::as_str);
        let mut fields = json!({"message": message.unwrap_or("the run failed")});
        if let Some(code) = code {
            fields["code"] = json!(code);
        }
        out.push(event("RUN_ERROR", fields));
        self.over = true;
    }

    /// Closes the open message, calls and steps.
    fn wind_up(&mut self, out: &mut Vec<Value>) {
        self.close(out);
        for step in self.steps.drain(..) {
            out.push(event("STEP_FINISHED", json!({"stepName": step})));
        }
    }

    /// The run ended with `output` (the server's `runs/wait` answer: the
    /// values, `__interrupt__` when paused, `__error__` when it failed or
    /// was stopped).
    pub(crate) fn finished(&mut self, output: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        if self.over {
            return out;
        }
        if let Some(error) = output.get("__error__") {
            if error.get("error").and_then(Value::as_str) != Some("Cancelled") {
                self.failed(error, &mut out);
                return out;
            }
        }
        self.wind_up(&mut out);
        let messages = self.values.as_ref().and_then(|v| v.get("messages"));
        if let Some(Value::Array(messages)) = messages {
            let messages: Vec<Value> = messages.iter().filter_map(to_agui).collect();
            out.push(event("MESSAGES_SNAPSHOT", json!({"messages": messages})));
        }
        let outcome = self.outcome(output, &mut out);
        let mut fields = json!({"threadId": self.thread_id, "runId": self.run_id});
        if let Some(outcome) = outcome {
            fields["outcome"] = outcome;
        }
        out.push(event("RUN_FINISHED", fields));
        self.over = true;
        out
    }

    /// Why the run ended: paused on interrupts (each also a CUSTOM
    /// `on_interrupt`, as `@ag-ui/langgraph` sends them), stopped, or done
    /// with calls left for the browser (`None`: done).
    fn outcome(&self, output: &Value, out: &mut Vec<Value>) -> Option<Value> {
        if output.get("__error__").is_some() {
            return Some(json!({"type": "cancelled"}));
        }
        let interrupts = output.get("__interrupt__").and_then(Value::as_array);
        if let Some(interrupts) = interrupts.filter(|i| !i.is_empty()) {
            let mut listed = Vec::new();
            for i in interrupts {
                let value = i.get("value").cloned().unwrap_or(Value::Null);
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                out.push(event(
                    "CUSTOM",
                    json!({"name": "on_interrupt", "value": text}),
                ));
                let mut entry =
                    json!({"id": i["id"], "reason": "interrupt", "metadata": {"value": value}});
                if let Some(message) = value.as_str() {
                    entry["message"] = json!(message);
                }
                if let Some(schema) = i.get("response_schema").filter(|s| s.is_object()) {
                    entry["responseSchema"] = schema.clone();
                }
                listed.push(entry);
            }
            return Some(json!({"type": "interrupt", "interrupts": listed}));
        }
        let pending: Vec<&String> = self
            .called
            .iter()
            .filter(|c| !self.answered.contains(*c))
            .collect();
        (!pending.is_empty()).then(|| json!({"type": "success", "pendingToolCallIds": pending}))
    }
}
