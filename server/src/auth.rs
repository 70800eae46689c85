//! Custom auth, as LangGraph's server does it: an *authenticate* hook
//! turns a request's headers into an [`Identity`] (or refuses it, 401),
//! and *authorize* hooks, per resource and action, allow a request,
//! refuse it (403), or answer a [filter](Verdict::Filter) on metadata that
//! the server applies: stamped into the metadata of what the request
//! creates, and everything outside it answered as if it did not exist
//! (404) or left out of lists. Registered with
//! [`Server::authenticate`](crate::Server::authenticate) and
//! [`Server::authorize`](crate::Server::authorize).
//!
//! Every route of the API is behind the authenticate hook; `/ok`, `/info`
//! and the routes given to [`Server::routes`](crate::Server::routes) are
//! open, as the official server leaves its meta routes and custom routes
//! open. A route of a thread (`/threads/{id}/...`) the list below does
//! not name is a thread `update`, checked against the filter as the
//! others; any other route of the API is authenticated only.
//!
//! The resources and actions are LangGraph's: a thread's runs are the
//! thread's (`threads` `create_run`, `read`, `update` for a cancel,
//! `delete`, `search` for a list), assistants have `create`, `read` (one,
//! its versions, graph, schemas and subgraphs), `update` (a patch, or a
//! version made the latest), `delete` and `search` (a filter stamped on
//! the assistants a caller creates, another's not found; a run of one a
//! client created is a `read` of it too), and the Store
//! has `put`, `get`,
//! `search`, `delete` and `list_namespaces`; a Store hook may rewrite the
//! request's `namespace` (prefix it with the caller's id, say), which the
//! server then uses.

mod filter;
mod guard;
pub(crate) mod per_user;
mod route;
mod store;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

pub(crate) use guard::{guard, Guard, Scope, ThreadsDeleted};

/// Who a request comes from, as the authenticate hook found: an id, the
/// permissions the authorize hooks may check, and anything else the hook
/// learned (a display name, a tenant), which the hooks see too.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// The caller's id (LangGraph's `ctx.user.identity`).
    pub identity: String,
    /// What the caller may do, as the authenticate hook grants it
    /// (LangGraph's `ctx.permissions`).
    pub permissions: Vec<String>,
    /// Further facts about the caller, for the authorize hooks.
    pub extra: Map<String, Value>,
}

impl Identity {
    /// The caller `identity`, with no permissions and nothing else.
    pub fn new(identity: impl Into<String>) -> Self {
        Identity {
            identity: identity.into(),
            permissions: Vec::new(),
            extra: Map::new(),
        }
    }

    /// Grants `permission`.
    #[must_use]
    pub fn permission(mut self, permission: impl Into<String>) -> Self {
        self.permissions.push(permission.into());
        self
    }

    /// Records `key` = `value` among the caller's facts.
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// Whether the caller was granted `permission`.
    pub fn can(&self, permission: &str) -> bool {
        self.permissions.iter().any(|p| p == permission)
    }
}

/// What the authenticate hook sees of a request: its method, URI and
/// headers (the body is not read yet).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The request's method.
    pub method: Method,
    /// The request's URI (its path and query).
    pub uri: Uri,
    /// The request's headers.
    pub headers: HeaderMap,
}

impl Credentials {
    /// The request's path.
    pub fn path(&self) -> &str {
        self.uri.path()
    }

    /// The `Authorization` header, if it is text.
    pub fn authorization(&self) -> Option<&str> {
        self.headers.get(header::AUTHORIZATION)?.to_str().ok()
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme
    /// in any case).
    pub fn bearer(&self) -> Option<&str> {
        let (scheme, token) = self.authorization()?.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim())
            .filter(|t| !t.is_empty())
    }
}

/// A request refused by a hook: answered with `status` and
/// `{"detail": detail}`, as the official server answers LangGraph's
/// `Auth.exceptions.HTTPException`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The answer's status.
    pub status: StatusCode,
    /// The answer's `detail`.
    pub detail: String,
}

impl Refusal {
    /// A refusal with `status` and `detail`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Refusal {
            status,
            detail: detail.into(),
        }
    }

    /// 401 with `detail`: who the caller is could not be established.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Refusal::new(StatusCode::UNAUTHORIZED, detail)
    }

    /// 403 with `detail`: the caller may not do this.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Refusal::new(StatusCode::FORBIDDEN, detail)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.as_u16(), self.detail)
    }
}

impl std::error::Error for Refusal {}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        tracing::info!(status = self.status.as_u16(), detail = %self.detail, "refused by auth");
        (self.status, Json(json!({"detail": self.detail}))).into_response()
    }
}

/// What a request touches, in LangGraph's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// Threads and their runs, state and history.
    Threads,
    /// Assistants (here, the registered graphs).
    Assistants,
    /// The Store (`/store/...`).
    Store,
}

impl Resource {
    /// LangGraph's name: `threads`, `assistants`, `store`.
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Threads => "threads",
            Resource::Assistants => "assistants",
            Resource::Store => "store",
        }
    }
}

/// What a request does to its resource, in LangGraph's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// A thread or an assistant created.
    Create,
    /// A thread, run, state, history or assistant read (a run joined).
    Read,
    /// A thread patched, its state updated, a run cancelled; an
    /// assistant patched or set to one of its versions.
    Update,
    /// A thread, run or assistant deleted; a Store item deleted.
    Delete,
    /// Threads, runs or assistants listed or counted; Store items
    /// searched.
    Search,
    /// A run started on a thread (or on a thread of its own).
    CreateRun,
    /// A Store item written.
    Put,
    /// A Store item read.
    Get,
    /// The Store's namespaces listed.
    ListNamespaces,
}

