//! Which resource and action each route of the API is, in LangGraph's
//! names, and what of the request the server checks against a filter.

use std::collections::HashMap;

use axum::http::Method;

use super::{Action, Resource};

/// What a request touches, for the hooks and for applying a filter.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Route {
    pub resource: Resource,
    pub action: Action,
    pub target: Target,
    /// The ids in its path (`thread_id`, `run_id`, `assistant_id`).
    pub ids: HashMap<&'static str, String>,
}

/// What a filter is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// A thread named in the path: one outside the filter is answered as
    /// a missing one; a run on it (`run: true`) as the server answers a
    /// run on a missing thread.
    Thread { run: bool },
    /// `POST /threads`: the new thread is stamped; an id taken by a
    /// thread outside the filter is a conflict.
    NewThread,
    /// A stateless run: the thread made for it is stamped.
    OwnThread,
    /// `/threads/search`, `/count` and `/prune`: the filter goes to the
    /// handler.
    Threads,
    /// One assistant: its metadata is checked.
    Assistant,
    /// `/assistants/search` (`count: false`) and `/count`.
    Assistants { count: bool },
    /// A Store request: its namespace may be rewritten, a search
    /// filtered.
    Store,
}

/// The route a request matched (`pattern`, axum's `MatchedPath`), or
/// `None` for a route the hooks do not see.
pub(super) fn classify(method: &Method, pattern: &str, path: &str) -> Option<Route> {
    let ids = path_ids(pattern, path);
    let (resource, action, target) = match pattern.split('/').nth(1)? {
        "threads" => threads(method, pattern)?,
        "runs" => stateless(method, pattern)?,
        "assistants" => assistants(method, pattern)?,
        "store" => (Resource::Store, store(method, pattern)?, Target::Store),
        // AG-UI (`agui.rs`): a run on the thread its body names, which the
        // handler checks against the filter and stamps when it makes it.
        "ag-ui" if method == Method::POST => {
            (Resource::Threads, Action::CreateRun, Target::OwnThread)
        }
        _ => return None,
    };
    Some(Route {
        resource,
        action,
        target,
        ids,
    })
}

fn threads(method: &Method, pattern: &str) -> Option<(Resource, Action, Target)> {
    let thread = Target::Thread { run: false };
    let run = Target::Thread { run: true };
    let (action, target) = match (method.as_str(), pattern) {
        ("POST", "/threads") => (Action::Create, Target::NewThread),
        ("POST", "/threads/search" | "/threads/count") => (Action::Search, Target::Threads),
        // As the official server: a delete of each thread named, every
        // one of which must be the caller's (checked by the handler).
        ("POST", "/threads/prune") => (Action::Delete, Target::Threads),
        ("GET", "/threads/{id}/runs") => (Action::Search, thread),
        (
            "POST",
            "/threads/{id}/runs" | "/threads/{id}/runs/stream" | "/threads/{id}/runs/wait",
        ) => (Action::CreateRun, run),
        ("POST", "/threads/{id}/runs/{run_id}/cancel") => (Action::Update, thread),
        ("GET", _) => (Action::Read, thread),
        ("POST", "/threads/{id}/history" | "/threads/{id}/state/checkpoint") => {
            (Action::Read, thread)
        }
        ("POST", "/threads/{id}/copy") => (Action::Read, thread),
        ("DELETE", _) => (Action::Delete, thread),
        // A thread's other routes (its state updated, its metadata
        // patched, and routes added later) change it.
        _ if pattern.starts_with("/threads/{") => (Action::Update, thread),
        _ => return None,
    };
    Some((Resource::Threads, action, target))
}

