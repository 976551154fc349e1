//! Serving an [`Executor`] over HTTP: a JSON API, an approvals page for the person who decides,
//! and MCP, all on one axum [`Router`].
//!
//! The API runs every call through the executor, so a client of the API gets exactly the policy a
//! model in the agent loop gets: hydration against the canonical schema, confirmation, first-time
//! gates, rate limits, the cache and one audit record per call. A call that needs a person is
//! parked as a pending operation (the executor should be built with
//! [`Deferred`](tool_runtime::executor::Deferred)) and answered `202 Accepted`; the person
//! approves or denies it from the page or the API, from this process or any other sharing the
//! store.
//!
//! | Route | Role | What it does |
//! |---|---|---|
//! | `GET /api/v1/tools` | agent | canonical definitions, or a provider's declarations (`?provider=`) |
//! | `POST /api/v1/tools/{name}/check` | agent | hydrate only: the validated arguments or the errors |
//! | `POST /api/v1/tools/{name}/call` | agent | run through the executor (200, 202 pending, 404, 422) |
//! | `POST /api/v1/session` | none (a sign-in code) | trade a one-time code from [`SignInLinks`] for a short approver session |
//! | `GET /api/v1/pending`, `GET /api/v1/pending/{id}` | approver | pending operations: paged summaries, and one whole |
//! | `POST /api/v1/pending/{id}/approve`, `.../deny` | approver | decide (409 once decided) |
//! | `POST /api/v1/chat`, `GET /api/v1/chat/{run_id}` | agent | the agent loop run server-side (with [`ServerOptions::chat`]), as JSON or server-sent events; a run waiting for a person resumes once every operation is decided |
//! | `GET /api/v1/chat`, `POST /api/v1/chat/{run_id}/cancel` | agent | the runs checkpointed in the store (any replica answers; a starting server resumes those whose worker died), and cancelling one; a chat request's `session` continues that session's last answered run |
//! | `POST /api/v1/chat/{run_id}/resume` | agent | continues a stored run nobody drives (failed, its worker dead, or its calls all decided) on this replica, answered as `POST /api/v1/chat`; 409 while a worker drives it, a person has not decided or once it has ended |
//! | `GET /api/v1/chat/{run_id}/events` | agent | a stored run's steps as server-sent events from any replica, resumable with `Last-Event-ID` |
//! | `GET /api/v1/activity`, `GET /api/v1/activity/stream` | approver | the activity feed, as JSON or server-sent events |
//! | `GET /api/v1/questions`, `POST /api/v1/questions/{id}/answer` | approver | the questions the tools of running calls put to the person ([`CallContext::ask`](tool_runtime::CallContext::ask)), and answering one (accept with the form's content, checked against its schema; decline; cancel) |
//! | `GET /api/v1/running`, `GET /api/v1/live` | approver | the calls running now with their last progress, and the open questions and running calls as server-sent events |
//! | `GET /healthz`, `GET /readyz`, `GET /api/v1/openapi.json` | none | liveness, store reachability, the OpenAPI 3.1 document |
//! | `GET /` | none | the approvals page (it asks for the approver's token) |
//! | `/mcp` | agent, host | MCP over streamable HTTP: `tools/list` and `tools/call` through the executor; calls that need a person wait for the page, or, on a session opened with the host token, are confirmed in-band (`elicitation/create`); resources, prompts, completions and logging from the application's own handler ([`ServerOptions::mcp_app`]); a request's event stream resumable with `Last-Event-ID`, and polled for a long call's answer ([`ServerOptions::mcp_poll_after`]) |
//!
//! Approving is a person's act: bearer tokens for agents and for approvers ([`Tokens`]); the
//! agent's token never reaches approve or deny, and never confirms anything over MCP. An MCP host
//! that puts each confirmation to a person gets a third token (`TOOLS_HOST_TOKEN`): its sessions
//! are asked in-band, and the audit record names the host and the route. The credential also
//! says who started a call made over the API: the approver's token is a person
//! (`initiator: user`), the agent's and the host's are a model's. Every error, from any route,
//! is `{"error": {"code", "message", "retryable", "recover_action"?, "violations"?,
//! "details"?}}` with a status that matches its code.
//!
//! ```no_run
//! # async fn demo(executor: tool_runtime::Executor) -> Result<(), tool_server::ServeError> {
//! use tool_server::{ServerOptions, Tokens};
//!
//! // Tokens from TOOLS_AGENT_TOKEN and TOOLS_APPROVER_TOKEN, or fresh ones on loopback.
//! let options = ServerOptions::new(Tokens::from_env()?.unwrap_or_else(Tokens::generate));
//! tool_server::serve("127.0.0.1:8080".parse().unwrap(), executor, options).await
//! # }
//! ```
//!
//! With the `gateway` feature, `gateway::GatewayCommand` is `tools gateway`: the tools of other
//! people's MCP servers beside the application's own, served all these ways under one policy.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod auth;
mod body;
mod conn;
mod error;
#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;
mod hygiene;
mod link;
mod mcp_gate;
mod options;
mod page;
mod questions;
mod routes;
mod sessions;

