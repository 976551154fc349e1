//! The optional LLM-assisted repair of invalid arguments (one attempt), over real
//! HTTP against a scripted OpenAI-compatible server: a repair that validates runs the call, one
//! that does not leaves the original error to go back, and the feature is off by default.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use crate::mock;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_providers::agent::{Agent, AgentConfig, AgentError, AgentEvent, ChatModel, RunStatus};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Executor, Status};
use tool_runtime::{ErrorCode, ToolSet, tool};

use mock::{Mock, Reply, serve};

/// Adds two integers.
#[tool(read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn call(args: &str) -> Reply {
    Reply::Json(
        json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":args}}]}}],
        "usage":{"prompt_tokens":100,"completion_tokens":10}}),
    )
}

fn text(t: &str, prompt_tokens: u64) -> Reply {
    Reply::Json(
        json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":t}}],
        "usage":{"prompt_tokens":prompt_tokens,"completion_tokens":5}}),
    )
}

fn agent(server: &Mock, config: AgentConfig) -> (Agent, Arc<Mutex<Vec<AgentEvent>>>) {
    let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
        .with_base_url(format!("{}/v1", server.url))
        .with_retry(RetryPolicy::none());
    let mut ts = ToolSet::new();
    ts.register::<add>().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let agent = Agent::new(
        ChatModel::new(HttpClient::new(cfg).unwrap()),
        Executor::builder(ts).build().unwrap(),
        config,
    )
    .on_event(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    (agent, events)
}

fn tool_message(request: &Value) -> Value {
    let msg = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message")
        .clone();
    serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_repair_that_validates_runs_the_call_without_spending_the_retry_budget() {
    let server = serve(vec![
        call(r#"{"a":"one","b":2}"#),
        text("Here you go:\n```json\n{\"a\": 1, \"b\": 2}\n```", 60),
        text("1 + 2 = 3", 130),
    ])
    .await;
    let (agent, events) = agent(
        &server,
        AgentConfig {
            repair: true,
            // Without the repair, the first invalid call would end the run.
            retry_budget: 0,
            ..Default::default()
        },
    );
    let report = agent.run("what is one plus 2?").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.answer.as_deref(), Some("1 + 2 = 3"));
    assert_eq!(
        report.iterations, 2,
        "the repair request is not a model turn"
    );
    assert_eq!(report.usage.input_tokens, 100 + 60 + 130);

    // The repair is on the report.
    assert_eq!(report.repairs.len(), 1);
    let r = &report.repairs[0];
    assert_eq!((r.call_id.as_str(), r.tool.as_str()), ("c1", "add"));
    assert!(r.fixed);
    assert_eq!(r.sent, json!({"a":"one","b":2}));
    assert_eq!(r.repaired, Some(json!({"a":1,"b":2})));
    assert_eq!(r.error.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(r.error.violations[0].pointer, "/a");
    assert!(r.repair_error.is_none());
    assert_eq!(r.usage.input_tokens, 60);

    // The repair request: no tools, the schema, what was sent, where it was wrong.
    let seen = server.bodies();
    assert_eq!(seen.len(), 3);
    assert!(seen[1].get("tools").is_none());
    assert!(
        seen[1]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("JSON Schema")
    );
    let ask = seen[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        ask.contains(r#"Arguments sent: {"a":"one","b":2}"#),
        "{ask}"
    );
    assert!(ask.contains(r#""pointer":"/a""#), "{ask}");
    assert!(ask.contains(r#""type":"integer""#), "{ask}");

    // The call ran with the repaired arguments, and the model got its result.
    assert_eq!(tool_message(&seen[2]), json!(3));
    assert_eq!(report.audit.len(), 1);
    assert_eq!(report.audit[0].status, Status::Success);
    assert_eq!(
        report.audit[0].arguments.as_deref(),
        Some(&json!({"a":1,"b":2}))
    );
    assert!(
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, AgentEvent::ArgumentsRepaired { fixed: true, .. }))
    );
}

#[tokio::test]
async fn a_repair_that_is_still_invalid_leaves_the_original_error_to_go_back() {
    let server = serve(vec![
        call(r#"{"a":"one","b":2}"#),
        text(r#"{"a": "uno", "b": 2}"#, 60),
        text("Sorry, I could not add them.", 130),
    ])
    .await;
    let (agent, _) = agent(
        &server,
        AgentConfig {
            repair: true,
            ..Default::default()
        },
    );
    let report = agent.run("what is one plus 2?").await.unwrap();
    assert_eq!(
        report.answer.as_deref(),
        Some("Sorry, I could not add them.")
    );
    let r = &report.repairs[0];
    assert!(!r.fixed);
    assert_eq!(r.repaired, Some(json!({"a":"uno","b":2})));
    let still = r.repair_error.as_ref().expect("why the repair failed");
    assert_eq!(still.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(still.violations[0].pointer, "/a");

    // The model gets the error of what it sent, and the tool never ran.
    let seen = server.bodies();
    let back = tool_message(&seen[2]);
    assert_eq!(back["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(back["error"]["violations"][0]["pointer"], "/a");
    assert!(back["error"]["recover_action"].is_string());
    assert_eq!(report.audit.len(), 1);
    assert_eq!(report.audit[0].status, Status::Error);
    assert_eq!(
        report.audit[0].arguments.as_deref(),
        Some(&json!({"a":"one","b":2}))
    );
}

#[tokio::test]
async fn a_repair_answer_without_an_object_counts_as_a_failure_against_the_budget() {
    let server = serve(vec![
        call(r#"{"a":"one","b":2}"#),
        text("I cannot fix that.", 60),
    ])
    .await;
    let (agent, _) = agent(
        &server,
        AgentConfig {
            repair: true,
            retry_budget: 0,
            ..Default::default()
        },
    );
    let err = agent.run("what is one plus 2?").await.unwrap_err();
    assert!(
        matches!(err.cause(), AgentError::RetriesExhausted { tool, .. } if tool == "add"),
        "{err:?}"
    );
    let partial = err.partial().unwrap();
    assert_eq!(partial.state.repairs.len(), 1);
    let why = partial.state.repairs[0].repair_error.as_ref().unwrap();
    assert_eq!(why.code, ErrorCode::INVALID_JSON);
    assert_eq!(partial.state.repairs[0].repaired, None);
}

#[tokio::test]
async fn without_the_option_no_repair_is_asked_for() {
    let server = serve(vec![call(r#"{"a":"one","b":2}"#), text("Sorry.", 130)]).await;
    let (agent, _) = agent(&server, AgentConfig::default());
    let report = agent.run("what is one plus 2?").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("Sorry."));
    assert!(report.repairs.is_empty());
    assert_eq!(server.count(), 2);
    assert_eq!(
        tool_message(&server.bodies()[1])["error"]["code"],
        "INVALID_ARGUMENTS"
    );
}
