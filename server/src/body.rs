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
        // A `Content-Length` larger than what is sent would hold the
        // request (and its task) forever.
        let read = tokio::time::timeout(app.read_timeout, Bytes::from_request(req, app));
        let read = read
            .await
            .map_err(|_| ApiError::Timeout(app.read_timeout))?;
        let bytes = read.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge(BODY_LIMIT)
            } else {
                ApiError::Invalid(format!("Could not read the request body: {e}"))
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|_| ApiError::Invalid("Invalid JSON in request body".to_owned()))?;
        serde_json::from_value(value)
            .map(JsonBody)
            .map_err(|e| ApiError::Invalid(format!("Invalid request body: {e}")))
    }
}
