//! Runs as data: an agent with checkpoints keeps each run in the executor's store, a run whose
//! process stopped after a call ran (its audit record written, the next checkpoint not) is
//! resumed by another worker without running the call again, a run is driven by one worker at a
//! time, a checkpoint of another format version is refused, and a cancelled run never resumes.

#![allow(clippy::result_large_err)] // tool bodies return `ToolError` by design

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_providers::agent::{
    Agent, AgentConfig, AgentError, CHECKPOINT_VERSION_MISMATCH, ChatModel, Checkpoint,
    CheckpointStatus, Checkpoints, RunStatus,
};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Deferred, Executor};
use tool_runtime::store::{MemoryStore, RunQuery, Store, StoredRun};
use tool_runtime::{State, ToolSet, tool};

use axum::Router;
use axum::extract::{Request, State as AxState};
use axum::response::{IntoResponse, Response};

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<std::collections::VecDeque<Value>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

async fn reply(AxState(s): AxState<Script>, req: Request) -> Response {
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

/// An OpenAI-compatible model on 127.0.0.1 answering `answers` in order.
async fn scripted_openai(answers: Vec<Value>) -> (String, Script) {
    let s = Script::default();
    s.answers.lock().unwrap().extend(answers);
    let app = Router::new().fallback(reply).with_state(s.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}/v1"), s)
}

fn tool_call(id: &str, name: &str, args: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[{"id":id,"type":"function","function":{"name":name,"arguments":args}}]}}],
        "usage":{"prompt_tokens":10,"completion_tokens":5}})
}

fn answer(text: &str) -> Value {
    json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":text}}],
        "usage":{"prompt_tokens":10,"completion_tokens":2}})
}

/// What the test's tool shares with the test: how often it ran, and the run as stored while it
/// ran (the checkpoint a process that died right after the call would leave).
#[derive(Clone)]
struct Probe {
    runs: Arc<AtomicU32>,
    store: Arc<dyn Store>,
    seen: Arc<Mutex<Option<StoredRun>>>,
}

/// Reserves a seat (counted, so a second run shows).
#[tool(read_only)]
fn reserve_seat(
    /// The seat.
    seat: String,
    State(probe): State<Probe>,
) -> String {
    probe.runs.fetch_add(1, Ordering::SeqCst);
    let stored = probe.store.list_runs(&RunQuery::default()).unwrap();
    *probe.seen.lock().unwrap() = stored.into_iter().next();
    format!("seat {seat} reserved, ticket 4411")
}

/// Sends a letter: a person approves it first.
#[tool(modify)]
fn send_letter(
    /// To whom.
    to: String,
) -> String {
    format!("sent to {to}")
}

fn model(base: &str) -> ChatModel {
    let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
        .with_base_url(base)
        .with_retry(RetryPolicy::none());
    ChatModel::new(HttpClient::new(cfg).unwrap())
}

fn agent(base: &str, store: &Arc<dyn Store>, probe: &Probe) -> Agent {
    let set = ToolSet::new()
        .with_state(probe.clone())
        .with::<reserve_seat>()
        .unwrap()
        .with::<send_letter>()
        .unwrap();
    let executor = Executor::builder(set)
        .store(store.clone())
        .confirmation(Deferred)
        .build()
        .unwrap();
    Agent::new(model(base), executor, AgentConfig::default())
        .with_checkpoints(Checkpoints::new().lease(Duration::from_secs(5)))
}

fn probe(store: &Arc<dyn Store>) -> Probe {
    Probe {
        runs: Arc::default(),
        store: store.clone(),
        seen: Arc::default(),
    }
}

#[tokio::test]
async fn a_call_that_ran_before_the_process_stopped_is_not_run_again_on_resume() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe(&store);
    let (base, script) = scripted_openai(vec![
        tool_call("c1", "reserve_seat", &json!({"seat": "12A"}).to_string()),
        answer("Seat 12A is yours."),
        answer("Seat 12A is yours (ticket 4411)."),
    ])
    .await;
    let first = agent(&base, &store, &probe);
    let report = first.run("reserve seat 12A").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    let run_id = report.correlation_id.clone();
    let stored = store.get_run(&run_id).unwrap().unwrap();
    assert_eq!(stored.status, "answered");
    assert!(stored.lease.is_none(), "an ended run holds no lease");

    // the store as the process left it had it died right after the call: the turn issued,
    // the call audited, its result in no checkpoint
    let died = probe.seen.lock().unwrap().clone().unwrap();
    let cp = Checkpoint::from_json(&died.checkpoint).unwrap();
    assert_eq!(cp.status, CheckpointStatus::Running);
    assert_eq!(cp.turn.as_ref().unwrap().calls[0].name, "reserve_seat");
    assert!(cp.state.done.is_empty());
    assert!(
        store
            .claim_run(&run_id, "restorer", Duration::from_secs(5))
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .save_run(&died, "restorer", Duration::from_millis(1))
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(20)).await; // its lease has expired

    let second = agent(&base, &store, &probe);
    let resumed = second.resume_run(&run_id).await.unwrap();
    assert_eq!(
        resumed.answer.as_deref(),
        Some("Seat 12A is yours (ticket 4411).")
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1, "the call ran once");
    let requests = script.requests.lock().unwrap().clone();
    let last = requests.last().unwrap().to_string();
    assert_eq!(last.matches("ticket 4411").count(), 1, "{last}");
    assert_eq!(store.get_run(&run_id).unwrap().unwrap().status, "answered");
}

