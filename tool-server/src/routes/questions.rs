//! `GET /api/v1/questions`, `POST /api/v1/questions/{id}/answer`, `GET /api/v1/running` and
//! `GET /api/v1/live`: what the calls this server runs ask the person, and how far they are.
//! Every route here takes the approver's token: the model can never answer a tool's question.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::ToolError;
use utoipa::ToSchema;

use crate::AppState;
use crate::auth::ApproverAccess;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};
use crate::questions::{Answer, Answered, Snapshot, hand_over};

/// The least time between two views the live stream sends: a tool reporting progress in a
/// tight loop costs the page a few redraws a second, not one per report.
const LIVE_EVERY: Duration = Duration::from_millis(150);

/// The questions the tools of running calls wait on, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/questions",
    operation_id = "list_questions",
    tag = "questions",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"questions\": [{\"id\", \"tool\", \"call_id\", \
          \"message\", \"schema\", \"asked_at\", \"expires_at\"}]}`: `schema` is the flat form \
          (a JSON Schema object of primitive fields, with defaults and enums); the times are ms \
          since the epoch", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token: only a person answers", body = ErrorBody),
    )
)]
pub(crate) async fn list(_: ApproverAccess, State(state): State<AppState>) -> Json<Value> {
    Json(json!({ "questions": state.page.live.snapshot().questions }))
}

/// What the person does with a question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum AnswerRequest {
    /// Sends the form: `content` has its fields.
    Accept {
        /// The fields, checked against the question's schema.
        #[schema(value_type = Object)]
        content: Value,
    },
    /// Refuses to answer.
    Decline,
    /// Dismisses the question without choosing.
    Cancel,
}

/// Answers a question: the tool that asked gets the content (or the refusal) at once.
#[utoipa::path(
    post,
    path = "/api/v1/questions/{id}/answer",
    operation_id = "answer_question",
    tag = "questions",
    params(("id" = String, Path, description = "The question id (`q-…`)")),
    request_body(content = AnswerRequest, description = "`{\"action\": \"accept\", \
      \"content\": {...}}`, `{\"action\": \"decline\"}` or `{\"action\": \"cancel\"}`"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"answered\": id, \"action\"}`", body = Object),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token: only a person answers", body = ErrorBody),
        (status = 404, description = "No open question with this id: answered, expired, or \
          its call ended", body = ErrorBody),
        (status = 422, description = "`INVALID_ANSWER`: the content does not fit the form \
          (`violations` has each field's pointer); the question stays open", body = ErrorBody),
    )
)]
pub(crate) async fn answer(
    _: ApproverAccess,
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<AnswerRequest>,
) -> Result<Json<Value>, ApiError> {
    let (answer, action) = match request {
        AnswerRequest::Accept { content } => (Answer::Accept(content), "accept"),
        AnswerRequest::Decline => (Answer::Decline, "decline"),
        AnswerRequest::Cancel => (Answer::Cancel, "cancel"),
    };
    let answered = state.page.live.answer(&id, answer).map_err(|e| {
        let invalid = e.code == tool_runtime::ErrorCode::INVALID_ANSWER;
        let mut err = ApiError::new(e);
        if invalid {
            err.set_status(StatusCode::UNPROCESSABLE_ENTITY);
        }
        err
    })?;
    if let Answered::Elsewhere { answer, until } = answered {
        // the replica running the call takes it from the store at its next look
        let (store, key) = (state.executor.store().clone(), id.clone());
        super::blocking(move || {
            hand_over(store.as_ref(), &key, &answer, until).map_err(ToolError::from)
        })
        .await?;
    }
    Ok(Json(json!({ "answered": id, "action": action })))
}

/// The calls this server is running, oldest first, each with the last progress its tool
/// reported.
#[utoipa::path(
    get,
    path = "/api/v1/running",
    operation_id = "list_running",
    tag = "questions",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"running\": [{\"call_id\", \"tool\", \"started_at\", \
          \"progress\", \"total\", \"message\"}]}`: the progress fields are null until the tool \
          reports", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn running(_: ApproverAccess, State(state): State<AppState>) -> Json<Value> {
    Json(json!({ "running": state.page.live.snapshot().running }))
}

/// The open questions and the running calls as server-sent events: `event: live`, its data
/// `{"questions": [...], "running": [...]}` as the two listings give them, sent on connecting
/// and after every change (a few a second at most).
#[utoipa::path(
    get,
    path = "/api/v1/live",
    operation_id = "stream_live",
    tag = "questions",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream` of `live` events, each the whole \
          view", content_type = "text/event-stream", body = String),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn live(
    _: ApproverAccess,
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut changes = state.page.live.subscribe();
    changes.mark_changed();
    let live = state.page.live.clone();
    let events = futures::stream::unfold(
        (changes, live, true),
        |(mut changes, live, first)| async move {
            if !first {
                // a burst of changes is sent as one view after it
                tokio::time::sleep(LIVE_EVERY).await;
            }
            changes.changed().await.ok()?;
            changes.borrow_and_update();
            let view = event(&live.snapshot());
            Some((Ok(view), (changes, live, false)))
        },
    );
    Sse::new(events).keep_alive(KeepAlive::default())
}

fn event(view: &Snapshot) -> Event {
    Event::default()
        .event("live")
        .json_data(view)
        .unwrap_or_else(|_| Event::default().event("live"))
}
