//! Chat runs as the store keeps them: `GET /api/v1/chat` lists them, `GET
//! /api/v1/chat/{run_id}` reads one from the store (so any replica answers), `POST
//! /api/v1/chat/{run_id}/cancel` cancels one; and a server that starts resumes the runs whose
//! worker died.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_providers::agent::{AgentError, Checkpoint, CheckpointStatus};
use tool_providers::codec::{Decoded, StopReason};
use tool_runtime::store::{RunQuery, StoredRun};
use tool_runtime::{ErrorCode, Executor, ToolError};
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::chat::{Chat, carry_on, decided};
use super::run_lookup::{durable_chat, find_run, stored_run};
use crate::AppState;
use crate::auth::AgentAccess;
use crate::error::{ApiError, ErrorBody};

/// A stored run as the API answers it: the same fields as a chat answer, from its checkpoint.
pub(crate) fn body_of(run: &StoredRun) -> Value {
    let cp = match Checkpoint::from_json(&run.checkpoint) {
        Ok(cp) => cp,
        Err(error) => {
            return json!({ "run_id": run.id, "status": run.status, "error": error });
        }
    };
    let mut body = json!({
        "run_id": cp.run_id,
        "status": cp.status.as_str(),
        "answer": cp.answer,
        "transcript": cp.state.transcript,
        "iterations": cp.state.iterations,
        "usage": cp.state.usage,
        "created_ms": run.created_ms,
        "updated_ms": run.updated_ms,
    });
    if let Some(session) = &cp.session {
        body["session"] = json!(session);
    }
    if cp.status == CheckpointStatus::Suspended {
        body["pending"] = cp
            .state
            .pending
            .iter()
            .map(|p| json!({ "operation_id": p.operation_id, "tool": p.call.name }))
            .collect();
    }
    if let Some(error) = &cp.error {
        body["error"] = json!(error);
    }
    if let Some(lease) = &run.lease {
        body["worker"] = json!(lease.owner);
    }
    body
}

/// The run `run_id` as the store holds it, if it does.
pub(crate) async fn stored_body(
    executor: &Executor,
    run_id: &str,
) -> Result<Option<Value>, ApiError> {
    Ok(find_run(executor, run_id).await?.as_ref().map(body_of))
}

/// The conversation a follow-up in `session` continues: the one its last run ended with (none
/// for a session without runs). Refused while that run has no answer (it waits, failed or was
/// cancelled: its conversation ends on calls without results), and on a server whose store
/// keeps no runs.
pub(crate) async fn session_history(
    chat: &Chat,
    executor: &Executor,
    session: &str,
) -> Result<Vec<Value>, ApiError> {
    if !chat.durable() {
        return Err(ApiError::new(
            ToolError::new(
                ErrorCode::INVALID_ARGUMENTS,
                "this server's store keeps no chat runs, so a session cannot be continued",
            )
            .recover("send the whole conversation in `messages`, without `session`"),
        ));
    }
    let query = RunQuery {
        session: Some(session.to_owned()),
        limit: Some(1),
        ..Default::default()
    };
    let store = executor.clone();
    let last = blocking(move || Ok(store.store().list_runs(&query)?)).await?;
    let Some(run) = last.into_iter().next() else {
        return Ok(Vec::new());
    };
    let cp = Checkpoint::from_json(&run.checkpoint).map_err(ApiError::new)?;
    if !matches!(
        cp.status,
        CheckpointStatus::Answered | CheckpointStatus::MaxIterations
    ) {
        let mut err = ApiError::new(
            ToolError::new(
                ErrorCode::of("CONFLICT"),
                format!(
                    "the last run of session {session:?}, {:?}, has no answer to continue from ({})",
                    cp.run_id,
                    cp.status.as_str()
                ),
            )
            .recover(
                "wait until it answers (GET /api/v1/chat/{run_id}); a cancelled run's session \
                 is not continued: start another",
            ),
        );
        err.set_status(StatusCode::CONFLICT);
        return Err(err);
    }
    let mut conversation = cp.state.conversation;
    // the model's final answer ends the run's report, not the conversation it was sent
    if let Some(answer) = cp.answer {
        conversation.extend(chat.agent.model().assistant_entries(&Decoded {
            text: answer,
            calls: Vec::new(),
            stop: StopReason::EndTurn,
            assistant: None,
        }));
    }
    Ok(conversation)
}

/// Which runs to list.
#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub(crate) struct RunFilter {
    /// Only runs with this status (`running`, `suspended`, `answered`, `max_iterations`,
    /// `failed`, `cancelled`).
    status: Option<String>,
    /// Only runs of this session.
    session: Option<String>,
    /// At most this many (default and most: 1,000).
    limit: Option<usize>,
}

