//! End to end over two more wire formats: the `research` binary with `--provider anthropic`
//! (Anthropic Messages, streamed and not) and `--provider openai-responses` (OpenAI Responses),
//! against a real peer that speaks them: the LiteLLM proxy (`scripts/peer-proxy.sh`) in front of
//! the local llama.cpp server with SmolLM2-135M. Real HTTP, real tool calls decoded from each
//! format, confirmations answered on stdin, results sent back in the format, SQLite checked.
//!
//! One more runs the assistant's agent through a recording relay in front of the proxy, with the
//! call made deterministic (the only tool declared is `delete_note`, and the first request must
//! call a tool), and checks what the others cannot see: the confirmed call's result is what the
//! model's next request carries, and the audit records the person's decision.
//!
//! Needs `TOOLS_PEER_URL` (the proxy, e.g. `http://127.0.0.1:4000`, set by `.ci/run`). Without
//! it the test prints why and passes vacuously, except when `CI` is set: then it fails.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use futures::FutureExt;
use serde_json::Value;
use tool_providers::agent::{Agent, AgentConfig, ChatModel, TranscriptEntry};
use tool_providers::codec::ToolChoice;
use tool_providers::http::{ClientConfig, HttpClient, Provider};
use tool_runtime::executor::{
    Answer, ConfirmationRequest, Decider, Decision, ExecutorConfig, FnConfirmer, Status,
};

use crate::support;
use examples::research::{self, Db, DoiService, Services};

use support::{Run, research};

fn peer_url() -> Option<String> {
    test_support::service_url(
        "TOOLS_PEER_URL",
        "the LiteLLM proxy (`scripts/peer-proxy.sh install && scripts/peer-proxy.sh start`, in \
         front of `scripts/llama-server.sh start`, as .ci/run does)",
    )
}

/// The checks every run shares: the model spoke the format, called a tool, the session ended
/// with its answer, and the database changed exactly as the run reported.
fn check(run: &Run, provider: &str) {
    let Run {
        stdout,
        stderr,
        notes,
    } = run;
    assert!(
        stderr.contains(&format!("model: {provider} at http://127.0.0.1")),
        "{stderr}"
    );
    assert!(stderr.contains("→ "), "the model called a tool: {stderr}");
    assert!(
        !stdout.trim().is_empty() && !stdout.contains("(no final answer"),
        "an answer ended the session: {stdout}\n{stderr}"
    );
    let created = stderr.matches("← create_note [success]").count();
    let deleted = stderr.matches("← delete_note [success]").count();
    assert_eq!(notes + deleted, 2 + created, "{stderr}");
}

#[test]
fn anthropic_messages_through_the_proxy_with_a_confirmation_on_stdin() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "y\ny\n",
    );
    check(&run, "anthropic");
    if run.stderr.contains("← create_note [success]") {
        assert!(run.stderr.contains("Proceed? [Y/n/e]"), "{}", run.stderr);
    }
}

#[test]
fn anthropic_messages_streamed_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("ANTHROPIC_BASE_URL", format!("{url}/v1")),
        ("ANTHROPIC_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "anthropic",
            "--small-model",
            "--stream",
            "--yes",
            "Search the bibliography for Toolformer",
        ],
        "",
    );
    check(&run, "anthropic");
}

#[test]
fn openai_responses_through_the_proxy() {
    let Some(url) = peer_url() else { return };
    let env = [
        ("OPENAI_BASE_URL", format!("{url}/v1")),
        ("OPENAI_MODEL", "local".to_owned()),
    ];
    let run = research(
        &env,
        &[
            "--provider",
            "openai-responses",
            "--small-model",
            "--yes",
            "Create a note titled Llamas saying that llamas are camelids",
        ],
        "",
    );
    check(&run, "openai-responses");
}

