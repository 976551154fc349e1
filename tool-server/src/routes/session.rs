//! `POST /api/v1/session`: a one-time sign-in code, or the approver's token, traded for a short
//! approver session, so that the approvals page never keeps the configured token.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::ToolError;
use utoipa::ToSchema;

use crate::AppState;
use crate::auth::Role;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody, UNAUTHORIZED};

/// What opens a session: exactly one of a sign-in code or the approver's token.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionRequest {
    /// The code of a sign-in link (`#code=…`); spent by this request, whatever its answer.
    code: Option<String>,
    /// The approver's token (`TOOLS_APPROVER_TOKEN`), typed by the person.
    token: Option<String>,
}

/// Opens an approver session for twelve hours. Takes no bearer token: the code or the token in
/// the body is the proof.
#[utoipa::path(
    post,
    path = "/api/v1/session",
    operation_id = "open_session",
    tag = "approvals",
    request_body(content = SessionRequest, description = "`{\"code\": \"…\"}` from a sign-in \
      link, or `{\"token\": \"…\"}` with the approver's token"),
    responses(
        (status = 200, description = "`{\"token\", \"expires_ms\", \"role\": \"approver\"}`: a \
          bearer token for the approver's routes, valid until `expires_ms`", body = Object),
        (status = 401, description = "The code is unknown, already used or expired, or the \
          token is not this server's", body = ErrorBody),
        (status = 403, description = "The agent's token: it cannot approve", body = ErrorBody),
        (status = 422, description = "Neither or both of `code` and `token`", body = ErrorBody),
    )
)]
pub(crate) async fn open(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<SessionRequest>,
) -> Result<Json<Value>, ApiError> {
    let session = match (request.code, request.token) {
        (Some(code), None) => state.links.exchange(code.trim()).ok_or_else(|| {
            refused(
                "the sign-in code is unknown, already used or expired",
                "ask for a new link, or sign in with the approver's token",
            )
        })?,
        (None, Some(token)) => match Role::of(&state.tokens, token.trim()) {
            Some(Role::Approver) => state.links.open(),
            Some(Role::Agent | Role::Host) => {
                return Err(ApiError::forbidden(
                    "the agent's and the MCP host's tokens cannot approve: sign in with the \
                     approver's token",
                ));
            }
            None => {
                return Err(refused(
                    "the token is not this server's approver token",
                    "enter TOOLS_APPROVER_TOKEN",
                ));
            }
        },
        _ => {
            return Err(ApiError::new(
                ToolError::new(
                    tool_runtime::ErrorCode::INVALID_ARGUMENTS,
                    "send exactly one of `code` and `token`",
                )
                .recover("send {\"code\": \"…\"} from a sign-in link"),
            ));
        }
    };
    Ok(Json(json!({
        "token": session.token,
        "expires_ms": session.expires_ms,
        "role": "approver",
    })))
}

fn refused(message: &str, recover: &str) -> ApiError {
    ApiError::new(ToolError::new(UNAUTHORIZED, message).recover(recover))
}
