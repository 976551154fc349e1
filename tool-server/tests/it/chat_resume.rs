//! `POST /api/v1/chat/{run_id}/resume`: a run whose model failed past its retries is resumed
//! once the model answers again, and its calls are not run again; a run held by another
//! worker, still waiting for a person, ended or unknown is refused with a structured error. A
//! suspended run goes on after an approval made through this server (which wakes it) and after
//! one made elsewhere (which its poll of the store finds).

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::chat::{finished, names, read_events, suspend};
use support::*;

/// The model's requests' `role: tool` messages whose content holds `needle`.
fn tool_messages(request: &Value, needle: &str) -> usize {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && m["content"].to_string().contains(needle))
        .count()
}

/// `POST /api/v1/chat` whose model fails after a call that ran: the 502's run id.
async fn failed_run(s: &Server, text: &str) -> String {
    let (status, body) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": text}]}),
        )
        .await;
    assert_eq!(status, 502, "{body}");
    assert_error(&body, "AGENT_FAILED");
    let run_id = body["error"]["details"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let route = format!("POST /api/v1/chat/{run_id}/resume");
    assert_eq!(body["error"]["details"]["resume"], route.as_str(), "{body}");
    assert!(
        body["error"]["recover_action"]
            .as_str()
            .is_some_and(|r| r.contains(&route)),
        "{body}"
    );
    run_id
}

#[tokio::test]
async fn a_failed_run_resumes_once_the_model_answers_and_its_call_runs_once() {
    let (base, script) = scripted(vec![
        call("c1", "add_note", json!({"id": "n2", "text": "call mom"})),
        fail(503),
        answer("I added the note n2."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let run_id = failed_run(&s, "note: call mom").await;
    let (_, run) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(s.notes.get("n2").as_deref(), Some("call mom"));

    let (status, body) = s
        .post(
            &format!("/api/v1/chat/{run_id}/resume"),
            Some(AGENT),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["run_id"], run_id.as_str());
    assert_eq!(body["status"], "answered", "{body}");
    assert_eq!(body["answer"], "I added the note n2.");
    let (_, stored) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
    assert_eq!(stored["status"], "answered", "{stored}");

    // the failed request is sent again, with the call's result once; the call ran once
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["messages"], requests[1]["messages"]);
    assert_eq!(tool_messages(&requests[2], "n2"), 1, "{}", requests[2]);
    let (status, feed) = s
        .get(
            &format!("/api/v1/activity?correlation_id={run_id}"),
            Some(APPROVER),
        )
        .await;
    assert_eq!(status, 200, "{feed}");
    let adds = feed["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{feed}"))
        .iter()
        .filter(|r| r["tool"] == "add_note")
        .count();
    assert_eq!(adds, 1, "{feed}");

    // an answered run has ended: it is not resumed
    let (status, again) = s
        .post(
            &format!("/api/v1/chat/{run_id}/resume"),
            Some(AGENT),
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{again}");
    assert_error(&again, "CONFLICT");
    assert_eq!(again["error"]["details"]["status"], "answered", "{again}");
    assert_eq!(script.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_failed_run_resumed_as_events_streams_to_done_and_may_fail_again() {
    let (base, script) = scripted(vec![
        call("c1", "read_note", json!({"id": "n1"})),
        fail(503),
        fail(503),
        answer("It says buy milk."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let run_id = failed_run(&s, "what does n1 say?").await;
    // the model still fails: the same structured error, the run kept as failed
    let (status, body) = s
        .post(
            &format!("/api/v1/chat/{run_id}/resume"),
            Some(AGENT),
            json!({}),
        )
        .await;
    assert_eq!(status, 502, "{body}");
    assert_error(&body, "AGENT_FAILED");
    assert_eq!(
        body["error"]["details"]["run_id"],
        run_id.as_str(),
        "{body}"
    );
    let (_, run) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
    assert_eq!(run["status"], "failed", "{run}");

    let res = s
        .http
        .post(format!("{}/api/v1/chat/{run_id}/resume", s.base))
        .bearer_auth(AGENT)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let (events, _) = read_events(res, "done", async |_| {}).await;
    assert_eq!(
        names(&events),
        ["text_delta", "final_answer", "done"],
        "{events:?}"
    );
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answer"], "It says buy milk.");
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        tool_messages(&requests[3], "buy milk"),
        1,
        "{}",
        requests[3]
    );
}

#[tokio::test]
async fn resume_refuses_a_run_held_waiting_or_unknown() {
    let (base, script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        call("c2", "read_note", json!({"id": "n1"})),
        fail(503),
    ])
    .await;
    let s = start_with_model(&base).await;
    let resume = |id: &str| format!("/api/v1/chat/{id}/resume");

    // waiting for a person: 409, naming the calls it waits for
    let (waiting, op) = suspend(&s, "delete note n1").await;
    let (status, body) = s.post(&resume(&waiting), Some(AGENT), json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_error(&body, "CONFLICT");
    assert_eq!(body["error"]["details"]["status"], "suspended", "{body}");
    assert_eq!(body["error"]["details"]["pending"], json!([op]), "{body}");

    // held by a live worker elsewhere: 409, naming it
    let failed = failed_run(&s, "read n1").await;
    let store = s.executor.store().clone();
    let id = failed.clone();
    tokio::task::spawn_blocking(move || {
        store
            .claim_run(&id, "worker-elsewhere", Duration::from_secs(60))
            .unwrap()
            .expect("a failed run is free to claim");
    })
    .await
    .unwrap();
    let (status, body) = s.post(&resume(&failed), Some(AGENT), json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_error(&body, "CONFLICT");
    assert_eq!(body["error"]["details"]["status"], "running", "{body}");
    assert_eq!(
        body["error"]["details"]["worker"], "worker-elsewhere",
        "{body}"
    );
    // nothing was sent to the model for either
    assert_eq!(script.requests.lock().unwrap().len(), 3);

    let (status, body) = s.post(&resume("run-unknown"), Some(AGENT), json!({})).await;
    assert_eq!(status, 404, "{body}");
    assert_error(&body, "NOT_FOUND");
    let (status, _) = s.post(&resume(&failed), None, json!({})).await;
    assert_eq!(status, 401);
    // a server without an agent has no runs to resume
    let bare = start().await;
    let (status, body) = bare.post(&resume(&failed), Some(AGENT), json!({})).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn a_waiting_run_goes_on_after_an_approval_here_and_one_made_elsewhere() {
    let (base, script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        answer("Deleted n1."),
        call("c2", "edit_note", json!({"id": "n3", "text": "new"})),
        answer("Edited n3."),
    ])
    .await;
    let s = start_with_model(&base).await;
    s.notes.0.lock().unwrap().insert("n3".into(), "old".into());

    // approved through this server: the approval wakes the waiting run
    let (here, op) = suspend(&s, "delete note n1").await;
    let (status, _) = s
        .post(
            &format!("/api/v1/pending/{op}/approve"),
            Some(APPROVER),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    let done = finished(&s, &here).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answer"], "Deleted n1.");
    assert_eq!(s.notes.get("n1"), None);

    // approved by another process sharing the store (here: the executor, not the route): the
    // run's look at the store finds it
    let (elsewhere, op) = suspend(&s, "rewrite note n3").await;
    s.executor.approve_with(&op, None).await.unwrap();
    let done = finished(&s, &elsewhere).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answer"], "Edited n3.");
    assert_eq!(s.notes.get("n3").as_deref(), Some("new"));
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 4);
    assert_eq!(tool_messages(&requests[3], "n3"), 1, "{}", requests[3]);
}
