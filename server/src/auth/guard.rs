//! The middleware in front of the API's routes: it runs the authenticate
//! hook, then the authorize hook of the route's resource and action on
//! the request's value, and applies the verdict (a refusal answered, a
//! filter checked against the thread or assistant the path names, stamped
//! into what is created, or handed to the handlers that list).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::route::{classify, Route, Target};
use super::{filter, store, Auth, AuthContext, Credentials, Identity, Refusal, Verdict};
use crate::app::App;
use crate::body::BODY_LIMIT;
use crate::error::ApiError;
use crate::ids::is_uuid;

/// Routes left open, as the official server leaves its meta routes.
const OPEN: [&str; 2] = ["/ok", "/info"];

/// What the middleware needs: the hooks, and the store to check threads.
pub(crate) struct Guard {
    pub auth: Auth,
    pub app: Arc<App>,
    /// With `database_per_user`: each caller's own server, which the
    /// request is handed to once authenticated.
    pub per_user: Option<Arc<super::per_user::PerUser>>,
}

/// The filter an authorize hook answered for this request (none: all
/// pass), for the handlers that list: they leave out what it does not
/// match.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope(Option<Value>);

impl Scope {
    /// Whether a record with this metadata is the caller's to see.
    pub(crate) fn admits(&self, metadata: &Map<String, Value>) -> bool {
        self.0.as_ref().is_none_or(|f| filter::matches(metadata, f))
    }

    /// Whether a hook answered a filter (none: every record is the
    /// caller's).
    pub(crate) fn is_filtered(&self) -> bool {
        self.0.is_some()
    }

    /// The metadata a record the caller creates gets, so that the filter
    /// admits it (its fixed keys; none without a filter).
    pub(crate) fn stamp(&self) -> Map<String, Value> {
        self.0.as_ref().map(filter::stamp).unwrap_or_default()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Scope {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Scope>().cloned().unwrap_or_default())
    }
}

/// The threads' `delete` filter, for a request that may delete threads
/// besides its own resource (`DELETE /assistants/{id}?delete_threads=true`):
/// it deletes only those the caller may; `None`, the caller may delete
/// none. Without custom auth, every thread.
#[derive(Debug, Clone)]
pub(crate) struct ThreadsDeleted(pub(crate) Option<Scope>);

impl<S: Send + Sync> FromRequestParts<S> for ThreadsDeleted {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let all = || ThreadsDeleted(Some(Scope::default()));
        Ok(parts.extensions.get::<Self>().cloned().unwrap_or_else(all))
    }
}

/// An answer given here instead of the handler's (boxed: a result's
/// error stays small).
pub(super) type Early = Box<Response>;

/// `answer` as an [`Early`] one.
pub(super) fn early(answer: impl IntoResponse) -> Early {
    Box::new(answer.into_response())
}

/// The middleware: the request goes on, or is answered here.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let open = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| OPEN.contains(&p.as_str()));
    if !g.auth.is_on() || open {
        return next.run(req).await;
    }
    match (admit(&g, req).await, &g.per_user) {
        (Ok(req), Some(users)) => {
            let user = req.extensions().get::<Identity>();
            let user = user.map(|u| u.identity.clone()).unwrap_or_default();
            users.serve(&user, req).await
        }
        (Ok(req), None) => next.run(req).await,
        (Err(answer), _) => *answer,
    }
}

/// The request as it goes on (its body rewritten if a hook or a filter
/// changed it), or the answer that refuses it.
async fn admit(g: &Guard, req: Request) -> Result<Request, Early> {
    let (mut parts, body) = req.into_parts();
    let credentials = Credentials {
        method: parts.method.clone(),
        uri: parts.uri.clone(),
        headers: parts.headers.clone(),
    };
    // A user's own server (`database_per_user`) is handed requests its
    // caller was authenticated for.
    let user = match parts.extensions.get::<Identity>() {
        Some(user) => user.clone(),
        None => g.auth.identify(credentials).await.map_err(early)?,
    };
    if g.per_user.is_some() {
        parts.extensions.insert(user);
        return Ok(Request::from_parts(parts, body));
    }
    let pattern = parts
        .extensions
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let route = pattern.and_then(|p| classify(&parts.method, &p, parts.uri.path()));
    let Some(route) = route else {
        parts.extensions.insert(user);
        return Ok(Request::from_parts(parts, body));
    };
    let mut call = Call::read(g, &parts, body, &route).await?;
    let filter = verdict(&g.auth, &user, &route, &mut call.value)?;
    apply(g, &route, filter.as_ref(), &mut call).await?;
    if matches!(route.resource, super::Resource::Threads) {
        // A batch's body is a list, which the hooks' value does not hold.
        let list = match &call.json {
            None => serde_json::from_slice::<Value>(&call.bytes).ok(),
            Some(_) => None,
        };
        let body = list.as_ref().unwrap_or(&call.value);
        for id in assistants_run(body, parts.uri.path()) {
            run_assistant(g, &user, &id).await?;
        }
    }
    if deletes_threads(&route) {
        let ctx = AuthContext {
            user: &user,
            resource: super::Resource::Threads,
            action: super::Action::Delete,
        };
        let mut asked = json!({});
        let threads = match g.auth.decide(&ctx, &mut asked).map_err(early)? {
            Verdict::Allow => Some(Scope(None)),
            Verdict::Filter(f) => Some(Scope(Some(f))),
            Verdict::Deny => None,
        };
        parts.extensions.insert(ThreadsDeleted(threads));
    }
    call.write_back(&route, &mut parts);
    parts.extensions.insert(Scope(filter));
    parts.extensions.insert(user);
    let (body, rewritten) = call.body();
    if let Some(len) = rewritten {
        parts.headers.insert(header::CONTENT_LENGTH, len.into());
    }
    Ok(Request::from_parts(parts, body))
}