// The README is the crate's page on crates.io: its example runs as a doctest, so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tool_mcp::server::McpServer;
use tool_providers::codec::DeclarationCache;
use tool_runtime::Executor;
use utoipa::OpenApi;

use auth::BearerScheme;
pub use auth::Role;
pub use error::ApiError;
pub use link::{Session, SignInLinks};
pub use options::{ServerOptions, TokenError, Tokens};
pub use routes::held::{HeldRefusal, HeldTool, HeldTools};
use sessions::McpSessions;

/// Everything a handler needs; cloned per request (every field is shared).
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) executor: Executor,
    pub(crate) declarations: Arc<DeclarationCache>,
    pub(crate) tokens: Arc<Tokens>,
    /// The largest request body read, in bytes.
    pub(crate) max_body_bytes: usize,
    /// The agent behind `/api/v1/chat`, when the server has one.
    pub(crate) chat: Option<Arc<routes::chat::Chat>>,
    /// Which role opened each MCP session.
    pub(crate) mcp_owners: Arc<auth::SessionOwners>,
    /// One-time sign-in codes and the approver sessions they opened.
    pub(crate) links: SignInLinks,
    /// The questions and progress of the calls this server runs, for the page.
    pub(crate) page: questions::PageSide,
    /// The imported tools held for a changed definition, when the server imports any.
    pub(crate) held_tools: Option<Arc<dyn routes::held::HeldTools>>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "tool-server",
        description = "Tools served through the tool-runtime executor: list, check, call, \
                       approve and deny pending operations, and the activity feed."
    ),
    modifiers(&BearerScheme),
    tags(
        (name = "tools", description = "The tool set and its calls"),
        (name = "approvals", description = "Pending operations and their decisions"),
        (name = "activity", description = "The audit trail as a feed"),
        (name = "questions", description = "What running calls ask the person, and how far \
                                             they are"),
        (name = "chat", description = "The agent loop, run server-side"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
struct ApiDoc;

/// The API, the approvals page and the OpenAPI document over `executor`, as a router an app can
/// serve on its own or merge into its own router.
pub fn router(executor: Executor, options: ServerOptions) -> Router {
    let (router, _) = split(executor, options);
    router
}

/// The OpenAPI 3.1 document of every route [`router`] serves, as served at
/// `/api/v1/openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, doc) = routes::api().split_for_parts();
    let mut base = ApiDoc::openapi();
    base.merge(doc);
    base
}

fn split(executor: Executor, options: ServerOptions) -> (Router, utoipa::openapi::OpenApi) {
    let max_body_bytes = options
        .max_body_bytes
        .unwrap_or_else(|| body::default_limit(executor.toolset().limits()));
    let sessions = Arc::new(McpSessions::new(
        options.serving.sessions,
        executor.store().clone(),
    ));
    let mcp = mcp_service(&executor, &options, max_body_bytes, sessions.clone());
    let hosts: Arc<[String]> = options.allowed_hosts.clone().into();
    let state = AppState {
        executor,
        declarations: Arc::new(DeclarationCache::new()),
        tokens: Arc::new(options.tokens),
        max_body_bytes,
        chat: options
            .agent
            .map(|agent| Arc::new(routes::chat::Chat::new(agent))),
        // no one token may fill the server's sessions: half of them at most, so an agent's
        // flood leaves room for a host's and an approver's
        mcp_owners: Arc::new(auth::SessionOwners::new(
            (options.serving.sessions.max_sessions / 2).max(1),
            options.serving.sessions.idle_timeout,
        )),
        links: options.links,
        page: options.page,
        held_tools: options.held_tools,
    };
    if let Some(chat) = &state.chat {
        routes::runs::recover(chat.clone(), state.executor.clone());
    }
    // replicas on one store show each other's questions and running calls
    questions::share(&state.page.live, state.executor.store().clone());
    let doc = Arc::new(openapi());
    let (api, _) = routes::api().split_for_parts();
    let document = doc.clone();
    let gate = mcp_gate::Gate {
        allowed_hosts: hosts.clone(),
        sessions: sessions.clone(),
        max_body_bytes,
    };
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(gate, mcp_gate::gate))
        .layer(axum::middleware::from_fn_with_state(
            sessions,
            sessions::limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::mcp_layer,
        ));
    let router = Router::new()
        .merge(api.with_state(state.clone()))
        .route(
            "/api/v1/openapi.json",
            axum::routing::get(move || async move { axum::Json(document.as_ref().clone()) }),
        )
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(hygiene::JsonErrors)
        .merge(page::router())
        .merge(mcp)
        .layer(hygiene::Outer {
            allowed: Arc::new(hygiene::AllowedHosts::new(&hosts)),
        });
    (router, doc.as_ref().clone())
}

