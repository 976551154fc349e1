//! Chat runs survive their server: a run that waits for a person is checkpointed in the store,
//! the server is killed with SIGKILL, another server process on the same SQLite file (or, with
//! `TOOL_RUNTIME_TEST_REDIS_URL`, a second replica on the same Redis) answers for the run, takes
//! the approval and resumes it. The tool runs once, the model's next request carries its result
//! once, and the answer is read from the store.
//!
//! The servers are this test binary started again with `TOOL_SERVER_CHAT_WORKER` set (see
//! [`chat_worker`]): real processes, real sockets; the model is scripted in the test's process,
//! so it outlives the servers and sees every request.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{answer, call, scripted};
use tool_providers::agent::{Agent, AgentConfig, ChatModel};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{ActivityQuery, Deferred, Executor, Status};
use tool_runtime::store::{RedisStore, SqliteStore, Store};
use tool_runtime::{State, ToolError, tool};
use tool_server::{ServerOptions, Tokens};

const AGENT: &str = "crash-agent-token-000001";
const APPROVER: &str = "crash-approver-token-0001";

/// Where the tool leaves a line per run, which every process appends to.
#[derive(Clone)]
struct ShipLog(PathBuf);

/// Ships an order: a person approves it first.
#[tool(modify, intent = "Ship order {order}")]
fn ship_order(
    /// The order.
    order: String,
    State(log): State<ShipLog>,
) -> Result<String, ToolError> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log.0)
        .map_err(|e| ToolError::execution(e.to_string()))?;
    writeln!(f, "ship {order} by {}", std::process::id())
        .map_err(|e| ToolError::execution(e.to_string()))?;
    Ok(format!("shipped {order} (parcel 7731)"))
}

/// Which store a worker opens: `sqlite:PATH` or `redis:PREFIX`.
fn open_store(spec: &str) -> Arc<dyn Store> {
    match spec.split_once(':') {
        Some(("sqlite", path)) => Arc::new(SqliteStore::open(path).unwrap()),
        Some(("redis", prefix)) => {
            let url = std::env::var("TOOL_RUNTIME_TEST_REDIS_URL").unwrap();
            Arc::new(RedisStore::with_prefix(&url, prefix).unwrap())
        }
        _ => panic!("unknown store {spec}"),
    }
}

/// The server process: the chat route over a scripted model, on the given store, until killed.
/// A no-op as a test of its own.
#[test]
fn chat_worker() {
    let Ok(spec) = std::env::var("TOOL_SERVER_CHAT_WORKER") else {
        return;
    };
    let model_url = std::env::var("TOOL_SERVER_CHAT_MODEL").unwrap();
    let log = ShipLog(std::env::var("TOOL_SERVER_SHIP_LOG").unwrap().into());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let set = tool_runtime::toolset![ship_order].unwrap().with_state(log);
        let executor = Executor::builder(set)
            .store(open_store(&spec))
            .confirmation(Deferred)
            .build()
            .unwrap();
        let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(model_url)
            .with_retry(RetryPolicy::none());
        let model = ChatModel::new(HttpClient::new(cfg).unwrap());
        let agent = Agent::new(model, executor.clone(), AgentConfig::default());
        let options = ServerOptions::new(Tokens::new(AGENT, APPROVER).unwrap()).chat(agent);
        let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &options)
            .await
            .unwrap();
        println!("LISTENING http://{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        axum::serve(listener, tool_server::router(executor, options))
            .await
            .unwrap();
    });
}

