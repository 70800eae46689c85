//! Request bodies: JSON read within a size limit, every failure a 413 or a
//! 422 with `{"detail": ..}` naming what is wrong.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The largest body a request may carry (the server's own limit; the
/// official server has none).
pub(crate) const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// A JSON body of type `T`; an empty body reads as `{}`.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
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
