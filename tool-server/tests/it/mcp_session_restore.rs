//! MCP sessions over streamable HTTP outlive the process that opened them: a session opened on a
//! server that is then killed (`SIGKILL`) is served by the server started again on the same
//! SQLite file, and a session opened on one replica is served by another on the same Redis,
//! without the client opening a new one. The official MCP Python SDK client keeps its session
//! across the restart; raw JSON-RPC shows the rest: a session is bound to the token that opened
//! it, a deleted session is gone on every process, and a session the store does not know is
//! answered `404`, so that its client opens a new one. A call whose host's person is reading its
//! confirmation form when the server is killed waits as a pending operation on the restarted one.
//!
//! The servers are this test binary started again with `TOOL_SERVER_MCP_STORE` set (see
//! [`server`]): real processes, real sockets.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{AGENT, APPROVER, HOST, Notes, add_note, read_note};
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig};
use tool_runtime::store::{RedisStore, SqliteStore, Store};
use tool_server::{ServerOptions, Tokens};

const STORE: &str = "TOOL_SERVER_MCP_STORE";
const ADDR: &str = "TOOL_SERVER_MCP_ADDR";
const IDLE_MS: &str = "TOOL_SERVER_MCP_IDLE_MS";
/// Set: a new note needs a person's confirmation too.
const CONFIRM_ADD: &str = "TOOL_SERVER_MCP_CONFIRM_ADD";
const PROTOCOL: &str = "2025-06-18";

/// The server process: the notes app on the store `TOOL_SERVER_MCP_STORE` names (a SQLite file,
/// or `redis PREFIX` on `TOOL_RUNTIME_TEST_REDIS_URL`), on `TOOL_SERVER_MCP_ADDR`, until killed.
/// A no-op as a test of its own.
#[test]
fn server() {
    let Ok(location) = std::env::var(STORE) else {
        return;
    };
    let addr = std::env::var(ADDR).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let store: Arc<dyn Store> = match location.strip_prefix("redis ") {
            Some(prefix) => {
                let url = test_support::redis_url().unwrap();
                Arc::new(RedisStore::with_prefix(&url, prefix).unwrap())
            }
            None => Arc::new(SqliteStore::open(&location).unwrap()),
        };
        let notes = Notes::default();
        notes
            .0
            .lock()
            .unwrap()
            .insert("n1".into(), "buy milk".into());
        let set = tool_runtime::toolset![read_note, add_note]
            .unwrap()
            .with_state(notes);
        let executor = Executor::builder(set)
            .config(ExecutorConfig {
                auto_confirm_create: std::env::var(CONFIRM_ADD).is_err(),
                ..ExecutorConfig::default()
            })
            .store(store)
            .confirmation(Deferred)
            .build()
            .unwrap();
        let mut options = ServerOptions::new(
            Tokens::new(AGENT, APPROVER)
                .unwrap()
                .with_host(HOST)
                .unwrap(),
        );
        if let Ok(ms) = std::env::var(IDLE_MS) {
            options = options.mcp_session_idle_timeout(Duration::from_millis(ms.parse().unwrap()));
        }
        let listener = tool_server::bind(addr.parse().unwrap(), &options)
            .await
            .unwrap();
        println!("LISTENING http://{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        axum::serve(listener, tool_server::router(executor, options))
            .await
            .unwrap();
    });
}

/// A server process, killed with `SIGKILL` when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(store: &str, addr: &str) -> Server {
        Server::start_idle(store, addr, None)
    }

    /// [`Server::start`] with sessions that idle out after `idle` (60 s by default).
    fn start_idle(store: &str, addr: &str, idle: Option<Duration>) -> Server {
        let mut command = Command::new(std::env::current_exe().unwrap());
        if let Some(idle) = idle {
            command.env(IDLE_MS, idle.as_millis().to_string());
        }
        Server::spawn(command, store, addr)
    }

    /// [`Server::start`] where adding a note needs a person's confirmation.
    fn start_confirming(store: &str, addr: &str) -> Server {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.env(CONFIRM_ADD, "1");
        Server::spawn(command, store, addr)
    }

    fn spawn(mut command: Command, store: &str, addr: &str) -> Server {
        let mut child = command
            .args([
                "--exact",
                "mcp_session_restore::server",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(STORE, store)
            .env(ADDR, addr)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = loop {
            let line = lines.next().expect("the server starts").unwrap();
            if let Some((_, base)) = line.split_once("LISTENING ") {
                break base.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Server { child, base }
    }

    /// Kills the process (`SIGKILL`: nothing of it runs after) and waits for it.
    fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::mem::take(&mut self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON-RPC request to `/mcp` of `base` with `token` on `session` (none: opens one): the
/// status, the session header of the answer, and the JSON-RPC answer (from JSON or an SSE body).
async fn rpc(
    base: &str,
    token: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(id) = session {
        req = req
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", PROTOCOL);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let opened = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = res.text().await.unwrap();
    let answer = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::String(text.clone()))
    });
    (status, opened, answer)
}

/// Opens a session on `base` with `token`: its id.
async fn open(base: &str, token: &str) -> String {
    open_with(base, token, json!({})).await
}

/// [`open`] for a client that declares `capabilities`.
async fn open_with(base: &str, token: &str, capabilities: Value) -> String {
    let (status, id, answer) = rpc(
        base,
        token,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": capabilities,
            "clientInfo": {"name": "restore-test", "version": "1"},
        }}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let id = id.expect("a session id");
    let (status, _, _) = rpc(
        base,
        token,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    id
}

/// `tools/call` of `read_note` on note n1 in `session`: the status and the answer.
async fn read_n1(base: &str, token: &str, session: &str) -> (u16, Value) {
    let (status, _, answer) = rpc(
        base,
        token,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "read_note", "arguments": {"id": "n1"}}}),
    )
    .await;
    (status, answer)
}

