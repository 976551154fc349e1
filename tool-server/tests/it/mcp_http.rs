//! MCP over streamable HTTP at `/mcp`, driven by the official MCP Python SDK client
//! (`tests/mcp/client.py`): the tools with their annotations, a read-only call, and a modifying
//! call confirmed in-band with `elicitation/create` on a session opened with the host token:
//! accepted, accepted with an edit, declined, and unanswered past the confirmation timeout. A
//! client without the capability gets the pending operation; a client with the agent's token is
//! never asked, whatever it declares, sends or answers; and the bearer token guards the
//! endpoint.

use crate::support;

use std::process::Command;

use serde_json::{Value, json};
use support::*;
use tool_runtime::executor::Decider;

/// The SDK's Python, or `None` (skipped outside CI).
fn python() -> Option<String> {
    test_support::conformance_python()
}

/// Runs the client against `server` as an MCP host that shows confirmations to a person (the
/// host token), with `answer` for confirmations; the JSON lines it printed.
fn client(python: &str, base: &str, answer: &str, steps: &[&str]) -> Vec<Value> {
    client_as(python, base, HOST, &[], answer, steps)
}

/// [`client`] with `token` and extra `headers` (`NAME:VALUE`).
fn client_as(
    python: &str,
    base: &str,
    token: &str,
    headers: &[&str],
    answer: &str,
    steps: &[&str],
) -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py");
    let out = Command::new(python)
        .arg(script)
        .args(["--http", &format!("{base}/mcp")])
        .args(["--token", token, "--answer", answer])
        .args(headers.iter().flat_map(|h| ["--header", h]))
        .args(steps)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The structured result of the call step, and the elicitation messages before it.
fn call_result(lines: &[Value]) -> (Value, Vec<String>) {
    let asked = lines
        .iter()
        .filter_map(|l| l["elicitation"].as_str().map(str::to_owned))
        .collect();
    let result = lines
        .iter()
        .rev()
        .find(|l| l.get("call").is_some())
        .expect("a call result")["result"]
        .clone();
    (result, asked)
}

