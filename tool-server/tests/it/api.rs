//! The HTTP API over a real socket: roles, every route's answers and failures, the one error
//! shape, pending operations decided once, the activity feed and its stream.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use support::*;

#[tokio::test]
async fn a_request_without_a_known_token_is_refused_with_401() {
    let s = start().await;
    for (token, why) in [
        (None, "no header"),
        (Some("not-a-token-of-this-server"), "unknown"),
        (Some(""), "empty"),
    ] {
        let (status, body) = s.get("/api/v1/tools", token).await;
        assert_eq!(status, 401, "{why}: {body}");
        assert_error(&body, "UNAUTHORIZED");
    }
    let res = s
        .http
        .get(format!("{}/api/v1/tools", s.base))
        .header("Authorization", format!("Basic {AGENT}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(res.headers()["www-authenticate"], "Bearer");
}

#[tokio::test]
async fn the_agent_token_lists_checks_and_calls_but_cannot_decide_or_read_the_feed() {
    let s = start().await;
    let op = s.park_delete("n1").await;
    for path in [
        "/api/v1/pending".to_owned(),
        format!("/api/v1/pending/{op}"),
        "/api/v1/activity".to_owned(),
        "/api/v1/activity/stream".to_owned(),
    ] {
        let (status, body) = s.get(&path, Some(AGENT)).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_error(&body, "FORBIDDEN");
    }
    for path in [
        format!("/api/v1/pending/{op}/approve"),
        format!("/api/v1/pending/{op}/deny"),
    ] {
        let (status, body) = s.post(&path, Some(AGENT), json!({})).await;
        assert_eq!(status, 403, "{path}: {body}");
    }
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    let (status, body) = s
        .get(&format!("/api/v1/pending/{op}"), Some(APPROVER))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["state"]["state"], "pending", "{body}");
}

/// Whatever an agent's request carries besides its token (a body, headers, a query, cookies,
/// arguments that look like an approval), it never approves: the operation stays pending and
/// the tool never runs.
#[tokio::test]
async fn no_request_with_the_agent_token_ever_approves() {
    let s = start().await;
    let op = s.park_delete("n1").await;
    let approve = format!("{}/api/v1/pending/{op}/approve", s.base);
    let bodies = [
        json!({}),
        json!({ "approve": true }),
        json!({ "arguments": { "id": "n1" }, "approved": true, "role": "approver" }),
        json!({ "token": APPROVER }),
        json!({ "authorization": format!("Bearer {APPROVER}") }),
    ];
    let headers: [(&str, String); 6] = [
        ("x-approver-token", APPROVER.to_owned()),
        ("x-role", "approver".to_owned()),
        ("cookie", format!("token={APPROVER}")),
        ("x-forwarded-user", "approver".to_owned()),
        ("proxy-authorization", format!("Bearer {APPROVER}")),
        ("x-http-method-override", "GET".to_owned()),
    ];
    for body in &bodies {
        for (name, value) in &headers {
            for url in [
                approve.clone(),
                format!("{approve}?token={APPROVER}&role=approver"),
            ] {
                let res = s
                    .http
                    .post(&url)
                    .bearer_auth(AGENT)
                    .header(*name, value)
                    .json(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), 403, "{url} {name} {body}");
            }
        }
    }
    // two Authorization headers, the approver's second: the first decides, and it is the agent's
    let res = s
        .http
        .post(&approve)
        .header("authorization", format!("Bearer {AGENT}"))
        .header("authorization", format!("Bearer {APPROVER}"))
        .send()
        .await
        .unwrap();
    assert_ne!(res.status(), 200);
    // the agent calling the tool with approval-looking arguments only parks another operation
    for args in [
        json!({ "id": "n1", "approve": true }),
        json!({ "id": "n1", "_approved": APPROVER }),
        json!(format!("{{\"id\": \"n1\", \"confirm\": \"{APPROVER}\"}}")),
    ] {
        let (status, body) = s
            .post(
                "/api/v1/tools/delete_note/call",
                Some(AGENT),
                json!({ "arguments": args }),
            )
            .await;
        assert!(status == 202 || status == 422, "{status} {body}");
    }
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    let (_, body) = s
        .get(&format!("/api/v1/pending/{op}"), Some(APPROVER))
        .await;
    assert_eq!(body["state"]["state"], "pending", "{body}");
}

