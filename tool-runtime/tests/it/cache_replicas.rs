//! Replicas that share a store keep their own caches of read-only results: a change run through
//! one of them must empty every one's, as it empties its own. Two executors on one SQLite file
//! (two connections, as two processes have), on one Redis server, and on one in-memory store.
//! The tools read and change a value the test holds, so a stale answer is seen as one.

use crate::executor_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{ActivityQuery, Executor, ExecutorConfig};
use tool_runtime::store::{MemoryStore, RedisStore, SqliteStore, Store};
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolError, ToolSet, definition::Safety};

/// What the tools read and change: a counter standing for a repository both replicas serve.
#[derive(Clone, Default)]
struct Repo(Arc<AtomicU64>);

/// `status` (read-only) answers the repository's value, `commit` (create) adds one to it, and
/// `push` (create) fails after its body ran.
fn tools(repo: &Repo, reads: &Counter) -> ToolSet {
    let mut set = ToolSet::new();
    let r = repo.clone();
    add(
        &mut set,
        def("status", Safety::ReadOnly),
        reads,
        move |_, _| {
            let value = r.0.load(Ordering::SeqCst);
            async move { Ok(json!({ "commits": value })) }
        },
    );
    let r = repo.clone();
    add(
        &mut set,
        def("commit", Safety::Create),
        &Counter::default(),
        move |_, _| {
            let value = r.0.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(json!({ "commits": value })) }
        },
    );
    add(
        &mut set,
        def("push", Safety::Create),
        &Counter::default(),
        |_, _| async { Err(ToolError::new(ErrorCode::of("REJECTED"), "half pushed")) },
    );
    set
}

fn replica(set: ToolSet, store: Arc<dyn Store>) -> Executor {
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    Executor::builder(set)
        .config(cfg)
        .store(store)
        .build()
        .unwrap()
}

/// A context for the call `id`: its audit record is found by it.
fn cx(id: &str) -> CallContext {
    executor_support::faults::cx(id)
}

/// `status` through `exec`: the commits it answered, and whether from the cache.
async fn status(exec: &Executor, id: &str) -> (u64, bool) {
    let e = exec
        .call(&ToolCall::new(id, "status", r#"{"text":"."}"#), cx(id))
        .await;
    let value = e.value().expect("status answers")["commits"]
        .as_u64()
        .unwrap();
    let cached = exec
        .activity(&ActivityQuery {
            tool: Some("status".into()),
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .find(|r| r.call_id.as_str() == id)
        .expect("the call is audited")
        .cached;
    (value, cached)
}

/// The behaviour every shared store must give, with `a` and `b` two replicas' stores.
async fn a_change_through_one_replica_empties_the_others_cache(
    a: Arc<dyn Store>,
    b: Arc<dyn Store>,
) {
    let repo = Repo::default();
    let reads = Counter::default();
    let a = replica(tools(&repo, &reads), a);
    let b = replica(tools(&repo, &reads), b);

    assert_eq!(status(&a, "a1").await, (0, false));
    assert_eq!(status(&a, "a2").await, (0, true), "a's repeat is cached");
    assert_eq!(
        status(&b, "b1").await,
        (0, false),
        "b has a cache of its own"
    );
    assert_eq!(status(&b, "b2").await, (0, true));
    assert_eq!(reads.get(), 2);

    // a read through b changes nothing: a still answers from its cache
    assert_eq!(status(&a, "a3").await, (0, true));

    let commit = b.call(&ToolCall::new("b3", "commit", "{}"), cx("b3")).await;
    assert!(commit.outcome.is_success(), "{:?}", commit.outcome);
    assert_eq!(
        status(&a, "a4").await,
        (1, false),
        "a change through b is seen through a, not its cached answer"
    );
    assert_eq!(status(&a, "a5").await, (1, true), "and cached again");
    assert_eq!(
        status(&b, "b4").await,
        (1, false),
        "b's own cache was emptied"
    );

    // a change that failed after its body ran may have changed something too
    let push = a.call(&ToolCall::new("a6", "push", "{}"), cx("a6")).await;
    assert_eq!(
        push.outcome.error().unwrap().code,
        ErrorCode::of("REJECTED")
    );
    assert_eq!(status(&b, "b5").await, (1, false));
    assert_eq!(status(&b, "b6").await, (1, true));
    assert_eq!(reads.get(), 5);
}

#[tokio::test]
async fn replicas_on_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.sqlite3");
    let a: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let b: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    a_change_through_one_replica_empties_the_others_cache(a, b).await;
}

#[tokio::test]
async fn replicas_on_one_redis_server() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let prefix = format!(
        "tools-test:{}:{}:cache-replicas:",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let a: Arc<dyn Store> = Arc::new(RedisStore::with_prefix(&url, &prefix).unwrap());
    let b: Arc<dyn Store> = Arc::new(RedisStore::with_prefix(&url, &prefix).unwrap());
    a_change_through_one_replica_empties_the_others_cache(a, b).await;
}

#[tokio::test]
async fn executors_on_one_memory_store() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    a_change_through_one_replica_empties_the_others_cache(store.clone(), store).await;
}

#[tokio::test]
async fn a_sqlite_file_written_before_changes_were_counted_counts_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.changes().unwrap(), Some(0));
    }
    // a file of a version without the table: it is made again when the file is opened
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE changes")
        .unwrap();
    let repo = Repo::default();
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let exec = replica(tools(&repo, &Counter::default()), store.clone());
    exec.call(&ToolCall::new("1", "commit", "{}"), cx("1"))
        .await;
    exec.call(&ToolCall::new("2", "status", "{}"), cx("2"))
        .await;
    assert_eq!(store.changes().unwrap(), Some(1), "only the commit counts");
}