fn text_of(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_and_a_read_only_call_over_http() {
    let Some(py) = python() else { return };
    let s = start().await;
    let lines = tokio::task::spawn_blocking({
        let s = s.base.clone();
        move || client(&py, &s, "none", &["list", "read_note={\"id\": \"n1\"}"])
    })
    .await
    .unwrap();
    let tools = lines.iter().find(|l| l.get("tools").is_some()).unwrap()["tools"]
        .as_array()
        .unwrap();
    let delete = tools.iter().find(|t| t["name"] == "delete_note").unwrap();
    assert_eq!(delete["annotations"]["destructiveHint"], true, "{delete}");
    assert_eq!(
        delete["_meta"]["tool-runtime/safety"]["confirmation"], "always",
        "{delete}"
    );
    let (result, asked) = call_result(&lines);
    assert!(asked.is_empty());
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(text_of(&result), json!("buy milk"));
}

/// The form's message, as the official client receives it: the arguments without the optional
/// one the model left unset, and the change as a `~` line whose values are quoted and whose
/// hidden characters are escapes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elicitation_message_shows_the_change_as_lines() {
    let Some(py) = python() else { return };
    let s = start().await;
    let lines = tokio::task::spawn_blocking({
        let h = s.base.clone();
        move || {
            client(
                &py,
                &h,
                "decline",
                &["edit_note={\"id\": \"n1\", \"text\": \"buy oat\\u200b milk\"}"],
            )
        }
    })
    .await
    .unwrap();
    let (_, asked) = call_result(&lines);
    assert_eq!(asked.len(), 1);
    let message = &asked[0];
    assert!(
        message.contains("\nArguments: {\"id\":\"n1\",\"text\":\"buy oat\\u{200b} milk\"}\n"),
        "{message}"
    );
    assert!(!message.contains("reason"), "an unset argument: {message}");
    assert!(
        message.contains(
            "\nChanges:\n  ~ text: \u{201c}buy milk\u{201d} \u{2192} \u{201c}buy oat\\u{200b} milk\u{201d}\n"
        ),
        "{message}"
    );
    assert!(!message.contains('\u{200b}'), "{message}");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modifying_call_is_confirmed_in_band_by_the_clients_user() {
    let Some(py) = python() else { return };
    let s = start().await;
    s.notes.0.lock().unwrap().insert("n2".into(), "x".into());
    let h = s.base.clone();
    let run = |answer: &'static str, step: &'static str| {
        let (py, h) = (py.clone(), h.clone());
        tokio::task::spawn_blocking(move || client(&py, &h, answer, &[step]))
    };

    // declined: a denial, not an error, and nothing ran
    let lines = run("decline", "delete_note={\"id\": \"n1\"}")
        .await
        .unwrap();
    let (result, asked) = call_result(&lines);
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("Delete the note \u{201c}n1\u{201d}"),
        "{}",
        asked[0]
    );
    assert!(asked[0].contains("cannot be undone"), "{}", asked[0]);
    assert!(
        asked[0].contains("\nChanges:\n  - note n1: \u{201c}buy milk\u{201d}\n"),
        "the preview's change, as lines: {}",
        asked[0]
    );
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        text_of(&result).to_string().contains("declined"),
        "{result}"
    );
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    // accepted with an edit: the person's arguments run, validated again
    let lines = run("edit:{\"id\": \"n2\"}", "delete_note={\"id\": \"n1\"}")
        .await
        .unwrap();
    let (result, _) = call_result(&lines);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(s.notes.get("n2"), None);
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));

    // accepted: it runs
    let lines = run("accept", "delete_note={\"id\": \"n1\"}").await.unwrap();
    let (result, _) = call_result(&lines);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(text_of(&result)["deleted"], "n1", "{result}");
    assert_eq!(s.notes.get("n1"), None);

    // every call was parked before its person was asked, and every decision is in the audit
    // trail, decided by the host and naming it
    let feed = s
        .executor
        .activity(&tool_runtime::executor::ActivityQuery {
            tool: Some("delete_note".into()),
            ..Default::default()
        })
        .unwrap();
    let decisions: Vec<String> = feed
        .iter()
        .map(|r| format!("{:?}/{:?}", r.decision, r.decided_by))
        .collect();
    assert_eq!(
        decisions,
        [
            "Confirmed/Host",
            "Deferred/Policy",
            "Edited/Host",
            "Deferred/Policy",
            "Denied/Host",
            "Deferred/Policy"
        ],
        "newest first"
    );
    for record in feed.iter().filter(|r| r.decided_by == Decider::Host) {
        let via = record.decided_via.as_deref().unwrap_or_default();
        assert!(
            via.starts_with("MCP host \"") && via.ends_with("\" via elicitation"),
            "{via:?}"
        );
    }
}

/// The review's attack: an MCP client holding the agent's token declares elicitation and
/// answers accept. Nothing it declares, sends as a header or an argument, or answers runs a
/// confirmed tool: the calls wait for the approvals page, and the record says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_token_never_confirms_its_own_calls() {
    let Some(py) = python() else { return };
    let s = start().await;
    s.notes.0.lock().unwrap().insert("n2".into(), "x".into());
    let base = s.base.clone();
    let attempts: [(&[&str], &str, &str); 4] = [
        (&[], "accept", "delete_note={\"id\": \"n1\"}"),
        (&[], "edit:{\"id\": \"n2\"}", "delete_note={\"id\": \"n1\"}"),
        (
            &["X-MCP-Host: 1", "X-Approved: true", "Mcp-Confirm: accept"],
            "accept",
            "delete_note={\"id\": \"n2\"}",
        ),
        (
            &[],
            "accept",
            "delete_note={\"id\": \"n2\", \"confirmed\": true, \"approved_by\": \"user\"}",
        ),
    ];
    for (headers, answer, step) in attempts {
        let lines = tokio::task::spawn_blocking({
            let (py, base) = (py.clone(), base.clone());
            move || client_as(&py, &base, AGENT, headers, answer, &[step])
        })
        .await
        .unwrap();
        let (result, asked) = call_result(&lines);
        assert!(asked.is_empty(), "the agent's session was asked: {asked:?}");
        let text = text_of(&result);
        assert!(
            text["status"] == "pending" || result["isError"] == true,
            "{step}: {result}"
        );
    }
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    assert_eq!(s.notes.get("n2").as_deref(), Some("x"));
    let feed = s
        .executor
        .activity(&tool_runtime::executor::ActivityQuery::default())
        .unwrap();
    assert!(!feed.is_empty());
    for record in &feed {
        assert_ne!(format!("{:?}", record.status), "Success", "{record:?}");
        assert!(
            record.decided_by != tool_runtime::executor::Decider::User
                && record.decided_by != tool_runtime::executor::Decider::Host,
            "{record:?}"
        );
    }
}

