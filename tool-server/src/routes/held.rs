//! `GET /api/v1/held-tools` and `POST /api/v1/held-tools/{tool}/approve`: the imported tools
//! whose server now describes them otherwise than when a person approved them, each with what
//! changed, and a person's approval of exactly the change they were shown. Both take the
//! approver's token.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{ErrorCode, ToolError};
use utoipa::ToSchema;

use super::blocking;
use crate::AppState;
use crate::auth::ApproverAccess;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};

/// An imported tool held because its server changed its definition since a person approved it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldTool {
    /// Its registered name (`<server>__<tool>`).
    pub tool: String,
    /// The server it comes from.
    pub server: String,
    /// The hash of the definition a person approved.
    pub pinned: String,
    /// When that definition was approved (ms since the epoch).
    pub pinned_ms: u64,
    /// The hash of the definition the server serves now: what an approval names.
    pub served: String,
    /// What changed, as `+ label: …`, `- label: …` and `~ label: old → new` lines.
    pub changes: Vec<String>,
}

/// Why an approval of a held tool's change was not written.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HeldRefusal {
    /// No imported tool of that name is held (unknown, unchanged, or not pinned yet).
    NotHeld,
    /// The server serves another definition than the one named (its hash is `served`), or the
    /// pin changed meanwhile: the person was shown something else.
    Changed {
        /// The hash the server serves now.
        served: Option<String>,
    },
}

/// Where the server learns which imported tools are held and approves their changes (a
/// gateway's imports, [`ServerOptions::held_tools`](crate::ServerOptions::held_tools)). Both
/// methods may block on the store: the routes call them on the blocking pool.
pub trait HeldTools: std::fmt::Debug + Send + Sync + 'static {
    /// The held tools now, by name.
    fn held(&self) -> Result<Vec<HeldTool>, ToolError>;

    /// Approves `tool`'s change to the definition with hash `hash`, written only when that is
    /// what its server serves and its pin is still the one the person saw.
    fn approve(&self, tool: &str, hash: &str) -> Result<Result<HeldTool, HeldRefusal>, ToolError>;
}

/// Where the held tools come from; `None` for a server that imports no tools.
fn source(state: &AppState) -> Option<Arc<dyn HeldTools>> {
    state.held_tools.clone()
}

/// The imported tools held now, each with what changed since a person approved it.
#[utoipa::path(
    get,
    path = "/api/v1/held-tools",
    operation_id = "list_held_tools",
    tag = "approvals",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"held\": [...]}`, by name: each held tool's `tool`, \
          `server`, `pinned` (the approved definition's hash) and `pinned_ms`, `served` (the \
          hash of what the server serves now, which an approval names) and `changes` (the \
          change as `+ label: …`, `- label: …` and `~ label: old → new` lines, labelled with \
          JSON pointers into the definition). Empty when the server imports no tools", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    _: ApproverAccess,
    State(state): State<AppState>,
) -> Result<Json<Value>, ApiError> {
    let held = match source(&state) {
        None => Vec::new(),
        Some(source) => blocking(move || source.held()).await?,
    };
    Ok(Json(json!({ "held": held })))
}

/// An approval of the change a person was shown.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApproveChange {
    /// The `served` hash the listing showed: only that definition is approved.
    hash: String,
}

/// Approves a held tool's change: the definition its server serves now is pinned in its place,
/// and its calls run again (on every replica sharing the store).
#[utoipa::path(
    post,
    path = "/api/v1/held-tools/{tool}/approve",
    operation_id = "approve_held_tool",
    tag = "approvals",
    params(("tool" = String, Path, description = "The held tool's name (`<server>__<tool>`)")),
    request_body = ApproveChange,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"tool\", \"approved\", \"replaced\", \"changes\"}`: \
          the hash now pinned, the one it replaced and what changed", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
        (status = 404, description = "No imported tool of that name is held", body = ErrorBody),
        (status = 409, description = "`CONFLICT`: the server now serves another definition \
          than the one named (`details.served`), or the pin changed meanwhile; list again and \
          review", body = ErrorBody),
        (status = 422, description = "The body is not `{\"hash\": \"sha256:…\"}`", body = ErrorBody),
    )
)]
pub(crate) async fn approve(
    _: ApproverAccess,
    State(state): State<AppState>,
    Path(tool): Path<String>,
    JsonBody(request): JsonBody<ApproveChange>,
) -> Result<Json<Value>, ApiError> {
    let not_held = || {
        ApiError::new(
            ToolError::new(
                ErrorCode::NOT_FOUND,
                format!("no imported tool named {tool:?} is held"),
            )
            .recover("list the held tools (GET /api/v1/held-tools) and use one of their names"),
        )
    };
    let Some(source) = source(&state) else {
        return Err(not_held());
    };
    let name = tool.clone();
    match blocking(move || source.approve(&name, &request.hash)).await? {
        Ok(held) => Ok(Json(json!({
            "tool": held.tool,
            "approved": held.served,
            "replaced": held.pinned,
            "changes": held.changes,
        }))),
        Err(HeldRefusal::NotHeld) => Err(not_held()),
        Err(HeldRefusal::Changed { served }) => {
            let mut error = ToolError::new(
                ErrorCode::of("CONFLICT"),
                format!(
                    "{tool}: its definition or pin changed since the change you approved was \
                     listed; nothing was approved"
                ),
            )
            .recover("list the held tools again and review the change now shown");
            if let Some(served) = served {
                error = error.with_detail("served", served);
            }
            let mut err = ApiError::new(error);
            err.set_status(StatusCode::CONFLICT);
            Err(err)
        }
    }
}
