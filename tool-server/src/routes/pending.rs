//! `GET /api/v1/pending[/{id}]`, `POST /api/v1/pending/{id}/approve` and `.../deny`: a person's
//! decisions. Every route here takes the approver's token.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::executor::ConfirmationRoute;
use tool_runtime::store::PendingOperation;
use tool_runtime::{CallContext, ErrorCode, ToolError};
use utoipa::{IntoParams, ToSchema};

use super::summary::summary;
use super::{blocking, tools::answer};
use crate::AppState;
use crate::auth::ApproverAccess;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};

/// How many summaries a listing gives unless asked otherwise.
const DEFAULT_LIMIT: usize = 50;
/// The most summaries one listing gives.
const MAX_LIMIT: usize = 200;

/// Paging of the pending listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PendingQuery {
    /// At most this many of each list (default 50, at most 200).
    limit: Option<usize>,
    /// Skip this many, oldest first (the next page starts at `offset + limit`).
    offset: Option<usize>,
}

/// The operations waiting for a decision, and those approved whose outcome was never recorded
/// (in doubt: they are never run again; a person checks what happened), as summaries, oldest
/// first and a page at a time. An operation's arguments, change and first-use notice are in
/// `GET /api/v1/pending/{id}`.
#[utoipa::path(
    get,
    path = "/api/v1/pending",
    operation_id = "list_pending",
    tag = "approvals",
    params(PendingQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"pending\": [...], \"in_doubt\": [...], \"total\", \
          \"in_doubt_total\", \"offset\", \"limit\"}`: a page of each list, and how many \
          there are in all. Each summary has the operation's `id`, `tool`, `intent` (its first \
          500 characters) and `intent_chars`, `category`, `reversible`, `first_use` (whether \
          it is an external tool's first use), `initiator`, `session`, `created_ms`, \
          `arguments_bytes` (the arguments' size as JSON) and `hidden` (whether its intent, \
          arguments, change or session hold control, zero-width or direction-changing \
          characters)", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    _: ApproverAccess,
    State(state): State<AppState>,
    Query(query): Query<PendingQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT);
    let offset = query.offset.unwrap_or(0);
    let executor = state.executor.clone();
    let page = move |ops: Vec<PendingOperation>| -> (Vec<Value>, usize) {
        let total = ops.len();
        let page = ops.iter().skip(offset).take(limit).map(summary).collect();
        (page, total)
    };
    let ((pending, total), (in_doubt, in_doubt_total)) = blocking(move || {
        // the store reads only the page of what waits; in-doubt operations are few (approved
        // and not completed), so they are paged here
        let (ops, total) = executor.pending_page(offset, limit)?;
        let pending = (ops.iter().map(summary).collect::<Vec<_>>(), total);
        Ok((pending, page(executor.in_doubt()?)))
    })
    .await?;
    Ok(Json(json!({
        "pending": pending,
        "total": total,
        "in_doubt": in_doubt,
        "in_doubt_total": in_doubt_total,
        "offset": offset,
        "limit": limit,
    })))
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
        (status = 200, description = "The whole operation and its `state`: `id`, `call_id`, \
          `tool`, `arguments` (as the tool will receive them), `preview` (`intent`, `category`, \
          `arguments` without the optional ones left unset, `reversible`, `change`, \
          `first_use`), `correlation_id`, `session`, `initiator`, `created_ms`. A `change` is \
          `{\"entries\": [...]}`, each entry an `op`: `add` or `remove` (`label`, `value`, and \
          `chars`, the whole length, when `value` is the start of a longer text), `replace` \
          (`label`, `old`, `new`), `touch` (`count`, `what`), `note` (`text`) or `json` \
          (`value`)", body = Object),
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
    // the approved call runs with the page as its person's side, as a call made here does
    let waiting = CallContext {
        host: Some(state.page.host.clone()),
        progress: Some(state.page.progress.clone()),
        ..CallContext::default()
    };
    let route = ConfirmationRoute::default();
    let exec = state
        .executor
        .approve_for(&id, request.arguments, &route, &waiting)
        .await?;
    wake_run(&state, &id);
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
    let decided = id.clone();
    let exec = blocking(move || executor.deny(&id, request.reason)).await?;
    wake_run(&state, &decided);
    answer(&state, &exec)
}

/// Wakes the chat run of this server waiting for operation `id`, now decided (a run on another
/// replica notices at its next look at the store).
fn wake_run(state: &AppState, id: &str) {
    if let Some(chat) = &state.chat {
        chat.wake(id);
    }
}
