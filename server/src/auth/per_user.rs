//! One SQLite file per user (what a LangGraph app's
//! `checkpointerForUser(userDid)` does): the caller's identity picks the
//! database, so a user's threads, runs, checkpoints and Store items live in
//! a file of their own, opened on the user's first request and kept open.
//! Each file is served by a server of its own, made like the one configured
//! (its graphs, hooks and timeouts), which the request is handed to once
//! authenticated.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::Extensions;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::service::Service;
use hyper_util::service::TowerToHyperService;
use tokio::sync::OnceCell;

use super::Identity;
use crate::error::ApiError;
use crate::Server;

/// Makes the server of one user's file.
pub(crate) type Template = Box<dyn Fn(PathBuf) -> Server + Send + Sync>;

/// The users' servers, by identity.
pub(crate) struct PerUser {
    dir: PathBuf,
    template: Template,
    servers: Mutex<HashMap<String, Arc<OnceCell<Router>>>>,
}

impl PerUser {
    /// Files under `dir`, each served by a server `template` makes.
    pub(crate) fn new(dir: PathBuf, template: Template) -> Self {
        PerUser {
            dir,
            template,
            servers: Mutex::default(),
        }
    }

    /// Hands a request the outer guard authenticated (its
    /// [`Identity`](super::Identity) among its extensions) to its user's
    /// server.
    pub(crate) async fn serve(&self, user: &str, req: Request) -> Response {
        let req = fresh(req);
        let router = match self.router(user).await {
            Ok(router) => router,
            Err(e) => {
                let cause = format!("cannot open the database of user `{user}`: {e}");
                return ApiError::Internal(cause).into_response();
            }
        };
        match TowerToHyperService::new(router).call(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// The user's server, opened on first use (once, however many
    /// requests wait on it).
    async fn router(&self, user: &str) -> Result<Router, crate::ServerError> {
        let cell = {
            let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(servers.entry(user.to_owned()).or_default())
        };
        let path = self.dir.join(file_name(user));
        let open = || (self.template)(path).router();
        cell.get_or_try_init(open).await.cloned()
    }
}

/// The request without what the outer router noted in it (its matched
/// route, its path's parameters), which the user's server notes again;
/// only the caller's identity is kept.
fn fresh(req: Request) -> Request {
    let (mut parts, body) = req.into_parts();
    let user = parts.extensions.remove::<Identity>();
    parts.extensions = Extensions::new();
    if let Some(user) = user {
        parts.extensions.insert(user);
    }
    Request::from_parts(parts, body)
}

/// The file of a user: the identity with every byte but ASCII letters,
/// digits, `-` and `_` written `%XX`, so no identity names a path outside
/// the directory (`..`, `/`) and two identities never share a file.
pub(crate) fn file_name(user: &str) -> String {
    let mut name = String::with_capacity(user.len() + 3);
    for byte in user.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name + ".db"
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn identities_are_safe_distinct_file_names() {
        assert_eq!(file_name("did:plc:abc"), "did%3Aplc%3Aabc.db");
        assert_eq!(file_name("../x"), "%2E%2E%2Fx.db");
        assert_ne!(file_name("a.b"), file_name("a%2Eb"));
    }
}
