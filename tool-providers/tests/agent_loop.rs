//! The agent loop over real HTTP (a scripted OpenAI-compatible server on 127.0.0.1) with the real
//! executor: multi-turn, invalid arguments back to the model, the retry budget, denials, deferred
//! confirmation suspended and resumed from another executor sharing the SQLite store, events,
//! usage and cost.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State as AxState};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tool_providers::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, ChatModel, Pricing, RunState, RunStatus,
    TranscriptEntry,
};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Deferred, DenyAll, Executor, Status};
use tool_runtime::store::SqliteStore;
use tool_runtime::{State, ToolError, ToolSet, tool};

type Deleted = Arc<Mutex<Vec<u64>>>;

/// Adds two integers.
#[tool(read_only)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Deletes a note by id.
#[tool(modify)]
fn delete_note(id: u64, State(deleted): State<Deleted>) -> Result<String, ToolError> {
    deleted.lock().unwrap().push(id);
    Ok(format!("deleted note {id}"))
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Value>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

async fn chat(AxState(s): AxState<Script>, req: Request) -> Response {
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 22)
        .await
        .unwrap();
    s.requests
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&bytes).unwrap());
    let next = s
        .answers
        .lock()
        .unwrap()
        .pop_front()
        .expect("script exhausted");
    axum::Json(next).into_response()
}

async fn serve(answers: Vec<Value>) -> (String, Script) {
    let s = Script::default();
    s.answers.lock().unwrap().extend(answers);
    let app = Router::new().fallback(chat).with_state(s.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}/v1"), s)
}

fn call(id: &str, name: &str, args: &str, usage: (u64, u64)) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[{"id":id,"type":"function","function":{"name":name,"arguments":args}}]}}],
        "usage":{"prompt_tokens":usage.0,"completion_tokens":usage.1}})
}

fn answer(text: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":text}}],
        "usage":{"prompt_tokens":10,"completion_tokens":2}})
}

fn model(base: &str) -> ChatModel {
    let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
        .with_base_url(base)
        .with_retry(RetryPolicy::none());
    ChatModel::new(HttpClient::new(cfg).unwrap())
}

fn toolset(deleted: &Deleted) -> ToolSet {
    let mut ts = ToolSet::new().with_state(deleted.clone());
    ts.register::<add>().unwrap();
    ts.register::<delete_note>().unwrap();
    ts
}

#[tokio::test]
async fn invalid_arguments_go_back_with_pointer_and_recover_action_then_the_model_answers() {
    let (base, script) = serve(vec![
        call("c1", "add", r#"{"a":"one","b":2}"#, (100, 10)),
        call("c2", "add", r#"{"a":1,"b":2}"#, (120, 10)),
        answer("1 + 2 = 3"),
    ])
    .await;
    let deleted = Deleted::default();
    let executor = Executor::builder(toolset(&deleted)).build().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let agent = Agent::new(
        model(&base),
        executor,
        AgentConfig {
            pricing: Some(Pricing {
                input_per_million: 1.0,
                output_per_million: 4.0,
            }),
            ..Default::default()
        },
    )
    .on_event(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(e.clone())
    }));

    let report = agent.run("what is 1 + 2?").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.answer.as_deref(), Some("1 + 2 = 3"));
    assert_eq!(report.iterations, 3);
    assert_eq!(report.usage.input_tokens, 230);
    assert_eq!(report.usage.output_tokens, 22);
    assert!((report.cost.unwrap() - (230.0 + 22.0 * 4.0) / 1e6).abs() < 1e-12);
    assert_eq!(report.call_costs.len(), 2);
    assert_eq!(report.call_costs[1].usage.input_tokens, 120);

    // The second request carries the structured error for the first call.
    let requests = script.requests.lock().unwrap().clone();
    let tool_msg = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the error went back as a tool message")
        .clone();
    assert_eq!(tool_msg["tool_call_id"], "c1");
    let content: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(content["error"]["violations"][0]["pointer"], "/a");
    assert!(content["error"]["recover_action"].is_string());
    // Declarations were sent on every request.
    assert_eq!(requests[0]["tools"].as_array().unwrap().len(), 2);

    let statuses: Vec<Status> = report
        .transcript
        .iter()
        .filter_map(|e| match e {
            TranscriptEntry::Tool { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, vec![Status::Error, Status::Success]);
    // Both calls are in the audit trail under the run's correlation id.
    assert_eq!(report.audit.len(), 2);
    assert!(
        report
            .audit
            .iter()
            .all(|r| r.correlation_id == report.correlation_id)
    );

    let events = events.lock().unwrap();
    assert!(matches!(events.first(), Some(AgentEvent::CallStarted { tool, .. }) if tool == "add"));
    assert!(matches!(events.last(), Some(AgentEvent::FinalAnswer { text }) if text == "1 + 2 = 3"));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::CallFinished { .. }))
            .count(),
        2
    );
}

