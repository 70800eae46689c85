//! Requests checked for their shape before a handler sees them, as the
//! official server checks each body against its route's JSON Schema: a
//! body that is not a JSON object, or a documented field of the wrong
//! type or out of range (an `on_completion` that is no strategy, a
//! `config` that is a string, a `limit` of 0 or 10^12), is a 422 naming
//! the field, never a field silently ignored. A path segment that is not
//! UTF-8 is a 422 naming the id it stands for, and an extractor's own
//! plain-text refusal is answered as `{"detail": ..}` like every other.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::app::App;
use crate::body::BODY_LIMIT;
use crate::error::ApiError;

/// What a field must hold (`null` always passes: a field left unset).
#[derive(Clone, Copy)]
enum Kind {
    Object,
    Str,
    Bool,
    Number,
    /// A list of strings.
    Strings,
    /// An integer within `min..=max`.
    Int(i64, i64),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An object whose own fields are checked.
    Fields(&'static [(&'static str, Kind)]),
}

/// `limit` of the official server's lists (1 to 1,000).
const LIMIT: Kind = Kind::Int(1, 1000);
/// An `offset`: zero or more.
const OFFSET: Kind = Kind::Int(0, i64::MAX);
/// A thread's status.
const STATUS: Kind = Kind::OneOf(&["idle", "busy", "interrupted", "error"]);

/// A run's `config` (LangGraph's `RunnableConfig`).
const CONFIG: Kind = Kind::Fields(&[
    ("tags", Kind::Strings),
    ("recursion_limit", Kind::Int(1, i64::MAX)),
    ("configurable", Kind::Object),
    ("metadata", Kind::Object),
    ("run_name", Kind::Str),
    ("max_concurrency", Kind::Int(1, i64::MAX)),
    ("run_id", Kind::Str),
]);

/// The fields every run body shares (`RunCreateStateful` and
/// `RunCreateStateless`).
const RUN: &[(&str, Kind)] = &[
    ("assistant_id", Kind::Str),
    ("command", Kind::Object),
    ("metadata", Kind::Object),
    ("config", CONFIG),
    ("context", Kind::Object),
    ("webhook", Kind::Str),
    ("checkpoint_id", Kind::Str),
    ("checkpoint", Kind::Object),
    ("on_completion", Kind::OneOf(&["delete", "keep"])),
    ("if_not_exists", Kind::OneOf(&["create", "reject"])),
    ("after_seconds", Kind::Number),
    ("feedback_keys", Kind::Strings),
    ("stream_subgraphs", Kind::Bool),
    ("stream_resumable", Kind::Bool),
    ("checkpoint_during", Kind::Bool),
];

/// A thread search's and count's filters.
const SEARCH: &[(&str, Kind)] = &[
    ("ids", Kind::Strings),
    ("metadata", Kind::Object),
    ("values", Kind::Object),
    ("status", STATUS),
    ("limit", LIMIT),
    ("offset", OFFSET),
    ("select", Kind::Strings),
    ("extract", Kind::Object),
];

/// The fields checked for a route (by method and matched path); `None`
/// for a route whose body is not checked here.
fn fields(method: &Method, route: &str) -> Option<&'static [(&'static str, Kind)]> {
    let fields: &'static [(&'static str, Kind)] = match (method.as_str(), route) {
        // `ttl` is checked where it is read, with its own words.
        ("POST", "/threads") => &[("thread_id", Kind::Str), ("metadata", Kind::Object)],
        ("PATCH", "/threads/{id}") => &[("metadata", Kind::Object)],
        ("POST", "/threads/search" | "/threads/count") => SEARCH,
        ("POST", "/threads/{id}/history") => &[
            ("limit", LIMIT),
            ("metadata", Kind::Object),
            ("checkpoint", Kind::Object),
        ],
        ("POST", "/threads/{id}/state") => &[
            ("as_node", Kind::Str),
            ("checkpoint", Kind::Object),
            ("checkpoint_id", Kind::Str),
        ],
        (
            "POST",
            "/threads/{id}/runs"
            | "/threads/{id}/runs/stream"
            | "/threads/{id}/runs/wait"
            | "/runs"
            | "/runs/batch"
            | "/runs/stream"
            | "/runs/wait",
        ) => RUN,
        ("POST", "/assistants") | ("PATCH", "/assistants/{id}") => &[
            ("graph_id", Kind::Str),
            ("config", CONFIG),
            ("context", Kind::Object),
            ("metadata", Kind::Object),
            ("name", Kind::Str),
            ("description", Kind::Str),
        ],
        ("PUT", "/store/items") => &[
            ("namespace", Kind::Strings),
            ("key", Kind::Str),
            ("value", Kind::Object),
        ],
        ("DELETE", "/store/items") => &[("namespace", Kind::Strings), ("key", Kind::Str)],
        ("POST", "/store/items/search") => &[
            ("namespace_prefix", Kind::Strings),
            ("filter", Kind::Object),
            ("query", Kind::Str),
        ],
        _ => return None,
    };
    Some(fields)
}

