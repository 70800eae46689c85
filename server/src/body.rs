//! Request bodies: JSON read within a size limit, every failure a 413 or a
//! 422 with `{"detail": ..}` naming what is wrong.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use std::sync::Arc;

use crate::app::App;
use crate::error::ApiError;

/// The largest body a request may carry (the server's own limit; the
/// official server has none).
pub(crate) const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// A JSON body of type `T`; an empty body reads as `{}`.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<Arc<App>> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, app).await?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|_| ApiError::Invalid("Invalid JSON in request body".to_owned()))?;
        match T::deserialize(&value) {
            Ok(body) => Ok(JsonBody(body)),
            Err(e) => Err(ApiError::Invalid(refusal::<T>(&value, &e))),
        }
    }
}

/// A request's body, read within [`BODY_LIMIT`] (413 beyond) and the
/// server's read timeout (408): a `Content-Length` larger than what is
/// sent would otherwise hold the request, and its task, forever. A body
/// that breaks off or is malformed (a bad chunk size) is a 400 that says
/// so, not the HTTP library's words.
pub(crate) async fn read_body(req: Request, app: &Arc<App>) -> Result<Bytes, ApiError> {
    let read = tokio::time::timeout(app.read_timeout, Bytes::from_request(req, app));
    let read = read
        .await
        .map_err(|_| ApiError::Timeout(app.read_timeout))?;
    read.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(BODY_LIMIT)
        } else {
            tracing::debug!(error = %e, "request body unreadable");
            ApiError::BadRequest(
                "Could not read the request body: it is malformed (a bad chunk size?) or was cut off"
                    .to_owned(),
            )
        }
    })
}

/// Why `value` is no `T`, naming the field at fault by its path (serde's
/// own error names none) and no Rust type (`usize`, `struct Create`).
/// Read again through `serde_path_to_error`, once: a refusal costs one
/// more pass over the body, whatever its size.
fn refusal<T: DeserializeOwned>(value: &serde_json::Value, error: &serde_json::Error) -> String {
    let Err(traced) = serde_path_to_error::deserialize::<_, T>(value) else {
        return format!("Invalid request body: {}", plain_words(&error.to_string()));
    };
    let why = plain_words(&traced.inner().to_string());
    match traced.path().to_string().as_str() {
        "" | "." | "?" => format!("Invalid request body: {why}"),
        path => format!("{path}: {why}"),
    }
}

/// serde's wording with the Rust types it names put in JSON's terms.
fn plain_words(error: &str) -> String {
    let mut text = error.to_owned();
    for (rust, json) in [
        ("expected usize", "expected a non-negative integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a map", "expected an object"),
        ("expected a sequence", "expected an array"),
        ("invalid type: map", "invalid type: object"),
        ("invalid type: sequence", "invalid type: array"),
    ] {
        text = text.replace(rust, json);
    }
    // `expected struct Create` and `... with 4 elements`: a Rust name.
    if let Some(at) = text.find("expected struct ") {
        text.replace_range(at.., "expected an object");
    }
    text
}
