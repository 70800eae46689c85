//! Refusals, answered as the official server answers them: a status and
//! `{"detail": ..}`, each logged.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Why a request was refused.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// 404: no such thread, run, assistant or route.
    NotFound(String),
    /// 409: a thread that exists, or is busy.
    Conflict(String),
    /// 422: a body or an id that does not validate.
    Invalid(String),
    /// 400: a request the graph refuses (an unknown `as_node`, ...).
    BadRequest(String),
    /// 413: a body over the limit.
    TooLarge(usize),
    /// 408: a body that did not arrive in time.
    Timeout(std::time::Duration),
    /// 500: the store failed; the cause is logged, not shown.
    Internal(String),
    /// 503: the database cannot serve now (its file was deleted, its
    /// connections are all taken); the detail says which, naming no path.
    Unavailable(String),
}

impl ApiError {
    /// The 422 for a path id that is not a UUID (`..` included).
    pub(crate) fn not_uuid(what: &str) -> Self {
        ApiError::Invalid(format!("Invalid {what} ID: must be a UUID"))
    }

    /// The 404 for a thread.
    pub(crate) fn no_thread(id: &str) -> Self {
        ApiError::NotFound(format!("Thread with ID {id} not found"))
    }

    /// `STATUS: detail`, as the official server words a refusal inside
    /// another answer (the thread protocol's `unknown_error`).
    pub(crate) fn status_and_detail_text(self) -> String {
        let (status, detail) = self.status_and_detail();
        format!("{}: {detail}", status.as_u16())
    }

    fn status_and_detail(self) -> (StatusCode, String) {
        match self {
            ApiError::NotFound(d) => (StatusCode::NOT_FOUND, d),
            ApiError::Conflict(d) => (StatusCode::CONFLICT, d),
            ApiError::Invalid(d) => (StatusCode::UNPROCESSABLE_ENTITY, d),
            ApiError::BadRequest(d) => (StatusCode::BAD_REQUEST, d),
            ApiError::TooLarge(limit) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Request body too large: the limit is {limit} bytes"),
            ),
            ApiError::Timeout(limit) => (
                StatusCode::REQUEST_TIMEOUT,
                format!("Request body not received within {} s", limit.as_secs_f64()),
            ),
            ApiError::Internal(cause) => {
                tracing::error!(%cause, "request failed in the store");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal server error".to_owned(),
                )
            }
            ApiError::Unavailable(d) => {
                tracing::error!(detail = %d, "request failed: the database is unavailable");
                (StatusCode::SERVICE_UNAVAILABLE, d)
            }
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(error: rusqlite::Error) -> Self {
        ApiError::Internal(error.to_string())
    }
}

/// What a client sees of a store failure: a generic 500 for the
/// database's own errors (their text may name a file or a host, so it is
/// only logged), a 503 saying why for the file gone or the pool full.
impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        use crate::store::StoreError;
        match error {
            StoreError::Db(e) => ApiError::Internal(e.to_string()),
            #[cfg(feature = "postgres")]
            StoreError::Busy => ApiError::Unavailable(
                "The database is busy: no connection came free in time; retry later".to_owned(),
            ),
            StoreError::Gone => ApiError::Unavailable(format!(
                "The database is unavailable: {}",
                crate::store::GONE
            )),
        }
    }
}

/// What a client sees of a store's refusal or failure, with the official
/// server's statuses: a 422 for a label or a body that does not validate,
/// a 400 for what its store refuses (an empty namespace, the reserved
/// root, an unknown filter operator), a logged 500 for a failure.
impl From<agent_state::store::StoreError> for ApiError {
    fn from(error: agent_state::store::StoreError) -> Self {
        use agent_state::store::StoreError;
        let bad_request = match &error {
            StoreError::InvalidNamespace { namespace, .. } => {
                namespace.first().is_none_or(|root| root == "langgraph")
            }
            StoreError::InvalidFilter { .. } => true,
            _ => false,
        };
        match error {
            StoreError::Backend { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Embedding { .. } => ApiError::Internal(error.to_string()),
            refused if bad_request => ApiError::BadRequest(refused.to_string()),
            refused => ApiError::Invalid(refused.to_string()),
        }
    }
}

impl ApiError {
    /// What a client sees of a graph's refusal: a 400 saying why, unless
    /// the checkpoints could not be stored (a 500 whose cause, which may
    /// name a file or a host, is only logged; a 503 when the file went
    /// away).
    pub(crate) fn from_graph(error: agent_state::graph::GraphError) -> Self {
        use agent_state::graph::GraphError;
        match error {
            GraphError::Checkpoint(e) if crate::watch::file_gone(&e) => {
                crate::store::StoreError::Gone.into()
            }
            GraphError::Checkpoint(e) => ApiError::Internal(e.to_string()),
            other => ApiError::BadRequest(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let cut_short = matches!(self, ApiError::TooLarge(_) | ApiError::Timeout(_));
        let (status, detail) = self.status_and_detail();
        if status.is_client_error() {
            tracing::info!(status = status.as_u16(), %detail, "request refused");
        }
        let mut response = (status, Json(json!({ "detail": detail }))).into_response();
        if cut_short {
            // The rest of the body is never read: the connection cannot
            // carry another request, so the client is told not to reuse it.
            let close = axum::http::HeaderValue::from_static("close");
            response
                .headers_mut()
                .insert(axum::http::header::CONNECTION, close);
        }
        response
    }
}
