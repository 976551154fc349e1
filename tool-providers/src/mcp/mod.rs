//! Serving a [`ToolSet`](tool_runtime::ToolSet) to MCP clients, through the executor.
//!
//! [`McpServer`] is an rmcp [`ServerHandler`]: `tools/list` answers with the MCP codec's
//! declarations (the canonical schema as `inputSchema`, `outputSchema` when object-rooted, the
//! safety category as annotations), built once and cached; `tools/call` goes through
//! [`Executor::call`], so an MCP client gets exactly the policy a model in the agent loop gets:
//! hydration against the canonical schema, confirmation, first-time gates, rate limits, the
//! cache and one audit record per call.
//!
//! Nothing the client sends approves a call by itself. A server cannot tell an MCP host that
//! shows its person a form from a program that answers the form on its own, so confirming
//! in-band (`elicitation/create`: the host shows the preview; accept runs the call, with edited
//! arguments if the person typed any; decline or no answer within the confirmation timeout is a
//! denial) is a grant the operator gives, never implied by a client declaring the capability
//! ([`InBandConfirmation`]): by default only a call whose HTTP request the transport marked with
//! a [`HostGrant`] (a credential issued to such hosts) is confirmed in-band, and the audit record
//! names the host (`decided_by: host`, `decided_via: MCP host "NAME" via elicitation`). Every
//! other call that needs a person goes to the executor's [`ConfirmationHandler`] (with
//! [`Deferred`], the client gets the pending operation's id and preview, and a person approves it
//! later through [`Executor::approve`], from any process sharing the store).
//!
//! Every failure is a `CallToolResult` with `isError: true` and the structured error (code,
//! `recover_action`, pointers) as its text, as the MCP specification asks for tool errors, so
//! the model on the other side can correct itself; a denial is the user's choice and is not
//! flagged as an error.
//!
//! ```no_run
//! # async fn demo(executor: tool_runtime::Executor) -> Result<(), Box<dyn std::error::Error>> {
//! use tool_providers::mcp::McpServer;
//!
//! // Serve the executor's tools on stdin/stdout until the client disconnects.
//! McpServer::new(executor).serve_stdio().await?;
//! # Ok(()) }
//! ```
//!
//! [`ConfirmationHandler`]: tool_runtime::executor::ConfirmationHandler
//! [`Deferred`]: tool_runtime::executor::Deferred

mod door;
mod elicit;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ServiceExt;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tool_runtime::executor::Outcome;
use tool_runtime::{CallContext, ErrorCode, Executor, ToolCall, ToolError, hydrate::Arguments};

pub use door::DEFAULT_MAX_REQUEST_BYTES;
pub use elicit::EDITED_ARGUMENTS_FIELD;

use crate::codec::mcp::Mcp;
use crate::codec::{Codec, CodecError, ToolOutcome, ToolResult};

/// Errors of building or running the MCP server.
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    /// A tool's definition has no valid MCP declaration.
    #[error("tool {name:?} cannot be declared over MCP: {reason}")]
    Declaration {
        /// The tool.
        name: String,
        /// Why.
        reason: String,
    },
    /// The transport failed during the initialize handshake or while serving.
    #[error("MCP transport: {0}")]
    Transport(String),
}

/// Which clients may confirm calls in-band, with `elicitation/create`.
///
/// The answer to an elicitation is whatever the client sends; only the operator knows whether a
/// person stands behind it, so the server asks only where the operator said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InBandConfirmation {
    /// Only calls whose HTTP request carries a [`HostGrant`] in its extensions (the default).
    /// The HTTP layer inserts it for a credential issued to hosts that show elicitations to a
    /// person; over stdio no request carries one, so nothing is confirmed in-band.
    #[default]
    Granted,
    /// Every client that declares the capability: for a server that an MCP host starts over
    /// stdio, where the operator configured that host and vouches that it shows a person the form.
    AnyClient,
    /// No client: every call that needs a person goes to the executor's handler.
    Never,
}

/// The mark an HTTP layer puts in a request's extensions when its credential was issued to an
/// MCP host that shows elicitations to a person: under [`InBandConfirmation::Granted`], the
/// `tools/call` requests that carry it are confirmed in-band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostGrant;