/// An MCP session belongs to the token that opened it: the agent cannot use (and so cannot
/// answer the confirmations of) a session a host opened.
#[tokio::test]
async fn a_session_opened_by_a_host_refuses_the_agents_token() {
    let s = start().await;
    let post = |token: &'static str, session: Option<String>, body: Value| {
        let mut req = s
            .http
            .post(format!("{}/mcp", s.base))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "host", "version": "1"}}});
    let res = post(HOST, None, init).await.unwrap();
    assert_eq!(res.status(), 200);
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let res = post(AGENT, Some(session.clone()), list.clone())
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_error(&body, "FORBIDDEN");
    // an elicitation answer the agent would send on that session is refused the same way
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {}}});
    let res = post(AGENT, Some(session.clone()), answer).await.unwrap();
    assert_eq!(res.status(), 403);
    // the host itself goes on
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let res = post(HOST, Some(session.clone()), notified).await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_confirmation_is_a_denial_and_a_client_without_elicitation_gets_a_pending_operation()
 {
    let Some(py) = python() else { return };
    let s = start_with_config(|c| c.confirmation_timeout_ms = 1500, |o| o).await;
    let h = s.base.clone();
    let lines = {
        let (py, h) = (py.clone(), h.clone());
        tokio::task::spawn_blocking(move || {
            client(&py, &h, "silent:4", &["delete_note={\"id\": \"n1\"}"])
        })
        .await
        .unwrap()
    };
    let (result, asked) = call_result(&lines);
    assert_eq!(asked.len(), 1);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    let feed = s
        .executor
        .activity(&tool_runtime::executor::ActivityQuery::default())
        .unwrap();
    assert_eq!(format!("{:?}", feed[0].decided_by), "Timeout");

    let lines = tokio::task::spawn_blocking(move || {
        client(
            &py,
            &h,
            "none",
            &["delete_note={\"id\": \"n1\"}", "delete_notes={}"],
        )
    })
    .await
    .unwrap();
    let calls: Vec<&Value> = lines.iter().filter(|l| l.get("call").is_some()).collect();
    let pending = text_of(&calls[0]["result"]);
    assert_eq!(pending["status"], "pending", "{pending}");
    assert!(pending["operation_id"].as_str().unwrap().starts_with("op-"));
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    // an unknown tool's error names the nearest tool
    let unknown = &calls[1]["result"];
    assert_eq!(unknown["isError"], true);
    assert!(
        unknown["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("delete_note"),
        "{unknown}"
    );
}

#[tokio::test]
async fn the_mcp_endpoint_needs_a_token() {
    let s = start().await;
    let res = s
        .http
        .post(format!("{}/mcp", s.base))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_error(&body, "UNAUTHORIZED");
}

/// The JSON-RPC message of a response to a POST: the body, or the first event of a stream.
async fn rpc(res: reqwest::Response) -> Value {
    let text = res.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {text:?}"))
    })
}