/// MCP over streamable HTTP: one [`McpServer`] session per MCP session, all on the executor.
///
/// A request of MCP 2026-07-28 has no session: rmcp serves it on its own, and the server's
/// `requestState` is sealed with a key derived from the approver's token, so that replicas
/// configured alike take each other's confirmations in rounds.
fn mcp_service(
    executor: &Executor,
    options: &ServerOptions,
    max_body_bytes: usize,
    sessions: Arc<McpSessions>,
) -> StreamableHttpService<McpServer, McpSessions> {
    let key = sessions::request_state_key(options.tokens.approver());
    let mut server = McpServer::new(executor.clone())
        .request_state_key(&key)
        .expect("a derived key is 32 bytes")
        .named(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"));
    if let Some((name, version)) = &options.mcp_info {
        server = server.named(name, version);
    }
    if let Some(text) = &options.mcp_instructions {
        server = server.instructions(text);
    }
    if let Some(app) = &options.mcp_app {
        server = (app.0)(server);
    }
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.iter().cloned())
        .with_max_request_body_bytes(max_body_bytes);
    // a session opened here is served by any process on the same store
    config.session_store = Some(sessions.kept());
    StreamableHttpService::new(move || Ok(server.new_session()), sessions, config)
}

/// Why the server did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address needs both tokens set by the operator.
    #[error(
        "refusing to serve on {addr}: a non-loopback address needs both TOOLS_AGENT_TOKEN and \
         TOOLS_APPROVER_TOKEN set (generated tokens are for 127.0.0.1 only)"
    )]
    Exposed {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The tokens in the environment are unusable.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// Binding or serving failed.
    #[error("serving on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// The failure.
        source: std::io::Error,
    },
}

/// Serves [`router`] on `addr` until the process is interrupted (Ctrl-C) or the listener fails.
///
/// Refuses a non-loopback address unless both tokens were configured (not generated).
pub async fn serve(
    addr: SocketAddr,
    executor: Executor,
    options: ServerOptions,
) -> Result<(), ServeError> {
    let listener = bind(addr, &options).await?;
    serve_on(listener, executor, options).await
}

/// Binds `addr` after the exposure check of [`serve`]; `addr` may have port 0, the listener
/// tells the port it got.
pub async fn bind(
    addr: SocketAddr,
    options: &ServerOptions,
) -> Result<tokio::net::TcpListener, ServeError> {
    if !addr.ip().is_loopback() && options.tokens.generated() {
        return Err(ServeError::Exposed { addr });
    }
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Io { addr, source })
}

/// What a server started from a command line tells the person who started it, once it
/// listens on `local`: where the approvals page is (with generated tokens, a one-time sign-in
/// link, and the agent's token to give the agent), where MCP is and who may confirm in-band
/// there, and last the API's address (`API: http://ADDR/api/v1/tools ...`), which scripts and
/// tests read up to. One line per item, for standard error.
pub fn announcement(local: SocketAddr, options: &ServerOptions) -> String {
    let tokens = options.tokens();
    let mut lines = Vec::new();
    if tokens.generated() {
        // a one-time code, so the browser keeps no token of the server in its history
        lines.push(format!(
            "approvals page: {} (the link signs in once, within 10 minutes)",
            options.sign_in_links().link(local)
        ));
        lines.push(format!(
            "agent token (TOOLS_AGENT_TOKEN): {}",
            tokens.agent()
        ));
    } else {
        lines.push(format!(
            "approvals page: http://{local}/ (enter TOOLS_APPROVER_TOKEN)"
        ));
    }
    lines.push(if tokens.host().is_some() {
        format!("MCP: http://{local}/mcp  (TOOLS_HOST_TOKEN sessions confirm in-band)")
    } else {
        format!(
            "MCP: http://{local}/mcp  (changes wait for the page; an MCP host that shows each \
             confirmation to a person gets its own TOOLS_HOST_TOKEN)"
        )
    });
    lines.push(format!(
        "API: http://{local}/api/v1/tools  OpenAPI: http://{local}/api/v1/openapi.json"
    ));
    lines.join("\n")
}

/// Serves [`router`] on a listener from [`bind`] until Ctrl-C.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    executor: Executor,
    options: ServerOptions,
) -> Result<(), ServeError> {
    serve_until(listener, executor, options, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}

/// Serves [`router`] on a listener from [`bind`] until `shutdown` completes, then stops taking
/// connections and gives the requests in flight a few seconds to finish. Every connection must
/// send its request's headers within [`ServerOptions::header_read_timeout`].
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    executor: Executor,
    options: ServerOptions,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let header_read_timeout = options.serving.header_read_timeout;
    let app = router(executor, options);
    conn::serve(listener, app, header_read_timeout, shutdown).await;
    Ok(())
}
