//! `GET /api/v1/pending[/{id}]`, `POST /api/v1/pending/{id}/approve` and `.../deny`: a person's
//! decisions. Every route here takes the approver's token.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::{ErrorCode, ToolError};
use utoipa::ToSchema;

use super::{blocking, tools::answer};
use crate::AppState;
use crate::auth::ApproverAccess;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};

/// The operations waiting for a decision, and those approved whose outcome was never recorded
/// (in doubt: they are never run again; a person checks what happened).
#[utoipa::path(
    get,
    path = "/api/v1/pending",
    operation_id = "list_pending",
    tag = "approvals",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"pending\": [...], \"in_doubt\": [...]}`: each \
          operation's id, tool, arguments, preview (intent, category, change, whether it can be \
          undone), initiator and creation time", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    _: ApproverAccess,
    State(state): State<AppState>,
) -> Result<Json<Value>, ApiError> {
    let executor = state.executor.clone();
    let (pending, in_doubt) =
        blocking(move || Ok((executor.pending()?, executor.in_doubt()?))).await?;
    Ok(Json(json!({ "pending": pending, "in_doubt": in_doubt })))
}

/// One operation in any state; a decided one carries its outcome.
#[utoipa::path(
    get,
    path = "/api/v1/pending/{id}",
    operation_id = "get_pending",
    tag = "approvals",
    params(("id" = String, Path, description = "The operation id (`op-…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The operation and its `state`", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
        (status = 404, description = "No such operation", body = ErrorBody),
    )
)]
pub(crate) async fn get(
    _: ApproverAccess,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let executor = state.executor.clone();
    let lookup = id.clone();
    let op = blocking(move || executor.pending_operation(&lookup)).await?;
    let op = op.ok_or_else(|| {
        ApiError::new(
            ToolError::new(
                ErrorCode::NOT_FOUND,
                format!("there is no pending operation {id:?}"),
            )
            .recover("list the pending operations and use one of their ids"),
        )
    })?;
    Ok(Json(serde_json::to_value(op).unwrap_or(Value::Null)))
}

/// An approval, optionally with the arguments the person edited.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct ApproveRequest {
    /// Edited arguments; validated against the tool's schema again before anything runs.
    #[schema(value_type = Object)]
    arguments: Option<Value>,
}

/// Approves an operation and runs it, exactly once across every process sharing the store.
#[utoipa::path(
    post,
    path = "/api/v1/pending/{id}/approve",
    operation_id = "approve_pending",
    tag = "approvals",
    params(("id" = String, Path, description = "The operation id (`op-…`)")),
    request_body(content = ApproveRequest, description = "Optional: `{\"arguments\": {...}}` \
      to run with edited arguments"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The execution of the approved call", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token: only a person approves", body = ErrorBody),
        (status = 404, description = "No such operation", body = ErrorBody),
        (status = 409, description = "Already decided (`details.state`)", body = ErrorBody),
        (status = 422, description = "The edited arguments are invalid; the operation stays \
          pending", body = ErrorBody),
    )
)]
pub(crate) async fn approve(
    _: ApproverAccess,
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<ApproveRequest>,
) -> Result<Response, ApiError> {
    let exec = state.executor.approve_with(&id, request.arguments).await?;
    answer(&state, &exec)
}

/// A denial, optionally with the person's reason (the model is told it).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct DenyRequest {
    /// Why; shown to the model as the user's words.
    reason: Option<String>,
}

/// Denies an operation. The model is told the user declined, with the reason; it is not an
/// error.
#[utoipa::path(
    post,
    path = "/api/v1/pending/{id}/deny",
    operation_id = "deny_pending",
    tag = "approvals",
    params(("id" = String, Path, description = "The operation id (`op-…`)")),
    request_body(content = DenyRequest, description = "Optional: `{\"reason\": \"...\"}`"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"status\": \"denied\", \"reason\", \"by\": \"user\"}`", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token: only a person denies", body = ErrorBody),
        (status = 404, description = "No such operation", body = ErrorBody),
        (status = 409, description = "Already decided (`details.state`)", body = ErrorBody),
    )
)]
pub(crate) async fn deny(
    _: ApproverAccess,
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<DenyRequest>,
) -> Result<Response, ApiError> {
    let executor = state.executor.clone();
    let exec = blocking(move || executor.deny(&id, request.reason)).await?;
    answer(&state, &exec)
}
