//! `mcp-server-time` (PyPI), a Python server started over stdio by its console script: with its
//! annotations trusted, its reads run at once and answer what the server computed; untrusted,
//! the same read waits for a person and runs only once approved.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Deferred, Executor, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolSet};

/// The time server with a fixed local zone, or `None` where it is not installed (outside CI).
fn time_server() -> Option<ServerConfig> {
    let script = test_support::mcp_time_server()?;
    Some(ServerConfig::stdio(script, ["--local-timezone", "UTC"]))
}

/// The server's tools imported, each with the `safety` the configuration gives it.
async fn imported(config: ServerConfig, dir: &Path, safety: Safety) -> (McpClient, Executor) {
    let client = McpClient::connect("time", config).await.unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    assert!(set.get("time__get_current_time").is_some(), "{imported:?}");
    assert!(set.get("time__convert_time").is_some(), "{imported:?}");
    assert!(
        set.definitions().all(|d| d.safety == safety),
        "{imported:?}"
    );
    let store = SqliteStore::open(dir.join("state.sqlite3")).unwrap();
    let exec = Executor::builder(set)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap();
    (client, exec)
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

fn noon_utc_in_tokyo() -> Value {
    json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
}

/// What a user relies on from a conversion: the server's answer, not an echo of the question.
fn assert_converted(value: &Value) {
    assert_eq!(value["source"]["timezone"], "UTC", "{value}");
    assert_eq!(value["target"]["timezone"], "Asia/Tokyo", "{value}");
    let target = value["target"]["datetime"].as_str().unwrap_or_default();
    assert!(target.ends_with("T21:00:00+09:00"), "{value}");
    assert_eq!(value["time_difference"], "+9.0h", "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_time_servers_reads_run_at_once() {
    let Some(config) = time_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trusted = config.trusting_annotations();
    let (client, exec) = imported(trusted, dir.path(), Safety::ReadOnly).await;

    let converted = call(&exec, "c1", "time__convert_time", noon_utc_in_tokyo()).await;
    let Outcome::Success { value, .. } = &converted else {
        panic!("a trusted read did not run at once: {converted:?}")
    };
    assert_converted(value);

    let now = call(
        &exec,
        "c2",
        "time__get_current_time",
        json!({"timezone": "Asia/Tokyo"}),
    )
    .await;
    let Outcome::Success { value, .. } = &now else {
        panic!("{now:?}")
    };
    assert!(
        value["datetime"]
            .as_str()
            .is_some_and(|d| d.ends_with("+09:00")),
        "{value}"
    );

    // the server's own refusal is the tool's failure, readable by the model
    let unknown = call(
        &exec,
        "c3",
        "time__get_current_time",
        json!({"timezone": "Mars/Olympus_Mons"}),
    )
    .await;
    let error = unknown.error().unwrap_or_else(|| panic!("{unknown:?}"));
    assert_eq!(error.code, ErrorCode::EXECUTION_FAILED, "{error:?}");
    assert!(error.message.contains("Mars/Olympus_Mons"), "{error:?}");

    // a question the schema does not allow never reaches the server
    let bad = call(&exec, "c4", "time__convert_time", json!({"time": 12})).await;
    assert_eq!(
        bad.error().map(|e| e.code.clone()),
        Some(ErrorCode::INVALID_ARGUMENTS),
        "{bad:?}"
    );
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_time_servers_reads_wait_for_a_person() {
    let Some(config) = time_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (client, exec) = imported(config, dir.path(), Safety::Unspecified).await;

    let Outcome::Pending { operation_id, .. } =
        call(&exec, "p1", "time__convert_time", noon_utc_in_tokyo()).await
    else {
        panic!("an untrusted read ran without a person");
    };
    let ran = exec.approve(&operation_id).await.unwrap();
    let value = ran.value().unwrap_or_else(|| panic!("{:?}", ran.outcome));
    assert_converted(value);

    // a denied call answers the model with the denial, and the server is never asked
    let Outcome::Pending { operation_id, .. } = call(
        &exec,
        "p2",
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    else {
        panic!("an untrusted read ran without a person");
    };
    let denied = exec.deny(&operation_id, Some("not now".into())).unwrap();
    assert!(
        matches!(denied.outcome, Outcome::Denied { .. }),
        "{:?}",
        denied.outcome
    );
    client.close();
}
