//! `POST /api/v1/chat` and `GET /api/v1/chat/{run_id}`: the agent loop run server-side.
//!
//! A run that ends on calls waiting for a person is suspended, not lost: the server watches the
//! pending operations in the store (so a decision made on any replica counts) and resumes the run
//! once every one is decided; the model then sees each outcome (a denial with the person's
//! reason). With `Accept: text/event-stream` the run's events stream as they happen, across the
//! suspension, and the stream ends with a `done` event carrying the run's final report.
//!
//! When the executor's store keeps agent runs (the built-in ones do), every run is checkpointed
//! there after each step: any replica answers `GET /api/v1/chat/{run_id}`, lists runs and cancels
//! them (`runs.rs`), and a server that starts resumes the runs whose worker died.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tool_providers::agent::{
    Agent, AgentError, AgentEvent, Checkpoints, EventSink, RunReport, RunStatus,
};
use tool_providers::codec::{Decoded, StopReason};
use tool_runtime::store::PendingState;
use tool_runtime::{ErrorCode, Executor, ToolError};
use utoipa::ToSchema;

use super::blocking;
use crate::AppState;
use crate::auth::AgentAccess;
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};

/// How often a suspended run looks at its pending operations: a decision made on another
/// replica is noticed within this time; one made through this server wakes the run at once
/// ([`Chat::wake`]).
pub(crate) const POLL: Duration = Duration::from_millis(300);
/// How long a suspended run waits for its decisions before it stops watching (it stays listed
/// as suspended).
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// The most runs whose reports the server keeps; older ones are forgotten first (their calls
/// and decisions stay in the store and the audit trail).
const KEPT_RUNS: usize = 1000;

/// The agent behind the chat route and the runs it has started.
pub(crate) struct Chat {
    pub(crate) agent: Arc<Agent>,
    runs: Mutex<Runs>,
    /// The runs a task of this process watches or drives, so that the store's scan for runs
    /// nobody drives does not start a second one.
    watched: Mutex<std::collections::HashSet<String>>,
    /// The suspended runs of this process waiting for decisions, by the operations they wait
    /// for: a decision made through this server wakes its run without waiting for the poll.
    waiting: Mutex<HashMap<String, Arc<Notify>>>,
}

/// `agent`, checkpointing its runs in the executor's store when the store keeps runs and the
/// agent was not given checkpoint settings of its own.
pub(crate) fn durable(agent: Agent) -> Agent {
    if agent.checkpoints().is_none() && keeps_runs(agent.executor().store().as_ref()) {
        agent.with_checkpoints(Checkpoints::new())
    } else {
        agent
    }
}

/// Whether `store` keeps agent runs: a store without them refuses every run method.
fn keeps_runs(store: &dyn tool_runtime::store::Store) -> bool {
    match store.get_run("") {
        Ok(_) => true,
        Err(e) => !e.message.contains("keeps no agent runs"),
    }
}

/// Run reports by id, and the ids in the order they started.
#[derive(Default)]
struct Runs {
    reports: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl Chat {
    pub(crate) fn new(agent: Arc<Agent>) -> Self {
        Chat {
            agent,
            runs: Mutex::new(Runs::default()),
            watched: Mutex::new(Default::default()),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// Tells the run of this process waiting for operation `op_id`, if any, that it was
    /// decided: the run looks at its operations now instead of at its next poll.
    pub(crate) fn wake(&self, op_id: &str) {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(wake) = waiting.get(op_id) {
            // stored as a permit when the run is between two looks: no decision is missed
            wake.notify_one();
        }
    }

    /// Marks run `id` as watched by this process: `false` if it already was.
    pub(crate) fn watch(&self, id: &str) -> bool {
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned())
    }

    /// Marks run `id` as no longer watched by this process.
    pub(crate) fn unwatch(&self, id: &str) {
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Whether runs are kept in the store (and read from there).
    pub(crate) fn durable(&self) -> bool {
        self.agent.checkpoints().is_some()
    }

    fn set(&self, run_id: &str, body: Value) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        if runs.reports.insert(run_id.to_owned(), body).is_none() {
            runs.order.push_back(run_id.to_owned());
            while runs.order.len() > KEPT_RUNS {
                if let Some(old) = runs.order.pop_front() {
                    runs.reports.remove(&old);
                }
            }
        }
    }

    fn get(&self, run_id: &str) -> Option<Value> {
        self.runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reports
            .get(run_id)
            .cloned()
    }
}

/// One message of the conversation.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct Message {
    /// `user` or `assistant`.
    role: String,
    /// The text.
    content: String,
}

/// A conversation whose last message is the user's request.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct ChatRequest {
    /// The conversation so far, oldest first; the last one is the user's new request.
    messages: Vec<Message>,
    /// The conversation this request continues: the run's calls run in this session, and the
    /// model sees the conversation of the session's last run (kept in the store) before the
    /// messages. A session whose last run has no answer (it waits for a person, failed or was
    /// cancelled) is refused; a session without runs starts with this request.
    #[serde(default)]
    session: Option<String>,
}

