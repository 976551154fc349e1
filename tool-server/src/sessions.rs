//! MCP sessions at `/mcp`: each costs memory for as long as it lives, so sessions end after a
//! spell of inactivity and at most a fixed number live at once. A client that would open one
//! more is told so (`503`, `Retry-After`, a JSON-RPC error) instead of growing the process.
//!
//! Each session is also kept in the executor's store ([`kept`]), so that a request naming a
//! session this process does not hold (opened on another replica, or before a restart) is served
//! as if it did: rmcp replays the session's `initialize` and the client goes on without opening a
//! new one.
//!
//! The streams that answer a session's requests are kept too ([`streams`], in this process), so
//! that a client whose stream ended before its answer reconnects with `Last-Event-ID` and gets
//! the rest, and the server may end a stream that waits too long (SSE polling).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::store::SessionStore;
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId, SessionManager};
use tool_runtime::Credential;
use tool_runtime::store::Store;

mod kept;
mod streams;

use streams::{EventRef, ResumeError, Streams};

/// The header that names an MCP session; a request without it asks for a new session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long an MCP session may stay idle before it is closed, how many may live at once, and
/// how long a response waits for its request's answer before the client is told to poll.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    pub(crate) idle_timeout: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) poll_after: Option<Duration>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            idle_timeout: Duration::from_secs(60),
            max_sessions: 1_000,
            poll_after: None,
        }
    }
}

/// rmcp's in-process session manager with an idle timeout and a cap on live sessions, whose
/// sessions are kept in the store for other processes.
pub(crate) struct McpSessions {
    local: LocalSessionManager,
    limits: SessionLimits,
    /// Held while a session is made, so that the count checked is the count that holds.
    creating: tokio::sync::Mutex<()>,
    kept: Arc<kept::Kept>,
    streams: Arc<Streams>,
}

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// The cap on live sessions is reached.
    #[error("the server already has {0} MCP sessions open, its limit")]
    Full(usize),
    /// rmcp's own failure.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// A `Last-Event-ID` this process cannot resume from.
    #[error(transparent)]
    Resume(#[from] ResumeError),
}

impl McpSessions {
    /// Sessions within `limits`, kept in `store` for other processes.
    pub(crate) fn new(limits: SessionLimits, store: Arc<dyn Store>) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(limits.idle_timeout);
        McpSessions {
            local,
            limits,
            creating: tokio::sync::Mutex::new(()),
            kept: kept::Kept::new(store, limits.idle_timeout),
            streams: Streams::new(limits.idle_timeout, limits.poll_after),
        }
    }

    /// The store rmcp keeps each session's `initialize` in, to restore it on another process.
    pub(crate) fn kept(&self) -> Arc<dyn SessionStore> {
        self.kept.clone()
    }

    /// Whether session `id` is known here or in the store: a `DELETE` of a session another
    /// process holds ends it too.
    pub(crate) async fn known(&self, id: &SessionId) -> bool {
        self.local.has_session(id).await.unwrap_or(false) || self.kept.stored(id).await
    }

    /// How many sessions are open.
    pub(crate) async fn live(&self) -> usize {
        self.local.sessions.read().await.len()
    }

    async fn full(&self) -> bool {
        self.live().await >= self.limits.max_sessions
    }
}

impl SessionManager for McpSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionError> {
        let _one_at_a_time = self.creating.lock().await;
        if self.full().await {
            return Err(SessionError::Full(self.limits.max_sessions));
        }
        Ok(self.local.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        let held = self.local.has_session(id).await?;
        if held {
            self.kept.used(id);
        }
        Ok(held)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        // the store's entry stays until it expires or its client deletes it: another process
        // may serve the session now, and this copy only idled out
        self.kept.forget(id);
        self.streams.forget(id);
        if !self.local.has_session(id).await? {
            // a `DELETE` of a session another process holds: rmcp removes it from the store
            return Ok(());
        }
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        let answer = SessionManager::create_stream(&self.local, id, message).await?;
        Ok(self.streams.serve(id, answer))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(SessionManager::create_standalone_stream(&self.local, id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        match self.streams.check(id, &last_event_id)? {
            EventRef::Request { index, request } => Ok(self
                .streams
                .resume(id, index, request, &last_event_id)?
                .left_stream()),
            EventRef::Standalone => Ok(SessionManager::resume(&self.local, id, last_event_id)
                .await?
                .right_stream()),
        }
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, SessionError> {
        let _one_at_a_time = self.creating.lock().await;
        if self.full().await {
            self.kept.forget(&id);
            return Err(SessionError::Full(self.limits.max_sessions));
        }
        // a copy of the session numbers its requests from 0 again
        self.streams.forget(&id);
        Ok(self.local.restore_session(id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

/// Whether a request to `/mcp` is of a revision without sessions (2026-07-28 on): it opens
/// none and holds none, so the bounds on sessions do not apply to it. Its version header is
/// checked against its body by rmcp.
pub(crate) fn sessionless(headers: &axum::http::HeaderMap) -> bool {
    !headers.contains_key(SESSION_HEADER)
        && headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The key that seals MCP's `requestState`: the HMAC-SHA256 of a label under the approver's
/// token, so that replicas with the same tokens share it and no other credential reveals it.
pub(crate) fn request_state_key(approver: &str) -> [u8; 32] {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(approver.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(b"tool-server/mcp-request-state");
    mac.finalize().into_bytes().into()
}

/// In front of `/mcp`: a request for a new session while the cap is reached is answered `503`
/// with a JSON-RPC error, before rmcp reads it. Two requests racing for the last place are still
/// held to the cap by [`McpSessions::create_session`]; the loser's failure is answered the same,
/// and so is a request for a session kept in the store that this process has no room to take.
/// A session is bound to the credential that opened it, here as on the process that opened it.
pub(crate) async fn limit(
    State(sessions): State<Arc<McpSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let named = request.headers().get(SESSION_HEADER).cloned();
    let opens =
        request.method() == Method::POST && named.is_none() && !sessionless(request.headers());
    if opens && sessions.full().await {
        return full(&sessions.limits);
    }
    let credential = request.extensions().get::<Credential>().cloned();
    if let Some(id) = named.as_ref().and_then(|v| v.to_str().ok())
        && !sessions.kept.admits(id, credential.as_ref())
    {
        return kept::foreign();
    }
    // rmcp answers a resumption it cannot serve with an empty stream, which a client cannot
    // tell from a stream with nothing more to say
    if request.method() == Method::GET
        && let Some(id) = named.as_ref().and_then(|v| v.to_str().ok())
        && let Some(last) = request.headers().get("last-event-id")
    {
        let last = String::from_utf8_lossy(last.as_bytes());
        if let Err(e) = sessions.streams.check(&SessionId::from(id), &last) {
            return not_resumable(&e);
        }
    }
    let response = kept::as_requester(credential, next.run(request)).await;
    if (opens || named.is_some())
        && response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && sessions.full().await
    {
        return full(&sessions.limits);
    }
    response
}

fn not_resumable(error: &ResumeError) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": error.to_string()},
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

fn full(limits: &SessionLimits) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!(
                "the server already has {} MCP sessions open, its limit; sessions idle for {} s \
                 are closed, try again later",
                limits.max_sessions,
                limits.idle_timeout.as_secs()
            ),
        },
    });
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    let wait = limits.idle_timeout.as_secs().clamp(1, 60);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(wait));
    response
}