/// A relay on 127.0.0.1 that forwards `POST /v1/messages` to the proxy unchanged and keeps each
/// request body, so the test sees what the model was sent.
async fn recording_relay(peer: &str) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let (log, target) = (
        seen.clone(),
        format!("{}/v1/messages", peer.trim_end_matches('/')),
    );
    let http = reqwest::Client::new();
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (log, target, http) = (log.clone(), target.clone(), http.clone());
            async move {
                log.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                let mut req = http.post(&target).body(body);
                for (k, v) in &headers {
                    if k != "host" && k != "content-length" {
                        req = req.header(k.as_str(), v.as_bytes());
                    }
                }
                match req.send().await {
                    Ok(resp) => {
                        let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
                        (status, resp.bytes().await.unwrap_or_default())
                    }
                    Err(e) => (StatusCode::BAD_GATEWAY, Bytes::from(e.to_string())),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// The tool_result blocks of an Anthropic request, by tool_use id, as text.
fn tool_results(request: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let text = match &block["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                    other => other.to_string(),
                };
                out.push((block["tool_use_id"].as_str().unwrap_or("").to_owned(), text));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_a_confirmed_calls_result_reaches_the_model_and_the_audit_keeps_the_decision() {
    let Some(url) = peer_url() else { return };
    let (relay, seen) = recording_relay(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("research.sqlite")).unwrap();
    let services = Services::with_doi(DoiService {
        base_url: "http://127.0.0.1:9".into(),
        http: reqwest::Client::new(),
    });
    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let log = asked.clone();
    let confirmer = FnConfirmer(move |req: ConfirmationRequest| {
        log.lock().unwrap().push(req);
        async { Answer::Yes }.boxed()
    });
    let executor = research::executor(
        research::toolset(db.clone(), services),
        db.clone(),
        &dir.path().join("store.sqlite"),
        Arc::new(confirmer),
        ExecutorConfig::default(),
    )
    .unwrap();
    let mut cfg = ClientConfig::new(Provider::Anthropic, "local")
        .with_base_url(format!("{relay}/v1"))
        .with_timeout(std::time::Duration::from_secs(300));
    // the arguments are one integer; a short cap keeps the final answer short too
    cfg.anthropic_max_tokens = 48;
    let model = ChatModel::new(HttpClient::new(cfg).unwrap());
    let config = AgentConfig {
        system: Some(research::SYSTEM.into()),
        // What makes the run deterministic with a 135M model: Anthropic cannot name the tools
        // a call may use, so the codec declares only delete_note, and "any" (the proxy's
        // "required", which llama.cpp enforces with a grammar) makes the model call it. A named
        // tool_choice is not enough: llama.cpp does not honour it and calls whichever tool.
        first_choice: Some(ToolChoice::Allowed {
            tools: vec!["delete_note".into()],
            required: true,
        }),
        choice: ToolChoice::None,
        max_iterations: 2,
        session: Some("peer".into()),
        ..Default::default()
    };
    let agent = Agent::new(model, executor, config);
    let report = agent
        .run("Delete note 1.")
        .await
        .expect("the run completes");

    // The first request declared delete_note alone and required a call.
    let requests = seen.lock().unwrap().clone();
    assert!(requests.len() >= 2, "{requests:#?}");
    let declared: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(declared, ["delete_note"]);
    assert_eq!(requests[0]["tool_choice"]["type"], "any");

    // The call the model made, as it ran.
    let (call_id, status, result) = report
        .transcript
        .iter()
        .find_map(|e| match e {
            TranscriptEntry::Tool {
                call_id,
                tool,
                status,
                result,
            } if tool == "delete_note" => Some((call_id.clone(), *status, result.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the model called delete_note: {:#?}", report.transcript));

    // The person was asked, with the preview of what would be deleted.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(asked[0].preview.tool, "delete_note");
    let id = asked[0].preview.arguments["id"]
        .as_i64()
        .expect("an integer id");

    // The result that went back to the model is the call's own result.
    let next = &requests[1];
    let results = tool_results(next);
    let (sent_id, sent) = results
        .iter()
        .find(|(id, _)| *id == call_id)
        .unwrap_or_else(|| panic!("no tool_result for {call_id}: {next:#}"));
    assert_eq!(sent_id, &call_id);
    let sent: Value = serde_json::from_str(sent).unwrap_or(Value::String(sent.clone()));
    assert_eq!(
        sent, result,
        "the next request carries the result as it ran"
    );
    if status == Status::Success {
        // it deleted the note it named, and said which
        assert_eq!(result["deleted"], id);
        assert!(db.note(id).is_err(), "note {id} is gone");
        let title = if id == 1 {
            "Tool use survey"
        } else {
            "Transformers"
        };
        assert_eq!(result["title"], title);
    } else {
        // an id the database does not have: refused by the tool, after the yes
        assert_eq!(result["error"]["code"], "NOT_FOUND", "{result}");
        assert_eq!(db.all_notes().unwrap().len(), 2);
    }

    // The audit keeps the person's decision on that call.
    let record = report
        .audit
        .iter()
        .find(|r| r.tool == "delete_note" && *r.call_id == *call_id)
        .unwrap_or_else(|| panic!("audited: {:#?}", report.audit));
    assert_eq!(record.decision, Decision::Confirmed);
    assert_eq!(record.decided_by, Decider::User);
    assert_eq!(record.status, status);
    assert_eq!(record.arguments.as_ref().unwrap()["id"], id);
}
