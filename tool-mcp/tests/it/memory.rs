//! `@modelcontextprotocol/server-memory` (npm), a knowledge graph in a file: with its annotations
//! trusted, a read runs at once, and its writes (creating entities, deleting them) wait for a
//! person: the file holds nothing of them until the person approves, and a denial changes
//! nothing.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Deferred, Executor, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, ToolCall, ToolSet};

/// The memory server keeping its graph in `file`, or `None` where the reference servers are
/// missing (outside CI).
fn memory(file: &Path) -> Option<ServerConfig> {
    let modules = test_support::mcp_servers()?;
    let script = format!("{modules}/@modelcontextprotocol/server-memory/dist/index.js");
    let mut config = ServerConfig::stdio("node", [script]);
    config
        .env
        .insert("MEMORY_FILE_PATH".into(), file.display().to_string());
    Some(config.trusting_annotations())
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    let call = ToolCall::new(id, tool, args);
    exec.call(&call, CallContext::new(id)).await.outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_servers_writes_wait_for_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.jsonl");
    let Some(mut config) = memory(&file) else {
        return;
    };
    // creating is confirmed too: the operator asks for it, over the server's "not destructive"
    config
        .categories
        .insert("create_entities".into(), Safety::Modify);
    let client = McpClient::connect("mem", config).await.unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert!(imported.refused.is_empty(), "{imported:?}");
    assert_eq!(set.get("mem__read_graph").unwrap().safety, Safety::ReadOnly);
    assert_eq!(
        set.get("mem__delete_entities").unwrap().safety,
        Safety::Modify
    );
    let store = SqliteStore::open(dir.path().join("state.sqlite3")).unwrap();
    let exec = Executor::builder(set)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap();

    let read = call(&exec, "r1", "mem__read_graph", json!({})).await;
    assert!(
        read.error().is_none() && !matches!(read, Outcome::Pending { .. }),
        "{read:?}"
    );

    let entity = json!({"entities": [
        {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    ]});
    let Outcome::Pending { operation_id, .. } =
        call(&exec, "w1", "mem__create_entities", entity).await
    else {
        panic!("a write ran without a person");
    };
    let graph = || std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        !graph().contains("Ada"),
        "nothing written before the approval"
    );
    let ran = exec.approve(&operation_id).await.unwrap();
    assert!(ran.value().is_some(), "{:?}", ran.outcome);
    assert!(graph().contains("Ada"), "{}", graph());

    let before = graph();
    let Outcome::Pending { operation_id, .. } = call(
        &exec,
        "w2",
        "mem__delete_entities",
        json!({"entityNames": ["Ada"]}),
    )
    .await
    else {
        panic!("a delete ran without a person");
    };
    exec.deny(&operation_id, Some("keep her".into())).unwrap();
    assert_eq!(graph(), before, "a denial changes nothing");
    client.close();
}
