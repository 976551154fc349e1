//! MCP sessions kept in the executor's store, for the processes that share it.
//!
//! rmcp writes a session's `initialize` here once its handshake is done, and reads it back when a
//! request names a session its process does not hold, to replay the handshake. The entry expires
//! with the session's idle timeout; a session in use renews it, at most once per third of the
//! timeout, so that requests cost no store write. A session is bound to the credential that
//! opened it: a restore asked for with another credential finds nothing (`404`, as for a session
//! that never was), and a request on a restored session with another credential is refused.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use serde::{Deserialize, Serialize};
use tool_runtime::Credential;
use tool_runtime::store::{Store, StoreError};

/// The version of the entry's format: an entry of another version is not read (its session is
/// unknown here, and its client opens a new one).
const VERSION: u32 = 1;

/// What the store keeps of a session.
#[derive(Serialize, Deserialize)]
struct Entry {
    version: u32,
    /// The credential that opened the session, by name.
    owner: Option<String>,
    /// rmcp's own state: the `initialize` parameters.
    session: SessionState,
}

/// A session this process holds, as the store keeps it.
struct Held {
    text: Arc<str>,
    owner: Option<String>,
    renewed: Instant,
}

tokio::task_local! {
    /// The credential of the request being served, for rmcp's calls into the store, which see
    /// only the session's id.
    static REQUESTER: Option<Credential>;
}

/// Serves `f` as a request of `credential`.
pub(super) async fn as_requester<F: Future>(credential: Option<Credential>, f: F) -> F::Output {
    REQUESTER.scope(credential, f).await
}

fn requester() -> Option<String> {
    REQUESTER
        .try_with(|c| c.as_ref().map(|c| c.as_str().to_owned()))
        .ok()
        .flatten()
}

/// The answer to a request on a session opened with another credential.
pub(super) fn foreign() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32600,
            "message": "this MCP session was opened with another token; open your own session",
        },
    });
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

/// The sessions kept in the store, and those of them this process holds.
pub(crate) struct Kept {
    store: Arc<dyn Store>,
    idle: Duration,
    held: Mutex<HashMap<String, Held>>,
}

impl Kept {
    pub(super) fn new(store: Arc<dyn Store>, idle: Duration) -> Arc<Self> {
        Arc::new(Kept {
            store,
            idle,
            held: Mutex::new(HashMap::new()),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // every update is a single insert, removal or field write
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls the store off the async threads when it blocks.
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        if !self.store.blocks() {
            return f(self.store.as_ref());
        }
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(store.as_ref()))
            .await
            .unwrap_or_else(|e| Err(StoreError::new(format!("the store call failed: {e}"))))
    }

    /// Session `id` served a request: its entry is renewed if a third of its time has passed
    /// since it was last written.
    pub(super) fn used(&self, id: &str) {
        let text = {
            let mut held = self.held();
            match held.get_mut(id) {
                Some(h) if h.renewed.elapsed() >= self.idle / 3 => {
                    h.renewed = Instant::now();
                    h.text.clone()
                }
                _ => return,
            }
        };
        self.renew(id, text);
    }

    fn renew(&self, id: &str, text: Arc<str>) {
        let (store, id, ttl) = (self.store.clone(), id.to_owned(), self.idle);
        tokio::task::spawn_blocking(move || {
            if let Err(error) = store.put_mcp_session(&id, &text, ttl) {
                tracing::warn!(session = %id, %error, "could not renew an MCP session in the store");
            }
        });
    }

    /// This process no longer holds session `id`.
    pub(super) fn forget(&self, id: &str) {
        self.held().remove(id);
    }

    /// Whether a request of `credential` may use session `id`, as far as the store's record
    /// says (a session this process opened is checked by the HTTP layer as well).
    pub(super) fn admits(&self, id: &str, credential: Option<&Credential>) -> bool {
        match self.held().get(id) {
            Some(Held {
                owner: Some(owner), ..
            }) => credential.is_some_and(|c| c.as_str() == owner),
            _ => true,
        }
    }

    /// Whether the store keeps session `id`, unexpired.
    pub(super) async fn stored(&self, id: &str) -> bool {
        let id = id.to_owned();
        matches!(
            self.call(move |s| s.get_mcp_session(&id)).await,
            Ok(Some(_))
        )
    }
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

impl SessionStore for Kept {
    fn load<'s, 'i, 'a>(&'s self, session_id: &'i str) -> Boxed<'a, Option<SessionState>>
    where
        's: 'a,
        'i: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            let id = session_id.to_owned();
            let text = match self.call(move |s| s.get_mcp_session(&id)).await {
                Ok(Some(text)) => text,
                Ok(None) => return Ok(None),
                // the session cannot be read: its client opens a new one, which this process
                // serves without the store
                Err(error) => {
                    tracing::warn!(session = session_id, %error, "could not read an MCP session from the store");
                    return Ok(None);
                }
            };
            let entry = match serde_json::from_str::<Entry>(&text) {
                Ok(entry) if entry.version == VERSION => entry,
                Ok(entry) => {
                    tracing::warn!(
                        session = session_id,
                        version = entry.version,
                        "an MCP session in the store has a format this server does not read"
                    );
                    return Ok(None);
                }
                Err(error) => {
                    tracing::warn!(session = session_id, %error, "an MCP session in the store is unreadable");
                    return Ok(None);
                }
            };
            if entry.owner.is_some() && entry.owner != requester() {
                return Ok(None);
            }
            let text: Arc<str> = text.into();
            self.held().insert(
                session_id.to_owned(),
                Held {
                    text: text.clone(),
                    owner: entry.owner,
                    renewed: Instant::now(),
                },
            );
            // taking the session over is a use of it
            self.renew(session_id, text);
            Ok(Some(entry.session))
        })
    }

    fn store<'s, 'i, 'st, 'a>(
        &'s self,
        session_id: &'i str,
        state: &'st SessionState,
    ) -> Boxed<'a, ()>
    where
        's: 'a,
        'i: 'a,
        'st: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            let owner = requester();
            let text: Arc<str> = serde_json::to_string(&Entry {
                version: VERSION,
                owner: owner.clone(),
                session: state.clone(),
            })?
            .into();
            let (id, written, ttl) = (session_id.to_owned(), text.clone(), self.idle);
            self.call(move |s| s.put_mcp_session(&id, &written, ttl))
                .await?;
            self.held().insert(
                session_id.to_owned(),
                Held {
                    text,
                    owner,
                    renewed: Instant::now(),
                },
            );
            Ok(())
        })
    }

    fn delete<'s, 'i, 'a>(&'s self, session_id: &'i str) -> Boxed<'a, ()>
    where
        's: 'a,
        'i: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            self.forget(session_id);
            let id = session_id.to_owned();
            self.call(move |s| s.delete_mcp_session(&id)).await?;
            Ok(())
        })
    }
}
