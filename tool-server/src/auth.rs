//! Bearer tokens and the roles they grant.
//!
//! The role comes from the `Authorization` header alone: nothing in a request's body, query or
//! other headers takes part, so no argument a model writes can make a request an approver's. An
//! MCP session belongs to the role that opened it: a request on it with another token is refused,
//! so an agent that learns a host's session id cannot answer the host's confirmations.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use tool_mcp::server::HostGrant;
use tool_runtime::{Credential, ErrorCode, ToolError};
use utoipa::Modify;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::AppState;
use crate::error::ApiError;
use crate::options::Tokens;

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// List, check, call: what an agent or an application does.
    Agent,
    /// What an agent may, and its MCP sessions confirm calls in-band (`elicitation/create`): an
    /// MCP host that puts each confirmation to a person (`TOOLS_HOST_TOKEN`).
    Host,
    /// Everything an agent may, and decide pending operations and read the activity feed: what a
    /// person does.
    Approver,
}

impl Role {
    /// The credential a call made with this role's token is counted under (the pending limit
    /// per credential).
    pub(crate) fn credential(self) -> Credential {
        Credential::new(match self {
            Role::Agent => "agent",
            Role::Host => "host",
            Role::Approver => "approver",
        })
    }

    /// The role a bearer token grants, if any. Both tokens are compared in full, in time that
    /// does not depend on where they differ.
    pub(crate) fn of(tokens: &Tokens, presented: &str) -> Option<Role> {
        let approver = same(presented.as_bytes(), tokens.approver().as_bytes());
        let agent = same(presented.as_bytes(), tokens.agent().as_bytes());
        let host = tokens
            .host()
            .is_some_and(|host| same(presented.as_bytes(), host.as_bytes()));
        if approver {
            Some(Role::Approver)
        } else if host {
            Some(Role::Host)
        } else if agent {
            Some(Role::Agent)
        } else {
            None
        }
    }
}

pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn role_of(state: &AppState, headers: &HeaderMap) -> Result<Role, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("this route needs a bearer token"))?;
    let presented = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            ApiError::unauthorized("the Authorization header is not `Bearer <token>`")
        })?;
    let presented = presented.trim();
    Role::of(&state.tokens, presented)
        .or_else(|| state.links.role_of(presented))
        .ok_or_else(|| ApiError::unauthorized("the bearer token is not one of this server's"))
}

/// A handler parameter that admits any of the server's tokens, and says whose it was.
pub(crate) struct AgentAccess(pub(crate) Role);

impl FromRequestParts<AppState> for AgentAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        role_of(state, &parts.headers).map(AgentAccess)
    }
}

/// A handler parameter that admits the approver's token only.
pub(crate) struct ApproverAccess;

impl FromRequestParts<AppState> for ApproverAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match role_of(state, &parts.headers)? {
            Role::Approver => Ok(ApproverAccess),
            Role::Agent | Role::Host => Err(ApiError::forbidden(
                "deciding pending operations and reading the activity feed take the approver's \
                 token; the agent's token cannot approve",
            )),
        }
    }
}

/// The MCP session header of streamable HTTP.
const SESSION_HEADER: &str = "mcp-session-id";

/// Admits requests to MCP at `/mcp` with any of the server's tokens. A host's requests carry a
/// [`HostGrant`], which is what lets the MCP server confirm their calls in-band; a request on a
/// session opened with another token is refused.
pub(crate) async fn mcp_layer(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let role = role_of(&state, request.headers())?;
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match &session {
        Some(id) => state.mcp_owners.admit(id, role)?,
        None if request.method() == Method::POST
            && !crate::sessions::sessionless(request.headers()) =>
        {
            state.mcp_owners.reserve(role)?
        }
        None => {}
    }
    if role == Role::Host {
        request.extensions_mut().insert(HostGrant);
    }
    request.extensions_mut().insert(role.credential());
    let deleting = request.method() == Method::DELETE;
    let response = next.run(request).await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        (None, Some(opened)) => {
            if let Ok(id) = opened.to_str() {
                state.mcp_owners.open(id, role);
            }
        }
        // closed by its client, or unknown to the session manager (expired): forgotten here too
        (Some(id), _)
            if (deleting && response.status().is_success())
                || response.status() == axum::http::StatusCode::NOT_FOUND =>
        {
            state.mcp_owners.close(id);
        }
        _ => {}
    }
    Ok(response)
}

