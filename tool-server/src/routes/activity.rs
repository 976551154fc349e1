//! `GET /api/v1/activity` and `GET /api/v1/activity/stream`: the audit trail as a feed.
//!
//! The stream reads the store, not this process's memory, so every replica sharing a store shows
//! every replica's calls.

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::executor::{ActivityQuery, AuditRecord};
use tool_runtime::tool::Initiator;
use utoipa::IntoParams;

use super::blocking;
use crate::AppState;
use crate::auth::ApproverAccess;
use crate::error::{ApiError, ErrorBody};

/// How often the stream looks for new records.
const POLL: Duration = Duration::from_millis(500);

/// Filters and paging of the feed; every filter set must match.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct FeedQuery {
    /// Only this tool.
    tool: Option<String>,
    /// Only calls started by `user`, `model` or `system`.
    #[param(value_type = Option<String>)]
    initiator: Option<Initiator>,
    /// Only this session.
    session: Option<String>,
    /// Only the calls of one request.
    correlation_id: Option<String>,
    /// Only records at or after this time (ms since the epoch).
    since_ms: Option<u64>,
    /// At most this many (default 50, at most 500).
    limit: Option<usize>,
    /// Skip this many, newest first (the next page starts at `offset + limit`).
    offset: Option<usize>,
}

impl FeedQuery {
    fn activity(&self) -> ActivityQuery {
        ActivityQuery {
            tool: self.tool.clone(),
            correlation_id: self.correlation_id.clone(),
            initiator: self.initiator,
            session: self.session.clone(),
            since_ms: self.since_ms,
            limit: Some(self.limit.unwrap_or(50).min(500)),
            offset: self.offset,
        }
    }
}

/// The feed, newest first: each call's tool, status, summary, who started it, who decided and
/// when.
#[utoipa::path(
    get,
    path = "/api/v1/activity",
    operation_id = "list_activity",
    tag = "activity",
    params(FeedQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"records\": [...], \"next_offset\"?}`: audit records \
          (tool, status, result_summary, initiator, decision, decided_by, timestamp_ms, \
          redacted arguments)", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn feed(
    _: ApproverAccess,
    State(state): State<AppState>,
    Query(query): Query<FeedQuery>,
) -> Result<Json<Value>, ApiError> {
    let q = query.activity();
    let (limit, offset) = (q.limit(), q.offset());
    let executor = state.executor.clone();
    let records = blocking(move || executor.activity(&q)).await?;
    let mut body = json!({ "records": records });
    if records_full(&body, limit) {
        body["next_offset"] = json!(offset + limit);
    }
    Ok(Json(body))
}

fn records_full(body: &Value, limit: usize) -> bool {
    body["records"].as_array().is_some_and(|r| r.len() == limit)
}

/// New records as server-sent events (`event: activity`, the record as `data`), oldest first,
/// from the moment of connecting (or `since_ms`), with the same filters as the feed.
#[utoipa::path(
    get,
    path = "/api/v1/activity/stream",
    operation_id = "stream_activity",
    tag = "activity",
    params(FeedQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream` of `activity` events, one audit \
          record each", content_type = "text/event-stream", body = String),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
    )
)]
pub(crate) async fn stream(
    _: ApproverAccess,
    State(state): State<AppState>,
    Query(query): Query<FeedQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut q = query.activity();
    q.limit = Some(500);
    q.offset = None;
    let floor = q.since_ms.unwrap_or_else(now_ms);
    let follow = Follow {
        executor: state.executor.clone(),
        query: q,
        floor,
        newest: floor,
        seen: HashSet::new(),
        queue: Vec::new(),
    };
    let events = futures::stream::unfold(follow, |mut f| async move {
        loop {
            if let Some(record) = f.queue.pop() {
                let event = Event::default()
                    .event("activity")
                    .json_data(&record)
                    .unwrap_or_else(|_| Event::default().event("activity"));
                return Some((Ok(event), f));
            }
            f.poll().await;
            if f.queue.is_empty() {
                tokio::time::sleep(POLL).await;
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// How far back each poll reads again, so that a record appended late (a slow store write, a
/// replica whose clock is a little behind) is still sent; the seen set keeps it from being sent
/// twice.
const LOOKBACK_MS: u64 = 5_000;

/// The stream's place in the trail.
struct Follow {
    executor: tool_runtime::Executor,
    query: ActivityQuery,
    /// Nothing older than this is sent (the moment of connecting, or `since_ms`).
    floor: u64,
    /// The newest record's time so far.
    newest: u64,
    /// The records sent within [`LOOKBACK_MS`] of `newest`.
    seen: HashSet<(u64, String, String)>,
    /// Records to send, newest first (popped from the end: oldest first).
    queue: Vec<AuditRecord>,
}

impl Follow {
    async fn poll(&mut self) {
        let mut q = self.query.clone();
        q.since_ms = Some(self.floor.max(self.newest.saturating_sub(LOOKBACK_MS)));
        let executor = self.executor.clone();
        let Ok(records) = blocking(move || executor.activity(&q)).await else {
            // the store is unreachable: keep the connection and try again on the next poll
            return;
        };
        let key = |r: &AuditRecord| {
            (
                r.timestamp_ms,
                r.call_id.to_string(),
                r.status.as_str().to_owned(),
            )
        };
        let fresh: Vec<AuditRecord> = records
            .into_iter()
            .filter(|r| !self.seen.contains(&key(r)))
            .collect();
        for r in &fresh {
            self.newest = self.newest.max(r.timestamp_ms);
            self.seen.insert(key(r));
        }
        let horizon = self.newest.saturating_sub(LOOKBACK_MS);
        self.seen.retain(|(t, _, _)| *t >= horizon);
        self.queue = fresh;
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}
