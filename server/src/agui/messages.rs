//! Messages both ways: AG-UI's (`role`: user, assistant, tool, system,
//! developer; `toolCalls` with JSON-text arguments) to the graph's
//! (LangChain's `type`: human, ai, tool, system; `tool_calls` with
//! parsed `args`), and back for `MESSAGES_SNAPSHOT`.

use serde_json::{json, Map, Value};

use super::input::problem;

/// Problems found so far, each `{"type", "loc", "msg"}`.
#[derive(Default)]
pub(crate) struct Problems(pub Vec<Value>);

impl Problems {
    /// Notes one.
    pub(crate) fn push(&mut self, problem: Value) {
        self.0.push(problem);
    }
}

/// The roles a message may have, as AG-UI lists them.
const ROLES: &str = "'developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning'";

/// AG-UI's messages as the graph's; activity and reasoning messages (not
/// conversation a model is sent) are left out.
pub(crate) fn to_graph(list: &[Value], problems: &mut Problems) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, message) in list.iter().enumerate() {
        let at = [json!("messages"), json!(i)];
        let Some(m) = message.as_object() else {
            let msg = "Input should be a valid dictionary or object to extract fields from";
            problems.push(problem("model_attributes_type", &at, msg));
            continue;
        };
        let role = match m.get("role") {
            Some(Value::String(role)) => role.as_str(),
            _ => {
                let msg = "Unable to extract tag using discriminator 'role'";
                problems.push(problem("union_tag_not_found", &at, msg));
                continue;
            }
        };
        let mut field = Field {
            m,
            i,
            role,
            problems,
        };
        let kind = match role {
            "user" => "human",
            "assistant" => "ai",
            "tool" => "tool",
            "system" | "developer" => "system",
            "activity" | "reasoning" => continue,
            other => {
                let msg = format!(
                    "Input tag '{other}' found using 'role' does not match any of the expected tags: {ROLES}"
                );
                field.problems.push(problem("union_tag_invalid", &at, msg));
                continue;
            }
        };
        if let Some(message) = field.convert(kind) {
            out.push(message);
        }
    }
    out
}

/// One message's fields, read with the place of each problem.
struct Field<'a, 'p> {
    m: &'a Map<String, Value>,
    i: usize,
    role: &'a str,
    problems: &'p mut Problems,
}

impl Field<'_, '_> {
    fn loc(&self, rest: &[Value]) -> Vec<Value> {
        let mut at = vec![json!("messages"), json!(self.i), json!(self.role)];
        at.extend_from_slice(rest);
        at
    }

