//! A decided operation keeps no secret of its call in any built-in store: not in its arguments,
//! its preview (intent, arguments, change) or its recorded outcome, and, for SQLite, not in any
//! file of the database's folder once the store is closed.

use crate::executor_support;

use std::path::Path;
use std::sync::Arc;

use executor_support::*;
use serde_json::{Value, json};
use tool_runtime::executor::{Change, Deferred, Executor, Outcome};
use tool_runtime::store::{MemoryStore, RedisStore, SqliteStore, Store};
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety};

/// Found by its key.
const KEYED: &str = "correct-horse-battery-staple";
/// Found by its shape, in free text that the intent quotes.
const SHAPED: &str = "sk-proj-Q2xhcmEgT3N3YWxkIGtlZXBzIGEgc2VjcmV0";

fn toolset(counter: &Counter) -> ToolSet {
    let mut d = def("create_note", Safety::Modify);
    d.parameters = serde_json::value::to_raw_value(&json!({
        "type": "object",
        "properties": {"title": {"type": "string"}, "api_key": {"type": "string"}}
    }))
    .unwrap();
    d.intent = Some("Create a note titled {title}".into());
    let mut set = ToolSet::new();
    add(&mut set, d, counter, |args: Value, _| async move {
        let title = args["title"].as_str().unwrap_or_default().to_owned();
        Ok(json!({"created": title, "echo": args}))
    });
    set
}

fn executor(store: Arc<dyn Store>, counter: &Counter) -> Executor {
    Executor::builder(toolset(counter))
        .config(quick())
        .store(store)
        .confirmation(Deferred)
        .preview_with(
            "create_note",
            Arc::new(|args: Value, _| {
                // the secrets in typed entries (under a secret label and inside a text) and
                // in plain JSON
                Box::pin(async move {
                    Ok(Change::new()
                        .added("api_key", args["api_key"].clone())
                        .replaced("title", "Draft", args["title"].clone())
                        .and(Change::json(json!({"will_write": args}))))
                })
            }),
        )
        .build()
        .unwrap()
}

async fn park(exec: &Executor, call: &str) -> String {
    let arguments = json!({"title": format!("Deploy key {SHAPED} for staging"), "api_key": KEYED});
    let r = exec
        .call(
            &ToolCall::new(call, "create_note", arguments),
            CallContext::new(call),
        )
        .await;
    match r.outcome {
        Outcome::Pending { operation_id, .. } => operation_id,
        other => panic!("not pending: {other:?}"),
    }
}

/// Parks two operations, denies one and approves the other, and checks that neither keeps a
/// secret anywhere in its stored form; the approver still got the real result.
async fn decide_and_check(exec: &Executor) {
    let denied = park(exec, "c1").await;
    let approved = park(exec, "c2").await;
    let waiting = exec.pending_operation(&denied).unwrap().unwrap();
    let text = serde_json::to_string(&waiting).unwrap();
    assert!(
        text.contains(KEYED) && text.contains(SHAPED),
        "needed until decided"
    );

    exec.deny(&denied, None).unwrap();
    let ran = exec.approve(&approved).await.unwrap();
    assert_eq!(ran.value().unwrap()["echo"]["api_key"], KEYED);

    for id in [&denied, &approved] {
        let op = exec.pending_operation(id).unwrap().unwrap();
        assert!(op.state.is_decided(), "{:?}", op.state);
        let text = serde_json::to_string(&op).unwrap();
        for secret in [KEYED, SHAPED] {
            assert!(!text.contains(secret), "{secret} kept in {text}");
        }
        assert!(
            op.preview
                .intent
                .starts_with("Create a note titled \u{201c}Deploy key "),
            "{}",
            op.preview.intent
        );
        assert_eq!(op.preview.arguments, op.arguments);
    }
}

/// Every file in `dir` (the database, its `-wal` and `-shm`), searched for the secrets' bytes.
fn assert_no_secret_in_files(dir: &Path) {
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        for secret in [KEYED, SHAPED] {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{:?} keeps {secret}", entry.file_name());
        }
        seen += 1;
    }
    assert!(seen > 0);
}

#[tokio::test]
async fn memory_keeps_no_secret_of_a_decided_operation() {
    let counter = Counter::default();
    decide_and_check(&executor(Arc::new(MemoryStore::new()), &counter)).await;
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn sqlite_keeps_no_secret_of_a_decided_operation_in_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    {
        let exec = executor(Arc::new(SqliteStore::open(&path).unwrap()), &counter);
        decide_and_check(&exec).await;
        // as a process killed now would leave them: the write-ahead log is still there
        assert!(dir.path().join("state.sqlite3-wal").exists());
        assert_no_secret_in_files(dir.path());
        // the executor and its store close here
    }
    assert_no_secret_in_files(dir.path());
    // and the file still reads
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list_pending().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_no_secret_of_a_decided_operation() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let prefix = format!("tools-test:{}:decided-secrets:", std::process::id());
    let store = RedisStore::with_prefix(&url, &prefix).unwrap();
    decide_and_check(&executor(Arc::new(store), &Counter::default())).await;
}