impl Action {
    /// LangGraph's name: `create`, `read`, ..., `create_run`, `put`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Read => "read",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Search => "search",
            Action::CreateRun => "create_run",
            Action::Put => "put",
            Action::Get => "get",
            Action::ListNamespaces => "list_namespaces",
        }
    }
}

/// Which requests an authorize hook decides: every one, a resource's, an
/// action's on any resource, or one action on one resource. For a
/// request, the most specific hook registered decides (resource and
/// action, then resource, then action, then all), the last registered of
/// equals, as LangGraph picks its handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct On {
    resource: Option<Resource>,
    action: Option<Action>,
}

impl On {
    /// Every request (LangGraph's global `@auth.on`).
    pub fn all() -> Self {
        On {
            resource: None,
            action: None,
        }
    }

    /// Every action on `resource` (`@auth.on.threads`).
    pub fn resource(resource: Resource) -> Self {
        On {
            resource: Some(resource),
            action: None,
        }
    }

    /// `action` on any resource.
    pub fn action(action: Action) -> Self {
        On {
            resource: None,
            action: Some(action),
        }
    }

    /// `action` on `resource` (`@auth.on.threads.create`).
    pub fn only(resource: Resource, action: Action) -> Self {
        On {
            resource: Some(resource),
            action: Some(action),
        }
    }
}

/// What an authorize hook is asked about: who, and what they do to which
/// resource.
#[derive(Debug, Clone, Copy)]
pub struct AuthContext<'a> {
    /// The caller, as the authenticate hook found them.
    pub user: &'a Identity,
    /// What the request touches.
    pub resource: Resource,
    /// What it does.
    pub action: Action,
}

/// An authorize hook's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The request goes on as it is.
    Allow,
    /// The request is refused: 403 `{"detail": "Forbidden"}`.
    Deny,
    /// The request only sees and touches what matches this filter on
    /// metadata (`{"owner": "alice"}`; a value may be `{"$eq": v}` or
    /// `{"$contains": v}`, and `$or` / `$and` take lists of filters):
    /// what it creates gets the filter's plain keys in its metadata, and
    /// what does not match is answered 404 or left out of lists. On the
    /// Store, a search's `filter` on item values.
    Filter(Value),
}

/// The authenticate hook, as stored.
type Authenticate = dyn Fn(Credentials) -> Pin<Box<dyn Future<Output = Result<Identity, Refusal>> + Send>>
    + Send
    + Sync;

/// An authorize hook, as stored: it sees the request's value (its body
/// and path ids, in LangGraph's shapes) and may change it.
type Authorize = dyn Fn(&AuthContext<'_>, &mut Value) -> Result<Verdict, Refusal> + Send + Sync;

/// The hooks a server was given.
#[derive(Clone, Default)]
pub(crate) struct Auth {
    authenticate: Option<Arc<Authenticate>>,
    authorize: HashMap<On, Arc<Authorize>>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("authenticate", &self.authenticate.is_some())
            .field("authorize", &self.authorize.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Auth {
    /// Sets the authenticate hook.
    pub(crate) fn set_authenticate<F, Fut>(&mut self, hook: F)
    where
        F: Fn(Credentials) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Identity, Refusal>> + Send + 'static,
    {
        self.authenticate = Some(Arc::new(move |c| Box::pin(hook(c))));
    }

    /// Adds an authorize hook (replacing one registered for the same
    /// requests).
    pub(crate) fn add_authorize<F>(&mut self, on: On, hook: F)
    where
        F: Fn(&AuthContext<'_>, &mut Value) -> Result<Verdict, Refusal> + Send + Sync + 'static,
    {
        self.authorize.insert(on, Arc::new(hook));
    }

    /// Whether any hook was given: without one, the API is open.
    pub(crate) fn is_on(&self) -> bool {
        self.authenticate.is_some() || !self.authorize.is_empty()
    }

    /// Why these hooks cannot serve: authorize hooks with no authenticate
    /// hook to say who the caller is.
    pub(crate) fn problem(&self) -> Option<&'static str> {
        (self.authenticate.is_none() && !self.authorize.is_empty())
            .then_some("authorize hooks need an authenticate hook (Server::authenticate)")
    }

    /// Whether an authenticate hook was given.
    pub(crate) fn identifies(&self) -> bool {
        self.authenticate.is_some()
    }

    /// Who the request comes from.
    async fn identify(&self, credentials: Credentials) -> Result<Identity, Refusal> {
        match &self.authenticate {
            Some(hook) => hook(credentials).await,
            None => Err(Refusal::unauthorized("Unauthorized")),
        }
    }

    /// The decision of the most specific hook for this request; no hook
    /// allows it.
    fn decide(&self, ctx: &AuthContext<'_>, value: &mut Value) -> Result<Verdict, Refusal> {
        let keys = [
            On::only(ctx.resource, ctx.action),
            On::resource(ctx.resource),
            On::action(ctx.action),
            On::all(),
        ];
        match keys.iter().find_map(|k| self.authorize.get(k)) {
            Some(hook) => hook(ctx, value),
            None => Ok(Verdict::Allow),
        }
    }
}
