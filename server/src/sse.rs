//! Server-sent events framed as the official server frames them:
//! `event: NAME\r\ndata: JSON\r\n\r\n`, compact JSON on one line.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use tokio::sync::mpsc;

/// One frame; `data` is compact JSON.
pub(crate) fn frame(event: &str, data: &str) -> String {
    format!("event: {event}\r\ndata: {data}\r\n\r\n")
}

/// One frame with its `id:` line (after the data, where the official
/// server writes it), for streams a client may resume.
pub(crate) fn frame_with_id(event: &str, data: &str, id: impl std::fmt::Display) -> String {
    format!("event: {event}\r\ndata: {data}\r\nid: {id}\r\n\r\n")
}

/// A streamed response of the frames `rx` yields, with the headers the
/// official server sends (`Location` of the run's stream and
/// `Content-Location` of the run itself).
pub(crate) fn response(
    rx: mpsc::Receiver<String>,
    location: &str,
    content_location: &str,
) -> Response {
    let stream = frames(rx);
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    let set = |v: &str| HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("/"));
    headers.insert(header::LOCATION, set(location));
    headers.insert(header::CONTENT_LOCATION, set(content_location));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    response
}

/// How long a stream stays silent before a heartbeat comment (the
/// official server's period), so proxies keep an idle connection open.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// The receiver as a body stream, with a `: heartbeat` comment after each
/// silent period: it ends when the run's task drops its sender.
fn frames(
    rx: mpsc::Receiver<String>,
) -> impl agent_state::futures::Stream<Item = Result<String, Infallible>> {
    agent_state::futures::stream::unfold(rx, |mut rx| async move {
        match tokio::time::timeout(HEARTBEAT, rx.recv()).await {
            Ok(frame) => frame.map(|frame| (Ok(frame), rx)),
            Err(_) => Some((Ok(": heartbeat\r\n\r\n".to_owned()), rx)),
        }
    })
}
