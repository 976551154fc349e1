//! `POST /api/v1/chat`: the agent loop run server-side against a scripted OpenAI-compatible model
//! on 127.0.0.1. A run that waits for a person is suspended, then resumed by the decision; the
//! model sees the outcome (a denial with the person's reason). With `Accept: text/event-stream`
//! the events stream across the suspension and end with `done`.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::chat::{finished, names, read_events, suspend};
use support::*;

#[tokio::test]
async fn a_denial_with_a_reason_reaches_the_model_when_the_run_resumes() {
    let (base, script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        answer("I kept the note, as you asked."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let (run_id, op) = suspend(&s, "delete note n1").await;
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    let (status, _) = s
        .post(
            &format!("/api/v1/pending/{op}/deny"),
            Some(APPROVER),
            json!({"reason": "that note is still needed"}),
        )
        .await;
    assert_eq!(status, 200);
    let done = finished(&s, &run_id).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answer"], "I kept the note, as you asked.");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    // the model's second request carries the denial with the person's words
    let second = script.requests.lock().unwrap()[1].to_string();
    assert!(second.contains("that note is still needed"), "{second}");
    assert!(done["transcript"].to_string().contains("denied"), "{done}");
}

#[tokio::test]
async fn the_events_stream_across_an_approval_and_end_with_done() {
    let (base, _script) = scripted(vec![
        call("c1", "delete_note", json!({"id": "n1"})),
        answer("Deleted."),
    ])
    .await;
    let s = start_with_model(&base).await;
    let res = s
        .http
        .post(format!("{}/api/v1/chat", s.base))
        .bearer_auth(AGENT)
        .header("accept", "text/event-stream")
        .json(&json!({"messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi, what can I do?"},
            {"role": "user", "content": "delete note n1"}
        ]}))
        .send()
        .await
        .unwrap();
    let (events, _) = read_events(res, "done", async |e| {
        if e.name == "suspended" {
            let op = e.data["operations"][0].as_str().unwrap();
            let (status, _) = s
                .post(
                    &format!("/api/v1/pending/{op}/approve"),
                    Some(APPROVER),
                    json!({}),
                )
                .await;
            assert_eq!(status, 200);
        }
    })
    .await;
    assert_eq!(
        names(&events),
        [
            "call_started",
            "suspended",
            "call_finished",
            "text_delta",
            "final_answer",
            "done"
        ],
        "{events:?}"
    );
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answer"], "Deleted.");
    assert_eq!(s.notes.get("n1"), None);
}

#[tokio::test]
async fn chat_refuses_what_it_cannot_run() {
    let s = start().await;
    let (status, body) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, 404, "no agent: {body}");
    let (base, _) = scripted(vec![]).await;
    let s = start_with_model(&base).await;
    for messages in [
        json!([]),
        json!([{"role": "assistant", "content": "last"}]),
        json!([{"role": "tool", "content": "x"}, {"role": "user", "content": "y"}]),
    ] {
        let (status, body) = s
            .post("/api/v1/chat", Some(AGENT), json!({ "messages": messages }))
            .await;
        assert_eq!(status, 422, "{messages}: {body}");
        assert_error(&body, "INVALID_ARGUMENTS");
    }
    let (status, _) = s
        .post(
            "/api/v1/chat",
            None,
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn runs_are_listed_from_the_store_and_a_cancelled_one_denies_its_calls() {
    let (base, script) = scripted(vec![call("c1", "delete_note", json!({"id": "n1"}))]).await;
    let s = start_with_model(&base).await;
    let (run_id, op) = suspend(&s, "delete note n1").await;

    let (status, listed) = s.get("/api/v1/chat?status=suspended", Some(AGENT)).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["runs"][0]["run_id"], run_id.as_str(), "{listed}");
    assert!(listed["runs"][0].get("transcript").is_none(), "{listed}");
    let (_, none) = s.get("/api/v1/chat?status=answered", Some(AGENT)).await;
    assert_eq!(none["runs"], json!([]), "{none}");
    let (status, _) = s.get("/api/v1/chat", None).await;
    assert_eq!(status, 401);

    let (status, cancelled) = s
        .post(
            &format!("/api/v1/chat/{run_id}/cancel"),
            Some(AGENT),
            json!({"reason": "changed my mind"}),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["error"]["message"], "changed my mind");
    let (_, op_now) = s
        .get(&format!("/api/v1/pending/{op}"), Some(APPROVER))
        .await;
    assert_eq!(op_now["state"]["state"], "denied", "{op_now}");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    // once ended, a second cancel is a conflict, an unknown run is not found
    let (status, again) = s
        .post(
            &format!("/api/v1/chat/{run_id}/cancel"),
            Some(AGENT),
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{again}");
    let (status, _) = s
        .post("/api/v1/chat/run-unknown/cancel", Some(AGENT), json!({}))
        .await;
    assert_eq!(status, 404);
    // the watcher of the cancelled run never asks the model again
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(script.requests.lock().unwrap().len(), 1);
    let (_, run) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
    assert_eq!(run["status"], "cancelled", "{run}");
}

#[tokio::test]
async fn a_follow_up_in_a_session_continues_its_last_runs_conversation() {
    let (base, script) = scripted(vec![
        answer("Hello Ann."),
        answer("Your name is Ann."),
        call("c1", "delete_note", json!({"id": "n1"})),
    ])
    .await;
    let s = start_with_model(&base).await;
    let ask = |text: &str, session: &str| json!({"messages": [{"role": "user", "content": text}], "session": session});
    let (status, first) = s
        .post("/api/v1/chat", Some(AGENT), ask("my name is Ann", "s-ann"))
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["session"], "s-ann");
    let (status, second) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            ask("what is my name?", "s-ann"),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["answer"], "Your name is Ann.");
    assert_ne!(second["run_id"], first["run_id"]);
    // the model's second request holds the first exchange once, then the new question
    let request = script.requests.lock().unwrap()[1].clone();
    let texts: Vec<String> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        texts,
        ["my name is Ann", "Hello Ann.", "what is my name?"],
        "{request}"
    );
    let (_, listed) = s.get("/api/v1/chat?session=s-ann", Some(AGENT)).await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2, "{listed}");

    // a session whose last run waits for a person has no answer to continue from
    let (status, waiting) = s
        .post("/api/v1/chat", Some(AGENT), ask("delete note n1", "s-bob"))
        .await;
    assert_eq!(status, 202, "{waiting}");
    assert_eq!(waiting["session"], "s-bob");
    let (status, refused) = s
        .post("/api/v1/chat", Some(AGENT), ask("and then?", "s-bob"))
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_error(&refused, "CONFLICT");
    assert_eq!(script.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_run_whose_model_fails_ends_with_a_structured_error_and_is_kept() {
    // the script is empty: the model answers 500, and the client does not retry
    let (base, _script) = scripted(Vec::new()).await;
    let s = start_with_model(&base).await;
    let (status, body) = s
        .post(
            "/api/v1/chat",
            Some(AGENT),
            json!({"messages": [{"role": "user", "content": "hello"}]}),
        )
        .await;
    assert_eq!(status, 502, "{body}");
    assert_error(&body, "AGENT_FAILED");
    let run_id = body["error"]["details"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the failed run's id: {body}"))
        .to_owned();
    assert!(
        body["error"]["recover_action"]
            .as_str()
            .is_some_and(|r| r.contains(&run_id)),
        "{body}"
    );
    let (status, run) = s.get(&format!("/api/v1/chat/{run_id}"), Some(AGENT)).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["error"]["code"], "AGENT_FAILED", "{run}");
}
