//! A tool's progress reports (`CallContext::report_progress`) reach the MCP client that asked
//! for them, as `notifications/progress` with its token, in order and before the result; a call
//! without a token gets none. Read off the wire of `serve_io`, where the order is observable.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tool_mcp::server::McpServer;
use tool_runtime::progress::Progress;
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, Executor, ToolSet, tool};

/// Counts to three, reporting each step.
#[tool(read_only)]
fn count(cx: &CallContext) -> String {
    for step in 1..=3 {
        cx.report_progress(
            Progress::new(f64::from(step))
                .of(3.0)
                .message(format!("step {step}")),
        );
    }
    "counted".to_owned()
}

#[tokio::test]
async fn progress_reaches_the_client_that_asked_in_order_and_before_the_result() {
    let set = ToolSet::new().with::<count>().unwrap();
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let (client_in, server_out) = tokio::io::duplex(1 << 16);
    let (server_in, mut client_out) = tokio::io::duplex(1 << 16);
    tokio::spawn(McpServer::new(executor).serve_io(server_in, server_out));
    let mut lines = BufReader::new(client_in).lines();
    let mut send = async |message: Value| {
        client_out
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    let mut next = async || -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
            .await
            .expect("a message, not silence")
            .unwrap()
            .expect("the connection is open");
        serde_json::from_str(&line).unwrap()
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    )
    .await;
    assert_eq!(next().await["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "count", "arguments": {}, "_meta": {"progressToken": "count-1"}}}),
    )
    .await;
    let mut seen = Vec::new();
    let result = loop {
        let message = next().await;
        if message.get("id").is_some() {
            break message;
        }
        seen.push(message);
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "counted",
        "{result}"
    );
    let expected: Vec<Value> = (1..=3)
        .map(|step| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": "count-1", "progress": f64::from(step), "total": 3.0,
                "message": format!("step {step}")}})
        })
        .collect();
    assert_eq!(seen, expected, "every report, in order, before the result");

    // without a token nobody listens: the result comes alone
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "count", "arguments": {}}}),
    )
    .await;
    let message = next().await;
    assert_eq!(message["id"], 3, "no notification before it: {message}");
}