impl ChatRequest {
    /// The history in the provider's format and the question.
    fn split(self, agent: &Agent) -> Result<(Vec<Value>, String), ApiError> {
        let invalid =
            |m: &str| {
                ApiError::new(ToolError::new(ErrorCode::INVALID_ARGUMENTS, m).recover(
                    "send {\"messages\": [..., {\"role\": \"user\", \"content\": \"...\"}]}",
                ))
            };
        let mut messages = self.messages;
        let last = messages
            .pop()
            .ok_or_else(|| invalid("there are no messages"))?;
        if last.role != "user" {
            return Err(invalid("the last message must be the user's"));
        }
        let model = agent.model();
        let mut history = Vec::new();
        for m in messages {
            match m.role.as_str() {
                "user" => history.push(model.user_message(&m.content)),
                "assistant" => history.extend(model.assistant_entries(&Decoded {
                    text: m.content,
                    calls: Vec::new(),
                    stop: StopReason::EndTurn,
                    assistant: None,
                })),
                other => {
                    return Err(invalid(&format!(
                        "a message's role is {other:?}; use user or assistant"
                    )));
                }
            }
        }
        Ok((history, last.content))
    }
}

/// Runs the agent loop on a conversation: the model's answer, or a suspended run waiting for a
/// person.
#[utoipa::path(
    post,
    path = "/api/v1/chat",
    operation_id = "chat",
    tag = "chat",
    request_body = ChatRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run's report: `run_id`, `status` (`answered`, \
          `max_iterations`), `answer`, `transcript`, `iterations`, `usage`. With \
          `Accept: text/event-stream`: the run's events (`text_delta`, `call_started`, \
          `call_finished`, `suspended`, `final_answer`, ...) and a last `done` event with the \
          report", body = Object),
        (status = 202, description = "Suspended: `{\"run_id\", \"status\": \"suspended\", \
          \"pending\": [...]}`; it resumes by itself once every operation is decided \
          (`GET /api/v1/chat/{run_id}`)", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "This server has no agent", body = ErrorBody),
        (status = 409, description = "The `session`'s last run has no answer to continue from",
          body = ErrorBody),
        (status = 422, description = "The messages do not end with the user's", body = ErrorBody),
        (status = 502, description = "The model failed", body = ErrorBody),
    )
)]
pub(crate) async fn chat(
    _: AgentAccess,
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<ChatRequest>,
) -> Result<Response, ApiError> {
    let chat = state.chat.clone().ok_or_else(no_agent)?;
    let session = request.session.clone();
    let (mut history, question) = request.split(&chat.agent)?;
    let executor = state.executor.clone();
    if let Some(session) = &session {
        let mut before = super::runs::session_history(&chat, &executor, session).await?;
        before.append(&mut history);
        history = before;
    }
    if wants_events(&headers) {
        let start = Start::New {
            history,
            question,
            session,
        };
        return Ok(stream(chat, executor, start).into_response());
    }
    let run = match &session {
        Some(s) => chat.agent.run_in_session(history, &question, s).await,
        None => chat.agent.run_with_history(history, &question).await,
    };
    let report = run.map_err(|e| agent_failed(e, None))?;
    chat.watch(&report.correlation_id);
    Ok(answer(chat, executor, report, session.as_deref()))
}

