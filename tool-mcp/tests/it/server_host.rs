//! What a tool asks of the MCP client while it runs, with the official Python SDK's client
//! (`tests/clients/host_client.py`) as the host: its log entries arrive as `notifications/message`
//! at or above the level the client set, its typed question is asked with `elicitation/create`
//! and its form (defaults and choices included) and answered by the client's person, and its
//! prompt is sampled with `sampling/createMessage`. A client without a capability leaves the
//! tool a structured error it handles.

use std::process::Command;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_mcp::server::McpServer;
use tool_runtime::host::{LogLevel, Reply, SampleRequest};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, Executor, ToolError, ToolSet, tool};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

fn large() -> Size {
    Size::Large
}

/// An order of coffee.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Order {
    /// Who it is for.
    name: String,
    #[serde(default = "large")]
    size: Size,
    #[serde(default)]
    sugar: bool,
}

/// Asks the person what to order.
#[tool(read_only)]
async fn order(cx: &CallContext) -> Result<String, ToolError> {
    Ok(match cx.ask::<Order>("What would you like?").await {
        Ok(Reply::Accepted(o)) => format!("{} {:?} sugar={}", o.name, o.size, o.sugar),
        Ok(other) => other.action().to_owned(),
        Err(e) => format!("error {}", e.code),
    })
}

/// Logs at three levels.
#[tool(read_only)]
fn chatty(cx: &CallContext) -> String {
    cx.log(LogLevel::Debug, "detail");
    cx.log(LogLevel::Info, "working");
    cx.log(LogLevel::Warning, format_args!("{} left", 2));
    "done".to_owned()
}

/// Has the host's model answer.
#[tool(read_only)]
async fn summarize(cx: &CallContext, text: String) -> Result<String, ToolError> {
    Ok(
        match cx.sample(SampleRequest::new(text).max_tokens(50)).await {
            Ok(sampled) => format!("{} said: {}", sampled.model, sampled.text),
            Err(e) => format!("error {}", e.code),
        },
    )
}

/// Tidies up, and says so in the client's log.
#[tool(modify, intent = "Tidy up")]
fn tidy(cx: &CallContext) -> String {
    cx.log(LogLevel::Info, "tidying");
    "tidied".to_owned()
}

/// Takes longer than any client waits.
#[tool(read_only)]
async fn slow() -> String {
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    "done".to_owned()
}

/// A server on a loopback port, one MCP connection per TCP connection.
async fn serve() -> u16 {
    serve_executor().await.0
}

/// [`serve`], with the executor whose store the calls are recorded in.
async fn serve_executor() -> (u16, Executor) {
    let set = ToolSet::new()
        .with::<slow>()
        .unwrap()
        .with::<order>()
        .unwrap()
        .with::<chatty>()
        .unwrap()
        .with::<summarize>()
        .unwrap()
        .with::<tidy>()
        .unwrap();
    // every call runs: the answers differ from one client to the next
    let mut config = tool_runtime::executor::ExecutorConfig::default();
    config.cache.enabled = false;
    let executor = Executor::builder(set)
        .config(config)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .unwrap();
    // every client confirms in-band: the host client is the person's
    let server = McpServer::new(executor.clone())
        .in_band_confirmation(tool_mcp::server::InBandConfirmation::AnyClient);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (r, w) = socket.into_split();
            tokio::spawn(server.new_session().serve_io(r, w));
        }
    });
    (port, executor)
}

