//! A `RunAgentInput` read and checked: every problem found at once, each
//! named by where it is (`["body", "messages", 0, "role"]`), answered 422
//! as AG-UI's Python adapters (FastAPI over pydantic) answer it, before
//! anything is stored or run.

use agent_state::agent::{ClientTools, ToolDefinition};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::messages::{to_graph, Problems};

/// A checked `RunAgentInput`.
pub(crate) struct RunInput {
    /// `threadId`, as the client sent it.
    pub thread_id: String,
    /// `runId`, as the client sent it.
    pub run_id: String,
    /// `state`: written with the run's input (its `messages` left out).
    pub state: Map<String, Value>,
    /// `messages`, each as the graph's message JSON, in order.
    pub messages: Vec<Value>,
    /// `tools`: the browser's tools.
    pub tools: Option<ClientTools>,
    /// The answer to the interrupt the thread is paused on (`resume`, or
    /// `forwardedProps.command.resume` as `@ag-ui/langgraph` sends it),
    /// and the interrupt's id when the client named it.
    pub resume: Option<(Option<String>, Value)>,
}

/// A 422 listing every problem, as FastAPI answers a body that does not
/// validate: `{"detail": [{"type", "loc", "msg"}, ..]}`.
pub(crate) struct Refused(pub Vec<Value>);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let listed: Vec<String> = self.0.iter().map(|p| p.to_string()).collect();
        tracing::info!(problems = %listed.join("; "), "AG-UI input refused");
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"detail": self.0})),
        )
            .into_response()
    }
}

/// One problem at `loc` (below `body`).
pub(crate) fn problem(kind: &str, loc: &[Value], msg: impl Into<String>) -> Value {
    let mut at = vec![json!("body")];
    at.extend_from_slice(loc);
    json!({"type": kind, "loc": at, "msg": msg.into()})
}

/// Reads the body, or says everything wrong with it.
pub(crate) fn read(body: &Value) -> Result<RunInput, Refused> {
    let Some(body) = body.as_object() else {
        let msg = "Input should be a valid dictionary or object to extract fields from";
        return Err(Refused(vec![problem("model_attributes_type", &[], msg)]));
    };
    let mut problems = Problems::default();
    let thread_id = required_string(body, "threadId", &mut problems);
    let run_id = required_string(body, "runId", &mut problems);
    let state = state(body.get("state"), &mut problems);
    let messages = match body.get("messages") {
        None => {
            problems.push(problem("missing", &[json!("messages")], "Field required"));
            Vec::new()
        }
        Some(Value::Array(list)) => to_graph(list, &mut problems),
        Some(_) => {
            let msg = "Input should be a valid list";
            problems.push(problem("list_type", &[json!("messages")], msg));
            Vec::new()
        }
    };
    let tools = tools(body.get("tools"), &mut problems);
    let resume = resume(body, &mut problems);
    if !problems.0.is_empty() {
        return Err(Refused(problems.0));
    }
    Ok(RunInput {
        thread_id,
        run_id,
        state,
        messages,
        tools,
        resume,
    })
}

/// A string field that must be there.
fn required_string(body: &Map<String, Value>, key: &str, problems: &mut Problems) -> String {
    match body.get(key) {
        Some(Value::String(s)) => s.clone(),
        None => {
            problems.push(problem("missing", &[json!(key)], "Field required"));
            String::new()
        }
        Some(_) => {
            let msg = "Input should be a valid string";
            problems.push(problem("string_type", &[json!(key)], msg));
            String::new()
        }
    }
}

/// `state`: absent, null or an object (a graph's state is one).
fn state(value: Option<&Value>, problems: &mut Problems) -> Map<String, Value> {
    match value {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => {
            let mut map = map.clone();
            map.remove("messages");
            map
        }
        Some(_) => {
            let msg = "Input should be a valid dictionary: a graph's state is an object";
            problems.push(problem("dict_type", &[json!("state")], msg));
            Map::new()
        }
    }
}

/// `tools`: each a name, a description and, optionally, the JSON Schema
/// of its arguments.
fn tools(value: Option<&Value>, problems: &mut Problems) -> Option<ClientTools> {
    let list = match value {
        None | Some(Value::Null) => return None,
        Some(Value::Array(list)) => list,
        Some(_) => {
            let msg = "Input should be a valid list";
            problems.push(problem("list_type", &[json!("tools")], msg));
            return None;
        }
    };
    let mut definitions = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let at = |field: &str| vec![json!("tools"), json!(i), json!(field)];
        let Some(tool) = tool.as_object() else {
            let msg = "Input should be a valid dictionary or object to extract fields from";
            problems.push(problem(
                "model_attributes_type",
                &[json!("tools"), json!(i)],
                msg,
            ));
            continue;
        };
        let mut text = |field: &str| match tool.get(field) {
            Some(Value::String(s)) => Some(s.clone()),
            None => {
                problems.push(problem("missing", &at(field), "Field required"));
                None
            }
            Some(_) => {
                let msg = "Input should be a valid string";
                problems.push(problem("string_type", &at(field), msg));
                None
            }
        };
        let (name, description) = (text("name"), text("description"));
        let parameters = match tool.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(schema) => schema.clone(),
        };
        if let (Some(name), Some(description)) = (name, description) {
            definitions.push(ToolDefinition {
                name,
                description,
                parameters,
            });
        }
    }
    Some(ClientTools::new(definitions))
}

/// The resume value: the one `resolved` entry of `resume` (cancelled ones
/// are dropped: the run is then an ordinary one), else
/// `forwardedProps.command.resume`.
fn resume(body: &Map<String, Value>, problems: &mut Problems) -> Option<(Option<String>, Value)> {
    let entries = match body.get("resume") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().enumerate().collect(),
        Some(_) => {
            let msg = "Input should be a valid list";
            problems.push(problem("list_type", &[json!("resume")], msg));
            Vec::new()
        }
    };
    let mut resolved = Vec::new();
    for (i, entry) in entries {
        if let Some(answer) = resume_entry(i, entry, problems) {
            resolved.push((i, answer));
        }
    }
    if resolved.len() > 1 {
        let msg = "one interrupt is answered per run: send one `resolved` entry";
        let loc = [json!("resume"), json!(resolved[1].0)];
        problems.push(problem("value_error", &loc, msg));
    }
    if let Some((_, answer)) = resolved.into_iter().next() {
        return Some(answer);
    }
    let command = body.get("forwardedProps").and_then(|p| p.get("command"));
    let value = command
        .and_then(|c| c.get("resume"))
        .filter(|v| !v.is_null());
    value.map(|v| (None, v.clone()))
}

/// One `resume` entry: its id and payload when it is `resolved`.
fn resume_entry(
    i: usize,
    entry: &Value,
    problems: &mut Problems,
) -> Option<(Option<String>, Value)> {
    let at = |field: &str| vec![json!("resume"), json!(i), json!(field)];
    let id = match entry.get("interruptId") {
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => {
            let msg = "Input should be a valid string";
            problems.push(problem("string_type", &at("interruptId"), msg));
            None
        }
        None => {
            problems.push(problem("missing", &at("interruptId"), "Field required"));
            None
        }
    };
    match entry.get("status").and_then(Value::as_str) {
        Some("resolved") => {
            let payload = entry.get("payload").cloned().unwrap_or(Value::Null);
            id.map(|id| (Some(id), payload))
        }
        Some("cancelled") => None,
        _ => {
            let msg = "Input should be 'resolved' or 'cancelled'";
            problems.push(problem("literal_error", &at("status"), msg));
            None
        }
    }
}
