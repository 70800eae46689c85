//! The page (`page.html`, served at `/`): a LangGraph client written by
//! hand, no framework, no build step. It creates a thread (`POST
//! /threads`), streams a debate on it (`POST /threads/{id}/runs/stream`
//! in the `values`, `updates` and `messages-tuple` modes), draws each turn
//! as its tokens arrive, and resumes a thread it is given.

use axum::response::Html;
use axum::routing::get;
use axum::Router;

/// The page's route.
pub fn routes() -> Router {
    Router::new().route("/", get(|| async { Html(include_str!("page.html")) }))
}
