//! The agent loop over real HTTP (a scripted OpenAI-compatible server on 127.0.0.1) with the real
//! executor: multi-turn, invalid arguments back to the model, the retry budget, denials, deferred
//! confirmation suspended and resumed from another executor sharing the SQLite store, events,
//! usage and cost, a parallel turn run concurrently within the executor's concurrency limit, and
//! pre-selection picking before every request from the index built with the agent.

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

/// Counts to `n`, saying how far it is, and waits a little between steps so that its body
/// runs on a task of its own.
#[tool(read_only)]
async fn count(n: u32, cx: &tool_runtime::CallContext) -> u32 {
    for i in 1..=n {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let step = tool_runtime::progress::Progress::new(f64::from(i)).of(f64::from(n));
        cx.report_progress(step.message(format!("counted {i}")));
    }
    n
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Value>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Script {
    /// The names of the tools declared on the `i`th request the model was sent.
    fn declared(&self, i: usize) -> Vec<String> {
        self.requests.lock().unwrap()[i]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
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
    let err = agent.run("add").await.unwrap_err();
    // The run's partial report survives: both refused calls are audited and transcribed, and
    // the conversation ends before the turn whose calls got no results.
    let partial = err.partial().expect("the partial report");
    assert_eq!(
        partial.audit.len(),
        1,
        "the second call never reached the executor"
    );
    assert_eq!(partial.state.iterations, 2);
    assert_eq!(partial.state.conversation.len(), 3, "user, assistant, tool");
    match err.cause() {
        AgentError::RetriesExhausted {
            tool,
            failures,
            budget,
            last,
        } => {
            assert_eq!((tool.as_str(), *failures, *budget), ("add", 2, 1));
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

/// What the two calls of a parallel turn share.
#[derive(Clone)]
struct Meeting {
    inflight: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    started: tokio::sync::watch::Sender<usize>,
    second_done: Arc<tokio::sync::Notify>,
    finished: Arc<Mutex<Vec<u64>>>,
}

impl Meeting {
    fn new() -> Self {
        Meeting {
            inflight: Default::default(),
            most: Default::default(),
            started: tokio::sync::watch::channel(0).0,
            second_done: Default::default(),
            finished: Default::default(),
        }
    }
}

/// Waits (a while at most) for the other call of the turn to be running too, then returns `n`;
/// call 1 also waits for call 2 to finish first, so the two finish out of order.
#[tool(read_only)]
async fn meet(n: u64, State(m): State<Meeting>) -> u64 {
    use std::sync::atomic::Ordering::SeqCst;
    let now = m.inflight.fetch_add(1, SeqCst) + 1;
    m.most.fetch_max(now, SeqCst);
    m.started.send_modify(|s| *s += 1);
    let mut rx = m.started.subscribe();
    // Under a limit of 1 the peer cannot start until this call ends: give up waiting then.
    let met = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        rx.wait_for(|s| *s >= 2),
    )
    .await
    .is_ok();
    if met && n == 1 {
        m.second_done.notified().await;
    }
    m.inflight.fetch_sub(1, SeqCst);
    m.finished.lock().unwrap().push(n);
    if n == 2 {
        m.second_done.notify_one();
    }
    n * 10
}

fn two_calls() -> Value {
    json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
        "tool_calls":[
            {"id":"m1","type":"function","function":{"name":"meet","arguments":"{\"n\":1}"}},
            {"id":"m2","type":"function","function":{"name":"meet","arguments":"{\"n\":2}"}}]}}],
        "usage":{"prompt_tokens":10,"completion_tokens":4}})
}

async fn parallel_turn(limit: usize) -> (Meeting, Vec<Value>, RunStatus) {
    let (base, script) = serve(vec![two_calls(), answer("met")]).await;
    let meeting = Meeting::new();
    let mut ts = ToolSet::new().with_state(meeting.clone());
    ts.register::<meet>().unwrap();
    let executor = Executor::builder(ts)
        .config(tool_runtime::executor::ExecutorConfig {
            max_concurrency: limit,
            ..Default::default()
        })
        .build()
        .unwrap();
    let agent = Agent::new(model(&base), executor, AgentConfig::default());
    let report = agent.run("meet twice").await.unwrap();
    let requests = script.requests.lock().unwrap().clone();
    let tool_messages: Vec<Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    (meeting, tool_messages, report.status)
}

