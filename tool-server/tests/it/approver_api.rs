//! What the approvals page relies on in the API: the pending listing as paged, bounded
//! summaries, and one-time sign-in codes traded for approver sessions.

use crate::support;

use serde_json::json;
use support::*;

/// The listing is a page of bounded summaries (no arguments, however large they are); one
/// operation is fetched whole.
#[tokio::test]
async fn the_pending_listing_is_a_page_of_bounded_summaries() {
    let s = start().await;
    let long = "x".repeat(100_000);
    // the listing is oldest first by the millisecond of parking: one apart, so the order is known
    let gap = || tokio::time::sleep(std::time::Duration::from_millis(3));
    let first = s.park_delete(&long).await;
    gap().await;
    let second = s.park_delete("DE00 \u{202e}9999 8888 7777\u{202c}").await;
    gap().await;
    let third = s.park_delete("n1").await;

    let (status, body) = s.get("/api/v1/pending?limit=2", Some(APPROVER)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["total"].as_u64(), body["limit"].as_u64()),
        (Some(3), Some(2))
    );
    let page = body["pending"].as_array().unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["id"], first.as_str(), "oldest first");
    assert!(
        body.to_string().len() < 4_000,
        "a summary carries no arguments: {} bytes",
        body.to_string().len()
    );
    let big = &page[0];
    assert!(
        big.get("arguments").is_none() && big.get("preview").is_none(),
        "{big}"
    );
    // the intent sentence cuts the value itself and says how long it was
    let intent = big["intent"].as_str().unwrap();
    assert!(
        intent.chars().count() < 500 && intent.ends_with("(100000 chars)"),
        "{intent}"
    );
    assert_eq!(big["intent_chars"], intent.chars().count());
    assert_eq!(big["arguments_bytes"], 100_000 + r#"{"id":""}"#.len());
    assert_eq!(
        (&big["tool"], &big["category"], &big["reversible"]),
        (&json!("delete_note"), &json!("modify"), &json!(false))
    );
    assert_eq!(big["hidden"], false);
    assert_eq!(page[1]["id"], second.as_str());
    assert_eq!(
        page[1]["hidden"], true,
        "an override is flagged: {}",
        page[1]
    );

    let (_, body) = s
        .get("/api/v1/pending?limit=2&offset=2", Some(APPROVER))
        .await;
    assert_eq!(body["pending"].as_array().unwrap().len(), 1);
    assert_eq!(body["pending"][0]["id"], third.as_str());
    assert_eq!(body["pending"][0]["hidden"], false);
    let (_, body) = s.get("/api/v1/pending?limit=100000", Some(APPROVER)).await;
    assert_eq!(body["limit"], 200, "at most 200 a page");
    let (_, body) = s.get("/api/v1/pending", Some(APPROVER)).await;
    assert_eq!(body["limit"], 50);

    let (status, whole) = s
        .get(&format!("/api/v1/pending/{first}"), Some(APPROVER))
        .await;
    assert_eq!(status, 200);
    assert_eq!(whole["arguments"]["id"], long.as_str());
}

async fn start_with_links() -> (Server, tool_server::SignInLinks) {
    let mut links = None;
    let s = start_with(|o| {
        links = Some(o.sign_in_links());
        o
    })
    .await;
    (s, links.unwrap())
}

/// A sign-in code opens an approver session once; the session token approves, a spent or
/// unknown code and the agent's token open nothing, and a session cannot open another.
#[tokio::test]
async fn a_sign_in_code_opens_one_approver_session() {
    let (s, links) = start_with_links().await;
    let code = links.code();
    let (status, body) = s
        .post("/api/v1/session", None, json!({ "code": code }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["role"], "approver");
    let session = body["token"].as_str().unwrap().to_owned();
    assert_ne!(session, APPROVER);
    assert!(body["expires_ms"].as_u64().unwrap() > 11 * 3_600_000);

    let (status, body) = s
        .post("/api/v1/session", None, json!({ "code": code }))
        .await;
    assert_eq!(status, 401, "a code works once: {body}");
    assert_error(&body, "UNAUTHORIZED");
    for refused in [
        json!({ "code": "0".repeat(32) }),
        json!({ "token": session }),
    ] {
        let (status, body) = s.post("/api/v1/session", None, refused.clone()).await;
        assert_eq!(status, 401, "{refused}: {body}");
    }
    let (status, _) = s
        .post("/api/v1/session", None, json!({ "token": AGENT }))
        .await;
    assert_eq!(status, 403);
    let (status, _) = s.post("/api/v1/session", None, json!({})).await;
    assert_eq!(status, 422);
    let (status, body) = s
        .post("/api/v1/session", None, json!({ "token": APPROVER }))
        .await;
    assert_eq!(status, 200, "{body}");

    let op = s.park_delete("n1").await;
    let (status, body) = s.get("/api/v1/pending", Some(&session)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s
        .post(
            &format!("/api/v1/pending/{op}/approve"),
            Some(&session),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.notes.get("n1"), None);
}