/// The route layer: the path's ids are UTF-8, the body has its route's
/// shape; an extractor's plain-text refusal becomes `{"detail": ..}`.
pub(crate) async fn check(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let Some(route) = route else {
        return detail_json(next.run(req).await).await;
    };
    if let Err(refused) = utf8_path(&route, req.uri().path()) {
        return refused.into_response();
    }
    if waits_to_send(&req) && declared_length(&req).is_some_and(|n| n > BODY_LIMIT as u64) {
        // A client that waits for a `100 Continue` is refused before it
        // sends a byte. One that sends at once is refused once the limit
        // is read, as before: answered now, while it still writes, it
        // would lose the answer to the reset of a close with unread data.
        return ApiError::TooLarge(BODY_LIMIT).into_response();
    }
    let req = match fields(req.method(), &route) {
        Some(fields) => match checked_body(&app, req, fields).await {
            Ok(req) => req,
            Err(refused) => return refused.into_response(),
        },
        None => req,
    };
    detail_json(next.run(req).await).await
}

/// Whether the client waits for a `100 Continue` before it sends its
/// body (`Expect: 100-continue`).
fn waits_to_send(req: &Request) -> bool {
    req.headers()
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
}

/// The body's `Content-Length`, when it has one that is a number.
fn declared_length(req: &Request) -> Option<u64> {
    let value = req.headers().get(header::CONTENT_LENGTH)?;
    value.to_str().ok()?.trim().parse().ok()
}

/// Each `{param}` segment of `route` in `path` decodes to UTF-8, or a 422
/// naming the id (`Invalid thread ID: must be a UUID`, as the official
/// server words any id that is not one).
fn utf8_path(route: &str, path: &str) -> Result<(), ApiError> {
    let mut before = "";
    for (param, segment) in route.split('/').zip(path.split('/')) {
        // A parameter's segment opens with a brace (written escaped).
        if param.starts_with('\u{7b}') && percent_decode(segment).is_none() {
            // The id is named by the collection it is in.
            let what = match before {
                "assistants" | "ag-ui" => "assistant",
                "runs" => "run",
                "state" => "checkpoint",
                _ => "thread",
            };
            return Err(ApiError::not_uuid(what));
        }
        before = param;
    }
    Ok(())
}

