//! The MCP server adapter, driven by rmcp's own client over an in-process pipe: what an MCP host
//! sees in `tools/list`, and that `tools/call` goes through the executor's policy.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use tool_mcp::server::McpServer;
use tool_runtime::executor::{Deferred, MemoryAuditSink, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::{Executor, ToolError, ToolSet, tool};

/// Search the notes.
#[tool(read_only)]
fn search_notes(
    /// Words to look for.
    query: String,
) -> Vec<String> {
    vec![format!("a note about {query}")]
}

/// Delete a note for good.
#[tool(modify, intent = "Delete note {id}")]
fn delete_note(
    /// The note's id.
    id: u64,
) -> Value {
    json!({"deleted": id})
}

/// Always fails, to show how a tool's own error reaches the client.
#[tool(read_only)]
fn broken(
    /// Anything.
    input: String,
) -> Result<String, ToolError> {
    Err(ToolError::new(
        tool_runtime::ErrorCode::of("BACKEND_DOWN"),
        format!("cannot handle {input}"),
    )
    .recover("try again later"))
}

struct Fixture {
    executor: Executor,
    audit: Arc<MemoryAuditSink>,
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
}

async fn connect() -> Fixture {
    let set = ToolSet::new()
        .with::<search_notes>()
        .unwrap()
        .with::<delete_note>()
        .unwrap()
        .with::<broken>()
        .unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .confirmation(Deferred)
        .audit_sink(audit.clone())
        .build()
        .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = McpServer::new(executor.clone()).named("notes", "1.0.0");
    tokio::spawn(async move { server.serve_on(server_io).await });
    let client = ().serve(client_io).await.expect("initialize handshake");
    Fixture {
        executor,
        audit,
        client,
    }
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name);
    params.arguments = arguments.as_object().cloned();
    params
}

fn text(result: &CallToolResult) -> Value {
    let v = serde_json::to_value(&result.content[0]).unwrap();
    serde_json::from_str(v["text"].as_str().unwrap())
        .unwrap_or_else(|_| Value::String(v["text"].as_str().unwrap().to_owned()))
}

#[tokio::test]
async fn tools_list_carries_schemas_and_safety_annotations() {
    let f = connect().await;
    let info = f.client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "notes");
    let tools = f.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search_notes", "delete_note", "broken"]);

    let search = &tools[0];
    assert_eq!(search.description.as_deref(), Some("Search the notes."));
    assert_eq!(search.input_schema["required"], json!(["query"]));
    assert_eq!(
        search.input_schema["properties"]["query"]["description"],
        "Words to look for."
    );
    let a = search.annotations.as_ref().unwrap();
    assert_eq!(a.read_only_hint, Some(true));

    let delete = tools[1].annotations.as_ref().unwrap();
    assert_eq!(delete.read_only_hint, Some(false));
    assert_eq!(delete.destructive_hint, Some(true));
}

