//! Our exchanges beside the official server's recordings
//! (`expected/*.json`), both normalised the same way: ids by order of
//! appearance, times zero, and the declared differences, which are the
//! graphs' and the runtime's, not the protocol's:
//!
//! * a streamed message's pieces: LangChain's fake model splits words
//!   and spaces, the Rust echo streams a word with its space; consecutive
//!   `content-block-delta`s are compared joined, and `seq` numbers are
//!   checked on their own ([`check_seq`]) rather than compared;
//! * a message's id (`lc_run--` prefix) and content (LangChain 1.x's
//!   `[{"type": "text", ...}]` blocks with `output_version: v1`, here a
//!   string);
//! * `approved: false` before review: a typed state has every field;
//! * interrupt ids (a hash there, `node/step/index` here) and a
//!   namespace's task part (a uuid there, the task's name here);
//! * the suffix `.n` of an `event_id` (which wire events the official
//!   server batched into one stream entry);
//! * where a reconnect's `since` cuts a streamed message (its first
//!   deltas, which the pieces decide, are left out on both sides; the
//!   test checks ours against our own full stream instead);
//! * the order the registered graphs are listed in an unknown
//!   assistant's message (registration order there, by name here).

use serde_json::{json, Map, Value};

/// The recorded steps of `scenario`.
pub fn expected(scenario: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/threadproto/expected/{scenario}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["steps"].as_array().unwrap().clone()
}

/// Asserts our steps equal the recording's, once both are normalised.
pub fn assert_same(scenario: &str, ours: &[Value]) {
    for step in ours {
        check_seq(step);
    }
    let theirs = normalise(&expected(scenario));
    let ours = normalise(ours);
    assert_eq!(theirs.len(), ours.len(), "{scenario}: step count");
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        assert!(
            t == o,
            "{scenario}: step {i} differs\nofficial: {}\nours:     {}",
            serde_json::to_string_pretty(t).unwrap(),
            serde_json::to_string_pretty(o).unwrap()
        );
    }
}