async fn tool_names(base: &str, token: &str, session: &str) -> Vec<String> {
    let (status, _, answer) = rpc(
        base,
        token,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let mut names: Vec<String> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn read_text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
}

/// A free port on 127.0.0.1, for a server started twice on the same address.
fn free_addr() -> String {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_session_outlives_a_killed_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.sqlite");
    let file = file.to_str().unwrap();
    let a = Server::start(file, "127.0.0.1:0");
    let session = open(&a.base, AGENT).await;
    let (status, answer) = read_n1(&a.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));
    a.kill();

    // another process on the same file and another port: the same session, no new handshake
    let b = Server::start(file, "127.0.0.1:0");
    assert_eq!(
        tool_names(&b.base, AGENT, &session).await,
        ["add_note", "read_note"]
    );
    let (status, answer) = read_n1(&b.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));

    // the session is bound to the token that opened it, on the process that took it over too
    let (status, answer) = read_n1(&b.base, HOST, &session).await;
    assert_eq!(status, 403, "{answer}");

    // a session the store never had is unknown: 404, and the client opens a new one
    let (status, _) = read_n1(&b.base, AGENT, "no-such-session").await;
    assert_eq!(status, 404);
    let fresh = open(&b.base, AGENT).await;
    assert_ne!(fresh, session);

    // its client ends it: gone for every process on the store
    let res = reqwest::Client::new()
        .delete(format!("{}/mcp", b.base))
        .bearer_auth(AGENT)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    b.kill();
    let c = Server::start(file, "127.0.0.1:0");
    let (status, _) = read_n1(&c.base, AGENT, &session).await;
    assert_eq!(status, 404, "a deleted session is not restored");
    let (status, answer) = read_n1(&c.base, AGENT, &fresh).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));
}

/// A session restored with another credential than the one that opened it is not found, as if
/// it never was, and stays the opener's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_token_does_not_take_over_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.sqlite");
    let file = file.to_str().unwrap();
    let a = Server::start(file, "127.0.0.1:0");
    let session = open(&a.base, AGENT).await;
    let b = Server::start(file, "127.0.0.1:0");
    let (status, _) = read_n1(&b.base, HOST, &session).await;
    assert_eq!(status, 404);
    let (status, answer) = read_n1(&b.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));
    drop(a);
}

/// The official MCP Python SDK client keeps its session while its server is killed and started
/// again on the same address and store: it lists and calls tools without a second `initialize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_keeps_its_session_across_a_restart() {
    let Some(python) = test_support::conformance_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.sqlite");
    let file = file.to_str().unwrap().to_owned();
    let addr = free_addr();
    let a = Server::start(&file, &addr);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/session_restore.py");
    let mut client = Command::new(python)
        .arg(script)
        .args([&format!("{}/mcp", a.base), AGENT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["before"]["content"][0]["text"], "buy milk", "{first}");
    let session = first["session"].as_str().unwrap().to_owned();

    a.kill();
    let _b = Server::start(&file, &addr);
    writeln!(client.stdin.as_mut().unwrap()).unwrap();
    let second = lines.next().map(|l| l.unwrap());
    let status = client.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut stderr).unwrap();
    let second: Value = serde_json::from_str(&second.unwrap_or_else(|| panic!("{stderr}")))
        .unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(status.success(), "{stderr}");
    assert_eq!(second["session"], session.as_str(), "{second}");
    assert_eq!(
        second["after"]["content"][0]["text"], "buy milk",
        "{second}"
    );
    let mut tools: Vec<&str> = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(tools, ["add_note", "read_note"], "{second}");
    let initializes = second["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| *m == "initialize")
        .count();
    assert_eq!(initializes, 1, "{second}");
}

