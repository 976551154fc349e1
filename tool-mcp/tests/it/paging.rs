//! A server that lists its tools a page at a time (the Python MCP SDK's low-level server,
//! `tests/servers/paged.py`, three tools a page): every page is read and every tool imported
//! and callable, in the server's order.

use serde_json::json;
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::executor::{Executor, Outcome};
use tool_runtime::{CallContext, ToolCall, ToolSet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_a_paginated_tool_list_is_imported() {
    let Some(python) = test_support::conformance_python() else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/paged.py");
    let config = ServerConfig::stdio(python, [script, "8"]).trusting_annotations();
    let client = McpClient::connect("pg", config).await.unwrap();
    let listed: Vec<&str> = client.tools().iter().map(|t| t.name.as_ref()).collect();
    let expected: Vec<String> = (0..8).map(|n| format!("tool_{n}")).collect();
    assert_eq!(listed, expected, "three pages of 3, 3 and 2");

    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert_eq!(imported.registered.len(), 8, "{imported:?}");
    let executor = Executor::builder(set).build().unwrap();
    let call = ToolCall::new("c7", "pg__tool_7", json!({}));
    let outcome = executor.call(&call, CallContext::new("c7")).await.outcome;
    let Outcome::Success { value, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(value, &json!("7"));
    client.close();
}