#[tokio::test]
async fn a_read_only_call_runs_and_is_audited() {
    let f = connect().await;
    let r = f
        .client
        .call_tool(call("search_notes", json!({"query": "llamas"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    assert_eq!(text(&r), json!(["a note about llamas"]));
    let records = f.audit.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "search_notes");
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_are_structured_tool_errors() {
    let f = connect().await;
    let r = f
        .client
        .call_tool(call("search_notes", json!({"query": 7})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let body = text(&r);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(body["error"]["violations"][0]["pointer"], "/query");

    let r = f
        .client
        .call_tool(call("serch_notes", json!({"query": "x"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let body = text(&r);
    assert_eq!(body["error"]["code"], "UNKNOWN_TOOL");
    assert!(body.to_string().contains("search_notes"), "{body}");

    let r = f
        .client
        .call_tool(call("broken", json!({"input": "x"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r)["error"]["code"], "BACKEND_DOWN");
    assert_eq!(text(&r)["error"]["recover_action"], "try again later");
}

#[tokio::test]
async fn call_ids_are_unique_across_sessions_whose_clients_number_alike() {
    let f = connect().await;
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let other = McpServer::new(f.executor.clone());
    tokio::spawn(async move { other.serve_on(server_io).await });
    let second = ().serve(client_io).await.expect("initialize handshake");
    // both clients' first call has the same JSON-RPC id
    for client in [&f.client, &second] {
        client
            .call_tool(call("delete_note", json!({"id": 4})))
            .await
            .unwrap();
    }
    let ids: Vec<String> = f
        .executor
        .pending()
        .unwrap()
        .iter()
        .map(|op| op.preview.call_id.to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(ids.iter().all(|id| id.starts_with("mcp-")), "{ids:?}");
}

#[tokio::test]
async fn a_modifying_call_waits_for_a_person_and_the_client_cannot_approve_it() {
    let f = connect().await;
    // The arguments try to approve the call themselves: they are not a decision.
    let r = f
        .client
        .call_tool(call(
            "delete_note",
            json!({"id": 4, "approved": true, "confirm": "yes"}),
        ))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "pending is not an error");
    let body = text(&r);
    assert_eq!(body["status"], "pending", "{body}");
    // the declared outputSchema's "not run" form, for clients that check results against it
    assert_eq!(r.structured_content.as_ref(), Some(&body), "{body}");
    let op = body["operation_id"].as_str().unwrap().to_owned();

    // Nothing ran: the operation waits in the store until the application approves it.
    let pending = f.executor.pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, op);
    let done = f.executor.approve(&op).await.unwrap();
    match done.outcome {
        Outcome::Success { value, .. } => assert_eq!(value, json!({"deleted": 4})),
        other => panic!("{other:?}"),
    }
}

/// Raw JSON-RPC over a byte stream, as a hostile or broken client would send it: every request
/// gets an answer with the protocol's own error, and the connection keeps serving.
#[tokio::test]
async fn malformed_and_oversized_requests_over_a_byte_stream_each_get_the_protocol_error() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let set = ToolSet::new().with::<search_notes>().unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let executor = Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .audit_sink(audit.clone())
        .build()
        .unwrap();
    let (client_in, server_out) = tokio::io::duplex(1 << 16);
    let (server_in, mut client_out) = tokio::io::duplex(1 << 16);
    let server = McpServer::new(executor).max_request_bytes(64 * 1024);
    let served = tokio::spawn(server.serve_io(server_in, server_out));
    let mut answers = BufReader::new(client_in).lines();
    let mut send = async |line: String| {
        client_out.write_all(line.as_bytes()).await.unwrap();
        client_out.write_all(b"\n").await.unwrap();
    };
    async fn next(answers: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), answers.next_line())
            .await
            .expect("an answer, not silence")
            .unwrap()
            .expect("the connection is open");
        serde_json::from_str(&line).unwrap()
    }

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
    )
    .await;
    assert_eq!(next(&mut answers).await["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()).await;

    let malformed = [
        json!({"name": "search_notes", "arguments": "llamas"}),
        json!({"arguments": {"query": "llamas"}}),
        json!(["search_notes"]),
    ];
    for (i, params) in malformed.into_iter().enumerate() {
        let id = 10 + i;
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                .to_string(),
        )
        .await;
        let a = next(&mut answers).await;
        assert_eq!(a["id"], id, "{a}");
        assert_eq!(
            a["error"]["code"], -32602,
            "invalid params, not method not found: {a}"
        );
    }

    // a request whose id is null is answered with `id: null`, a wrong version with its id
    send(r#"{"jsonrpc": "2.0", "id": null, "method": "tools/list"}"#.to_owned()).await;
    let a = next(&mut answers).await;
    assert_eq!(a.as_object().unwrap().get("id"), Some(&Value::Null), "{a}");
    assert_eq!(a["error"]["code"], -32600, "{a}");
    send(r#"{"jsonrpc": "1.0", "id": 15, "method": "tools/list"}"#.to_owned()).await;
    let a = next(&mut answers).await;
    assert_eq!(
        (&a["id"], &a["error"]["code"]),
        (&json!(15), &json!(-32600)),
        "{a}"
    );
    // every tool is in the first page: a cursor is one the server never issued
    send(
        json!({"jsonrpc": "2.0", "id": 16, "method": "tools/list",
                "params": {"cursor": "bogus"}})
        .to_string(),
    )
    .await;
    let a = next(&mut answers).await;
    assert_eq!(
        (&a["id"], &a["error"]["code"]),
        (&json!(16), &json!(-32602)),
        "{a}"
    );

    let huge = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
        "name": "search_notes", "arguments": {"query": "x".repeat(200_000)}}});
    send(huge.to_string()).await;
    let a = next(&mut answers).await;
    assert_eq!(a["error"]["code"], -32600, "{a}");
    assert!(
        a["error"]["message"].as_str().unwrap().contains("65536"),
        "{a}"
    );

    send("{not json".to_owned()).await;
    assert_eq!(next(&mut answers).await["error"]["code"], -32700);

    // and the connection still serves
    send(
        json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {
        "name": "search_notes", "arguments": {"query": "llamas"}}})
        .to_string(),
    )
    .await;
    let a = next(&mut answers).await;
    assert_eq!(a["id"], 30, "{a}");
    assert_eq!(a["result"]["isError"], false, "{a}");
    assert_eq!(
        audit.records().len(),
        1,
        "only the good call reached the executor"
    );

    drop(client_out);
    tokio::time::timeout(std::time::Duration::from_secs(10), served)
        .await
        .expect("the server ends when the client's input does")
        .unwrap()
        .unwrap();
}

/// A host whose person never answers in time; it keeps the requests the server cancelled.
#[derive(Clone, Default)]
struct Slow(Arc<std::sync::Mutex<Vec<rmcp::model::CancelledNotificationParam>>>);

impl rmcp::handler::client::ClientHandler for Slow {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "slow-host", "version": "1"}
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        Err(rmcp::ErrorData::internal_error("too late", None))
    }

    async fn on_cancelled(
        &self,
        params: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn an_elicitation_the_server_gives_up_on_is_cancelled_at_the_client() {
    let set = ToolSet::new().with::<delete_note>().unwrap();
    let config = tool_runtime::executor::ExecutorConfig {
        confirmation_timeout_ms: 300,
        ..Default::default()
    };
    let executor = Executor::builder(set)
        .config(config)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server = McpServer::new(executor)
        .in_band_confirmation(tool_mcp::server::InBandConfirmation::AnyClient);
    tokio::spawn(async move { server.serve_on(server_io).await });
    let host = Slow::default();
    let client = host.clone().serve(client_io).await.unwrap();
    let r = client
        .call_tool(call("delete_note", json!({"id": 4})))
        .await
        .unwrap();
    assert_eq!(text(&r)["status"], "denied", "{r:?}");
    for _ in 0..50 {
        if !host.0.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let cancelled = host.0.lock().unwrap().clone();
    assert_eq!(cancelled.len(), 1, "once, past the timeout: {cancelled:?}");
    assert!(cancelled[0].request_id.is_some(), "{cancelled:?}");

    // the client gives its call up while its person is being asked: the question goes too
    let mut params = CallToolRequestParams::new("delete_note");
    params.arguments = json!({"id": 5}).as_object().cloned();
    let handle = client
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    handle.cancel(None).await.unwrap();
    for _ in 0..50 {
        if host.0.lock().unwrap().len() > 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let cancelled = host.0.lock().unwrap().clone();
    assert_eq!(cancelled.len(), 2, "{cancelled:?}");
    assert_ne!(cancelled[0].request_id, cancelled[1].request_id);
}