#[tokio::test]
async fn a_parallel_turn_runs_its_calls_concurrently_and_answers_in_the_calls_order() {
    let (meeting, tool_messages, status) = parallel_turn(2).await;
    assert_eq!(status, RunStatus::Answered);
    assert_eq!(
        meeting.most.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "both calls were running at once"
    );
    assert_eq!(
        *meeting.finished.lock().unwrap(),
        vec![2, 1],
        "the second call finished first"
    );
    let ids: Vec<&str> = tool_messages
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"], "results go back in the calls' order");
    assert_eq!(tool_messages[0]["content"], "10");
    assert_eq!(tool_messages[1]["content"], "20");
}

#[tokio::test]
async fn the_executors_concurrency_limit_bounds_a_parallel_turn() {
    let (meeting, tool_messages, status) = parallel_turn(1).await;
    assert_eq!(status, RunStatus::Answered);
    assert_eq!(
        meeting.most.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "with a limit of 1 the calls ran one after the other"
    );
    assert_eq!(*meeting.finished.lock().unwrap(), vec![1, 2]);
    let ids: Vec<&str> = tool_messages
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"]);
}

/// A scorer that records what it is asked and over which catalog, and scores a tool 1 when the
/// query mentions its name's first word.
#[derive(Default)]
struct Recording {
    queries: Mutex<Vec<String>>,
    catalogs: Mutex<Vec<usize>>,
}

impl tool_runtime::select::Scorer for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn score<'a>(
        &'a self,
        request: tool_runtime::select::ScoreRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Vec<tool_runtime::select::Scored>, ToolError>> {
        self.queries.lock().unwrap().push(request.query.to_owned());
        self.catalogs
            .lock()
            .unwrap()
            .push(request.pool.catalog() as *const _ as usize);
        let out = request
            .pool
            .iter()
            .filter(|(_, d)| {
                let word = d.name.split('_').next().unwrap_or_default();
                request.query.to_lowercase().contains(word)
            })
            .map(|(id, _)| tool_runtime::select::Scored::new(id, 1.0))
            .collect();
        Box::pin(async move { Ok(out) })
    }
}

#[tokio::test]
async fn pre_selection_picks_before_every_request_from_the_index_built_with_the_agent() {
    let said = json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
        "content":"First I add them, then I delete note 7.",
        "tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]}}]});
    let (base, script) = serve(vec![
        said,
        call("c2", "delete_note", r#"{"id":7}"#, (1, 1)),
        answer("3, and note 7 is gone."),
    ])
    .await;
    let deleted = Deleted::default();
    let executor = Executor::builder(toolset(&deleted))
        .confirmation(tool_runtime::executor::ApproveAll)
        .build()
        .unwrap();
    let scorer = Arc::new(Recording::default());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let agent = Agent::new(
        model(&base),
        executor,
        AgentConfig {
            selection: Some(
                tool_runtime::select::PickOptions::new()
                    .allow_unsafe(true)
                    .scorer(scorer.clone()),
            ),
            ..Default::default()
        },
    )
    .on_event(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    let report = agent.run("please add 1 and 2").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("3, and note 7 is gone."));
    assert_eq!(*deleted.lock().unwrap(), vec![7]);

    // One pick per model request, each on the request as it stood.
    let queries = scorer.queries.lock().unwrap().clone();
    assert_eq!(queries.len(), 3);
    assert_eq!(queries[0], "please add 1 and 2");
    assert!(queries[1].ends_with("then I delete note 7."), "{queries:?}");
    // Every pick ran over the agent's own catalog: the index was not rebuilt per request.
    let built = Arc::as_ptr(&agent.catalog().expect("selection builds a catalog")) as usize;
    assert!(
        scorer.catalogs.lock().unwrap().iter().all(|&c| c == built),
        "a pick ran over another catalog than the one built with the agent"
    );

    let declared = |i: usize| script.declared(i);
    assert_eq!(declared(0), ["add"]);
    assert_eq!(declared(1), ["add", "delete_note"]);
    // The third query ("please add 1 and 2") picks `add` only; `delete_note` stays declared
    // because the conversation holds a call to it.
    assert_eq!(declared(2), ["add", "delete_note"]);
    let selected = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolsSelected { .. }))
        .count();
    assert_eq!(selected, 3);
}

