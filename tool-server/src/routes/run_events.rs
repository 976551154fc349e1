//! `GET /api/v1/chat/{run_id}/events`: a stored run's steps as server-sent events, from any
//! replica, resumable with `Last-Event-ID`.
//!
//! The events are read from the run's checkpoint, which the store keeps and every worker writes
//! after each step, so they are the same whichever replica serves the stream and whichever
//! drove the run, and their ids survive a restart. Each entry of the transcript is one event
//! (`user`, `assistant`, `tool`: the entry itself), its id its position (`1`, `2`, ...); where
//! the run stands after its entries is one more, its id the position and the status
//! (`4:suspended`): `suspended` with the calls waiting, and the last event, `done`, with the
//! run's report once it has ended (answered, out of iterations, failed or cancelled). A client
//! that reconnects with the last id it saw gets what followed it, nothing twice. The model's
//! text as it is produced (deltas) is not part of a stored run: a client of the live run gets it
//! with `Accept: text/event-stream` on `POST /api/v1/chat`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use serde_json::{Value, json};
use tool_providers::agent::{Checkpoint, CheckpointStatus};

use super::run_lookup::{durable_chat, stored_run};
use super::runs::body_of;
use crate::AppState;
use crate::auth::AgentAccess;
use crate::error::{ApiError, ErrorBody};

/// How often a stream looks at the run in the store.
const POLL: Duration = Duration::from_millis(250);

/// The position in a run's events a client has seen: the transcript entries up to `entries`,
/// and the status event at that position, if it saw one.
#[derive(Debug, Clone, PartialEq, Default)]
struct Cursor {
    entries: usize,
    status: Option<String>,
}

impl Cursor {
    /// The cursor after the event with id `id` (`N` or `N:status`); the start for anything
    /// else, so a malformed id replays the run rather than skipping part of it.
    fn after(id: Option<&str>) -> Cursor {
        let Some(id) = id.map(str::trim) else {
            return Cursor::default();
        };
        let (n, status) = match id.split_once(':') {
            Some((n, s)) => (n, Some(s.to_owned())),
            None => (id, None),
        };
        match n.parse() {
            Ok(entries) => Cursor { entries, status },
            Err(_) => Cursor::default(),
        }
    }
}

/// The events of `run` after `cursor`, and whether the run has ended (the last was `done`).
fn events_after(cursor: &mut Cursor, run: &tool_runtime::store::StoredRun) -> (Vec<Event>, bool) {
    let cp = match Checkpoint::from_json(&run.checkpoint) {
        Ok(cp) => cp,
        Err(error) => {
            let done = json!({ "run_id": run.id, "status": run.status, "error": error });
            let event = Event::default().event("done").json_data(done);
            return (event.into_iter().collect(), true);
        }
    };
    let mut out = Vec::new();
    let entries = &cp.state.transcript;
    // a run resumed from an older checkpoint than the client saw never lost what it holds
    while cursor.entries < entries.len() {
        let entry = &entries[cursor.entries];
        cursor.entries += 1;
        cursor.status = None;
        let name = serde_json::to_value(entry)
            .ok()
            .and_then(|v| v["role"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "entry".into());
        if let Ok(event) = Event::default()
            .id(cursor.entries.to_string())
            .event(name)
            .json_data(entry)
        {
            out.push(event);
        }
    }
    let status = cp.status.as_str();
    let ended = cp.status.is_final() || cp.status == CheckpointStatus::Failed;
    let stands = cp.status == CheckpointStatus::Suspended || ended;
    if stands && cursor.status.as_deref() != Some(status) {
        cursor.status = Some(status.to_owned());
        let id = format!("{}:{status}", cursor.entries);
        let event = if ended {
            Event::default()
                .id(id)
                .event("done")
                .json_data(body_of(run))
        } else {
            let pending: Vec<Value> = cp
                .state
                .pending
                .iter()
                .map(|p| json!({ "operation_id": p.operation_id, "tool": p.call.name }))
                .collect();
            Event::default()
                .id(id)
                .event("suspended")
                .json_data(json!({ "run_id": cp.run_id, "pending": pending }))
        };
        out.extend(event.ok());
    }
    (out, ended)
}

/// A stored run's steps as server-sent events, resumable with `Last-Event-ID`.
#[utoipa::path(
    get,
    path = "/api/v1/chat/{run_id}/events",
    operation_id = "chat_run_events",
    tag = "chat",
    params(
        ("run_id" = String, Path, description = "The run id a chat answer gave"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event \
          seen: the stream goes on after it"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream`: the transcript's entries (`user`, \
          `assistant`, `tool`; ids `1`, `2`, ...), `suspended` with the calls waiting, and \
          last `done` with the run's report (ids `N:status`)", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "No such run, or this server keeps no runs", body = ErrorBody),
    )
)]
pub(crate) async fn events(
    _: AgentAccess,
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    durable_chat(&state)?;
    let executor = state.executor.clone();
    let first = stored_run(&executor, &run_id).await?;
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let cursor = Cursor::after(last.as_deref());
    let start = (cursor, Some(first), Vec::<Event>::new(), false);
    let body = futures::stream::unfold(
        start,
        move |(mut cursor, mut run, mut queued, mut ended)| {
            let (executor, run_id) = (executor.clone(), run_id.clone());
            async move {
                loop {
                    if !queued.is_empty() {
                        let event = queued.remove(0);
                        return Some((Ok(event), (cursor, run, queued, ended)));
                    }
                    if ended {
                        return None;
                    }
                    let current = match run.take() {
                        Some(r) => r,
                        None => {
                            tokio::time::sleep(POLL).await;
                            match stored_run(&executor, &run_id).await {
                                Ok(r) => r,
                                // a store that fails now may answer on the next look
                                Err(_) => continue,
                            }
                        }
                    };
                    let (events, done) = events_after(&mut cursor, &current);
                    queued = events;
                    ended = done;
                }
            }
        },
    );
    Ok(Sse::new(body).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::Cursor;

    #[test]
    fn an_event_id_is_a_position_and_maybe_a_status() {
        assert_eq!(Cursor::after(None), Cursor::default());
        assert_eq!(
            Cursor::after(Some("3")),
            Cursor {
                entries: 3,
                status: None
            }
        );
        assert_eq!(
            Cursor::after(Some("4:suspended")),
            Cursor {
                entries: 4,
                status: Some("suspended".into())
            }
        );
        // what the server never gave replays the run from its start
        assert_eq!(Cursor::after(Some("x:y")), Cursor::default());
    }
}