/// Which role opened each MCP session, and a bound on the sessions each role may hold, so
/// that a flood of sessions opened with one token never locks out another's (the agent's cannot
/// crowd out a host's or an approver's). Entries of sessions idle longer than the MCP session
/// manager keeps them are pruned when a role reaches its bound.
#[derive(Debug)]
pub(crate) struct SessionOwners {
    owners: Mutex<HashMap<String, (Role, Instant)>>,
    per_role: usize,
    idle: Duration,
}

impl SessionOwners {
    pub(crate) fn new(per_role: usize, idle: Duration) -> Self {
        SessionOwners {
            owners: Mutex::new(HashMap::new()),
            per_role,
            idle,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Role, Instant)>> {
        // the table holds no invariant a panicking holder could break halfway
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses a request on a session opened with another role's token. A session this table
    /// does not know is left to the session manager, which answers 404 for one it does not
    /// know either.
    fn admit(&self, id: &str, role: Role) -> Result<(), ApiError> {
        let mut owners = self.lock();
        match owners.get_mut(id) {
            Some((owner, _)) if *owner != role => Err(ApiError::forbidden(
                "this MCP session was opened with another token; open your own session",
            )),
            Some((_, used)) => {
                *used = Instant::now();
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Room for one more session of `role`: refused when the role's recorded sessions are all
    /// still live, since a session without an owner would take any token.
    fn reserve(&self, role: Role) -> Result<(), ApiError> {
        let mut owners = self.lock();
        let held = |owners: &HashMap<String, (Role, Instant)>| {
            owners.values().filter(|(owner, _)| *owner == role).count()
        };
        if held(&owners) >= self.per_role {
            let idle = self.idle;
            owners.retain(|_, (_, used)| used.elapsed() < idle);
        }
        if held(&owners) >= self.per_role {
            return Err(ApiError::new(
                ToolError::new(
                    ErrorCode::of("TOO_MANY_SESSIONS"),
                    format!(
                        "{} MCP sessions opened with this token are open, the most one token \
                         may hold",
                        self.per_role
                    ),
                )
                .retryable(true)
                .recover("close an MCP session you no longer use (DELETE /mcp), or retry later"),
            ));
        }
        Ok(())
    }

    fn open(&self, id: &str, role: Role) {
        self.lock().insert(id.to_owned(), (role, Instant::now()));
    }

    fn close(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// Declares the bearer scheme in the OpenAPI document.
pub(crate) struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "TOOLS_AGENT_TOKEN (list, check, call) or TOOLS_APPROVER_TOKEN \
                         (everything, including approve and deny)",
                    ))
                    .build(),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_a_bounded_number_of_sessions_and_only_its_own() {
        let owners = SessionOwners::new(2, Duration::from_secs(300));
        for id in ["a1", "a2"] {
            owners.reserve(Role::Agent).unwrap();
            owners.open(id, Role::Agent);
        }
        let full = owners.reserve(Role::Agent).unwrap_err();
        assert_eq!(full.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
        // the agent's flood does not lock the host out
        owners.reserve(Role::Host).unwrap();
        owners.open("h1", Role::Host);
        assert!(owners.admit("h1", Role::Agent).is_err());
        assert!(owners.admit("a1", Role::Host).is_err());
        owners.admit("h1", Role::Host).unwrap();
        owners.close("a1");
        owners.reserve(Role::Agent).unwrap();
    }

    #[test]
    fn idle_sessions_make_room() {
        let owners = SessionOwners::new(1, Duration::ZERO);
        owners.reserve(Role::Agent).unwrap();
        owners.open("a1", Role::Agent);
        owners.reserve(Role::Agent).unwrap();
    }

    #[test]
    fn each_token_grants_its_own_role_and_nothing_else_grants_any() {
        let t = Tokens::new("agent-token-0123456789", "approver-token-0123456789").unwrap();
        assert_eq!(Role::of(&t, "agent-token-0123456789"), Some(Role::Agent));
        assert_eq!(
            Role::of(&t, "approver-token-0123456789"),
            Some(Role::Approver)
        );
        for wrong in [
            "",
            "approver-token-012345678",
            "approver-token-0123456789 ",
            "agent-token-0123456789approver-token-0123456789",
        ] {
            assert_eq!(Role::of(&t, wrong), None, "{wrong:?}");
        }
    }
}