/// `segment` with its `%XX` escapes decoded, `None` when the bytes are
/// not UTF-8 (a malformed escape is kept as it is, as axum keeps it).
pub(crate) fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The request with its body read (within the limit and the read
/// timeout) and checked against `fields`, or the refusal. A body that is
/// no JSON at all goes on to the handler, which refuses it.
async fn checked_body(
    app: &Arc<App>,
    req: Request,
    fields: &[(&str, Kind)],
) -> Result<Request, ApiError> {
    let (parts, body) = req.into_parts();
    let bytes = crate::body::read_body(Request::from_parts(parts.clone(), body), app).await?;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            check_body(&value, fields, parts.uri.path() == "/runs/batch")?;
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// A body is an object with `fields`' shapes; a `/runs/batch` body, a
/// list of such objects (each named by its place: `[1].config`).
fn check_body(value: &Value, fields: &[(&str, Kind)], list: bool) -> Result<(), ApiError> {
    let not_an_object = |value: &Value, at: &str| {
        ApiError::Invalid(format!(
            "Invalid request body{at}: expected a JSON object, found {}",
            a_kind(value)
        ))
    };
    match (value, list) {
        (Value::Object(object), false) => check_fields("", object, fields),
        // The handler says what a batch must be.
        (_, true) => {
            let items = value.as_array().map_or(&[][..], Vec::as_slice);
            for (i, item) in items.iter().enumerate() {
                let Value::Object(object) = item else {
                    return Err(not_an_object(item, &format!(" [{i}]")));
                };
                check_fields(&format!("[{i}]."), object, fields)?;
            }
            Ok(())
        }
        (value, false) => Err(not_an_object(value, "")),
    }
}

/// Each of `fields` present in `object` (under `prefix`) holds what it
/// must.
fn check_fields(
    prefix: &str,
    object: &Map<String, Value>,
    fields: &[(&str, Kind)],
) -> Result<(), ApiError> {
    for (name, kind) in fields {
        match object.get(*name) {
            None | Some(Value::Null) => {}
            Some(value) => check_value(&format!("{prefix}{name}"), value, *kind)?,
        }
    }
    Ok(())
}

/// `value` of field `name` is of `kind`, or a 422 saying what it is.
fn check_value(name: &str, value: &Value, kind: Kind) -> Result<(), ApiError> {
    let expected = match (kind, value) {
        (Kind::Object, Value::Object(_))
        | (Kind::Str, Value::String(_))
        | (Kind::Bool, Value::Bool(_))
        | (Kind::Number, Value::Number(_)) => return Ok(()),
        (Kind::Strings, Value::Array(items)) if items.iter().all(Value::is_string) => return Ok(()),
        (Kind::Fields(fields), Value::Object(object)) => {
            return check_fields(&format!("{name}."), object, fields)
        }
        (Kind::Int(min, max), Value::Number(n)) if n.is_i64() || n.is_u64() => {
            let n = n.as_i64().unwrap_or(i64::MAX);
            if (min..=max).contains(&n) {
                return Ok(());
            }
            format!("an integer {}", range(min, max))
        }
        (Kind::OneOf(names), Value::String(s)) if names.contains(&s.as_str()) => return Ok(()),
        (Kind::OneOf(names), _) => format!("one of \"{}\"", names.join("\", \"")),
        (Kind::Object | Kind::Fields(_), _) => "an object".to_owned(),
        (Kind::Str, _) => "a string".to_owned(),
        (Kind::Bool, _) => "true or false".to_owned(),
        (Kind::Number, _) => "a number".to_owned(),
        (Kind::Strings, _) => "a list of strings".to_owned(),
        (Kind::Int(min, max), _) => format!("an integer {}", range(min, max)),
    };
    Err(ApiError::Invalid(format!(
        "{name}: expected {expected}, found {}",
        shown(value)
    )))
}

/// The bounds an integer must keep, in words.
fn range(min: i64, max: i64) -> String {
    match max {
        i64::MAX => format!("of at least {min}"),
        _ => format!("from {min} to {max}"),
    }
}

/// A value as a refusal shows it: short ones whole, others by kind.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        format!("`{text}`")
    } else {
        a_kind(value).to_owned()
    }
}

/// What a JSON value is, in words.
fn a_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An extractor's refusal (axum answers a bad path or query in plain
/// text) as `{"detail": ..}`, logged; every other answer as it is.
async fn detail_json(response: Response) -> Response {
    let plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain"));
    let status = response.status();
    if !plain || !status.is_client_error() {
        return response;
    }
    let text = axum::body::to_bytes(response.into_body(), 64 * 1024).await;
    let detail = text
        .ok()
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .unwrap_or_default();
    let refused = match status {
        StatusCode::NOT_FOUND => ApiError::NotFound(detail),
        _ => ApiError::BadRequest(detail),
    };
    let mut answer = refused.into_response();
    *answer.status_mut() = status;
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_to_utf8_or_not() {
        assert_eq!(percent_decode("a%2Fb").as_deref(), Some("a/b"));
        assert_eq!(percent_decode("%zz%").as_deref(), Some("%zz%"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("%FF"), None);
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_named() {
        let body = serde_json::json!({"config": {"recursion_limit": 0}});
        let Value::Object(body) = body else {
            unreachable!()
        };
        let Err(ApiError::Invalid(detail)) = check_fields("", &body, RUN) else {
            panic!("accepted")
        };
        assert_eq!(
            detail,
            "config.recursion_limit: expected an integer of at least 1, found `0`"
        );
    }
}
