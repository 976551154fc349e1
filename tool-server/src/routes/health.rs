//! `GET /healthz` and `GET /readyz`, for a load balancer or an orchestrator.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use tool_runtime::ToolError;
use tool_runtime::executor::ActivityQuery;

use super::blocking;
use crate::AppState;
use crate::error::{ApiError, ErrorBody, UNAVAILABLE};

/// The process is up and answering.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "health",
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = Object))
)]
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The store answers a read, so calls can be recorded and approvals decided.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "health",
    responses(
        (status = 200, description = "`{\"status\": \"ready\", \"tools\": n}`", body = Object),
        (status = 503, description = "The store does not answer", body = ErrorBody),
    )
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let executor = state.executor.clone();
    let probe = ActivityQuery {
        limit: Some(1),
        ..ActivityQuery::default()
    };
    blocking(move || executor.activity(&probe))
        .await
        .map_err(|e| {
            ApiError::new(
                ToolError::new(
                    UNAVAILABLE,
                    format!("the store does not answer: {}", e.error().message),
                )
                .retryable(true),
            )
        })?;
    Ok(Json(json!({
        "status": "ready",
        "tools": state.executor.toolset().len(),
    })))
}