#[tokio::test]
async fn the_retry_budget_ends_a_run_that_keeps_sending_invalid_arguments() {
    let (base, _) = serve(vec![
        call("c1", "add", r#"{"a":"x","b":2}"#, (1, 1)),
        call("c2", "add", r#"{"b":2}"#, (1, 1)),
        answer("unreachable"),
    ])
    .await;
    let executor = Executor::builder(toolset(&Deleted::default()))
        .build()
        .unwrap();
    let agent = Agent::new(model(&base), executor, AgentConfig::default());
    match agent.run("add").await.unwrap_err() {
        AgentError::RetriesExhausted {
            tool,
            failures,
            budget,
            last,
        } => {
            assert_eq!((tool.as_str(), failures, budget), ("add", 2, 1));
            assert_eq!(
                last.violations[0].pointer, "",
                "missing `a` is reported at the root"
            );
        }
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
}

#[tokio::test]
async fn a_denial_goes_back_as_the_users_choice_and_the_tool_does_not_run() {
    let (base, script) = serve(vec![
        call("c1", "delete_note", r#"{"id":7}"#, (1, 1)),
        answer("Understood, I kept note 7."),
    ])
    .await;
    let deleted = Deleted::default();
    let executor = Executor::builder(toolset(&deleted))
        .confirmation(DenyAll(Some("I still need it".into())))
        .build()
        .unwrap();
    let agent = Agent::new(model(&base), executor, AgentConfig::default());
    let report = agent.run("delete note 7").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert!(deleted.lock().unwrap().is_empty());
    let requests = script.requests.lock().unwrap().clone();
    let tool_msg = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let content: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["status"], "denied");
    assert_eq!(content["reason"], "I still need it");
    assert!(content.get("error").is_none(), "a denial is not an error");
}

#[tokio::test]
async fn a_deferred_call_suspends_the_run_and_an_approval_from_another_executor_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let (base, script) = serve(vec![
        call("c1", "delete_note", r#"{"id":42}"#, (50, 5)),
        answer("Note 42 is deleted."),
    ])
    .await;
    let deleted = Deleted::default();

    // Process 1: the run parks the modification and suspends.
    let state_json = {
        let executor = Executor::builder(toolset(&deleted))
            .store(Arc::new(SqliteStore::open(&db).unwrap()))
            .confirmation(Deferred)
            .build()
            .unwrap();
        let agent = Agent::new(model(&base), executor, AgentConfig::default());
        let report = agent.run("delete note 42").await.unwrap();
        let state = report
            .suspended()
            .expect("the run waits for approval")
            .clone();
        assert_eq!(state.pending.len(), 1);
        assert!(
            deleted.lock().unwrap().is_empty(),
            "nothing ran before approval"
        );
        assert_eq!(script.requests.lock().unwrap().len(), 1);
        // Resuming before anyone decided keeps it suspended, without asking the model.
        let again = agent.resume(state.clone()).await.unwrap();
        assert!(again.suspended().is_some());
        assert_eq!(script.requests.lock().unwrap().len(), 1);
        state.to_json()
    };

    // Process 2: a person approves by id; the call runs exactly once.
    let state = RunState::from_json(&state_json).unwrap();
    let executor = Executor::builder(toolset(&deleted))
        .store(Arc::new(SqliteStore::open(&db).unwrap()))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let exec = executor
        .approve(&state.pending[0].operation_id)
        .await
        .unwrap();
    assert!(exec.outcome.is_success());
    assert_eq!(*deleted.lock().unwrap(), vec![42]);

    // The run continues from the stored state and the model sees the result.
    let agent = Agent::new(model(&base), executor, AgentConfig::default());
    let report = agent.resume(state).await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("Note 42 is deleted."));
    assert_eq!(*deleted.lock().unwrap(), vec![42], "ran exactly once");
    let requests = script.requests.lock().unwrap().clone();
    let tool_msg = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool_msg["tool_call_id"], "c1");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("deleted note 42")
    );
    assert_eq!(
        report.usage.input_tokens, 60,
        "usage carried across the suspension"
    );
}