/// The chat runs the store keeps, most recently saved first, without their transcripts.
#[utoipa::path(
    get,
    path = "/api/v1/chat",
    operation_id = "list_chat_runs",
    tag = "chat",
    params(RunFilter),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"runs\": [{\"run_id\", \"status\", \"session\", \
          \"iterations\", \"created_ms\", \"updated_ms\", \"worker\"?}]}`", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "This server has no agent", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    _: AgentAccess,
    State(state): State<AppState>,
    Query(filter): Query<RunFilter>,
) -> Result<Json<Value>, ApiError> {
    durable_chat(&state)?;
    let query = RunQuery {
        status: filter.status,
        session: filter.session,
        limit: filter.limit,
    };
    let executor = state.executor.clone();
    let runs = blocking(move || Ok(executor.store().list_runs(&query)?)).await?;
    let runs: Vec<Value> = runs
        .iter()
        .map(|run| {
            let mut body = body_of(run);
            if let Value::Object(fields) = &mut body {
                fields.remove("transcript");
                fields.remove("pending");
            }
            body
        })
        .collect();
    Ok(Json(json!({ "runs": runs })))
}

/// Why a run is cancelled.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct CancelRequest {
    /// Given to the run's waiting calls as their denial's reason.
    #[serde(default)]
    reason: Option<String>,
}

/// Cancels a run: its calls still waiting for a person are denied, and it is never resumed.
#[utoipa::path(
    post,
    path = "/api/v1/chat/{run_id}/cancel",
    operation_id = "cancel_chat_run",
    tag = "chat",
    params(("run_id" = String, Path, description = "The run id a chat answer gave")),
    request_body(content = CancelRequest, description = "Optional: `{\"reason\": \"...\"}`"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run, `status` `cancelled`", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "No such run", body = ErrorBody),
        (status = 409, description = "It has ended, or a worker is driving it now (try again \
          once it waits)", body = ErrorBody),
    )
)]
pub(crate) async fn cancel(
    _: AgentAccess,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    body: Option<Json<CancelRequest>>,
) -> Result<Json<Value>, ApiError> {
    let chat = durable_chat(&state)?;
    stored_run(&state.executor, &run_id).await?;
    let reason = body
        .and_then(|Json(b)| b.reason)
        .unwrap_or_else(|| "the run was cancelled".into());
    match chat.agent.cancel_run(&run_id, &reason).await {
        Ok(_) => Ok(Json(
            stored_body(&state.executor, &run_id)
                .await?
                .unwrap_or(Value::Null),
        )),
        Err(e @ (AgentError::Claimed { .. } | AgentError::Resume(_))) => {
            let mut err = ApiError::new(
                ToolError::new(ErrorCode::of("CONFLICT"), e.to_string())
                    .recover("a run is cancelled while it waits for a person or has failed"),
            );
            err.set_status(StatusCode::CONFLICT);
            Err(err)
        }
        Err(e) => Err(ApiError::internal(e.to_string())),
    }
}

/// How often a server looks in the store for runs nobody drives.
const SCAN: Duration = Duration::from_secs(2);

/// Resumes, in the background, the runs this store holds that nobody drives: a run whose
/// worker died (`running`, its lease expired) goes on from its last checkpoint; a suspended one
/// is watched and resumes once its calls are decided. The store is looked at when the server
/// starts and every [`SCAN`] after, so a replica takes over the runs of one that died while it
/// ran. Another replica doing the same is held off by the runs' leases. Needs a tokio runtime
/// (a server has one); without, nothing starts.
pub(crate) fn recover(chat: Arc<Chat>, executor: Executor) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if !chat.durable() {
        return;
    }
    runtime.spawn(async move {
        loop {
            scan(&chat, &executor).await;
            tokio::time::sleep(SCAN).await;
        }
    });
}

/// One look at the store: a task for each run nobody drives or watches here.
async fn scan(chat: &Arc<Chat>, executor: &Executor) {
    let store = executor.clone();
    let listed = blocking(move || {
        let mut runs = Vec::new();
        for status in ["running", "suspended"] {
            let query = RunQuery {
                status: Some(status.into()),
                ..Default::default()
            };
            runs.extend(store.store().list_runs(&query)?);
        }
        Ok(runs)
    })
    .await;
    let runs = match listed {
        Ok(runs) => runs,
        Err(e) => {
            tracing::warn!(error = %e.error().message, "cannot list the stored chat runs to resume");
            return;
        }
    };
    for run in runs.into_iter().filter(|r| r.lease.is_none()) {
        if !chat.watch(&run.id) {
            continue;
        }
        let (chat, executor) = (chat.clone(), executor.clone());
        tokio::spawn(async move {
            let id = run.id.clone();
            resume_stored(&chat, &executor, run).await;
            chat.unwatch(&id);
        });
    }
}

async fn resume_stored(chat: &Chat, executor: &Executor, run: StoredRun) {
    let cp = match Checkpoint::from_json(&run.checkpoint) {
        Ok(cp) => cp,
        Err(e) => {
            tracing::warn!(run_id = %run.id, error = %e.message, "a stored chat run cannot be resumed");
            return;
        }
    };
    if cp.status == CheckpointStatus::Suspended
        && !decided(chat, executor, &cp.state.operation_ids()).await
    {
        return;
    }
    match chat.agent.resume_run(&run.id).await {
        Ok(report) => {
            carry_on(chat, executor, report, None).await;
        }
        // another replica took it, or it ended meanwhile
        Err(AgentError::Claimed { .. } | AgentError::Resume(_)) => {}
        Err(e) => {
            tracing::warn!(run_id = %run.id, error = %e, "a stored chat run failed to resume")
        }
    }
}
