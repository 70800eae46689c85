//! CORS as the official server sends it (any origin, the pagination and
//! `content-location` headers exposed), and JSON answers for unknown
//! routes and methods.

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

const METHODS: &str = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";
const EXPOSED: &str = "x-pagination-total, x-pagination-next, content-location";

/// Answers preflights, and marks every answer to a browser readable.
pub(crate) async fn cors(req: Request, next: Next) -> Response {
    let headers = req.headers();
    let preflight = req.method() == Method::OPTIONS
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        return preflight_answer(headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS).cloned());
    }
    let from_browser = headers.contains_key(header::ORIGIN);
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    if from_browser {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
    }
    response
}

fn preflight_answer(asked_headers: Option<HeaderValue>) -> Response {
    let mut response = (StatusCode::OK, "OK").into_response();
    let h = response.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(METHODS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(asked) = asked_headers {
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked);
    }
    response
}

/// An unknown route: 404 `{"detail": "Not Found"}`, logged.
pub(crate) async fn not_found() -> ApiError {
    ApiError::NotFound("Not Found".to_owned())
}

/// A known route with another method: 405, logged.
pub(crate) async fn method_not_allowed() -> Response {
    tracing::info!(status = 405, "request refused: method not allowed");
    let body = axum::Json(serde_json::json!({"detail": "Method Not Allowed"}));
    (StatusCode::METHOD_NOT_ALLOWED, body).into_response()
}
