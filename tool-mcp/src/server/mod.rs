//! Serving a [`ToolSet`](tool_runtime::ToolSet) to MCP clients, through the executor.
//!
//! [`McpServer`] is an rmcp [`ServerHandler`]: `tools/list` answers with the MCP codec's
//! declarations (the canonical schema as `inputSchema`, `outputSchema` when object-rooted, the
//! safety category as annotations), made once per version of the executor's tool set and
//! cached (a client that holds a connection is sent `notifications/tools/list_changed` when
//! [`Executor::update_tools`] changes the set); `tools/call` goes through
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
//! Both eras of the protocol are served, each in its own shape: a client of 2026-07-28 (it
//! probes `server/discover`, then sends the protocol version, its capabilities and its name in
//! every request's `_meta`, and holds no session) gets results with `resultType` and the
//! caching hints, and since that revision has no server-to-client requests, a granted host is
//! asked in rounds: the call is parked as a pending operation and answered with an
//! `InputRequiredResult` carrying the elicitation, and the client's retry with its person's
//! answer decides that operation. The `requestState` naming it is sealed with rmcp's
//! request-state codec, bound to the tool and its arguments, so a client can neither forge nor
//! move one ([`McpServer::request_state_key`]); the answer of a caller without the grant is not
//! looked at. A client of an earlier revision (`initialize`, a session) is asked with
//! `elicitation/create` while the call waits, and gets results without the newer fields; there
//! too the call is parked before the form is sent and the answer decides the operation, so a
//! process that stops while its person reads the form leaves the call on the approvals page,
//! and a client that cancels the call withdraws it.
//!
//! Every failure is a `CallToolResult` with `isError: true` and the structured error (code,
//! `recover_action`, pointers) as its text, as the MCP specification asks for tool errors, so
//! the model on the other side can correct itself; a denial is the user's choice and is not
//! flagged as an error. A call that did not run (denied, or waiting for a person) also carries
//! `structuredContent` in a "not run" form, which the declared `outputSchema` of a tool admits
//! beside the tool's own output (`anyOf`), so that clients that check results against the schema
//! accept it.
//!
//! Resources, prompts, completions and logging come from the application's own rmcp handler,
//! composed with the tools into one server ([`McpServer::with_app`]). A tool's progress reports
//! ([`CallContext::report_progress`]) reach a client that sent a `progressToken` as
//! `notifications/progress`, before the result; its log entries ([`CallContext::log`]) reach the
//! client as `notifications/message` at or above the level it set with `logging/setLevel` (the
//! tool server owns that level, and passes it on to the application's handler); its questions
//! ([`CallContext::ask`]) go to a client that declared form elicitation as `elicitation/create`,
//! and its sampling ([`CallContext::sample`]) to one that declared sampling as
//! `sampling/createMessage`. Without the capability, the tool gets a structured error.
//!
//! ```no_run
//! # async fn demo(executor: tool_runtime::Executor) -> Result<(), Box<dyn std::error::Error>> {
//! use tool_mcp::server::McpServer;
//!
//! // Serve the executor's tools on stdin/stdout until the client disconnects.
//! McpServer::new(executor).serve_stdio().await?;
//! # Ok(()) }
//! ```
//!
//! [`ConfirmationHandler`]: tool_runtime::executor::ConfirmationHandler
//! [`Deferred`]: tool_runtime::executor::Deferred

mod app;
mod decide;
mod door;
mod elicit;
mod handler;
mod host;
mod listed;
mod not_run;
mod progress;
mod rounds;
mod stdio;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ServiceExt;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ResultType, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tool_runtime::executor::Outcome;
use tool_runtime::{
    CallContext, Credential, ErrorCode, Executor, ToolCall, ToolError, hydrate::Arguments,
};

pub use door::{DEFAULT_MAX_REQUEST_BYTES, malformed};
pub use elicit::EDITED_ARGUMENTS_FIELD;

use tool_providers::codec::mcp::Mcp;
use tool_providers::codec::{Codec, ToolOutcome, ToolResult};

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
    /// The key for `requestState` is unusable (shorter than 32 bytes).
    #[error("the MCP request-state key: {0}")]
    Key(String),
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
    /// The `tools/list` entries, made again when the executor's tools change.
    listed: Arc<listed::Listed>,
    info: Implementation,
    instructions: Option<String>,
    /// One MCP connection is one session for the first-time gates; several connections to the
    /// same server (clones) are told apart by this id.
    session: Arc<str>,
    /// The largest message [`McpServer::serve_io`] reads.
    max_request_bytes: usize,
    /// Which clients may confirm in-band.
    in_band: InBandConfirmation,
    /// Seals the `requestState` of a confirmation asked with `InputRequiredResult`.
    states: rounds::States,
    /// The application's handler for everything but tools ([`McpServer::with_app`]); by default
    /// one that serves nothing.
    app: Arc<dyn app::Erased>,
    /// The connection's level for the tools' `notifications/message` (`logging/setLevel`).
    level: host::Level,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.listed.tools().len())
            .field("info", &self.info)
            .field("app", &self.app.name())
            .finish_non_exhaustive()
    }
}