#[tokio::test]
async fn a_suspended_run_resumes_by_id_on_another_worker_and_only_one_worker_drives_it() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe(&store);
    let (base, script) = scripted_openai(vec![
        tool_call("c1", "send_letter", &json!({"to": "Ada"}).to_string()),
        answer("The letter to Ada is sent."),
    ])
    .await;
    let first = agent(&base, &store, &probe);
    let report = first.run("write to Ada").await.unwrap();
    let state = report.suspended().expect("waits for a person").clone();
    let run_id = report.correlation_id.clone();
    assert_eq!(store.get_run(&run_id).unwrap().unwrap().status, "suspended");

    // undecided: a resume suspends it again, nothing more is asked
    let second = agent(&base, &store, &probe);
    let again = second.resume_run(&run_id).await.unwrap();
    assert!(again.suspended().is_some());
    assert_eq!(script.requests.lock().unwrap().len(), 1);

    // while a worker holds the lease, no other one drives it
    store
        .claim_run(&run_id, "somebody", Duration::from_secs(5))
        .unwrap()
        .unwrap();
    match second.resume_run(&run_id).await {
        Err(AgentError::Claimed { worker, .. }) => assert_eq!(worker, "somebody"),
        other => panic!("{other:?}"),
    }
    store.release_run(&run_id, "somebody").unwrap();

    second
        .executor()
        .approve(&state.pending[0].operation_id)
        .await
        .unwrap();
    let done = second.resume_run(&run_id).await.unwrap();
    assert_eq!(done.answer.as_deref(), Some("The letter to Ada is sent."));
    let last = script.requests.lock().unwrap().last().unwrap().to_string();
    assert_eq!(last.matches("sent to Ada").count(), 1, "{last}");
    // an ended run is not resumed again
    match first.resume_run(&run_id).await {
        Err(AgentError::Resume(msg)) => assert!(msg.contains("has ended (answered)"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_checkpoint_of_another_version_is_refused_not_misread() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe(&store);
    let (base, _script) = scripted_openai(vec![tool_call(
        "c1",
        "send_letter",
        &json!({"to": "Ada"}).to_string(),
    )])
    .await;
    let a = agent(&base, &store, &probe);
    let run_id = a.run("write to Ada").await.unwrap().correlation_id;
    let mut stored = store.get_run(&run_id).unwrap().unwrap();
    let mut cp: Value = serde_json::from_str(&stored.checkpoint).unwrap();
    for (version, named) in [(json!(2), "version 2"), (Value::Null, "version (none)")] {
        cp["version"] = version;
        stored.checkpoint = cp.to_string();
        store
            .claim_run(&run_id, "editor", Duration::from_secs(5))
            .unwrap()
            .unwrap();
        assert!(
            store
                .save_run(&stored, "editor", Duration::from_secs(5))
                .unwrap()
        );
        store.release_run(&run_id, "editor").unwrap();
        match a.resume_run(&run_id).await {
            Err(AgentError::Checkpoint(e)) => {
                assert_eq!(e.code, CHECKPOINT_VERSION_MISMATCH);
                assert!(e.message.contains(named), "{}", e.message);
                assert!(e.message.contains("reads version 1"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
        // the refusal leaves the run as it was, for the version that can read it
        assert!(store.get_run(&run_id).unwrap().unwrap().lease.is_none());
    }
}

#[tokio::test]
async fn a_cancelled_run_denies_its_waiting_calls_and_never_resumes() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe(&store);
    let (base, script) = scripted_openai(vec![tool_call(
        "c1",
        "send_letter",
        &json!({"to": "Ada"}).to_string(),
    )])
    .await;
    let a = agent(&base, &store, &probe);
    let report = a.run("write to Ada").await.unwrap();
    let op = report.suspended().unwrap().pending[0].operation_id.clone();
    let run_id = report.correlation_id;
    let cancelled = a.cancel_run(&run_id, "not needed any more").await.unwrap();
    assert_eq!(cancelled.status, CheckpointStatus::Cancelled);
    let decided = a.executor().pending_operation(&op).unwrap().unwrap();
    assert_eq!(decided.state.name(), "denied");
    assert!(matches!(
        a.resume_run(&run_id).await,
        Err(AgentError::Resume(_))
    ));
    assert!(matches!(
        a.cancel_run(&run_id, "again").await,
        Err(AgentError::Resume(_))
    ));
    assert_eq!(script.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_in_its_own_session_keeps_it_across_a_resume() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe(&store);
    let (base, _script) = scripted_openai(vec![
        tool_call("c1", "send_letter", &json!({"to": "Ada"}).to_string()),
        answer("The letter to Ada is sent."),
    ])
    .await;
    let first = agent(&base, &store, &probe);
    let report = first
        .run_in_session(Vec::new(), "write to Ada", "s-ada")
        .await
        .unwrap();
    let state = report.suspended().expect("waits for a person").clone();
    assert_eq!(state.session.as_deref(), Some("s-ada"));
    let run_id = report.correlation_id.clone();
    let query = RunQuery {
        session: Some("s-ada".into()),
        ..Default::default()
    };
    let listed = store.list_runs(&query).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, run_id);
    // the parked call was made in the run's session
    let op = first
        .executor()
        .pending_operation(&state.pending[0].operation_id)
        .unwrap()
        .unwrap();
    assert_eq!(op.session.as_deref(), Some("s-ada"), "{op:?}");

    first
        .executor()
        .approve(&state.pending[0].operation_id)
        .await
        .unwrap();
    let second = agent(&base, &store, &probe);
    let done = second.resume_run(&run_id).await.unwrap();
    assert_eq!(done.answer.as_deref(), Some("The letter to Ada is sent."));
    let stored = store.get_run(&run_id).unwrap().unwrap();
    assert_eq!(stored.session.as_deref(), Some("s-ada"));
    assert_eq!(stored.status, "answered");
}