/// A session opened on one replica is served by another on the same Redis; a session that
/// expired or never was is `404` on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_between_replicas_on_redis() {
    let Some(_) = test_support::redis_url() else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let store = format!("redis tool-server-test:{}:{nanos}:mcp:", std::process::id());
    let a = Server::start(&store, "127.0.0.1:0");
    let b = Server::start(&store, "127.0.0.1:0");
    let session = open(&a.base, AGENT).await;
    let (status, answer) = read_n1(&a.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));

    assert_eq!(
        tool_names(&b.base, AGENT, &session).await,
        ["add_note", "read_note"]
    );
    let (status, answer) = read_n1(&b.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));
    // and back: both hold it now
    let (status, answer) = read_n1(&a.base, AGENT, &session).await;
    assert_eq!((status, read_text(&answer)), (200, "buy milk"));

    for base in [&a.base, &b.base] {
        let (status, _) = read_n1(base, AGENT, "expired-or-never-was").await;
        assert_eq!(status, 404);
    }
}

/// A session in use keeps its entry in the store alive past the idle timeout, so another
/// process takes it over; one left idle past the timeout is gone everywhere (`404`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_is_renewed_and_an_idle_one_expires() {
    let idle = Duration::from_millis(1_500);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.sqlite");
    let file = file.to_str().unwrap();
    let a = Server::start_idle(file, "127.0.0.1:0", Some(idle));
    let b = Server::start_idle(file, "127.0.0.1:0", Some(idle));
    let used = open(&a.base, AGENT).await;
    let left = open(&a.base, AGENT).await;
    // twice the timeout, with a request every fifth of it
    for _ in 0..10 {
        tokio::time::sleep(idle / 5).await;
        let (status, answer) = read_n1(&a.base, AGENT, &used).await;
        assert_eq!((status, read_text(&answer)), (200, "buy milk"));
    }
    let (status, answer) = read_n1(&b.base, AGENT, &used).await;
    assert_eq!(
        (status, read_text(&answer)),
        (200, "buy milk"),
        "renewed while in use"
    );
    for base in [&a.base, &b.base] {
        let (status, _) = read_n1(base, AGENT, &left).await;
        assert_eq!(status, 404, "expired");
    }
}

/// A host's person is reading the confirmation form (`elicitation/create`) when the server is
/// killed. The call was parked before the form was sent, so nothing is lost: the server started
/// again on the same file lists it as pending, a person approves it there, and it runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_in_progress_outlives_its_killed_server_as_a_pending_operation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.sqlite");
    let file = file.to_str().unwrap();
    let a = Server::start_confirming(file, "127.0.0.1:0");
    let session = open_with(&a.base, HOST, json!({"elicitation": {}})).await;
    let mut call = reqwest::Client::new()
        .post(format!("{}/mcp", a.base))
        .bearer_auth(HOST)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", PROTOCOL)
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "add_note",
                                 "arguments": {"id": "n9", "text": "call the bank"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(call.status(), 200);
    let mut stream = String::new();
    while !stream.contains("elicitation/create") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), call.chunk())
            .await
            .expect("the form is sent")
            .unwrap()
            .unwrap_or_else(|| panic!("the call's stream ended before the form: {stream}"));
        stream.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(stream.contains("Tool: add_note (create)"), "{stream}");
    a.kill();
    drop(call);

    let b = Server::start_confirming(file, "127.0.0.1:0");
    let http = reqwest::Client::new();
    let listed: Value = http
        .get(format!("{}/api/v1/pending", b.base))
        .bearer_auth(APPROVER)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ops = listed["pending"].as_array().unwrap();
    assert_eq!(ops.len(), 1, "{listed}");
    assert_eq!(ops[0]["tool"], "add_note", "{listed}");
    let approve = format!(
        "{}/api/v1/pending/{}/approve",
        b.base,
        ops[0]["id"].as_str().unwrap()
    );
    let res = http
        .post(&approve)
        .bearer_auth(APPROVER)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    let again = http
        .post(&approve)
        .bearer_auth(APPROVER)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409, "decided once");

    let reader = open(&b.base, AGENT).await;
    let (_, _, answer) = rpc(
        &b.base,
        AGENT,
        Some(&reader),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "read_note", "arguments": {"id": "n9"}}}),
    )
    .await;
    assert_eq!(read_text(&answer), "call the bank");
}
