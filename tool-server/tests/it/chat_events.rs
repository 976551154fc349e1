//! `GET /api/v1/chat/{run_id}/events`: a stored run's steps as server-sent events, read with a
//! real HTTP client. A client that connects while the run waits sees its steps so far and the
//! suspension; one that reconnects with `Last-Event-ID` after the approval gets what followed,
//! nothing twice, and the stream ends with `done`; one that reconnects after `done` gets nothing
//! more.

use crate::support;

use serde_json::json;
use support::chat::{Sse, names, read_events, suspend};
use support::*;

/// Opens the run's event stream (after `last`, if given) and reads it until an event named
/// `until` or the stream's end; the events read, and whether the stream ended.
async fn events(s: &Server, run_id: &str, last: Option<&str>, until: &str) -> (Vec<Sse>, bool) {
    let mut req = s
        .http
        .get(format!("{}/api/v1/chat/{run_id}/events", s.base))
        .bearer_auth(AGENT);
    if let Some(id) = last {
        req = req.header("last-event-id", id);
    }
    read_events(req.send().await.unwrap(), until, async |_| {}).await
}

#[tokio::test]
async fn a_runs_events_resume_after_the_last_id_seen_and_end_with_done() {
    let (base, _script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        answer("Deleted."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let (run_id, op) = suspend(&s, "delete note n1").await;

    let (before, ended) = events(&s, &run_id, None, "suspended").await;
    assert!(!ended);
    assert_eq!(
        names(&before),
        ["user", "assistant", "suspended"],
        "{before:?}"
    );
    assert_eq!(before[0].data["text"], "delete note n1");
    assert_eq!(before[1].data["calls"][0]["name"], "delete_note");
    assert_eq!(before[2].data["pending"][0]["operation_id"], op.as_str());
    let ids: Vec<&str> = before.iter().map(|e| e.id.as_deref().unwrap()).collect();
    assert_eq!(ids, ["1", "2", "2:suspended"]);

    // the client went away; the person approves; the client comes back with the last id
    let (status, _) = s
        .post(
            &format!("/api/v1/pending/{op}/approve"),
            Some(APPROVER),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let (after, ended) = events(&s, &run_id, Some("2:suspended"), "done").await;
    assert!(!ended);
    assert_eq!(names(&after), ["tool", "assistant", "done"], "{after:?}");
    assert_eq!(after[0].data["call_id"], "c1");
    assert_eq!(after[0].data["status"], "success");
    assert_eq!(after[1].data["text"], "Deleted.");
    assert_eq!(after[2].data["status"], "answered", "{:?}", after[2]);
    assert_eq!(after[2].data["answer"], "Deleted.");
    let done_id = after[2].id.clone().unwrap();
    assert_eq!(done_id, "4:answered");

    // a reconnect from the middle gets the rest once
    let (rest, _) = events(&s, &run_id, Some("3"), "done").await;
    assert_eq!(names(&rest), ["assistant", "done"], "{rest:?}");
    // after `done` there is nothing more, and the stream ends
    let (nothing, ended) = events(&s, &run_id, Some(&done_id), "done").await;
    assert!(ended && nothing.is_empty(), "{nothing:?}");
    // without an id, the whole run
    let (all, _) = events(&s, &run_id, None, "done").await;
    assert_eq!(
        names(&all),
        ["user", "assistant", "tool", "assistant", "done"],
        "{all:?}"
    );
}

#[tokio::test]
async fn the_events_of_an_unknown_run_are_not_found() {
    let (base, _script) = scripted(Vec::new()).await;
    let s = start_with_model(&base).await;
    let (status, body) = s.get("/api/v1/chat/corr-nothing/events", Some(AGENT)).await;
    assert_eq!(status, 404, "{body}");
    assert_error(&body, "NOT_FOUND");
    let (status, _) = s.get("/api/v1/chat/corr-nothing/events", None).await;
    assert_eq!(status, 401);
}