struct Worker {
    child: Child,
    base: String,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    /// SIGKILL (what `Child::kill` sends on Unix), and waits for the process to be gone.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn spawn(store: &str, model: &str, log: &Path) -> Worker {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "chat_crash::chat_worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOL_SERVER_CHAT_WORKER", store)
        .env("TOOL_SERVER_CHAT_MODEL", model)
        .env("TOOL_SERVER_SHIP_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("the worker starts").unwrap();
        if let Some((_, base)) = line.split_once("LISTENING ") {
            break base.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Worker { child, base }
}

async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http.request(method, url).bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// Polls the run on `base` until its status is `want`.
async fn until_status(http: &reqwest::Client, base: &str, run_id: &str, want: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = send(
            http,
            reqwest::Method::GET,
            format!("{base}/api/v1/chat/{run_id}"),
            AGENT,
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        if body["status"] == want {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never became {want}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A run parked on `first`, killed there, approved on `second` (a restart or a replica).
async fn survives_a_kill(
    first: Worker,
    second: impl FnOnce() -> Worker,
    store: Arc<dyn Store>,
    log: &Path,
    script: &support::Script,
) {
    let http = reqwest::Client::new();
    let (status, body) = send(
        &http,
        reqwest::Method::POST,
        format!("{}/api/v1/chat", first.base),
        AGENT,
        Some(json!({"messages": [{"role": "user", "content": "ship order A-17"}]})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let op = body["pending"][0]["operation_id"]
        .as_str()
        .unwrap()
        .to_owned();

    first.kill();
    let second = second();
    // the run, as the store keeps it, from a process that never drove it
    let waiting = until_status(&http, &second.base, &run_id, "suspended").await;
    assert_eq!(
        waiting["pending"][0]["operation_id"],
        op.as_str(),
        "{waiting}"
    );
    let (status, listed) = send(
        &http,
        reqwest::Method::GET,
        format!("{}/api/v1/chat?status=suspended", second.base),
        AGENT,
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert!(
        listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run_id"] == run_id.as_str()),
        "{listed}"
    );
    assert_eq!(
        std::fs::read_to_string(log).unwrap_or_default(),
        "",
        "nothing ran yet"
    );

    let (status, approved) = send(
        &http,
        reqwest::Method::POST,
        format!("{}/api/v1/pending/{op}/approve", second.base),
        APPROVER,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    let done = until_status(&http, &second.base, &run_id, "answered").await;
    assert_eq!(done["answer"], "Shipped A-17.", "{done}");

    // the tool ran once, the model saw its result once
    let ran = std::fs::read_to_string(log).unwrap();
    assert_eq!(ran.lines().count(), 1, "{ran}");
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let second_request = requests[1].to_string();
    assert_eq!(
        second_request.matches("parcel 7731").count(),
        1,
        "{second_request}"
    );
    // the audit has one run of the tool in this run
    let query = ActivityQuery {
        correlation_id: Some(run_id.clone()),
        ..Default::default()
    };
    let records = store.query_audit(&query).unwrap();
    let runs = records
        .iter()
        .filter(|r| r.tool == "ship_order" && r.status == Status::Success)
        .count();
    assert_eq!(runs, 1, "{records:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_while_it_waits_resumes_after_a_restart_on_sqlite() {
    let (model, script) = scripted(vec![
        call("c1", "ship_order", json!({"order": "A-17"})),
        answer("Shipped A-17."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.sqlite");
    let log = dir.path().join("ship.log");
    let spec = format!("sqlite:{}", db.display());
    let first = spawn(&spec, &model, &log);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    survives_a_kill(first, || spawn(&spec, &model, &log), store, &log, &script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_on_one_replica_is_approved_and_resumed_on_the_other_on_redis() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let (model, script) = scripted(vec![
        call("c1", "ship_order", json!({"order": "A-17"})),
        answer("Shipped A-17."),
    ])
    .await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("tool-server-crash:{}:{nanos}:", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ship.log");
    let spec = format!("redis:{prefix}");
    let (first, second) = (spawn(&spec, &model, &log), spawn(&spec, &model, &log));
    let store: Arc<dyn Store> = Arc::new(RedisStore::with_prefix(&url, &prefix).unwrap());
    survives_a_kill(first, move || second, store, &log, &script).await;
}
