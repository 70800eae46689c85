//! The accept loop: each connection served by hyper (HTTP/1.1, as
//! `axum::serve` with axum's `http1` feature) with a deadline on
//! its request headers and on each write (a client that stops reading an
//! answer, a stream, is disconnected), and a graceful stop that lets
//! requests in progress finish.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1::Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

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
        let stream = WriteDeadline::new(stream, read_timeout);
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

/// A connection whose writes fail once one has waited `limit` for the
/// client to make room (it stopped reading, its connection left open):
/// hyper then closes it, and what was held for it (a run's stream) is
/// let go, so a client that never reads holds nothing for long.
struct WriteDeadline {
    stream: TcpStream,
    limit: Duration,
    /// Set while a write waits: when it fires, the write fails.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    fn new(stream: TcpStream, limit: Duration) -> Self {
        WriteDeadline {
            stream,
            limit,
            stalled: None,
        }
    }

    /// `poll` (a write or a flush), failing once it has been pending for
    /// the limit.
    fn deadline<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if let Poll::Ready(done) = poll(Pin::new(&mut self.stream), cx) {
            self.stalled = None;
            return Poll::Ready(done);
        }
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                tracing::info!("a client took nothing for {limit:?}: disconnected");
                Poll::Ready(Err(io::ErrorKind::TimedOut.into()))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().deadline(cx, |s, cx| s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .deadline(cx, |s, cx| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().deadline(cx, |s, cx| s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