/// The filter the route's hook answers (none: allowed as it is), or the
/// answer that refuses the request.
fn verdict(
    auth: &Auth,
    user: &Identity,
    route: &Route,
    value: &mut Value,
) -> Result<Option<Value>, Early> {
    let ctx = AuthContext {
        user,
        resource: route.resource,
        action: route.action,
    };
    match auth.decide(&ctx, value).map_err(early)? {
        Verdict::Allow => Ok(None),
        Verdict::Deny => Err(early(Refusal::forbidden("Forbidden"))),
        Verdict::Filter(f) => match filter::check(&f) {
            Ok(()) => Ok(Some(f)),
            Err(detail) => Err(early(Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                detail,
            ))),
        },
    }
}

/// A request's body and the value the hooks see of it.
pub(super) struct Call {
    /// The body as it came.
    bytes: Bytes,
    /// The body as a JSON object, when it is one (an empty body is `{}`).
    pub json: Option<Map<String, Value>>,
    /// What the hooks see, in LangGraph's shapes: the body with the
    /// path's ids, or a Store request's payload.
    pub value: Value,
    /// Whether the body must be written again from `json`.
    pub changed: bool,
}

impl Call {
    /// Reads the body (within the server's limit and time) and makes the
    /// hooks' value.
    async fn read(g: &Guard, parts: &Parts, body: Body, route: &Route) -> Result<Self, Early> {
        let bytes = read_body(&g.app, body).await.map_err(early)?;
        let json = if bytes.iter().all(u8::is_ascii_whitespace) {
            Some(Map::new())
        } else {
            serde_json::from_slice::<Map<String, Value>>(&bytes).ok()
        };
        let value = match route.target {
            Target::Store => store::value(route.action, json.as_ref(), &parts.uri),
            _ => {
                let mut value = json.clone().unwrap_or_default();
                for (k, v) in &route.ids {
                    value.entry(*k).or_insert_with(|| json!(v));
                }
                Value::Object(value)
            }
        };
        Ok(Call {
            bytes,
            json,
            value,
            changed: false,
        })
    }

    /// Carries what the hooks changed in the value back to the body (or,
    /// for a Store read, the query).
    fn write_back(&mut self, route: &Route, parts: &mut Parts) {
        let Some(json) = self.json.as_mut() else {
            return;
        };
        if route.target == Target::Store {
            self.changed |= store::write_back(route.action, &self.value, json, &mut parts.uri);
            return;
        }
        let Value::Object(value) = &self.value else {
            return;
        };
        let mut next = value.clone();
        for k in route.ids.keys() {
            if !json.contains_key(*k) {
                next.remove(*k);
            }
        }
        if next != *json {
            *json = next;
            self.changed = true;
        }
    }

    /// The body the handler reads, and its new length when it was
    /// written again.
    fn body(self) -> (Body, Option<usize>) {
        match (self.changed, self.json) {
            (true, Some(json)) => {
                let text = Value::Object(json).to_string();
                let len = text.len();
                (Body::from(text), Some(len))
            }
            _ => (Body::from(self.bytes), None),
        }
    }
}

/// The body, as the handlers' `JsonBody` reads it: over the limit a 413,
/// too slow a 408.
async fn read_body(app: &App, body: Body) -> Result<Bytes, ApiError> {
    let read = axum::body::to_bytes(body, BODY_LIMIT);
    match tokio::time::timeout(app.read_timeout, read).await {
        Err(_) => Err(ApiError::Timeout(app.read_timeout)),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(ApiError::TooLarge(BODY_LIMIT)),
    }
}

