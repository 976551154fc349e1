//! Finding a stored chat run for a route: the server's agent, a store that keeps runs, and the
//! run itself, each refused with the same structured error on every route that reads runs.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::Value;
use tool_runtime::store::StoredRun;
use tool_runtime::{ErrorCode, Executor, ToolError};

use super::blocking;
use super::chat::{Chat, no_agent};
use crate::AppState;
use crate::error::ApiError;

/// The server's agent, when it has one and its store keeps runs: the routes that read runs
/// from the store answer 404 otherwise.
pub(crate) fn durable_chat(state: &AppState) -> Result<Arc<Chat>, ApiError> {
    let chat = state.chat.clone().ok_or_else(no_agent)?;
    if !chat.durable() {
        return Err(ApiError::new(
            ToolError::new(
                ErrorCode::NOT_FOUND,
                "this server's store keeps no chat runs",
            )
            .recover("serve with a store that keeps agent runs (SQLite, Redis or memory)"),
        ));
    }
    Ok(chat)
}

/// The 404 of a run the store does not hold.
pub(crate) fn no_run(run_id: &str) -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("there is no chat run {run_id:?}"),
        )
        .recover("list the runs (GET /api/v1/chat) and use one of their ids"),
    )
}

/// The stored run `run_id`, if the store holds it.
pub(crate) async fn find_run(
    executor: &Executor,
    run_id: &str,
) -> Result<Option<StoredRun>, ApiError> {
    let (executor, id) = (executor.clone(), run_id.to_owned());
    blocking(move || Ok(executor.store().get_run(&id)?)).await
}

/// The stored run `run_id`, or [`no_run`].
pub(crate) async fn stored_run(executor: &Executor, run_id: &str) -> Result<StoredRun, ApiError> {
    find_run(executor, run_id)
        .await?
        .ok_or_else(|| no_run(run_id))
}

/// A 409 `CONFLICT` about run `run_id`: `details` says where it stands (`status`, and the
/// `worker` driving it or the `pending` calls it waits for), so a client can tell a run held
/// elsewhere from one still waiting for a person or one that has ended.
pub(crate) fn conflict(
    run_id: &str,
    message: String,
    recover: &str,
    details: impl IntoIterator<Item = (&'static str, Value)>,
) -> ApiError {
    let mut error = ToolError::new(ErrorCode::of("CONFLICT"), message)
        .recover(recover)
        .with_detail("run_id", run_id);
    for (key, value) in details {
        error = error.with_detail(key, value);
    }
    let mut err = ApiError::new(error);
    err.set_status(StatusCode::CONFLICT);
    err
}