/// A tool added to the executor while the agent lives (an MCP server's new tool, say) is in the
/// agent's index for the next pick, and a tool taken out is no longer picked; the index is
/// brought in step, not rebuilt, only when the tools changed.
#[tokio::test]
async fn pre_selection_indexes_the_tools_added_to_the_executor_before_the_next_pick() {
    let (base, script) = serve(vec![answer("no tool for that"), answer("shouted")]).await;
    let executor = Executor::builder(toolset(&Deleted::default()))
        .confirmation(tool_runtime::executor::ApproveAll)
        .build()
        .unwrap();
    let agent = Agent::new(
        model(&base),
        executor.clone(),
        AgentConfig {
            selection: Some(
                tool_runtime::select::PickOptions::new()
                    .allow_unsafe(true)
                    .scorer(Arc::new(Recording::default())),
            ),
            ..Default::default()
        },
    );
    let declared = |i: usize| script.declared(i);
    let before = agent.catalog().unwrap();
    assert!(
        Arc::ptr_eq(&before, &agent.catalog().unwrap()),
        "unchanged tools keep the index"
    );
    agent.run("please shout hello").await.unwrap();
    assert_eq!(declared(0), Vec::<String>::new(), "no tool matches yet");

    let mut shout = tool_runtime::definition::ToolDefinition::new(
        "shout_text".to_owned(),
        "Shouts the text back in capitals.".to_owned(),
        &json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    );
    shout.safety = tool_runtime::definition::Safety::ReadOnly;
    executor
        .update_tools(|set| {
            set.register_dynamic(
                shout,
                Some(Arc::new(|args: Value, _| {
                    Box::pin(async move { Ok(args) }) as futures::future::BoxFuture<'static, _>
                })),
            )
            .map(|_| ())
        })
        .unwrap()
        .unwrap();
    agent.run("please shout hello").await.unwrap();
    assert_eq!(declared(1), ["shout_text"], "the new tool is picked");
    let after = agent.catalog().unwrap();
    assert!(after.get("shout_text").is_some());
    assert!(
        before.get("shout_text").is_none(),
        "an index taken before keeps what it had"
    );

    executor
        .update_tools(|set| set.remove("shout_text"))
        .unwrap();
    assert!(agent.catalog().unwrap().get("shout_text").is_none());
    assert!(agent.catalog().unwrap().get("add").is_some());
}

