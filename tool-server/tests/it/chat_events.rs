//! `GET /api/v1/chat/{run_id}/events`: a stored run's steps as server-sent events, read with a
//! real HTTP client. A client that connects while the run waits sees its steps so far and the
//! suspension; one that reconnects with `Last-Event-ID` after the approval gets what followed,
//! nothing twice, and the stream ends with `done`; one that reconnects after `done` gets nothing
//! more.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use support::*;

/// One server-sent event: its id, its name and its data.
#[derive(Debug)]
struct Sse {
    id: Option<String>,
    name: String,
    data: Value,
}

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
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = res.bytes_stream();
    let (mut text, mut out) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("no {until:?} within 20 s: {out:?}"));
        let Some(chunk) = chunk else {
            return (out, true);
        };
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let field = |k: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_owned()))
            };
            if let (Some(name), Some(data)) = (field("event:"), field("data:")) {
                let done = name == until;
                out.push(Sse {
                    id: field("id:"),
                    name,
                    data: serde_json::from_str(&data).unwrap(),
                });
                if done {
                    return (out, false);
                }
            }
        }
    }
}

fn names(events: &[Sse]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

#[tokio::test]
async fn a_runs_events_resume_after_the_last_id_seen_and_end_with_done() {
    let (base, _script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        answer("Deleted."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let (status, body) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": "delete note n1"}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();

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