    /// A string field; `required` says whether it may be absent.
    fn text(&mut self, key: &str, required: bool) -> Option<String> {
        match self.m.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            None | Some(Value::Null) if !required => None,
            None => {
                let loc = self.loc(&[json!(key)]);
                self.problems
                    .push(problem("missing", &loc, "Field required"));
                None
            }
            Some(_) => {
                let loc = self.loc(&[json!(key)]);
                let msg = "Input should be a valid string";
                self.problems.push(problem("string_type", &loc, msg));
                None
            }
        }
    }

    /// The graph's message of type `kind`.
    fn convert(&mut self, kind: &str) -> Option<Value> {
        let id = self.text("id", true);
        let content = match kind {
            "ai" => Some(json!(self.text("content", false).unwrap_or_default())),
            "human" | "tool" => self.content(),
            _ => self.text("content", true).map(Value::String),
        };
        // Every field read before any is given up on: each problem named.
        let extra = match kind {
            "tool" => self
                .text("toolCallId", true)
                .map(|c| Some(("tool_call_id", json!(c)))),
            "ai" => self.tool_calls().map(|c| Some(("tool_calls", json!(c)))),
            _ => Some(None),
        };
        let name = self.text("name", false);
        let mut out = json!({"type": kind, "content": content?, "id": id?});
        if let Some((key, value)) = extra? {
            out[key] = value;
        }
        if let Some(name) = name {
            out["name"] = json!(name);
        }
        Some(out)
    }

    /// A user's or tool's content: text, or a list of parts (text, and
    /// media by URL or inline data) as LangChain's content blocks.
    fn content(&mut self) -> Option<Value> {
        let parts = match self.m.get("content") {
            Some(Value::Array(parts)) => parts,
            _ => return self.text("content", true).map(Value::String),
        };
        let mut blocks = Vec::new();
        for (j, part) in parts.iter().enumerate() {
            match part_block(part) {
                Some(block) => blocks.push(block),
                None => {
                    let loc = self.loc(&[json!("content"), json!(j)]);
                    let msg = "a part is `text`, or `image`, `audio`, `video` or `document` with a `url` or `data` source";
                    self.problems.push(problem("union_tag_invalid", &loc, msg));
                }
            }
        }
        Some(Value::Array(blocks))
    }

    /// An assistant's `toolCalls` as the graph's `tool_calls`.
    fn tool_calls(&mut self) -> Option<Vec<Value>> {
        let calls = match self.m.get("toolCalls") {
            None | Some(Value::Null) => return Some(Vec::new()),
            Some(Value::Array(calls)) => calls,
            Some(_) => {
                let loc = self.loc(&[json!("toolCalls")]);
                let msg = "Input should be a valid list";
                self.problems.push(problem("list_type", &loc, msg));
                return None;
            }
        };
        let mut out = Vec::new();
        for (j, call) in calls.iter().enumerate() {
            let function = call.get("function");
            let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
            let arguments = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str);
            let id = call.get("id").and_then(Value::as_str);
            let args = arguments.map(serde_json::from_str::<Map<String, Value>>);
            match (id, name, args) {
                (Some(id), Some(name), Some(Ok(args))) => {
                    out.push(json!({"name": name, "args": args, "id": id, "type": "tool_call"}))
                }
                _ => {
                    let loc = self.loc(&[json!("toolCalls"), json!(j)]);
                    let msg = "a tool call has an `id` and a `function` with a `name` and `arguments` that are a JSON object as text";
                    self.problems.push(problem("value_error", &loc, msg));
                }
            }
        }
        Some(out)
    }
}

/// A content part as a LangChain content block.
fn part_block(part: &Value) -> Option<Value> {
    let kind = part.get("type")?.as_str()?;
    if kind == "text" {
        return Some(json!({"type": "text", "text": part.get("text")?.as_str()?}));
    }
    if !matches!(kind, "image" | "audio" | "video" | "document") {
        return None;
    }
    let source = part.get("source")?;
    let value = source.get("value")?.as_str()?;
    let mut block = match source.get("type")?.as_str()? {
        "url" => json!({"type": kind, "url": value}),
        "data" => json!({"type": kind, "base64": value}),
        _ => return None,
    };
    if let Some(mime) = source.get("mimeType").and_then(Value::as_str) {
        block["mime_type"] = json!(mime);
    }
    Some(block)
}

/// A graph message's content as text: the string, or its text blocks
/// joined.
pub(crate) fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect(),
        _ => String::new(),
    }
}

/// A graph message as AG-UI's; `None` for a kind AG-UI has no message for.
pub(crate) fn to_agui(m: &Value) -> Option<Value> {
    let id = m.get("id").and_then(Value::as_str)?;
    let content = text_of(m.get("content"));
    let role = match m.get("type").and_then(Value::as_str)? {
        "human" => "user",
        "ai" => "assistant",
        "system" => "system",
        "tool" => {
            let call = m.get("tool_call_id").and_then(Value::as_str)?;
            return Some(json!({"id": id, "role": "tool", "content": content, "toolCallId": call}));
        }
        _ => return None,
    };
    let mut out = json!({"id": id, "role": role, "content": content});
    let calls = m.get("tool_calls").and_then(Value::as_array);
    if let Some(calls) = calls.filter(|c| !c.is_empty()) {
        out["toolCalls"] = calls.iter().filter_map(agui_call).collect();
    }
    Some(out)
}

/// A graph tool call as AG-UI's (`arguments` as JSON text).
pub(crate) fn agui_call(call: &Value) -> Option<Value> {
    let arguments = call.get("args").map_or("{}".to_owned(), Value::to_string);
    Some(json!({
        "id": call.get("id")?.as_str()?,
        "type": "function",
        "function": {"name": call.get("name")?.as_str()?, "arguments": arguments},
    }))
}