/// A run's report as the chat routes answer it: 200 when the run has ended; 202 while it waits
/// for a person, watched by a task of this process that resumes it once every call is
/// decided. The caller has marked the run watched ([`Chat::watch`]).
pub(crate) fn answer(
    chat: Arc<Chat>,
    executor: Executor,
    report: RunReport,
    session: Option<&str>,
) -> Response {
    let body = with_session(run_body(&report), session);
    let run_id = report.correlation_id.clone();
    chat.set(&run_id, body.clone());
    if report.suspended().is_none() {
        chat.unwatch(&run_id);
        return Json(body).into_response();
    }
    tokio::spawn(async move {
        let report = carry_on(&chat, &executor, report, None).await;
        chat.set(&run_id, report);
        chat.unwatch(&run_id);
    });
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

/// Where a run stands: suspended, or its final report.
#[utoipa::path(
    get,
    path = "/api/v1/chat/{run_id}",
    operation_id = "get_chat_run",
    tag = "chat",
    params(("run_id" = String, Path, description = "The run id a chat answer gave")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The run's latest report (`status` `suspended` while it \
          waits)", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "No such run on this server", body = ErrorBody),
    )
)]
pub(crate) async fn run(
    _: AgentAccess,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let chat = state.chat.clone().ok_or_else(no_agent)?;
    if chat.durable()
        && let Some(body) = super::runs::stored_body(&state.executor, &run_id).await?
    {
        return Ok(Json(body));
    }
    chat.get(&run_id)
        .map(Json)
        .ok_or_else(|| super::run_lookup::no_run(&run_id))
}

pub(crate) fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

pub(crate) fn no_agent() -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::NOT_FOUND,
            "this server has no agent to chat with",
        )
        .recover("serve with ServerOptions::chat(agent)"),
    )
}

/// A run that failed, as the API answers it: `AGENT_FAILED`, and for a run that had started
/// (or `run_id`, the run being resumed), its id in `details.run_id` and the route that resumes
/// it in `details.resume`; such a run is kept in the store as `failed`, with what it did so
/// far, and `POST /api/v1/chat/{run_id}/resume` sends the failed request again.
pub(crate) fn agent_failed(e: AgentError, run_id: Option<&str>) -> ApiError {
    let mut error = ToolError::new(
        ErrorCode::of("AGENT_FAILED"),
        format!("the run failed: {e}"),
    );
    let started = e.partial().map(|p| p.state.correlation_id.as_str());
    if let Some(id) = started.or(run_id) {
        error = error
            .with_detail("run_id", id)
            .with_detail("resume", format!("POST /api/v1/chat/{id}/resume"))
            .recover(format!(
                "the run is kept as failed (GET /api/v1/chat/{id}); resume it with \
                 POST /api/v1/chat/{id}/resume once the model answers again"
            ));
    }
    let mut err = ApiError::new(error);
    err.set_status(StatusCode::BAD_GATEWAY);
    err
}

/// `body` with the run's `session`, when it has one.
fn with_session(mut body: Value, session: Option<&str>) -> Value {
    if let Some(s) = session {
        body["session"] = json!(s);
    }
    body
}

/// The report as the API answers it.
pub(crate) fn run_body(report: &RunReport) -> Value {
    let (status, pending) = match &report.status {
        RunStatus::Answered => ("answered", Vec::new()),
        RunStatus::MaxIterations => ("max_iterations", Vec::new()),
        RunStatus::Suspended { state } => (
            "suspended",
            state
                .pending
                .iter()
                .map(|p| json!({ "operation_id": p.operation_id, "tool": p.call.name }))
                .collect(),
        ),
    };
    let mut body = json!({
        "run_id": report.correlation_id,
        "status": status,
        "answer": report.answer,
        "transcript": report.transcript,
        "iterations": report.iterations,
        "usage": report.usage,
    });
    if !pending.is_empty() {
        body["pending"] = Value::Array(pending);
    }
    body
}

/// Waits for each suspension's decisions and resumes, until the run ends (or waits too long);
/// the last report's body. A run kept in the store is resumed from there, under its lease: if
/// another worker claimed it first, this one stops watching and answers what the store holds.
pub(crate) async fn carry_on(
    chat: &Chat,
    executor: &Executor,
    mut report: RunReport,
    sink: Option<EventSink>,
) -> Value {
    while let Some(state) = report.suspended().cloned() {
        chat.set(&report.correlation_id, run_body(&report));
        if !decided(chat, executor, &state.operation_ids()).await {
            return run_body(&report);
        }
        let id = report.correlation_id.clone();
        let resumed = match (&sink, chat.durable()) {
            (Some(s), true) => chat.agent.resume_run_observed(&id, s.clone()).await,
            (None, true) => chat.agent.resume_run(&id).await,
            (Some(s), false) => chat.agent.resume_observed(state, s.clone()).await,
            (None, false) => chat.agent.resume(state).await,
        };
        report = match resumed {
            Ok(r) => r,
            Err(AgentError::Claimed { .. } | AgentError::Resume(_)) if chat.durable() => {
                // driven (or ended) elsewhere: the store says where it stands
                return super::runs::stored_body(executor, &id)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| run_body(&report));
            }
            Err(e) => {
                return json!({
                    "run_id": report.correlation_id,
                    "status": "failed",
                    "error": ToolError::new(ErrorCode::of("AGENT_FAILED"), e.to_string()),
                });
            }
        };
    }
    run_body(&report)
}