#[tokio::test]
async fn tools_are_listed_canonically_and_per_provider() {
    let s = start().await;
    let (status, body) = s.get("/api/v1/tools", Some(AGENT)).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_note", "add_note", "delete_note", "edit_note"]);
    assert_eq!(body["tools"][2]["safety"], "modify");
    assert_eq!(
        body["tools"][1]["parameters"]["required"],
        json!(["id", "text"])
    );

    let (status, body) = s.get("/api/v1/tools?provider=anthropic", Some(AGENT)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["provider"], "anthropic");
    assert!(body["tools"][0]["input_schema"].is_object(), "{body}");
    let (_, body) = s.get("/api/v1/tools?provider=mcp", Some(AGENT)).await;
    assert_eq!(
        body["tools"][0]["annotations"]["readOnlyHint"], true,
        "{body}"
    );

    let (status, body) = s.get("/api/v1/tools?provider=cohere", Some(AGENT)).await;
    assert_eq!(status, 422);
    assert_error(&body, "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn check_hydrates_without_running_and_names_each_violation() {
    let s = start().await;
    let (status, body) = s
        .post(
            "/api/v1/tools/add_note/check",
            Some(AGENT),
            json!({ "arguments": "{\"id\": \"n2\", \"text\": \"call mum\"}" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["valid"], true);
    assert_eq!(body["arguments"], json!({ "id": "n2", "text": "call mum" }));
    assert_eq!(s.notes.get("n2"), None, "check must not run the tool");

    let (status, body) = s
        .post(
            "/api/v1/tools/add_note/check",
            Some(AGENT),
            json!({ "arguments": { "id": 7, "text": "" } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_error(&body, "INVALID_ARGUMENTS");
    let pointers: Vec<&str> = body["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    assert!(
        pointers.contains(&"/id") && pointers.contains(&"/text"),
        "{body}"
    );
    assert!(body["error"]["recover_action"].is_string(), "{body}");

    let (status, body) = s
        .post("/api/v1/tools/delete_notes/check", Some(AGENT), json!({}))
        .await;
    assert_eq!(status, 404);
    assert_error(&body, "UNKNOWN_TOOL");
    assert_eq!(body["error"]["details"]["suggestions"][0], "delete_note");
}

#[tokio::test]
async fn a_read_only_call_answers_200_and_a_modifying_one_202_until_a_person_decides() {
    let s = start().await;
    let (status, body) = s
        .post(
            "/api/v1/tools/read_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": "n1" } }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["value"], "buy milk");
    assert!(body["call_id"].as_str().unwrap().starts_with("http-"));

    // a tool's own failure ran: 200 with the error as the outcome
    let (status, body) = s
        .post(
            "/api/v1/tools/read_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": "nope" } }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "error");
    assert_eq!(body["error"]["code"], "NOT_FOUND");

    let (status, body) = s
        .post(
            "/api/v1/tools/delete_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": "n1" } }),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "pending");
    let op = body["operation_id"].as_str().unwrap().to_owned();
    assert_eq!(
        body["preview"]["intent"],
        "Delete the note \u{201c}n1\u{201d}"
    );
    assert_eq!(body["preview"]["category"], "modify");
    assert_eq!(body["preview"]["reversible"], false);
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    let (status, body) = s.get("/api/v1/pending", Some(APPROVER)).await;
    assert_eq!(status, 200);
    assert_eq!(body["pending"][0]["id"], op.as_str());
    // the agent's token started it: a model's call, not a person's
    assert_eq!(body["pending"][0]["initiator"], "model");
    assert_eq!(body["pending"][0]["intent"], "Delete the note “n1”");
    assert_eq!(body["total"], 1);

    let (status, body) = s
        .post(
            &format!("/api/v1/pending/{op}/approve"),
            Some(APPROVER),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["value"], json!({ "deleted": "n1" }));
    assert_eq!(s.notes.get("n1"), None);

    for path in ["approve", "deny"] {
        let (status, body) = s
            .post(
                &format!("/api/v1/pending/{op}/{path}"),
                Some(APPROVER),
                json!({}),
            )
            .await;
        assert_eq!(status, 409, "{path}: {body}");
        assert_error(&body, "ALREADY_RESOLVED");
        assert_eq!(body["error"]["details"]["state"], "completed");
    }
    let (status, body) = s
        .post(
            "/api/v1/pending/op-unknown/approve",
            Some(APPROVER),
            json!({}),
        )
        .await;
    assert_eq!(status, 404);
    assert_error(&body, "NOT_FOUND");
    let (status, _) = s.get("/api/v1/pending/op-unknown", Some(APPROVER)).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_denial_carries_the_reason_and_an_invalid_edit_leaves_the_operation_pending() {
    let s = start().await;
    s.notes.0.lock().unwrap().insert("n2".into(), "x".into());
    let first = s.park_delete("n1").await;
    let (status, body) = s
        .post(
            &format!("/api/v1/pending/{first}/deny"),
            Some(APPROVER),
            json!({ "reason": "keep my shopping list" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "denied");
    assert_eq!(body["reason"], "keep my shopping list");
    assert_eq!(body["by"], "user");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    let second = s.park_delete("n1").await;
    let (status, body) = s
        .post(
            &format!("/api/v1/pending/{second}/approve"),
            Some(APPROVER),
            json!({ "arguments": { "id": 3 } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["violations"][0]["pointer"], "/id");
    let (_, op) = s
        .get(&format!("/api/v1/pending/{second}"), Some(APPROVER))
        .await;
    assert_eq!(op["state"]["state"], "pending");

    // the edit the person makes is what runs
    let (status, body) = s
        .post(
            &format!("/api/v1/pending/{second}/approve"),
            Some(APPROVER),
            json!({ "arguments": { "id": "n2" } }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["value"], json!({ "deleted": "n2" }));
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    assert_eq!(s.notes.get("n2"), None);
}

#[tokio::test]
async fn bad_bodies_get_the_same_structured_error_shape() {
    let s = start_with(|o| o.max_body_bytes(4096)).await;
    let res = s
        .http
        .post(format!("{}/api/v1/tools/add_note/call", s.base))
        .bearer_auth(AGENT)
        .header("content-type", "application/json")
        .body("{\"arguments\": {\"id\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_error(&res.json().await.unwrap(), "INVALID_JSON");

    let big = "x".repeat(10_000);
    let (status, body) = s
        .post(
            "/api/v1/tools/add_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": "n9", "text": big } }),
        )
        .await;
    assert_eq!(status, 413, "{body}");
    assert_error(&body, "PAYLOAD_TOO_LARGE");
    assert_eq!(body["error"]["details"]["limit_bytes"], 4096);
    assert_eq!(s.notes.get("n9"), None);

    // a chunked body without a length is cut at the limit too
    let chunks = futures::stream::iter(
        (0..10).map(|_| Ok::<_, std::io::Error>(bytes_of(&"y".repeat(1000)))),
    );
    let res = s
        .http
        .post(format!("{}/api/v1/tools/add_note/call", s.base))
        .bearer_auth(AGENT)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);

    let (status, body) = s.get("/api/v1/nothing-here", Some(AGENT)).await;
    assert_eq!(status, 404);
    assert_error(&body, "NOT_FOUND");
    let (status, body) = s
        .send(reqwest::Method::DELETE, "/api/v1/tools", Some(AGENT), None)
        .await;
    assert_eq!(status, 405, "{body}");
    assert_error(&body, "METHOD_NOT_ALLOWED");
}

fn bytes_of(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

#[tokio::test]
async fn the_feed_shows_who_started_each_call_with_filters_and_pages() {
    let s = start().await;
    for i in 0..5 {
        let (status, _) = s
            .post(
                "/api/v1/tools/add_note/call",
                Some(AGENT),
                json!({ "arguments": { "id": format!("a{i}"), "text": "t" } }),
            )
            .await;
        assert_eq!(status, 200);
    }
    s.post(
        "/api/v1/tools/read_note/call",
        Some(AGENT),
        json!({ "arguments": { "id": "n1" } }),
    )
    .await;
    let (status, body) = s.get("/api/v1/activity?limit=4", Some(APPROVER)).await;
    assert_eq!(status, 200, "{body}");
    let page1 = body["records"].as_array().unwrap().clone();
    assert_eq!(page1.len(), 4);
    assert_eq!(page1[0]["tool"], "read_note", "newest first: {body}");
    assert_eq!(page1[0]["initiator"], "model");
    assert_eq!(page1[0]["status"], "success");
    assert_eq!(body["next_offset"], 4);
    let (_, body) = s
        .get("/api/v1/activity?limit=4&offset=4", Some(APPROVER))
        .await;
    let page2 = body["records"].as_array().unwrap();
    assert_eq!(page2.len(), 2);
    assert!(body.get("next_offset").is_none());
    let calls: std::collections::HashSet<&str> = page1
        .iter()
        .chain(page2)
        .map(|r| r["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 6, "no record twice, none missing");

    let (_, body) = s
        .get(
            "/api/v1/activity?tool=add_note&initiator=model",
            Some(APPROVER),
        )
        .await;
    assert_eq!(body["records"].as_array().unwrap().len(), 5);
    let (_, body) = s
        .get("/api/v1/activity?initiator=user", Some(APPROVER))
        .await;
    assert_eq!(body["records"], json!([]));
    // the approver's token is a person: the same call is recorded as the user's
    s.post(
        "/api/v1/tools/read_note/call",
        Some(APPROVER),
        json!({ "arguments": { "id": "n1" } }),
    )
    .await;
    let (_, body) = s
        .get("/api/v1/activity?initiator=user", Some(APPROVER))
        .await;
    assert_eq!(body["records"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["records"][0]["tool"], "read_note");
}

#[tokio::test]
async fn the_activity_stream_sends_each_new_record_once() {
    let s = start().await;
    let res = s
        .http
        .get(format!("{}/api/v1/activity/stream", s.base))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = res.bytes_stream();
    for id in ["s1", "s2"] {
        s.post(
            "/api/v1/tools/add_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": id, "text": "t" } }),
        )
        .await;
    }
    let mut text = String::new();
    let mut events: Vec<Value> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while events.len() < 2 {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("two activity events within 20 s")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            if block.contains("event: activity") {
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                events.push(serde_json::from_str(data).unwrap());
            }
        }
    }
    let args: Vec<&Value> = events.iter().map(|e| &e["arguments"]["id"]).collect();
    assert_eq!(args, [&json!("s1"), &json!("s2")], "oldest first");
    // nothing is sent twice over the next polls
    let more = tokio::time::timeout(Duration::from_millis(1500), body.next()).await;
    if let Ok(Some(Ok(chunk))) = more {
        assert!(
            !String::from_utf8_lossy(&chunk).contains("event: activity"),
            "a record was sent twice"
        );
    }
}

#[tokio::test]
async fn health_readiness_and_the_openapi_document_need_no_token() {
    let s = start().await;
    let (status, body) = s.get("/healthz", None).await;
    assert_eq!((status, &body["status"]), (200, &json!("ok")));
    let (status, body) = s.get("/readyz", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tools"], 4);
    let (status, doc) = s.get("/api/v1/openapi.json", None).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{doc}");
    for (path, method) in [
        ("/api/v1/tools", "get"),
        ("/api/v1/tools/{name}/check", "post"),
        ("/api/v1/tools/{name}/call", "post"),
        ("/api/v1/session", "post"),
        ("/api/v1/pending", "get"),
        ("/api/v1/pending/{id}", "get"),
        ("/api/v1/pending/{id}/approve", "post"),
        ("/api/v1/pending/{id}/deny", "post"),
        ("/api/v1/activity", "get"),
        ("/api/v1/activity/stream", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/api/v1/chat", "post"),
        ("/api/v1/chat/{run_id}", "get"),
        ("/api/v1/chat/{run_id}/events", "get"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(doc, serde_json::to_value(tool_server::openapi()).unwrap());
}

#[tokio::test]
async fn a_server_with_generated_tokens_refuses_a_non_loopback_address() {
    use tool_server::{ServeError, ServerOptions, Tokens};
    let generated = ServerOptions::new(Tokens::generate());
    let err = tool_server::bind("0.0.0.0:0".parse().unwrap(), &generated)
        .await
        .unwrap_err();
    assert!(matches!(err, ServeError::Exposed { .. }), "{err}");
    assert!(err.to_string().contains("TOOLS_APPROVER_TOKEN"));
    assert!(
        tool_server::bind("127.0.0.1:0".parse().unwrap(), &generated)
            .await
            .is_ok()
    );
    let configured = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap());
    assert!(
        tool_server::bind("0.0.0.0:0".parse().unwrap(), &configured)
            .await
            .is_ok()
    );
}

/// The OpenAPI document passes the reference validator (`openapi-spec-validator`, run by the
/// conformance checks' Python in `TOOLS_CONFORMANCE_PYTHON`).
#[test]
fn the_openapi_document_is_valid_openapi_3_1() {
    let Some(python) = test_support::conformance_python() else {
        return;
    };
    let doc = serde_json::to_string(&tool_server::openapi()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.json");
    std::fs::write(&path, &doc).unwrap();
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import json, sys\n\
             from openapi_spec_validator import validate\n\
             from openapi_spec_validator.validation import OpenAPIV31SpecValidator\n\
             validate(json.load(open(sys.argv[1])), cls=OpenAPIV31SpecValidator)\n\
             print('valid')",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("valid"),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // a broken document is refused, so the check above can fail
    let mut broken: Value = serde_json::from_str(&doc).unwrap();
    broken["paths"]["/healthz"]["get"]["responses"] = json!("none");
    std::fs::write(&path, broken.to_string()).unwrap();
    let out = std::process::Command::new(std::env::var_os("TOOLS_CONFORMANCE_PYTHON").unwrap())
        .args([
            "-c",
            "import json, sys\n\
             from openapi_spec_validator import validate\n\
             from openapi_spec_validator.validation import OpenAPIV31SpecValidator\n\
             validate(json.load(open(sys.argv[1])), cls=OpenAPIV31SpecValidator)",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
}