static SESSIONS: AtomicU64 = AtomicU64::new(1);

/// How long a client of MCP 2026-07-28 may keep `tools/list` (its `ttlMs`): such a client holds
/// no connection to be told of a change (`notifications/tools/list_changed` reaches the clients
/// of earlier revisions), so a minute bounds how long it keeps a list from before tools were
/// added or a restart with other tools.
const TOOLS_LIST_TTL_MS: u64 = 60_000;

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
        let listed = Arc::new(listed::Listed::new(&executor)?);
        Ok(McpServer {
            executor,
            listed,
            info: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            instructions: None,
            session: format!("mcp-{}", SESSIONS.fetch_add(1, Ordering::Relaxed)).into(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            in_band: InBandConfirmation::default(),
            states: rounds::States::random(),
            app: Arc::new(app::NoApp),
            level: host::Level::default(),
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

    /// The key that seals the `requestState` of a confirmation asked in rounds (MCP 2026-07-28
    /// on: `InputRequiredResult`, then the client's retry with its person's answer); at least
    /// 32 bytes. Replicas that answer the same clients must share it, so that any of them takes
    /// the answer to a question another asked; without one, each server makes its own at random,
    /// which is enough for one process (stdio).
    pub fn request_state_key(mut self, key: &[u8]) -> Result<Self, McpServerError> {
        self.states = rounds::States::with_key(key).map_err(McpServerError::Key)?;
        Ok(self)
    }

    /// One MCP server of the tool set's tools and the application's `handler` for everything
    /// else: `tools/list` and `tools/call` are this server's (through the executor, with its
    /// policy), and resources, prompts, completions, `logging/setLevel`, subscriptions, skills,
    /// custom requests and the client's notifications are `handler`'s methods, called as rmcp
    /// would call them. `initialize` announces `handler`'s capabilities with this server's
    /// tools (a `tools` capability of `handler` is replaced, and it should not serve tools of its
    /// own, which would bypass the executor), and this server's name, version and instructions
    /// (`handler`'s instructions when this server has none). Each connection
    /// ([`McpServer::new_session`], one per HTTP session) gets its own clone of `handler`, as
    /// rmcp's HTTP service makes one handler per session: state shared across sessions goes
    /// behind an `Arc`.
    ///
    /// ```no_run
    /// # async fn demo(executor: tool_runtime::Executor) -> Result<(), Box<dyn std::error::Error>> {
    /// use rmcp::ServerHandler;
    /// use rmcp::model::{ServerCapabilities, ServerConfig};
    /// use tool_mcp::server::McpServer;
    ///
    /// /// The application's resources and prompts (their methods left out here).
    /// #[derive(Clone)]
    /// struct Library;
    ///
    /// impl ServerHandler for Library {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    ///     }
    /// }
    ///
    /// McpServer::new(executor).with_app(Library).serve_stdio().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_app<H: ServerHandler + Clone>(mut self, handler: H) -> Self {
        self.app = Arc::new(handler);
        self
    }

    /// The `tools/list` entries: the executor's tools as they are now.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.listed.tools()
    }

    /// The same server for another connection: it shares the executor and the declarations and
    /// is its own session for the first-time gates (each HTTP session gets one).
    pub fn new_session(&self) -> Self {
        McpServer {
            session: format!("mcp-{}", SESSIONS.fetch_add(1, Ordering::Relaxed)).into(),
            app: self.app.fresh(),
            level: host::Level::default(),
            ..self.clone()
        }
    }

    /// Runs one `tools/call` through the executor as the call `request_id`.
    pub async fn call(&self, params: CallToolRequestParams, request_id: &str) -> CallToolResult {
        let call = tool_call(&params, request_id);
        let mut cx = CallContext::new(call.id.clone());
        cx.session = Some(self.session.to_string());
        let outcome = self.executor.call(&call, cx).await.outcome;
        result_of(&call, &outcome)
    }

    /// Serves on stdin/stdout until the client disconnects (how MCP hosts start local servers),
    /// through [`McpServer::serve_io`]. Pipes (what a host gives the server it starts) are read
    /// and written by the runtime's reactor, without a thread of the blocking pool per message.
    pub async fn serve_stdio(self) -> Result<(), McpServerError> {
        let (input, output) = stdio::streams();
        self.serve_io(input, output).await
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
        let door = door::Door::new(reader, writer, self.max_request_bytes);
        self.serve_on(door).await
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

/// The executor's call for a `tools/call`.
fn tool_call(params: &CallToolRequestParams, request_id: &str) -> ToolCall {
    let arguments = match &params.arguments {
        Some(map) => Value::Object(map.clone()),
        None => json!({}),
    };
    ToolCall::new(
        request_id,
        params.name.to_string(),
        Arguments::Json(arguments),
    )
}

/// The `CallToolResult` for an executor outcome, through the MCP codec so that a result looks
/// the same whether a model or an MCP client made the call. It is a complete result
/// (`resultType: "complete"`); rmcp takes the field out for a client of an earlier revision.
fn result_of(call: &ToolCall, outcome: &Outcome) -> CallToolResult {
    let not_run = not_run::structured(outcome);
    let outcome = match outcome {
        Outcome::Success { value, .. } => ToolOutcome::Success(value.clone()),
        Outcome::Error { error } => ToolOutcome::Error((**error).clone()),
        Outcome::Denied { reason, .. } => ToolOutcome::Denied {
            reason: Some(reason.clone()),
        },
        // Not an error and not a result yet: the client learns what waits for whom.
        Outcome::Pending {
            operation_id,
            preview,
        } => ToolOutcome::Success(not_run::pending(
            operation_id,
            serde_json::to_value(preview).ok(),
            not_run::WAITS,
        )),
    };
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
    if let Some(form) = not_run {
        // the declared outputSchema admits it beside the tool's own output
        result.structured_content = Some(form);
    }
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// A `CallToolResult` for an error of this adapter's own, in the shape of the executor's.
fn error_result(call: &ToolCall, error: ToolError) -> CallToolResult {
    result_of(
        call,
        &Outcome::Error {
            error: Box::new(error),
        },
    )
}

impl McpServer {
    /// The context of a call: its session for the first-time gates and the bound on waiting
    /// operations, the connection's, or for a request over HTTP without a session (MCP
    /// 2026-07-28 has none, and any replica may answer it) the credential's kind, so that the
    /// calls of one credential share their first-time approvals wherever they land; and the
    /// [`Credential`] the HTTP server put in the request's extensions, if any.
    fn context_of(&self, call: &ToolCall, context: &RequestContext<RoleServer>) -> CallContext {
        let parts = context.extensions.get::<http::request::Parts>();
        let session = match parts {
            Some(parts) if !parts.headers.contains_key("mcp-session-id") => {
                if parts.extensions.get::<HostGrant>().is_some() {
                    "mcp-host".to_owned()
                } else {
                    "mcp-client".to_owned()
                }
            }
            _ => self.session.to_string(),
        };
        let mut cx = CallContext::new(call.id.clone());
        cx.session = Some(session);
        cx.credential = parts.and_then(|p| p.extensions.get::<Credential>().cloned());
        cx
    }

    /// Runs the call with a handler that parks it when it needs a person, and answers the
    /// question as an `InputRequiredResult` for the client to put to its person.
    async fn ask_in_rounds(&self, call: &ToolCall, cx: CallContext) -> CallToolResponse {
        let asking = Arc::new(rounds::AskInRounds::default());
        let executor = self.executor.with_confirmation(asking.clone());
        let outcome = executor.call(call, cx).await.outcome;
        if let (Outcome::Pending { operation_id, .. }, Some(request)) = (&outcome, asking.asked()) {
            let ticket = rounds::Ticket {
                op: operation_id.clone(),
                until_ms: now_ms().saturating_add(request.timeout.as_millis() as u64),
                edits: 0,
            };
            if let Some(asked) = rounds::ask(
                &self.states,
                &request,
                &ticket,
                &call.name,
                call_arguments(call),
            ) {
                return asked.into();
            }
        }
        result_of(call, &outcome).into()
    }

    /// The client's retry with its person's answer: the operation named in the sealed state is
    /// approved, approved with the person's arguments, or denied, through the executor.
    async fn resume(
        &self,
        request: &CallToolRequestParams,
        call: &ToolCall,
        context: &RequestContext<RoleServer>,
        waiting: &CallContext,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let arguments = call_arguments(call);
        let state = request.request_state.as_deref().unwrap_or_default();
        let ticket = self
            .states
            .open(state, &call.name, arguments)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let pending = |message: &str| -> CallToolResponse {
            let preview = self
                .executor
                .pending_operation(&ticket.op)
                .ok()
                .flatten()
                .and_then(|op| serde_json::to_value(op.preview).ok());
            let body = not_run::pending(&ticket.op, preview, message);
            let mut result =
                CallToolResult::success(vec![rmcp::model::ContentBlock::text(body.to_string())]);
            result.structured_content = Some(body);
            result.result_type = Some(ResultType::COMPLETE);
            result.into()
        };
        if now_ms() > ticket.until_ms {
            return Ok(pending(
                "The answer came after the time to confirm ran out, so it was not taken; the \
                 call has not run and waits for a person's approval. Tell the user it is \
                 pending; do not retry it.",
            ));
        }
        let Some(answer) = rounds::answer_of(request.input_responses.as_ref()) else {
            // no answer to the question: ask it again
            return Ok(self.ask_again(call, &ticket, None).await);
        };
        let route = elicit::host_route(&client_name(context), "input_required");
        Ok(
            match self
                .decide(&ticket.op, answer, ticket.edits, &route, waiting)
                .await
            {
                decide::Decided::Done(decided) => match *decided {
                    Ok(execution) => result_of(call, &execution.outcome).into(),
                    Err(error) => error_result(call, error).into(),
                },
                decide::Decided::AskAgain(problem) => {
                    let next = rounds::Ticket {
                        edits: ticket.edits + 1,
                        ..ticket.clone()
                    };
                    self.ask_again(call, &next, Some(problem)).await
                }
                decide::Decided::Waits => pending(not_run::WAITS),
            },
        )
    }

    /// The question about `ticket`'s operation once more, with why the last answer was not taken.
    async fn ask_again(
        &self,
        call: &ToolCall,
        ticket: &rounds::Ticket,
        problem: Option<String>,
    ) -> CallToolResponse {
        let op = match self.executor.pending_operation(&ticket.op) {
            Ok(Some(op)) => op,
            Ok(None) => {
                let error = ToolError::new(
                    ErrorCode::NOT_FOUND,
                    format!("there is no pending operation {:?}", ticket.op),
                );
                return error_result(call, error).into();
            }
            Err(error) => return error_result(call, error).into(),
        };
        let request = tool_runtime::executor::ConfirmationRequest {
            preview: op.preview,
            problem,
            timeout: std::time::Duration::from_millis(ticket.until_ms.saturating_sub(now_ms())),
        };
        match rounds::ask(
            &self.states,
            &request,
            ticket,
            &call.name,
            call_arguments(call),
        ) {
            Some(asked) => asked.into(),
            None => error_result(
                call,
                ToolError::new(
                    ErrorCode::INTERNAL,
                    "the confirmation could not be put as a form",
                ),
            )
            .into(),
        }
    }

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

/// The call id for a `tools/call`: the JSON-RPC request id, for a person reading the audit
/// trail beside the client's log, and a random part, since clients number their requests from
/// the same start and the calls of every session, process and replica share one store (two
/// pending operations must never both be `mcp-77`).
fn request_id(id: &rmcp::model::RequestId) -> String {
    let raw = match serde_json::to_value(id).unwrap_or(Value::Null) {
        Value::String(s) => tool_runtime::display::visible_prefix(&s, 64),
        other => other.to_string(),
    };
    // 48 random bits from the thread's generator (as the executor's operation ids): no system
    // call per call
    format!("mcp-{raw}-{:012x}", fastrand::u64(..1 << 48))
}

/// The name the client gave in this request (or its session's handshake).
fn client_name(context: &RequestContext<RoleServer>) -> String {
    context
        .client_info()
        .map(|info| info.name)
        .unwrap_or_default()
}

fn call_arguments(call: &ToolCall) -> &Value {
    match &call.arguments {
        Arguments::Json(v) => v,
        // tool_call always builds JSON arguments
        Arguments::Text(_) => &Value::Null,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_carry_the_request_id_and_do_not_repeat() {
        let ids: std::collections::HashSet<String> = (0..10_000)
            .map(|_| request_id(&rmcp::model::NumberOrString::Number(77)))
            .collect();
        assert_eq!(ids.len(), 10_000, "a call id repeated");
        for id in ids.iter().take(3) {
            let random = id.strip_prefix("mcp-77-").expect(id);
            assert_eq!(random.len(), 12, "{id}");
            assert!(random.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        let named = request_id(&rmcp::model::NumberOrString::String("req-a".into()));
        assert!(named.starts_with("mcp-req-a-"), "{named}");
    }
}