#[tokio::test]
async fn raw_http_gets_the_transports_answers() {
    let s = start().await;
    let post = |session: Option<&str>, origin: Option<&str>, body: String| {
        let mut req = s
            .http
            .post(format!("{}/mcp", s.base))
            .bearer_auth(HOST)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let res = post(None, None, init.to_string()).await.unwrap();
    assert_eq!(res.status(), 200);
    let id = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let session = Some(id.as_str());
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let res = post(session, None, notified.to_string()).await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();

    // a page on another site is refused; this server's own origin and loopback ones pass
    let res = post(session, Some("http://evil.example"), list.clone())
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let res = post(session, Some("null"), list.clone()).await.unwrap();
    assert_eq!(res.status(), 403);
    for origin in [
        s.base.as_str(),
        "http://localhost:5173",
        "https://127.0.0.1",
    ] {
        let res = post(session, Some(origin), list.clone()).await.unwrap();
        assert_eq!(res.status(), 200, "{origin}");
        assert!(rpc(res).await["result"]["tools"].is_array(), "{origin}");
    }

    // malformed messages get JSON-RPC errors, with the request's id where it has one
    for (body, code, id) in [
        ("{nope".to_owned(), -32700, Value::Null),
        (format!("[{list}]"), -32600, Value::Null),
        (
            r#"{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}"#.to_owned(),
            -32600,
            json!(5),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "read_note", "arguments": "n1"}}"#.to_owned(),
            -32602,
            json!(6),
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "bogus"}}"#.to_owned(),
            -32602,
            json!(7),
        ),
    ] {
        let res = post(session, None, body.clone()).await.unwrap();
        let status = res.status();
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .contains("json")
                || res.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .contains("event-stream"),
            "{body}: {status}"
        );
        let answer = rpc(res).await;
        assert_eq!(answer["error"]["code"], code, "{body}: {status} {answer}");
        assert_eq!(answer.get("id"), Some(&id), "{body}: {answer}");
    }

    // a session ends once; its second DELETE finds nothing
    let delete = || {
        s.http
            .delete(format!("{}/mcp", s.base))
            .bearer_auth(HOST)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
    };
    assert!(delete().await.unwrap().status().is_success());
    assert_eq!(delete().await.unwrap().status(), 404);
}

/// A host cancels its call (`notifications/cancelled`) while its person reads the confirmation
/// form: the parked operation is withdrawn (denied, naming the cancel), so nobody approves later
/// a call whose client stopped waiting, and nothing ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_its_host_cancels_while_asking_is_withdrawn() {
    let s = start().await;
    let post = |session: Option<&str>, body: Value| {
        let mut req = s
            .http
            .post(format!("{}/mcp", s.base))
            .bearer_auth(HOST)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        req.send()
    };
    let res = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "host", "version": "1"}}}),
    )
    .await
    .unwrap();
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(Some(&session), initialized).await.unwrap();
    let mut call = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "delete_note", "arguments": {"id": "n1"}}}),
    )
    .await
    .unwrap();
    let mut stream = String::new();
    while !stream.contains("elicitation/create") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), call.chunk())
            .await
            .expect("the form is sent")
            .unwrap()
            .unwrap_or_else(|| panic!("the call's stream ended before the form: {stream}"));
        stream.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert_eq!(
        s.executor.pending().unwrap().len(),
        1,
        "parked while asking"
    );

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 9, "reason": "the user stopped it"}});
    let res = post(Some(&session), cancel).await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !s.executor.pending().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(s.executor.pending().unwrap().is_empty(), "withdrawn");
    assert_eq!(s.notes.get("n1").as_deref(), Some("buy milk"));
    // the denial's record is written just after the operation is resolved
    let feed = loop {
        let feed = s
            .executor
            .activity(&tool_runtime::executor::ActivityQuery::default())
            .unwrap();
        if feed.len() >= 2 || std::time::Instant::now() > deadline {
            break feed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let decisions: Vec<String> = feed
        .iter()
        .map(|r| format!("{:?}/{:?}", r.decision, r.decided_by))
        .collect();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert!(
        decisions.contains(&"Deferred/Policy".to_owned()),
        "{decisions:?}"
    );
    let denied = feed
        .iter()
        .find(|r| r.decided_by == Decider::Host)
        .unwrap_or_else(|| panic!("{decisions:?}"));
    assert_eq!(format!("{:?}", denied.decision), "Denied");
    let summary = serde_json::to_string(denied).unwrap();
    assert!(summary.contains("cancelled the call"), "{summary}");
}
