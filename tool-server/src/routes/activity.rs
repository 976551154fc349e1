//! `GET /api/v1/activity` and `GET /api/v1/activity/stream`: the audit trail as a feed.
//!
//! The stream reads the store, not this process's memory, so every replica sharing a store shows
//! every replica's calls. It follows the store's sequence numbers ([`AuditRecord::seq`]), not
//! time: each poll reads on from the last record sent, page after page until it has caught up,
//! so a burst of any size reaches the reader whole, and a reader that reconnects with
//! `Last-Event-ID` gets exactly the records it has not seen.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::executor::{ActivityQuery, AuditRecord, Executor};
use tool_runtime::tool::Initiator;
use tool_runtime::{ErrorCode, ToolError};
use utoipa::IntoParams;

use super::blocking;
use crate::AppState;
use crate::auth::ApproverAccess;
use crate::error::{ApiError, ErrorBody};

/// How often the stream looks for new records once it has caught up.
const POLL: Duration = Duration::from_millis(500);

/// The most records one page of the feed (and one read of the stream) holds.
const MAX_LIMIT: usize = 500;

/// The deepest `offset` the feed takes: the store counts through every record it skips, and
/// `after` reads on from any point at the cost of one page.
const MAX_OFFSET: usize = 1_000_000;

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
    /// Only records after the one with this `seq`, oldest first (the next page starts after the
    /// last record's `seq`, `next_after`). On the stream: where to start, as `Last-Event-ID`
    /// does.
    after: Option<u64>,
    /// At most this many, 1 to 500 (default 50).
    limit: Option<usize>,
    /// Skip this many, in the page's order, at most 1,000,000 (the next page of a newest-first
    /// read starts at `offset + limit`).
    offset: Option<usize>,
}

impl FeedQuery {
    /// The store's query, once the paging is within bounds.
    fn activity(&self) -> Result<ActivityQuery, ApiError> {
        let limit = self.limit.unwrap_or(50);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(out_of_range("limit", format!("1 to {MAX_LIMIT}")));
        }
        if self.offset.is_some_and(|o| o > MAX_OFFSET) {
            return Err(out_of_range("offset", format!("at most {MAX_OFFSET}")));
        }
        Ok(ActivityQuery {
            tool: self.tool.clone(),
            correlation_id: self.correlation_id.clone(),
            initiator: self.initiator,
            session: self.session.clone(),
            since_ms: self.since_ms,
            limit: Some(limit),
            offset: self.offset,
            after: self.after,
        })
    }
}

fn out_of_range(name: &str, range: String) -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!("`{name}` must be {range}"),
        )
        .recover("page with `after` (the last record's `seq`) to read on from any point")
        .with_detail("parameter", name),
    )
}

/// The feed: each call's tool, status, summary, who started it, who decided and when; newest
/// first, or oldest first after a sequence number.
#[utoipa::path(
    get,
    path = "/api/v1/activity",
    operation_id = "list_activity",
    tag = "activity",
    params(FeedQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"records\": [...], \"next_offset\"?, \"next_after\"?}`: \
          audit records (seq, tool, status, result_summary, initiator, decision, decided_by, \
          timestamp_ms, redacted arguments); `next_after` with `after`, `next_offset` without, \
          when the page is full", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
        (status = 422, description = "`limit` or `offset` out of range, or a parameter of the \
          wrong type", body = ErrorBody),
    )
)]
pub(crate) async fn feed(
    _: ApproverAccess,
    State(state): State<AppState>,
    Query(query): Query<FeedQuery>,
) -> Result<Json<Value>, ApiError> {
    let q = query.activity()?;
    let (limit, offset, oldest_first) = (q.limit(), q.offset(), q.oldest_first());
    let executor = state.executor.clone();
    let records = blocking(move || executor.activity(&q)).await?;
    let full = records.len() == limit;
    let last = records.last().and_then(|r| r.seq);
    let mut body = json!({ "records": records });
    match (full, oldest_first) {
        (true, true) => body["next_after"] = json!(last),
        (true, false) => body["next_offset"] = json!(offset + limit),
        _ => {}
    }
    Ok(Json(body))
}

/// Records as server-sent events (`event: activity`, `id:` the record's `seq`, the record as
/// `data`), oldest first, each once: from the moment of connecting, or after `Last-Event-ID` (or
/// `after`), or from `since_ms`; with the same filters as the feed.
#[utoipa::path(
    get,
    path = "/api/v1/activity/stream",
    operation_id = "stream_activity",
    tag = "activity",
    params(
        FeedQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "The `id` of the last event \
          received: the stream goes on with the records after it"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream` of `activity` events, one audit \
          record each", content_type = "text/event-stream", body = String),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The agent's token", body = ErrorBody),
        (status = 422, description = "`Last-Event-ID` is not a sequence number", body = ErrorBody),
    )
)]
pub(crate) async fn stream(
    _: ApproverAccess,
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<FeedQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let mut q = FeedQuery {
        limit: None,
        offset: None,
        ..query
    }
    .activity()?;
    q.limit = Some(MAX_LIMIT);
    let executor = state.executor.clone();
    let cursor = match last_event_id(&headers)?.or(q.after) {
        Some(seq) => seq,
        // a reader asking from a time reads from the start of the trail, filtered by time
        None if q.since_ms.is_some() => 0,
        None => newest(&executor).await?,
    };
    let follow = Follow {
        executor,
        query: q,
        cursor,
        queue: VecDeque::new(),
    };
    let events = futures::stream::unfold(follow, |mut f| async move {
        loop {
            if let Some(record) = f.queue.pop_front() {
                return Some((Ok(event(&record)), f));
            }
            if !f.poll().await {
                tokio::time::sleep(POLL).await;
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

fn event(record: &AuditRecord) -> Event {
    let event = Event::default().event("activity");
    let event = match record.seq {
        Some(seq) => event.id(seq.to_string()),
        None => event,
    };
    event
        .json_data(record)
        .unwrap_or_else(|_| Event::default().event("activity"))
}

fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    match value.to_str().ok().map(str::trim) {
        Some("") => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| bad_event_id()),
        None => Err(bad_event_id()),
    }
}

fn bad_event_id() -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "`Last-Event-ID` must be the `id` of an event this stream sent (a record's `seq`)",
        )
        .recover("reconnect without `Last-Event-ID` to follow from now"),
    )
}

/// The sequence number of the newest record now, so that a stream without a starting point
/// sends what is written from here on.
async fn newest(executor: &Executor) -> Result<u64, ApiError> {
    let executor = executor.clone();
    let probe = ActivityQuery {
        limit: Some(1),
        ..ActivityQuery::default()
    };
    let newest = blocking(move || executor.activity(&probe)).await?;
    Ok(newest.first().and_then(|r| r.seq).unwrap_or(0))
}

/// The stream's place in the trail.
struct Follow {
    executor: Executor,
    query: ActivityQuery,
    /// The `seq` of the last record read.
    cursor: u64,
    /// Records read and not yet sent, oldest first.
    queue: VecDeque<AuditRecord>,
}

impl Follow {
    /// Reads the next page after the cursor; `true` when it found records (there may be more).
    async fn poll(&mut self) -> bool {
        let mut q = self.query.clone();
        q.after = Some(self.cursor);
        let executor = self.executor.clone();
        let Ok(records) = blocking(move || executor.activity(&q)).await else {
            // the store is unreachable: keep the connection and try again on the next poll
            return false;
        };
        for record in records {
            let Some(seq) = record.seq else { continue };
            self.cursor = self.cursor.max(seq);
            self.queue.push_back(record);
        }
        !self.queue.is_empty()
    }
}