/// Applies a filter to what the route touches: an answer here when the
/// thread or assistant is not the caller's (or a list is empty for them).
async fn apply(
    g: &Guard,
    route: &Route,
    filter: Option<&Value>,
    call: &mut Call,
) -> Result<(), Early> {
    let Some(filter) = filter else {
        return Ok(());
    };
    match route.target {
        Target::Thread { run } => {
            if route.action == super::Action::CreateRun {
                stamp(&mut call.value, filter);
            }
            let missing = |id: &str| match run {
                true => ApiError::NotFound("Thread or assistant not found.".to_owned()),
                false => ApiError::no_thread(id),
            };
            let id = route.ids.get("thread_id").map_or("", String::as_str);
            check_thread(&g.app, id, filter, missing).await
        }
        Target::NewThread => {
            stamp(&mut call.value, filter);
            let id = call.value.get("thread_id").and_then(Value::as_str);
            let id = id.unwrap_or_default().to_owned();
            let taken =
                |id: &str| ApiError::Conflict(format!("Thread with ID {id} already exists"));
            check_thread(&g.app, &id, filter, taken).await
        }
        Target::OwnThread => {
            stamp(&mut call.value, filter);
            Ok(())
        }
        Target::Threads => Ok(()),
        // The handlers apply it: a created assistant is stamped, another
        // user's is not found, lists leave them out.
        Target::Assistant | Target::Assistants { .. } => Ok(()),
        Target::Store => store::narrow(route.action, &mut call.value, filter),
    }
}

/// A thread outside the filter is answered `refusal`; one the store
/// does not have is left to the handler.
async fn check_thread(
    app: &App,
    id: &str,
    filter: &Value,
    refusal: impl Fn(&str) -> ApiError,
) -> Result<(), Early> {
    if !is_uuid(id) {
        return Ok(());
    }
    match app.store.thread(id).await {
        Ok(Some(t)) if !filter::matches(&t.metadata, filter) => Err(early(refusal(id))),
        Ok(_) => Ok(()),
        Err(e) => Err(early(ApiError::from(e))),
    }
}

/// Whether the request deletes an assistant (and so, if its query asks,
/// its threads: the query is read by the handler, decoded).
fn deletes_threads(route: &Route) -> bool {
    matches!(route.resource, super::Resource::Assistants)
        && matches!(route.action, super::Action::Delete)
}

/// The assistants a threads request runs: its body's `assistant_id` (a
/// run), each item's (`/runs/batch`), a `run.start` command's, or its
/// path's (`/ag-ui/{assistant_id}`).
fn assistants_run(value: &Value, path: &str) -> Vec<String> {
    let id = |v: &Value| {
        v.get("assistant_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if let Some(agui) = path.strip_prefix("/ag-ui/") {
        // As the handler reads it (decoded), so an escape hides nothing.
        let decoded = crate::shape::percent_decode(agui);
        return vec![decoded.unwrap_or_else(|| agui.to_owned())];
    }
    match value {
        Value::Array(items) => items.iter().filter_map(id).collect(),
        one if one.get("method") == Some(&json!("run.start")) => {
            one.get("params").and_then(id).into_iter().collect()
        }
        one => id(one).into_iter().collect(),
    }
}

/// A run of an assistant a client created is a `read` of that assistant
/// too, as the official server checks it: refused by the assistants'
/// hook, a 403; outside its filter, answered as a missing assistant. The
/// graphs' own assistants are everyone's.
async fn run_assistant(g: &Guard, user: &Identity, id: &str) -> Result<(), Early> {
    // One that does not resolve is refused by the handler.
    let Ok(assistant) = g.app.resolve(id).await else {
        return Ok(());
    };
    if assistant.metadata.get("created_by") == Some(&json!("system")) {
        return Ok(());
    }
    let ctx = AuthContext {
        user,
        resource: super::Resource::Assistants,
        action: super::Action::Read,
    };
    let mut asked = json!({"assistant_id": assistant.id});
    match g.auth.decide(&ctx, &mut asked).map_err(early)? {
        Verdict::Allow => Ok(()),
        Verdict::Filter(f) if filter::matches(&assistant.metadata, &f) => Ok(()),
        Verdict::Filter(_) => {
            tracing::info!(assistant_id = %assistant.id, "refused: a run of another user's assistant");
            let missing = "Thread or assistant not found.".to_owned();
            Err(early(ApiError::NotFound(missing)))
        }
        Verdict::Deny => Err(early(Refusal::forbidden("Forbidden"))),
    }
}

/// Gives what a request creates the filter's fixed keys in its
/// `metadata`, so that it matches the filter.
fn stamp(value: &mut Value, filter: &Value) {
    let Value::Object(value) = value else {
        return;
    };
    let meta = value.entry("metadata").or_insert(Value::Null);
    if meta.is_null() {
        *meta = json!({});
    }
    // A metadata that is not an object is the handler's to refuse.
    if let Value::Object(meta) = meta {
        meta.extend(filter::stamp(filter));
    }
}