/// One response with more calls than the per-turn limit: the first `limit` run (and are
/// audited), every other one gets a `TOO_MANY_CALLS` result the model can read, and nothing of
/// them runs; the next request carries a result for every call, so the conversation stays valid.
#[tokio::test]
async fn calls_past_the_per_turn_limit_are_refused_with_a_structured_error() {
    let calls: Vec<Value> = (0..300)
        .map(|i| {
            json!({"id": format!("c{i}"), "type": "function",
                   "function": {"name": "add", "arguments": format!(r#"{{"a":{i},"b":1}}"#)}})
        })
        .collect();
    let many = json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{
        "role":"assistant","content":null,"tool_calls": calls}}],
        "usage":{"prompt_tokens":10,"completion_tokens":10}});
    let (base, script) = serve(vec![many, answer("done")]).await;
    let deleted = Deleted::default();
    let executor = Executor::builder(toolset(&deleted)).build().unwrap();
    let agent = Agent::new(
        model(&base),
        executor,
        AgentConfig {
            max_calls_per_turn: 128,
            ..Default::default()
        },
    );
    let report = agent.run("add them").await.unwrap();
    assert_eq!(report.status, RunStatus::Answered);
    assert_eq!(report.audit.len(), 128, "only the first 128 ran");

    let requests = script.requests.lock().unwrap().clone();
    let results: Vec<(String, Value)> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                serde_json::from_str(m["content"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 300, "every call has its result");
    assert_eq!(results[0].0, "c0");
    assert_eq!(results[127].1, json!(128));
    assert_eq!(results[128].0, "c128");
    let refused = &results[128].1["error"];
    assert_eq!(refused["code"], "TOO_MANY_CALLS");
    assert_eq!(refused["retryable"], true);
    assert_eq!(refused["details"]["limit"], 128);
    assert!(refused["message"].as_str().unwrap().contains("300"));
    assert!(
        results[128..]
            .iter()
            .all(|(_, r)| r["error"]["code"] == "TOO_MANY_CALLS")
    );
}

#[tokio::test]
async fn a_model_that_never_answers_stops_at_max_iterations_with_its_work_kept() {
    // three tool turns scripted, and an answer the run must never reach
    let (base, script) = serve(vec![
        call("c1", "add", r#"{"a":1,"b":2}"#, (10, 1)),
        call("c2", "add", r#"{"a":3,"b":4}"#, (10, 1)),
        call("c3", "add", r#"{"a":5,"b":6}"#, (10, 1)),
        answer("too late"),
    ])
    .await;
    let executor = Executor::builder(toolset(&Deleted::default()))
        .build()
        .unwrap();
    let agent = Agent::new(
        model(&base),
        executor,
        AgentConfig {
            max_iterations: 2,
            ..Default::default()
        },
    );
    let report = agent.run("keep adding").await.unwrap();
    assert_eq!(report.status, RunStatus::MaxIterations);
    assert_eq!(report.answer, None);
    assert_eq!(report.iterations, 2);
    assert_eq!(script.requests.lock().unwrap().len(), 2, "no third request");
    // both turns' calls ran and are on the record: stopping loses nothing that happened
    assert_eq!(report.audit.len(), 2);
    assert!(report.audit.iter().all(|r| r.status == Status::Success));
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (20, 2)
    );
    let results = report
        .transcript
        .iter()
        .filter(|e| matches!(e, TranscriptEntry::Tool { .. }))
        .count();
    assert_eq!(results, 2);
}

#[tokio::test]
async fn a_calls_progress_reaches_the_runs_events_before_its_result() {
    let (base, _script) = serve(vec![
        call("c1", "count", r#"{"n":3}"#, (10, 2)),
        answer("three"),
    ])
    .await;
    let executor = Executor::builder(ToolSet::new().with::<count>().unwrap())
        .build()
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let agent = Agent::new(model(&base), executor, AgentConfig::default()).on_event(Arc::new(
        move |e: &AgentEvent| sink.lock().unwrap().push(e.clone()),
    ));
    let report = agent.run("count to three").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("three"));

    let events = events.lock().unwrap();
    let progress: Vec<(String, f64, Option<f64>, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CallProgress {
                call_id,
                progress,
                total,
                message,
            } => Some((call_id.clone(), *progress, *total, message.clone())),
            _ => None,
        })
        .collect();
    let step = |i: u32| {
        (
            "c1".to_owned(),
            f64::from(i),
            Some(3.0),
            Some(format!("counted {i}")),
        )
    };
    assert_eq!(progress, [step(1), step(2), step(3)]);
    let last_progress = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::CallProgress { .. }))
        .unwrap();
    let finished = events
        .iter()
        .position(|e| matches!(e, AgentEvent::CallFinished { .. }))
        .unwrap();
    assert!(last_progress < finished, "{events:?}");
    let json = serde_json::to_value(&events[last_progress]).unwrap();
    assert_eq!(json["event"], "call_progress", "{json}");
}
