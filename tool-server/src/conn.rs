//! Accepting connections: each one served by hyper with a header-read timeout, so a client that
//! opens a connection and sends its request slowly, or not at all, is closed instead of holding
//! a socket and a task for as long as it likes.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How connections and MCP sessions are bounded ([`crate::ServerOptions`] sets them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Serving {
    pub(crate) header_read_timeout: Duration,
    pub(crate) sessions: crate::sessions::SessionLimits,
}

impl Default for Serving {
    fn default() -> Self {
        Serving {
            header_read_timeout: Duration::from_secs(10),
            sessions: crate::sessions::SessionLimits::default(),
        }
    }
}

/// How long requests in flight may take to finish once shutdown begins; a stream that never
/// ends (the activity feed, a chat run) is cut after it.
const GRACE: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting, lets the
/// requests in flight finish (up to [`GRACE`]) and returns.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) {
    // HTTP/1 only, as axum's own server speaks it; saying so also skips the sniffing of the
    // protocol from the first bytes, which would wait for them without any timeout
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let (stop, stopped) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    pause_after(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let mut stopped = stopped.clone();
        connections.spawn(async move {
            let mut conn = pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = stopped.wait_for(|s| *s) => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
        // finished connections are collected as we go, so the set holds only live ones
        while connections.try_join_next().is_some() {}
    }
    let _ = stop.send(true);
    let drained = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(GRACE, drained).await.is_err() {
        connections.abort_all();
    }
}

/// An accept that failed because of one connection (reset before it was accepted) is skipped;
/// one that failed because the process is out of descriptors or memory waits a moment, as
/// retrying at once would spin.
async fn pause_after(e: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tracing::error!(error = %e, "accepting a connection failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
