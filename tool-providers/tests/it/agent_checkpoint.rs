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
    CheckpointStatus, Checkpoints, OUTCOME_UNKNOWN, RunStatus,
};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{
    ActivityQuery, AuditRecord, Deferred, Executor, ExecutorConfig, Outcome,
};
use tool_runtime::store::{
    CallStart, GateScope, JournalEntry, MemoryStore, PendingOperation, PendingState, Resolve,
    RunQuery, Scrubbed, Store, StoreError, StoredRun, UnreadableOperation,
};
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

fn probe_of(store: &Arc<dyn Store>) -> Probe {
    Probe {
        runs: Arc::default(),
        store: store.clone(),
        seen: Arc::default(),
    }
}

#[tokio::test]
async fn a_call_that_ran_before_the_process_stopped_is_not_run_again_on_resume() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe_of(&store);
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
    let probe = probe_of(&store);
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
    let probe = probe_of(&store);
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
    let probe = probe_of(&store);
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
    let probe = probe_of(&store);
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

/// Posts a card: changes something, runs without a person (create, confirmed by the
/// configuration), and keeps what a process that died in its body would leave in the store.
#[tool(create)]
fn post_card(
    /// To whom.
    to: String,
    State(probe): State<Probe>,
) -> String {
    probe.runs.fetch_add(1, Ordering::SeqCst);
    let stored = probe.store.list_runs(&RunQuery::default()).unwrap();
    *probe.seen.lock().unwrap() = stored.into_iter().next();
    format!("card posted to {to}, tracking 5512")
}

fn card_agent(base: &str, store: &Arc<dyn Store>, probe: &Probe) -> Agent {
    let set = ToolSet::new()
        .with_state(probe.clone())
        .with::<post_card>()
        .unwrap();
    let executor = Executor::builder(set)
        .store(store.clone())
        .config(ExecutorConfig {
            auto_confirm_create: true,
            ..Default::default()
        })
        .build()
        .unwrap();
    Agent::new(model(base), executor, AgentConfig::default())
        .with_checkpoints(Checkpoints::new().lease(Duration::from_secs(5)))
}

/// A store holding `run` as a dead worker left it (lease expired), its call's start mark when
/// `started`, and no audit record.
fn left_behind(run: &StoredRun, started: Option<&CallStart>) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    assert!(
        store
            .save_run(run, "dead", Duration::from_millis(1))
            .unwrap()
    );
    if let Some(start) = started {
        store.mark_started(&run.id, start).unwrap();
    }
    store
}

#[tokio::test]
async fn a_call_that_never_started_runs_on_resume_and_one_that_started_is_never_run_twice() {
    let first_store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let probe = probe_of(&first_store);
    let (base, script) = scripted_openai(vec![
        tool_call("c1", "post_card", &json!({"to": "Ada"}).to_string()),
        answer("Posted."),
        answer("Posted, tracking 5512."),
        answer("I could not tell whether the card was posted."),
    ])
    .await;
    let report = card_agent(&base, &first_store, &probe)
        .run("post a card to Ada")
        .await
        .unwrap();
    let run_id = report.correlation_id.clone();
    // the run as stored while the body ran: the turn issued, the call's start marked
    let died = probe.seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        Checkpoint::from_json(&died.checkpoint).unwrap().status,
        CheckpointStatus::Running
    );
    // the marks go once the run has ended
    assert!(first_store.started_calls(&run_id).unwrap().is_empty());
    let start = CallStart {
        call_id: "c1".into(),
        tool: "post_card".into(),
        started_ms: u64::MAX / 2,
    };
    tokio::time::sleep(Duration::from_millis(5)).await;

    // no start mark and no record: the body never ran, so the resumed run runs it, once
    let store = left_behind(&died, None);
    let again = probe_of(&store);
    let resumed = card_agent(&base, &store, &again)
        .resume_run(&run_id)
        .await
        .unwrap();
    assert_eq!(resumed.answer.as_deref(), Some("Posted, tracking 5512."));
    assert_eq!(again.runs.load(Ordering::SeqCst), 1, "run on resume, once");
    let last = script.requests.lock().unwrap().last().unwrap().to_string();
    assert_eq!(last.matches("tracking 5512").count(), 1, "{last}");
    let audit = store.query_audit(&Default::default()).unwrap();
    assert_eq!(audit.len(), 1, "{audit:?}");

    // a start mark and no record: the body ran and its outcome was lost; it is not run again
    let store = left_behind(&died, Some(&start));
    let fresh = probe_of(&store);
    let resumed = card_agent(&base, &store, &fresh)
        .resume_run(&run_id)
        .await
        .unwrap();
    assert_eq!(
        resumed.answer.as_deref(),
        Some("I could not tell whether the card was posted.")
    );
    assert_eq!(fresh.runs.load(Ordering::SeqCst), 0, "not run again");
    let last = script.requests.lock().unwrap().last().unwrap().to_string();
    assert!(last.contains(OUTCOME_UNKNOWN.as_str()), "{last}");
    assert!(store.query_audit(&Default::default()).unwrap().is_empty());
}

/// A store that keeps runs but no start marks: every method but those is the memory store's.
struct NoStarts(MemoryStore);

impl Store for NoStarts {
    fn blocks(&self) -> bool {
        false
    }
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.0.put_pending(op)
    }
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        self.0.get_pending(id)
    }
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.0.list_pending()
    }
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.0.resolve_pending(id, to)
    }
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.0.complete_pending(id, outcome)
    }
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.0.list_approved()
    }
    fn scrub_decided(&self, id: &str, scrubbed: &Scrubbed) -> Result<bool, StoreError> {
        self.0.scrub_decided(id, scrubbed)
    }
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        self.0.list_unreadable()
    }
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        self.0.close_unreadable(id)
    }
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.0.settle_approved(id, outcome)
    }
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.0.approve_gate(scope, tool)
    }
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.0.is_gate_approved(scope, tool)
    }
    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.0.put_journal(entry)
    }
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        self.0.get_journal(id)
    }
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.0.journal_of_call(call_id)
    }
    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        self.0.claim_undo(id)
    }
    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        self.0.release_undo(id)
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.0.append_audit(record)
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.0.query_audit(query)
    }
    fn save_run(&self, run: &StoredRun, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
        self.0.save_run(run, owner, ttl)
    }
    fn claim_run(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<StoredRun>, StoreError> {
        self.0.claim_run(id, owner, ttl)
    }
    fn release_run(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.0.release_run(id, owner)
    }
    fn get_run(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        self.0.get_run(id)
    }
    fn list_runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, StoreError> {
        self.0.list_runs(query)
    }
}

#[tokio::test]
async fn a_call_whose_start_cannot_be_marked_is_not_run() {
    let store: Arc<dyn Store> = Arc::new(NoStarts(MemoryStore::new()));
    let probe = probe_of(&store);
    let (base, script) = scripted_openai(vec![
        tool_call("c1", "post_card", &json!({"to": "Ada"}).to_string()),
        answer("The card could not be posted."),
    ])
    .await;
    let report = card_agent(&base, &store, &probe)
        .run("post a card to Ada")
        .await
        .unwrap();
    assert_eq!(
        report.answer.as_deref(),
        Some("The card could not be posted.")
    );
    assert_eq!(probe.runs.load(Ordering::SeqCst), 0);
    let last = script.requests.lock().unwrap().last().unwrap().to_string();
    assert!(last.contains("could not record that it started"), "{last}");
}
