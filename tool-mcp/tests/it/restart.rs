//! A stdio server killed in the middle of a call (`tests/servers/slow.py`, the Python MCP SDK):
//! the call in flight ends `UNAVAILABLE`, not retryable, and is not sent again; the server is
//! started again and its tools answer once it is up.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::executor::{ApproveAll, Executor, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolSet};

fn server(dir: &Path) -> Option<ServerConfig> {
    let python = test_support::conformance_python()?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/slow.py");
    Some(ServerConfig::stdio(
        python,
        [
            script.to_owned(),
            dir.join("calls.log").display().to_string(),
            dir.join("pid").display().to_string(),
        ],
    ))
}

async fn call(exec: &Executor, id: &str, tool: &str, args: serde_json::Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_started_again_and_the_call_is_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let Some(config) = server(dir.path()) else {
        return;
    };
    let log = dir.path().join("calls.log");
    let arrived = || std::fs::read_to_string(&log).unwrap_or_default();
    let client = McpClient::connect("slow", config).await.unwrap();
    let mut set = ToolSet::new();
    client.import(&mut set);
    let exec = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .confirmation(ApproveAll)
        .build()
        .unwrap();

    let first_pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    let running = {
        let exec = exec.clone();
        tokio::spawn(async move { call(&exec, "s1", "slow__slow", json!({"seconds": 20})).await })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while arrived().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(arrived(), "started\n");
    let killed = std::process::Command::new("kill")
        .args(["-9", first_pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());

    let outcome = running.await.unwrap();
    let error = outcome.error().expect("the call did not finish");
    assert_eq!(error.code, ErrorCode::of("UNAVAILABLE"), "{error:?}");
    assert!(!error.retryable, "it may have taken effect: {error:?}");

    // started again: calls answer once it is up, and the killed call was never sent again
    let deadline = Instant::now() + Duration::from_secs(30);
    let answered = loop {
        let out = call(&exec, "e1", "slow__echo", json!({"text": "back"})).await;
        if out.error().is_none() || Instant::now() > deadline {
            break out;
        }
        let e = out.error().unwrap();
        assert!(e.retryable, "while restarting: {e:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(answered.error().is_none(), "{answered:?}");
    let second_pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
    assert_ne!(first_pid, second_pid, "a new process");
    assert_eq!(arrived(), "started\n", "the killed call was not repeated");
    client.close();
}
