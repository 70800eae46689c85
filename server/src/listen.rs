//! The accept loop: each connection served by hyper (HTTP/1.1, as
//! `axum::serve` with axum's `http1` feature) with a deadline on
//! its request headers, and a graceful stop that lets requests in progress
//! finish.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1::Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// Serves `router` on `listener` until `shutdown`, then runs `drain`
/// (the server's runs finish or are handed over) and waits for the
/// connections in progress. A client that does not finish a request's
/// headers within `read_timeout` (an idle keep-alive connection
/// included) is disconnected.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
    drain: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted (reset,
                // out of descriptors) is no reason to stop serving.
                Err(error) => {
                    tracing::warn!(%error, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Each SSE event is a small write: with Nagle's algorithm on, the
        // second one waits for the client's delayed ACK (40 ms on Linux),
        // the lag a client sees before a run's first `values` event.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%peer, %error, "could not set TCP_NODELAY");
        }
        // A router serves any body hyper reads (`Incoming`) as it is.
        let service = TowerToHyperService::new(router.clone());
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "connection closed");
            }
        });
    }
    drop(listener);
    drain.await;
    graceful.shutdown().await;
    Ok(())
}