/// An MCP server over an [`Executor`]: cheap to clone, clones share the executor and the
/// declarations.
#[derive(Clone)]
pub struct McpServer {
    executor: Executor,
    tools: Arc<Vec<Tool>>,
    info: Implementation,
    instructions: Option<String>,
    /// One MCP connection is one session for the first-time gates; several connections to the
    /// same server (clones) are told apart by this id.
    session: Arc<str>,
    /// The largest message [`McpServer::serve_io`] reads.
    max_request_bytes: usize,
    /// Which clients may confirm in-band.
    in_band: InBandConfirmation,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.tools.len())
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

static SESSIONS: AtomicU64 = AtomicU64::new(1);

impl McpServer {
    /// Serves every tool of `executor`'s tool set, named after this crate.
    ///
    /// # Panics
    /// If a tool's definition cannot be declared over MCP, which a registered definition always
    /// can (registration checked its schema); see [`McpServer::try_new`] for a `Result`.
    pub fn new(executor: Executor) -> Self {
        Self::try_new(executor).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Serves every tool of `executor`'s tool set; fails on a definition without a valid MCP
    /// declaration.
    pub fn try_new(executor: Executor) -> Result<Self, McpServerError> {
        let tools = executor
            .toolset()
            .definitions()
            .map(|def| {
                let fail = |reason: String| McpServerError::Declaration {
                    name: def.name.to_string(),
                    reason,
                };
                let declaration = Mcp
                    .declare(def)
                    .map_err(|e: CodecError| fail(e.to_string()))?;
                serde_json::from_value::<Tool>(declaration).map_err(|e| fail(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(McpServer {
            executor,
            tools: Arc::new(tools),
            info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            instructions: None,
            session: format!("mcp-{}", SESSIONS.fetch_add(1, Ordering::Relaxed)).into(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            in_band: InBandConfirmation::default(),
        })
    }

    /// The name and version the server reports in `initialize`.
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model, sent in `initialize`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The largest JSON-RPC message [`McpServer::serve_io`] and [`McpServer::serve_stdio`]
    /// read (default [`DEFAULT_MAX_REQUEST_BYTES`]); a larger one is answered with an
    /// invalid-request error instead of being buffered.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Which clients may confirm calls in-band (default [`InBandConfirmation::Granted`]).
    pub fn in_band_confirmation(mut self, who: InBandConfirmation) -> Self {
        self.in_band = who;
        self
    }

    /// The `tools/list` entries.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The same server for another connection: it shares the executor and the declarations and
    /// is its own session for the first-time gates (each HTTP session gets one).
    pub fn new_session(&self) -> Self {
        McpServer {
            session: format!("mcp-{}", SESSIONS.fetch_add(1, Ordering::Relaxed)).into(),
            ..self.clone()
        }
    }

    /// Runs one `tools/call` through the executor; the MCP call's request id becomes the call id.
    pub async fn call(&self, params: CallToolRequestParams, request_id: &str) -> CallToolResult {
        self.call_through(&self.executor, params, request_id).await
    }

    async fn call_through(
        &self,
        executor: &Executor,
        params: CallToolRequestParams,
        request_id: &str,
    ) -> CallToolResult {
        let arguments = match params.arguments {
            Some(map) => Value::Object(map),
            None => json!({}),
        };
        let call = ToolCall::new(
            request_id,
            params.name.to_string(),
            Arguments::Json(arguments),
        );
        let mut cx = CallContext::new(request_id);
        cx.session = Some(self.session.to_string());
        let execution = executor.call(&call, cx).await;
        result_of(&call, &execution.outcome)
    }

    /// Serves on stdin/stdout until the client disconnects (how MCP hosts start local servers),
    /// through [`McpServer::serve_io`].
    pub async fn serve_stdio(self) -> Result<(), McpServerError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves newline-delimited JSON-RPC read from `reader` and written to `writer` (stdio, a
    /// socket) until the input ends. Every request is answered: each message is read up to
    /// [`McpServer::max_request_bytes`], and one that is not JSON, too large, or a `tools/call`
    /// with malformed params gets the protocol's error (`-32700`, `-32600`, `-32602`) with its
    /// id, before rmcp would have answered "method not found" or nothing.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), McpServerError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (inner, outer) = tokio::io::duplex(64 << 10);
        let max = self.max_request_bytes;
        let door = tokio::spawn(door::pump(reader, writer, outer, max));
        let served = self.serve_on(inner).await;
        let _ = door.await;
        served
    }

    /// Serves on any rmcp transport (a duplex pipe in tests, a socket) until it closes. The
    /// messages go to rmcp as they are; for a byte stream, [`McpServer::serve_io`] bounds and
    /// checks them first.
    pub async fn serve_on<T, E, A>(self, transport: T) -> Result<(), McpServerError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = self
            .serve(transport)
            .await
            .map_err(|e| McpServerError::Transport(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpServerError::Transport(e.to_string()))?;
        Ok(())
    }
}

/// The `CallToolResult` for an executor outcome, through the MCP codec so that a result looks
/// the same whether a model or an MCP client made the call.
fn result_of(call: &ToolCall, outcome: &Outcome) -> CallToolResult {
    let outcome = match outcome {
        Outcome::Success { value, .. } => ToolOutcome::Success(value.clone()),
        Outcome::Error { error } => ToolOutcome::Error(error.clone()),
        Outcome::Denied { reason, .. } => ToolOutcome::Denied {
            reason: Some(reason.clone()),
        },
        // Not an error and not a result yet: the client learns what waits for whom.
        Outcome::Pending {
            operation_id,
            preview,
        } => ToolOutcome::Success(json!({
            "status": "pending",
            "operation_id": operation_id,
            "preview": preview,
            "message": "This call waits for a person's approval and has not run. \
                        Tell the user it is pending; do not retry it.",
        })),
    };
    let pending =
        matches!(&outcome, ToolOutcome::Success(v) if v.get("status") == Some(&json!("pending")));
    let encoded = Mcp
        .encode_results(&[ToolResult::new(call, outcome)])
        .pop()
        .expect("one result in, one out");
    let mut result: CallToolResult = serde_json::from_value(encoded).unwrap_or_else(|e| {
        // The codec's output is checked against rmcp's types in the tests; should it ever drift,
        // the client still gets a structured error rather than a dropped call.
        let error = ToolError::new(
            ErrorCode::INTERNAL,
            format!("the result could not be encoded for MCP: {e}"),
        );
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(
            json!({"error": error.to_json()}).to_string(),
        )])
    });
    if pending {
        // A pending status does not match the tool's outputSchema.
        result.structured_content = None;
    }
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone());
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let id = request_id(&context.id);
        // A granted host that can ask its person confirms in-band; every other call gets the
        // executor's own handler (a pending operation, with `Deferred`).
        let executor = if self.may_elicit(&context) && elicit::Elicit::supported(&context.peer) {
            self.executor.with_confirmation(Arc::new(elicit::Elicit {
                peer: context.peer.clone(),
            }))
        } else {
            self.executor.clone()
        };
        tokio::select! {
            result = self.call_through(&executor, request, &id) => Ok(result.into()),
            // The client gave up (notifications/cancelled): dropping the call cancels the tool.
            () = context.ct.cancelled() => Err(rmcp::ErrorData::internal_error(
                "the client cancelled the call", None)),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }
}

impl McpServer {
    /// Whether this request's client may confirm in-band: the grant comes from the operator's
    /// configuration or the request's credential, never from anything the client sends.
    fn may_elicit(&self, context: &RequestContext<RoleServer>) -> bool {
        match self.in_band {
            InBandConfirmation::Never => false,
            InBandConfirmation::AnyClient => true,
            InBandConfirmation::Granted => context
                .extensions
                .get::<http::request::Parts>()
                .is_some_and(|parts| parts.extensions.get::<HostGrant>().is_some()),
        }
    }
}

/// A stable call id from the JSON-RPC request id (a number or a string).
fn request_id(id: &rmcp::model::RequestId) -> String {
    let raw = serde_json::to_value(id).unwrap_or(Value::Null);
    match raw {
        Value::String(s) => format!("mcp-{s}"),
        other => format!("mcp-{other}"),
    }
}
