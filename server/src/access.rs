//! One log event per request: method, path, status and duration, at
//! `info` for refusals and failures (4xx, 5xx), `debug` otherwise.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// Logs the request once its answer's head is ready (a stream's body
/// may go on long after).
pub(crate) async fn log(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let started = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16();
    let took = started.elapsed();
    if status >= 400 {
        tracing::info!(%method, %path, status, ?took, "request");
    } else {
        tracing::debug!(%method, %path, status, ?took, "request");
    }
    response
}