async fn client(port: u16, options: &[&str], calls: &[&str]) -> Vec<Value> {
    let py = test_support::conformance_python().expect("checked by the caller");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/host_client.py");
    let mut command = Command::new(py);
    command
        .arg(script)
        .args(["--port", &port.to_string()])
        .args(options)
        .args(calls);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn result_text(lines: &[Value], call: &str) -> String {
    let line = lines
        .iter()
        .find(|l| l["call"] == call)
        .unwrap_or_else(|| panic!("no result of {call} in {lines:?}"));
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_question_is_asked_with_its_form_and_answered_by_the_clients_person() {
    if test_support::conformance_python().is_none() {
        return;
    }
    let port = serve().await;
    let lines = client(
        port,
        &[
            "--elicit",
            r#"accept:{"name": "Ada", "size": "small", "sugar": true}"#,
        ],
        &["order={}"],
    )
    .await;
    let asked = lines
        .iter()
        .find(|l| l.get("elicitation").is_some())
        .unwrap();
    assert_eq!(asked["elicitation"], "What would you like?");
    let schema = &asked["schema"];
    assert_eq!(schema["description"], "An order of coffee.", "{schema}");
    assert_eq!(
        schema["properties"]["size"],
        json!({"type": "string", "enum": ["small", "large"], "default": "large"})
    );
    assert_eq!(
        schema["properties"]["sugar"],
        json!({"type": "boolean", "default": false})
    );
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(result_text(&lines, "order"), "Ada Small sugar=true");

    for (mode, said) in [("decline", "declined"), ("cancel", "cancelled")] {
        let lines = client(port, &["--elicit", mode], &["order={}"]).await;
        assert_eq!(result_text(&lines, "order"), said);
    }
    // an answer that does not fit the question is the tool's structured error, not a value
    let lines = client(
        port,
        &["--elicit", r#"accept:{"size": "huge"}"#],
        &["order={}"],
    )
    .await;
    assert_eq!(result_text(&lines, "order"), "error INVALID_ANSWER");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_elicitation_or_sampling_the_tool_gets_a_structured_error() {
    if test_support::conformance_python().is_none() {
        return;
    }
    let port = serve().await;
    let lines = client(port, &[], &["order={}", r#"summarize={"text": "hi"}"#]).await;
    assert!(lines.iter().all(|l| l.get("elicitation").is_none()));
    assert!(lines.iter().all(|l| l.get("sampling").is_none()));
    assert_eq!(
        result_text(&lines, "order"),
        "error NOT_SUPPORTED_BY_CALLER"
    );
    assert_eq!(
        result_text(&lines, "summarize"),
        "error NOT_SUPPORTED_BY_CALLER"
    );
}

/// A call confirmed in-band is parked, then approved with the person's answer; it still runs for
/// the client that waits on it, so its log entries reach that client before the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_confirmed_in_band_logs_to_the_client_that_waits_for_it() {
    if test_support::conformance_python().is_none() {
        return;
    }
    let port = serve().await;
    let lines = client(port, &["--elicit", "accept:{}"], &["tidy={}"]).await;
    let asked = lines
        .iter()
        .position(|l| l.get("elicitation").is_some())
        .unwrap_or_else(|| panic!("no confirmation in {lines:?}"));
    assert!(
        lines[asked]["elicitation"]
            .as_str()
            .unwrap()
            .starts_with("Confirm: Tidy up"),
        "{lines:?}"
    );
    let logged = lines
        .iter()
        .position(|l| l["log"]["data"] == "tidying")
        .unwrap_or_else(|| panic!("no log entry in {lines:?}"));
    let result = lines.iter().position(|l| l["call"] == "tidy").unwrap();
    assert!(asked < logged && logged < result, "{lines:?}");
    assert_eq!(result_text(&lines, "tidy"), "tidied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_samples_the_clients_model() {
    if test_support::conformance_python().is_none() {
        return;
    }
    let port = serve().await;
    let lines = client(
        port,
        &["--sample", "a short summary"],
        &[r#"summarize={"text": "a long text"}"#],
    )
    .await;
    let asked = lines.iter().find(|l| l.get("sampling").is_some()).unwrap();
    assert_eq!(asked["sampling"]["maxTokens"], 50);
    assert_eq!(
        asked["sampling"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "a long text"}}])
    );
    assert_eq!(
        result_text(&lines, "summarize"),
        "test-model said: a short summary"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_entries_reach_the_client_at_its_level_before_the_result() {
    if test_support::conformance_python().is_none() {
        return;
    }
    let port = serve().await;
    let logs = |lines: &[Value]| -> Vec<(String, String)> {
        lines
            .iter()
            .filter_map(|l| l.get("log"))
            .map(|l| {
                assert_eq!(l["logger"], "chatty", "{l}");
                (
                    l["level"].as_str().unwrap().to_owned(),
                    l["data"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    // until the client sets a level: info and above
    let lines = client(port, &[], &["chatty={}"]).await;
    assert_eq!(
        logs(&lines),
        [pair("info", "working"), pair("warning", "2 left")]
    );
    let result_at = lines.iter().position(|l| l["call"] == "chatty").unwrap();
    let last_log = lines.iter().rposition(|l| l.get("log").is_some()).unwrap();
    assert!(last_log < result_at, "{lines:?}");

    let lines = client(port, &["--level", "debug"], &["chatty={}"]).await;
    assert_eq!(logs(&lines).len(), 3, "{lines:?}");
    let lines = client(port, &["--level", "warning"], &["chatty={}"]).await;
    assert_eq!(logs(&lines), [pair("warning", "2 left")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_client_cancels_leaves_one_cancelled_record_naming_the_client() {
    if test_support::conformance_python().is_none() {
        eprintln!("skipped: TOOLS_CONFORMANCE_PYTHON is not set");
        return;
    }
    let (port, executor) = serve_executor().await;
    let lines = client(
        port,
        &["--level", "error", "--cancel-after", "0.5"],
        &["slow={}", "chatty={}"],
    )
    .await;
    assert_eq!(
        lines[0],
        json!({"call": "slow", "cancelled": true}),
        "{lines:?}"
    );
    assert_eq!(lines.last().unwrap()["call"], "chatty", "{lines:?}");
    let query = tool_runtime::executor::ActivityQuery {
        tool: Some("slow".into()),
        ..Default::default()
    };
    let records = executor.activity(&query).unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].status, tool_runtime::executor::Status::Cancelled);
    assert_eq!(records[0].cancelled_by.as_deref(), Some("the client"));
}
