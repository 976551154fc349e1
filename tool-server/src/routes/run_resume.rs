//! `POST /api/v1/chat/{run_id}/resume`: a stored run continued on this replica when nobody
//! drives it: one that failed (its model failed past its retries; the failed request is sent
//! again), one whose worker died (`running`, its lease expired), or a suspended one whose calls
//! are all decided. Calls that already ran are not run again (their recorded results are used).

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tool_providers::agent::{AgentError, Checkpoint, CheckpointStatus};

use super::chat::{Start, agent_failed, answer, stream, undecided, wants_events};
use super::run_lookup::{conflict, durable_chat, stored_run};
use crate::AppState;
use crate::auth::AgentAccess;
use crate::error::{ApiError, ErrorBody};

/// Resumes a run nobody drives, here: answered as `POST /api/v1/chat` answers.
#[utoipa::path(
    post,
    path = "/api/v1/chat/{run_id}/resume",
    operation_id = "resume_chat_run",
    tag = "chat",
    params(("run_id" = String, Path, description = "The run id a chat answer (or its \
      `AGENT_FAILED` error's `details.run_id`) gave")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run's report, as `POST /api/v1/chat` answers it; \
          with `Accept: text/event-stream`, the resumed run's events and a last `done` event",
          body = Object),
        (status = 202, description = "Suspended again, on new calls waiting for a person: \
          `{\"run_id\", \"status\": \"suspended\", \"pending\": [...]}`; it resumes by itself \
          once they are decided", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "No such run, or this server keeps no runs", body = ErrorBody),
        (status = 409, description = "`CONFLICT`, `details.status` says why: `running` (a \
          worker drives it: `details.worker`), `suspended` (calls still wait for a person: \
          `details.pending`), or the status of a run that has ended (`answered`, \
          `max_iterations`, `cancelled`), which is never resumed", body = ErrorBody),
        (status = 502, description = "The model failed again: `AGENT_FAILED`; the run stays \
          `failed`, to be resumed later", body = ErrorBody),
    )
)]
pub(crate) async fn resume(
    _: AgentAccess,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let chat = durable_chat(&state)?;
    let executor = state.executor.clone();
    let run = stored_run(&executor, &run_id).await?;
    let cp = Checkpoint::from_json(&run.checkpoint).map_err(ApiError::new)?;
    let status = cp.status.as_str();
    if cp.status.is_final() {
        return Err(conflict(
            &run_id,
            format!("run {run_id:?} has ended ({status}) and is not resumed"),
            "send a follow-up with the run's `session` to continue its conversation",
            [("status", json!(status))],
        ));
    }
    if let Some(lease) = &run.lease {
        return Err(held(&run_id, &lease.owner));
    }
    if cp.status == CheckpointStatus::Suspended {
        let left = undecided(&executor, &cp.state.operation_ids()).await?;
        if !left.is_empty() {
            return Err(conflict(
                &run_id,
                format!(
                    "run {run_id:?} waits for a person to decide {} call(s)",
                    left.len()
                ),
                "approve or deny them (POST /api/v1/pending/{id}/approve): the run resumes \
                 by itself",
                [("status", json!(status)), ("pending", json!(left))],
            ));
        }
    }
    if !chat.watch(&run_id) {
        let worker = chat.agent.checkpoints().map(|c| c.worker.clone());
        return Err(held(&run_id, worker.as_deref().unwrap_or_default()));
    }
    if wants_events(&headers) {
        return Ok(stream(chat, executor, Start::Resume(run_id)).into_response());
    }
    match chat.agent.resume_run(&run_id).await {
        Ok(report) => Ok(answer(chat, executor, report, cp.session.as_deref())),
        Err(e) => {
            chat.unwatch(&run_id);
            Err(refused(&run_id, e))
        }
    }
}

/// The 409 of a run a worker drives (this server's own, while a task of it drives or resumes
/// the run).
fn held(run_id: &str, worker: &str) -> ApiError {
    conflict(
        run_id,
        format!("run {run_id:?} is being driven by {worker:?}"),
        "follow it (GET /api/v1/chat/{run_id}/events); resume it only once its worker has \
         stopped (its lease expires)",
        [("status", json!("running")), ("worker", json!(worker))],
    )
}

/// Why resuming run `run_id` did not give a report, as the API answers it.
pub(crate) fn refused(run_id: &str, e: AgentError) -> ApiError {
    match e {
        AgentError::Claimed { worker, .. } => held(run_id, &worker),
        AgentError::LeaseLost(_) => held(run_id, "another worker"),
        // it ended between the look and the claim
        AgentError::Resume(message) => conflict(
            run_id,
            message,
            "read where it stands (GET /api/v1/chat/{run_id})",
            [],
        ),
        AgentError::Checkpoint(error) | AgentError::Store(error) => ApiError::new(error),
        e => agent_failed(e, Some(run_id)),
    }
}
