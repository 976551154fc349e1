//! The connection behind the imported tools, kept up: when the server goes away (a stdio server
//! that exits or is killed, an HTTP server that drops the session), it is started or reached
//! again with backoff (from 100 ms, doubling, up to 30 s) and its tools listed again, and
//! meanwhile the tools answer `UNAVAILABLE` (retryable) without sending anything. A call that
//! was in flight when the connection ended is not sent again: it may have taken effect.

use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{Peer, RunningService, RunningServiceCancellationToken};

use super::watch::Watcher;

/// The current connection, if any; shared by the client and every tool imported from it. The
/// last of them dropped stops the connection (and a stdio server's process).
#[derive(Default)]
pub(crate) struct Conn {
    peer: RwLock<Option<Peer<RoleClient>>>,
    token: Mutex<Option<RunningServiceCancellationToken>>,
    closed: std::sync::atomic::AtomicBool,
}

impl Conn {
    /// The peer to send to, or `None` while the server is being started or reached again.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, service: &RunningService<RoleClient, Watcher>) {
        *self.peer.write().unwrap_or_else(|p| p.into_inner()) = Some(service.peer().clone());
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = Some(service.cancellation_token());
    }

    fn unset(&self) {
        *self.peer.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops the connection for good.
    pub(crate) fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.unset();
        if let Some(token) = self.token.lock().unwrap_or_else(|p| p.into_inner()).take() {
            token.cancel();
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.close();
    }
}

/// Keeps `conn` connected: waits for `service` to end, then starts it again with `start`, with
/// backoff, until the connection is closed or nobody holds it any more.
pub(crate) fn supervise<F, Fut>(
    server: Arc<str>,
    conn: &Arc<Conn>,
    service: RunningService<RoleClient, Watcher>,
    start: F,
) where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<RunningService<RoleClient, Watcher>, String>> + Send,
{
    conn.set(&service);
    let weak: Weak<Conn> = Arc::downgrade(conn);
    tokio::spawn(async move {
        let mut service = service;
        loop {
            let _ = service.waiting().await;
            let Some(conn) = weak.upgrade().filter(|c| !c.is_closed()) else {
                return;
            };
            conn.unset();
            drop(conn);
            tracing::warn!(server = %server, "the MCP server went away; starting it again");
            let mut wait = Duration::from_millis(100);
            service = loop {
                tokio::time::sleep(wait).await;
                if weak.upgrade().is_none_or(|c| c.is_closed()) {
                    return;
                }
                match start().await {
                    Ok(s) => break s,
                    Err(e) => {
                        tracing::warn!(server = %server, "the MCP server could not be started again: {e}");
                        wait = (wait * 2).min(Duration::from_secs(30));
                    }
                }
            };
            match weak.upgrade().filter(|c| !c.is_closed()) {
                Some(conn) => conn.set(&service),
                None => return,
            }
        }
    });
}