/// A run on a thread of its own (`POST /runs/stream`, `/runs/wait`,
/// `/runs`, `/runs/batch`): the thread it makes is the caller's; and
/// `POST /runs/cancel`.
fn stateless(method: &Method, pattern: &str) -> Option<(Resource, Action, Target)> {
    match (method.as_str(), pattern) {
        ("POST", "/runs" | "/runs/stream" | "/runs/wait") => {
            Some((Resource::Threads, Action::CreateRun, Target::OwnThread))
        }
        // The hook sees the batch once (its body is a list); the handler
        // stamps each run's thread with the filter's fixed keys.
        ("POST", "/runs/batch") => Some((Resource::Threads, Action::CreateRun, Target::Threads)),
        // As the official server: an update of the threads whose runs
        // are cancelled; the handler leaves out those outside the filter.
        ("POST", "/runs/cancel") => Some((Resource::Threads, Action::Update, Target::Threads)),
        _ => None,
    }
}

/// An assistant's routes: created, changed (a patch, or a version made
/// the latest), deleted, listed, or read (its versions, graph, schemas and
/// subgraphs too).
fn assistants(method: &Method, pattern: &str) -> Option<(Resource, Action, Target)> {
    let (action, target) = match (method.as_str(), pattern) {
        ("POST", "/assistants") => (Action::Create, Target::Assistant),
        ("POST", "/assistants/search") => (Action::Search, Target::Assistants { count: false }),
        ("POST", "/assistants/count") => (Action::Search, Target::Assistants { count: true }),
        ("POST", "/assistants/{id}/latest") | ("PATCH", _) => (Action::Update, Target::Assistant),
        ("POST", "/assistants/{id}/versions") | ("GET", _) => (Action::Read, Target::Assistant),
        ("DELETE", _) => (Action::Delete, Target::Assistant),
        _ => return None,
    };
    Some((Resource::Assistants, action, target))
}

fn store(method: &Method, pattern: &str) -> Option<Action> {
    Some(match (method.as_str(), pattern) {
        ("PUT", "/store/items") => Action::Put,
        ("GET", "/store/items") => Action::Get,
        ("DELETE", "/store/items") => Action::Delete,
        ("POST", "/store/items/search") => Action::Search,
        ("POST", "/store/namespaces") => Action::ListNamespaces,
        _ => return None,
    })
}

/// The ids a path gives for its pattern's `{id}` (a thread's, or an
/// assistant's under `/assistants`) and `{run_id}`.
fn path_ids(pattern: &str, path: &str) -> HashMap<&'static str, String> {
    let owner = match pattern.split('/').nth(1) {
        Some("assistants") => "assistant_id",
        _ => "thread_id",
    };
    let pairs = pattern.split('/').zip(path.split('/'));
    pairs
        .filter_map(|(p, v)| match p {
            "{id}" | "{thread_id}" => Some((owner, v.to_owned())),
            "{run_id}" => Some(("run_id", v.to_owned())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_langgraphs_resource_and_action() {
        let r = classify(
            &Method::POST,
            "/threads/{id}/runs/{run_id}/cancel",
            "/threads/t/runs/r/cancel",
        )
        .unwrap();
        assert_eq!((r.resource, r.action), (Resource::Threads, Action::Update));
        assert_eq!(r.ids["thread_id"], "t");
        assert_eq!(r.ids["run_id"], "r");
        let r = classify(&Method::GET, "/assistants/{id}", "/assistants/a").unwrap();
        assert_eq!((r.action, r.target), (Action::Read, Target::Assistant));
        assert_eq!(r.ids["assistant_id"], "a");
        let r = classify(&Method::PATCH, "/assistants/{id}", "/assistants/a").unwrap();
        assert_eq!(r.action, Action::Update);
        let r = classify(&Method::POST, "/assistants", "/assistants").unwrap();
        assert_eq!(r.action, Action::Create);
        let r = classify(&Method::DELETE, "/assistants/{id}", "/assistants/a").unwrap();
        assert_eq!(r.action, Action::Delete);
        let r = classify(
            &Method::POST,
            "/threads/{id}/commands",
            "/threads/t/commands",
        )
        .unwrap();
        assert_eq!(r.action, Action::Update);
        let r = classify(&Method::POST, "/runs/wait", "/runs/wait").unwrap();
        assert_eq!((r.action, r.target), (Action::CreateRun, Target::OwnThread));
        assert!(classify(&Method::GET, "/ok", "/ok").is_none());
    }
}
