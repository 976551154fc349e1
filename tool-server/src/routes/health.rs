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

/// The store answers a read, so calls can be recorded and approvals decided. The answer names
/// the store's kind and nothing else about it: the route needs no token, and a file's path or a
/// server's address in a failure message is for the operator's log, not for anyone who asks.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "health",
    responses(
        (status = 200, description = "`{\"status\": \"ready\", \"store\": kind, \"tools\": n}`", body = Object),
        (status = 503, description = "The store does not answer", body = ErrorBody),
    )
)]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let executor = state.executor.clone();
    let probe = ActivityQuery {
        limit: Some(1),
        ..ActivityQuery::default()
    };
    let store = state.executor.store().kind();
    blocking(move || executor.activity(&probe))
        .await
        .map_err(|e| {
            tracing::warn!(error = %e.error().message, "readiness: the store does not answer");
            ApiError::new(
                ToolError::new(UNAVAILABLE, format!("the {store} store does not answer"))
                    .retryable(true)
                    .with_detail("store", store),
            )
        })?;
    Ok(Json(json!({
        "status": "ready",
        "store": store,
        "tools": state.executor.toolset().len(),
    })))
}
