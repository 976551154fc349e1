//! What a request to `/mcp` passes before rmcp serves it: the browser's `Origin`, the JSON-RPC
//! message itself, and the session a `DELETE` names.
//!
//! rmcp's own checks stop short in three places, so this layer answers first. Its Origin
//! allow-list has no notion of "the origin this server is reached under" (a page served by this
//! very server, whatever name the operator gave it), so the rule is here: no `Origin` (a
//! program, not a browser), the request's own origin, a loopback origin or one under an allowed
//! host pass; any other is refused `403`, as the streamable HTTP transport requires against DNS
//! rebinding. rmcp answers a body that is not JSON, a batch or a wrong `jsonrpc` with a
//! plain-text `415`, and a `tools/call` whose params do not decode with "method not found";
//! here each gets its JSON-RPC error ([`tool_mcp::server::malformed`], the check stdio uses
//! too). And rmcp accepts the `DELETE` of a session it no longer has (`202`); here it is `404`,
//! the status a client takes as "this session is gone".

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::SessionId;
use serde_json::{Value, json};

use crate::hygiene::{Authority, host_of};
use crate::sessions::McpSessions;

/// The header naming an MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// JSON-RPC: the message is not a valid request (here also: larger than the bound).
const INVALID_REQUEST: i64 = -32600;

/// JSON-RPC: the session a request names is unknown (MCP's streamable HTTP answers `404`).
const SESSION_NOT_FOUND: i64 = -32001;

/// What the gate knows.
#[derive(Clone)]
pub(crate) struct Gate {
    pub(crate) allowed_hosts: Arc<[String]>,
    pub(crate) sessions: Arc<McpSessions>,
    pub(crate) max_body_bytes: usize,
}

/// The layer: see the module's documentation.
pub(crate) async fn gate(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !origin_allowed(origin, &request, &gate.allowed_hosts)
    {
        return answer(
            StatusCode::FORBIDDEN,
            INVALID_REQUEST,
            "this server does not answer requests from the web page's origin: only the \
             server's own origin, loopback ones and its allowed hosts'",
        );
    }
    if request.method() == Method::DELETE
        && let Some(id) = request.headers().get(SESSION_HEADER)
    {
        let id: SessionId = id.to_str().unwrap_or_default().to_owned().into();
        if !gate.sessions.known(&id).await {
            return answer(
                StatusCode::NOT_FOUND,
                SESSION_NOT_FOUND,
                "there is no such MCP session: it ended or never was",
            );
        }
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, gate.max_body_bytes).await else {
        return answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            INVALID_REQUEST,
            &format!(
                "the message is larger than the {} bytes this server reads",
                gate.max_body_bytes
            ),
        );
    };
    if let Some(error) = tool_mcp::server::malformed(&bytes) {
        // a request with an id is answered as any request is; a message that cannot be one is
        // a bad HTTP request
        let status = if error["id"].is_null() {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        return json_response(status, &error);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Whether a browser page at `origin` may send this request.
fn origin_allowed(origin: &HeaderValue, request: &Request, allowed: &[String]) -> bool {
    let Some(origin) = origin
        .to_str()
        .ok()
        .and_then(|text| text.parse::<axum::http::Uri>().ok())
    else {
        // `null` (a sandboxed page, a file) and anything unreadable
        return false;
    };
    let (Some(scheme), Some(authority)) = (origin.scheme_str(), origin.authority()) else {
        return false;
    };
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return false,
    };
    let port = authority.port_u16().unwrap_or(default_port);
    let from = Authority::new(authority.host(), Some(port));
    let same = host_of(request.uri(), request.headers())
        .is_some_and(|own| own.host == from.host && own.port.unwrap_or(default_port) == port);
    same || from.is_loopback() || from.is_in(allowed)
}

fn answer(status: StatusCode, code: i64, message: &str) -> Response {
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}),
    )
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