/// The registration of a waiting run's operations in [`Chat::wake`]'s table, removed when the
/// run stops waiting.
struct Waiting<'a> {
    chat: &'a Chat,
    ids: &'a [String],
    wake: Arc<Notify>,
}

impl<'a> Waiting<'a> {
    fn new(chat: &'a Chat, ids: &'a [String]) -> Self {
        let wake = Arc::new(Notify::new());
        let mut waiting = chat.waiting.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            waiting.insert(id.clone(), wake.clone());
        }
        Waiting { chat, ids, wake }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = self.chat.waiting.lock().unwrap_or_else(|e| e.into_inner());
        for id in self.ids {
            if waiting.get(id).is_some_and(|w| Arc::ptr_eq(w, &self.wake)) {
                waiting.remove(id);
            }
        }
    }
}

/// Whether every operation was decided (completed or denied) within [`MAX_WAIT`]. Looks at the
/// store every [`POLL`] (a decision made on another replica), and at once when a decision made
/// through this server wakes it.
pub(crate) async fn decided(chat: &Chat, executor: &Executor, ids: &[String]) -> bool {
    let waiting = Waiting::new(chat, ids);
    let deadline = tokio::time::Instant::now() + MAX_WAIT;
    while tokio::time::Instant::now() < deadline {
        if undecided(executor, ids)
            .await
            .is_ok_and(|left| left.is_empty())
        {
            return true;
        }
        let _ = tokio::time::timeout(POLL, waiting.wake.notified()).await;
    }
    false
}

/// The operations of `ids` not decided yet (neither completed nor denied).
pub(crate) async fn undecided(
    executor: &Executor,
    ids: &[String],
) -> Result<Vec<String>, ApiError> {
    let (executor, ids) = (executor.clone(), ids.to_vec());
    blocking(move || {
        let mut left = Vec::new();
        for id in ids {
            let op = executor.pending_operation(&id)?;
            let done = op.is_none_or(|op| {
                matches!(
                    op.state,
                    PendingState::Completed { .. } | PendingState::Denied { .. }
                )
            });
            if !done {
                left.push(id);
            }
        }
        Ok(left)
    })
    .await
}

/// What a streamed run starts from.
pub(crate) enum Start {
    /// A new run on a conversation, maybe continuing a session.
    New {
        history: Vec<Value>,
        question: String,
        session: Option<String>,
    },
    /// The stored run with this id, already watched by the caller, resumed.
    Resume(String),
}

/// The run as server-sent events: every agent event by its name, then `done` with the report
/// (or `{"error"}` when it failed).
pub(crate) fn stream(
    chat: Arc<Chat>,
    executor: Executor,
    start: Start,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let events = tx.clone();
    let sink: EventSink = Arc::new(move |e: &AgentEvent| {
        let name = serde_json::to_value(e)
            .ok()
            .and_then(|v| v["event"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "event".into());
        if let Ok(event) = Event::default().event(name).json_data(e) {
            let _ = events.send(event);
        }
    });
    // the run goes on if the client disconnects: its calls and decisions are real
    tokio::spawn(async move {
        let (run, resumed) = match start {
            Start::New {
                history,
                question,
                session: Some(s),
            } => {
                let run = chat
                    .agent
                    .run_in_session_observed(history, &question, &s, sink.clone());
                (run.await, None)
            }
            Start::New {
                history, question, ..
            } => {
                let run = chat.agent.run_observed(history, &question, sink.clone());
                (run.await, None)
            }
            Start::Resume(id) => {
                let run = chat.agent.resume_run_observed(&id, sink.clone()).await;
                (run, Some(id))
            }
        };
        let done = match run {
            Ok(report) => {
                chat.set(&report.correlation_id, run_body(&report));
                let id = report.correlation_id.clone();
                chat.watch(&id);
                let body = carry_on(&chat, &executor, report, Some(sink)).await;
                chat.set(&id, body.clone());
                chat.unwatch(&id);
                body
            }
            Err(e) => match resumed {
                Some(id) => {
                    chat.unwatch(&id);
                    json!({ "error": super::run_resume::refused(&id, e).error() })
                }
                None => json!({ "error": agent_failed(e, None).error() }),
            },
        };
        if let Ok(event) = Event::default().event("done").json_data(&done) {
            let _ = tx.send(event);
        }
    });
    let body = futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    );
    Sse::new(body).keep_alive(KeepAlive::default())
}