/// Each frame's SSE `id` is its envelope's `seq`, rising; a stream that
/// filters nothing and starts from the beginning misses no number.
pub fn check_seq(step: &Value) {
    let Some(frames) = step["frames"].as_array() else {
        return;
    };
    let seqs: Vec<u64> = frames
        .iter()
        .map(|f| f["data"]["seq"].as_u64().unwrap())
        .collect();
    for (f, seq) in frames.iter().zip(&seqs) {
        assert_eq!(
            f["id"],
            json!(seq.to_string()),
            "the SSE id is the seq: {f}"
        );
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq rises: {seqs:?}");
}

/// Both sides' steps with the declared differences taken out.
pub fn normalise(steps: &[Value]) -> Vec<Value> {
    let mut steps = steps.to_vec();
    let frames = steps
        .iter_mut()
        .filter_map(|s| s.get_mut("frames")?.as_array_mut());
    for f in frames.flatten() {
        let data = &mut f["data"]["params"]["data"];
        if data.get("trigger_call_id").is_some() {
            data["trigger_call_id"] = json!("<task>");
        }
    }
    let steps = &steps[..];
    let mut text = serde_json::to_string(steps)
        .unwrap()
        .replace("lc_run--", "");
    for (i, id) in interrupt_ids(steps).iter().enumerate() {
        text = text.replace(id.as_str(), &format!("<interrupt:{i}>"));
    }
    for segment in task_segments(steps) {
        let name = segment.split(':').next().unwrap_or_default();
        text = text.replace(&segment, &format!("{name}:<task>"));
    }
    let mut steps: Value = serde_json::from_str(&number_ids(&text)).unwrap();
    for step in steps.as_array_mut().unwrap() {
        let resumed = step["request"].get("since").is_some();
        if let Some(frames) = step.get_mut("frames") {
            let mut alike = frames_alike(frames.as_array().unwrap());
            if resumed {
                let delta =
                    |f: &Value| f["data"]["params"]["data"]["event"] == "content-block-delta";
                let cut = alike.iter().take_while(|f| delta(f)).count();
                alike.drain(..cut);
            }
            *frames = Value::Array(alike);
        }
        if let Some(Value::String(m)) = step.get_mut("body").and_then(|b| b.get_mut("message")) {
            *m = graphs_sorted(m);
        }
        step.as_object_mut().unwrap().remove("heartbeats");
    }
    steps.as_array().unwrap().clone()
}

/// A message listing the registered graphs, with the list sorted.
fn graphs_sorted(message: &str) -> String {
    let mark = "registered graphs: ";
    let Some(at) = message.find(mark) else {
        return message.to_owned();
    };
    let (head, list) = message.split_at(at + mark.len());
    let mut names: Vec<&str> = list.split(", ").collect();
    names.sort();
    format!("{head}{}", names.join(", "))
}

fn interrupt_ids(steps: &[Value]) -> Vec<String> {
    let mut ids = Vec::new();
    for f in steps
        .iter()
        .filter_map(|s| s["frames"].as_array())
        .flatten()
    {
        if let Some(id) = f["data"]["params"]["data"]["interrupt_id"].as_str() {
            if !ids.contains(&id.to_owned()) {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

fn task_segments(steps: &[Value]) -> Vec<String> {
    let mut segments = Vec::new();
    for f in steps
        .iter()
        .filter_map(|s| s["frames"].as_array())
        .flatten()
    {
        for s in f["data"]["params"]["namespace"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let s = s.as_str().unwrap().to_owned();
            if s.contains(':') && !segments.contains(&s) {
                segments.push(s);
            }
        }
    }
    segments
}

/// Raw uuids and the recording's `<uuid:N>` both become `<id:M>`, M by
/// order of first appearance.
fn number_ids(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let len = token_len(rest);
        if len == 0 {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let token = rest[..len].to_owned();
        let n = seen.iter().position(|t| *t == token).unwrap_or_else(|| {
            seen.push(token.clone());
            seen.len() - 1
        });
        out.push_str(&format!("<id:{n}>"));
        rest = &rest[len..];
    }
    out
}

/// The length of the id `s` starts with, 0 if none.
fn token_len(s: &str) -> usize {
    if let Some(tail) = s.strip_prefix("<uuid:") {
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with('>') {
            return 6 + digits + 1;
        }
    }
    let b = s.as_bytes();
    let is_uuid = b.len() >= 36
        && b[..36].iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if is_uuid {
        36
    } else {
        0
    }
}

/// A stream's frames without what differs by design: `seq`, `id`,
/// times, `event_id` suffixes; deltas joined; message content as text.
fn frames_alike(frames: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for f in frames {
        let mut data = f["data"].clone();
        let o = data.as_object_mut().unwrap();
        o.remove("seq");
        if let Some(Value::String(id)) = o.get_mut("event_id") {
            if !id.starts_with("synth:") {
                *id = "<sid>".to_owned();
            }
        }
        data["params"]["timestamp"] = json!(0);
        if data["method"] == "values" {
            plain_values(&mut data["params"]["data"]);
        }
        let joined = out.last_mut().is_some_and(|last| join_delta(last, &data));
        if !joined {
            out.push(json!({"event": f["event"], "data": data}));
        }
    }
    out
}

/// Adds `data`'s text delta to `last`'s when both are deltas.
fn join_delta(last: &mut Value, data: &Value) -> bool {
    let delta = |d: &Value| d["params"]["data"]["event"] == "content-block-delta";
    if !delta(&last["data"]) || !delta(data) {
        return false;
    }
    let more = data["params"]["data"]["delta"]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let text = &mut last["data"]["params"]["data"]["delta"]["text"];
    *text = json!(format!("{}{more}", text.as_str().unwrap_or("")));
    true
}

/// A state's messages with text content, and no `approved: false`.
fn plain_values(values: &mut Value) {
    let Some(state) = values.as_object_mut() else {
        return;
    };
    if state.get("approved") == Some(&json!(false)) {
        state.remove("approved");
    }
    for m in state
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let m: &mut Map<String, Value> = m.as_object_mut().unwrap();
        if let Some(Value::Array(blocks)) = m.get("content") {
            let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            m.insert("content".into(), json!(text));
        }
        if m.get("response_metadata") == Some(&json!({"output_version": "v1"})) {
            m.remove("response_metadata");
        }
    }
}
