//! `@modelcontextprotocol/server-filesystem` (npm), imported into a tool set and run by the
//! executor: a read runs at once, a write waits for a person and happens only once approved, a
//! denial leaves the directory as it was, a model's bad arguments never reach the server, and an
//! operator who does not trust the server's annotations gets every call confirmed.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Deferred, Executor, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ToolCall, ToolSet};

/// The filesystem server confined to `root`, or `None` where the reference servers are missing
/// (outside CI).
fn filesystem(root: &Path) -> Option<ServerConfig> {
    let modules = test_support::mcp_servers()?;
    let script = format!("{modules}/@modelcontextprotocol/server-filesystem/dist/index.js");
    Some(ServerConfig::stdio(
        "node",
        [script, root.display().to_string()],
    ))
}

fn executor(set: ToolSet, dir: &Path) -> Executor {
    let store = SqliteStore::open(dir.join("state.sqlite3")).unwrap();
    Executor::builder(set)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

fn value(outcome: &Outcome) -> Option<&Value> {
    match outcome {
        Outcome::Success { value, .. } => Some(value),
        _ => None,
    }
}

/// Every file under `root` with its bytes, to compare before and after.
fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            (path.display().to_string(), std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_servers_writes_wait_for_a_person_and_its_reads_run() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root_path = root.path().canonicalize().unwrap();
    let Some(config) = filesystem(&root_path) else {
        return;
    };
    std::fs::write(root_path.join("notes.txt"), "buy milk").unwrap();
    let client = McpClient::connect("fs", config.trusting_annotations())
        .await
        .unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    assert_eq!(imported.registered.len(), client.tools().len());
    let safety = |name: &str| set.get(name).unwrap().safety;
    assert_eq!(safety("fs__read_text_file"), Safety::ReadOnly);
    assert_eq!(safety("fs__write_file"), Safety::Modify);
    assert_eq!(safety("fs__create_directory"), Safety::Create);
    let exec = executor(set, state.path());

    // a read runs at once, through the server: its structured content is the value
    let read = call(
        &exec,
        "r1",
        "fs__read_text_file",
        json!({"path": root_path.join("notes.txt")}),
    )
    .await;
    assert_eq!(
        value(&read),
        Some(&json!({"content": "buy milk"})),
        "{read:?}"
    );

    // a write waits; the file exists only once a person approves
    let target = root_path.join("plan.txt");
    let write = json!({"path": target, "content": "ship it"});
    let Outcome::Pending { operation_id, .. } =
        call(&exec, "w1", "fs__write_file", write.clone()).await
    else {
        panic!("a write ran without a person");
    };
    assert!(!target.exists());
    let ran = exec.approve(&operation_id).await.unwrap();
    assert!(ran.value().is_some(), "{:?}", ran.outcome);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "ship it");

    // a denied write leaves the directory byte for byte as it was
    let before = snapshot(&root_path);
    let overwrite = json!({"path": target, "content": "scrap it"});
    let Outcome::Pending { operation_id, .. } =
        call(&exec, "w2", "fs__write_file", overwrite).await
    else {
        panic!("a write ran without a person");
    };
    exec.deny(&operation_id, Some("no".into())).unwrap();
    assert_eq!(snapshot(&root_path), before);

    // arguments that do not fit the server's schema are refused here, before anything is sent
    let bad = call(&exec, "w3", "fs__write_file", json!({"path": 7})).await;
    assert_eq!(
        bad.error().unwrap().code.as_str(),
        "INVALID_ARGUMENTS",
        "{bad:?}"
    );
    assert!(
        exec.pending().unwrap().is_empty(),
        "nothing parked for a bad call"
    );

    // the server's own error is the tool's failure, readable by the model
    let missing = call(
        &exec,
        "r2",
        "fs__read_text_file",
        json!({"path": root_path.join("nope.txt")}),
    )
    .await;
    let error = missing.error().expect("a missing file is an error");
    assert_eq!(error.code.as_str(), "EXECUTION_FAILED", "{error:?}");
    assert!(error.message.contains("nope.txt"), "{error:?}");

    // a closed connection: the tools answer UNAVAILABLE (a file not read before: a read's
    // result may be cached), and may be retried later
    client.close();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let gone = call(
        &exec,
        "r3",
        "fs__read_text_file",
        json!({"path": root_path.join("plan.txt")}),
    )
    .await;
    let error = gone.error().expect("no server, no answer");
    assert_eq!(error.code.as_str(), "UNAVAILABLE", "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_servers_annotations_decide_nothing() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root_path = root.path().canonicalize().unwrap();
    let Some(mut config) = filesystem(&root_path) else {
        return;
    };
    std::fs::write(root_path.join("notes.txt"), "buy milk").unwrap();
    config.deny = vec!["move_file".into()];
    config.prefix = Some("files".into());
    let client = McpClient::connect("fs", config).await.unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(
        set.get("files__move_file").is_none(),
        "denied by the operator"
    );
    assert_eq!(imported.registered.len(), client.tools().len() - 1);
    assert!(set.definitions().all(|d| d.safety == Safety::Unspecified));

    // importing again into the same set: every name is taken, each refusal says so
    let again = client.import(&mut set);
    assert!(again.registered.is_empty());
    assert!(
        again
            .refused
            .iter()
            .all(|r| r.reason.contains("already registered")),
        "{again:?}"
    );

    // even a read waits for a person when the server is not trusted
    let exec = executor(set, state.path());
    let read = call(
        &exec,
        "r1",
        "files__read_text_file",
        json!({"path": root_path.join("notes.txt")}),
    )
    .await;
    assert!(matches!(read, Outcome::Pending { .. }), "{read:?}");
}
