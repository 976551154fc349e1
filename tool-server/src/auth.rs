//! Bearer tokens and the two roles they grant.
//!
//! The role comes from the `Authorization` header alone: nothing in a request's body, query or
//! other headers takes part, so no argument a model writes can make a request an approver's.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;
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
    /// Everything an agent may, and decide pending operations and read the activity feed: what a
    /// person does.
    Approver,
}

impl Role {
    /// The role a bearer token grants, if any. Both tokens are compared in full, in time that
    /// does not depend on where they differ.
    pub(crate) fn of(tokens: &Tokens, presented: &str) -> Option<Role> {
        let approver = same(presented.as_bytes(), tokens.approver().as_bytes());
        let agent = same(presented.as_bytes(), tokens.agent().as_bytes());
        if approver {
            Some(Role::Approver)
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

/// A handler parameter that admits the agent's or the approver's token.
pub(crate) struct AgentAccess;

impl FromRequestParts<AppState> for AgentAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        role_of(state, &parts.headers).map(|_| AgentAccess)
    }
}

/// A handler parameter that admits the approver's token only.
pub(crate) struct ApproverAccess;

impl FromRequestParts<AppState> for ApproverAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match role_of(state, &parts.headers)? {
            Role::Approver => Ok(ApproverAccess),
            Role::Agent => Err(ApiError::forbidden(
                "deciding pending operations and reading the activity feed take the approver's \
                 token; the agent's token cannot approve",
            )),
        }
    }
}

/// Admits requests to a nested service (MCP at `/mcp`) with the agent's or approver's token.
pub(crate) async fn agent_layer(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    role_of(&state, request.headers())?;
    Ok(next.run(request).await)
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
