//! MCP session state in every built-in store (memory, SQLite, Redis when
//! `TOOL_RUNTIME_TEST_REDIS_URL` names a server): kept by id until it expires or is deleted,
//! renewed by writing it again, and seen by a second handle on one SQLite file (another process).

use std::time::Duration;

use tool_runtime::store::{MemoryStore, RedisStore, SqliteStore, Store};

/// Long enough that an entry written with it does not expire while the test runs.
const LONG: Duration = Duration::from_secs(600);
/// Short enough to wait out.
const SHORT: Duration = Duration::from_millis(150);

/// The behaviour every store must have, run on `store`.
fn conformance(store: &dyn Store) {
    assert_eq!(store.get_mcp_session("s-1").unwrap(), None, "unknown");
    store.put_mcp_session("s-1", r#"{"v":1}"#, LONG).unwrap();
    assert_eq!(
        store.get_mcp_session("s-1").unwrap().as_deref(),
        Some(r#"{"v":1}"#)
    );
    // writing again replaces the state
    store.put_mcp_session("s-1", r#"{"v":2}"#, LONG).unwrap();
    assert_eq!(
        store.get_mcp_session("s-1").unwrap().as_deref(),
        Some(r#"{"v":2}"#)
    );
    store.delete_mcp_session("s-1").unwrap();
    assert_eq!(store.get_mcp_session("s-1").unwrap(), None, "deleted");
    store.delete_mcp_session("s-1").unwrap();

    // an entry that expires is not returned; one renewed before its expiry is
    store.put_mcp_session("s-short", "a", SHORT).unwrap();
    store.put_mcp_session("s-renewed", "b", SHORT).unwrap();
    std::thread::sleep(SHORT / 2);
    store.put_mcp_session("s-renewed", "b", SHORT * 3).unwrap();
    std::thread::sleep(SHORT);
    assert_eq!(store.get_mcp_session("s-short").unwrap(), None, "expired");
    assert_eq!(
        store.get_mcp_session("s-renewed").unwrap().as_deref(),
        Some("b")
    );
    // writing another session clears expired ones without touching live ones
    store.put_mcp_session("s-2", "c", LONG).unwrap();
    assert_eq!(
        store.get_mcp_session("s-renewed").unwrap().as_deref(),
        Some("b")
    );
    assert_eq!(store.get_mcp_session("s-2").unwrap().as_deref(), Some("c"));
}

#[test]
fn the_memory_store_keeps_mcp_sessions() {
    conformance(&MemoryStore::new());
}

#[test]
fn the_sqlite_store_keeps_mcp_sessions_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.sqlite");
    conformance(&SqliteStore::open(&path).unwrap());
    let other = SqliteStore::open(&path).unwrap();
    assert_eq!(other.get_mcp_session("s-2").unwrap().as_deref(), Some("c"));
    other.delete_mcp_session("s-2").unwrap();
    let first = SqliteStore::open(&path).unwrap();
    assert_eq!(first.get_mcp_session("s-2").unwrap(), None);
}

#[test]
fn the_redis_store_keeps_mcp_sessions() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("tools-test:{}:{nanos}:mcp:", std::process::id());
    conformance(&RedisStore::with_prefix(&url, &prefix).unwrap());
}
