//! Retention of ended agent runs: in every built-in store (memory, SQLite, Redis when
//! `TOOL_RUNTIME_TEST_REDIS_URL` names a server) an ended run last saved before the limit goes,
//! while a waiting, running or failed one stays however old, and so does one a worker holds;
//! `research serve` sweeps its store when it starts, as `TOOLS_RUNS_KEEP_DAYS` says.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use examples::retention::ENDED;
use tool_runtime::store::{CallStart, MemoryStore, RedisStore, SqliteStore, Store, StoredRun};

use crate::research_runs::{read_until, research};

const DAY_MS: u64 = 86_400_000;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Saves run `id` as last saved at `at`, its lease released.
fn saved(store: &dyn Store, id: &str, status: &str, at: u64) {
    let run = StoredRun {
        id: id.into(),
        status: status.into(),
        session: None,
        created_ms: at,
        updated_ms: at,
        checkpoint: "{}".into(),
        lease: None,
    };
    assert!(store.save_run(&run, "w", Duration::from_secs(60)).unwrap());
    store.release_run(id, "w").unwrap();
}

fn exists(store: &dyn Store, id: &str) -> bool {
    store.get_run(id).unwrap().is_some()
}

/// What every store must do, on `store`.
fn prunes(store: &dyn Store) {
    let old = now_ms() - 40 * DAY_MS;
    saved(store, "old-answered", "answered", old);
    saved(store, "old-max", "max_iterations", old);
    saved(store, "old-cancelled", "cancelled", old);
    saved(store, "old-suspended", "suspended", old);
    saved(store, "old-running", "running", old);
    saved(store, "old-failed", "failed", old);
    saved(store, "new-answered", "answered", now_ms());
    // an ended run whose lease a worker holds (it is being read or continued) stays
    let held = StoredRun {
        id: "old-held".into(),
        status: "answered".into(),
        session: None,
        created_ms: old,
        updated_ms: old,
        checkpoint: "{}".into(),
        lease: None,
    };
    assert!(store.save_run(&held, "w", Duration::from_secs(60)).unwrap());

    // start marks: a removed run's go with it, a kept run's stay
    let mark = CallStart {
        call_id: "c1".into(),
        tool: "create_note".into(),
        started_ms: old,
    };
    store.mark_started("old-answered", &mark).unwrap();
    store.mark_started("old-suspended", &mark).unwrap();

    let limit = now_ms() - 30 * DAY_MS;
    assert_eq!(store.prune_runs(ENDED, limit).unwrap(), 3);
    assert!(store.started_calls("old-answered").unwrap().is_empty());
    assert_eq!(store.started_calls("old-suspended").unwrap(), [mark]);
    for gone in ["old-answered", "old-max", "old-cancelled"] {
        assert!(!exists(store, gone), "{gone} went");
    }
    for kept in [
        "old-suspended",
        "old-running",
        "old-failed",
        "new-answered",
        "old-held",
    ] {
        assert!(exists(store, kept), "{kept} stays");
    }
    let listed = store.list_runs(&Default::default()).unwrap();
    assert_eq!(listed.len(), 5, "{listed:?}");
    // a second sweep finds nothing more
    assert_eq!(store.prune_runs(ENDED, limit).unwrap(), 0);
}

#[test]
fn the_memory_store_prunes_old_ended_runs_only() {
    prunes(&MemoryStore::new());
}

#[test]
fn the_sqlite_store_prunes_old_ended_runs_only() {
    let dir = tempfile::tempdir().unwrap();
    prunes(&SqliteStore::open(dir.path().join("s.sqlite")).unwrap());
}

#[test]
fn the_redis_store_prunes_old_ended_runs_only() {
    let Some(url) = test_support::redis_url() else {
        eprintln!("skipped: TOOL_RUNTIME_TEST_REDIS_URL names no Redis server");
        return;
    };
    let prefix = format!("research-retention:{}:{}:", std::process::id(), now_ms());
    prunes(&RedisStore::with_prefix(&url, &prefix).unwrap());
}

/// Starts `research serve` over `dir` with `TOOLS_RUNS_KEEP_DAYS=days`; it is killed on return.
fn serve_once(dir: &Path, days: &str) -> std::process::Child {
    let mut child = research(dir, None)
        .env("TOOLS_RUNS_KEEP_DAYS", days)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_until(&mut child, |line| line.starts_with("API: ").then_some(()));
    child
}

#[test]
fn serve_removes_ended_runs_past_the_days_it_is_told_and_keeps_waiting_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("research.store.sqlite")).unwrap();
    let old = now_ms() - 10 * DAY_MS;
    saved(&store, "old-answered", "answered", old);
    saved(&store, "old-suspended", "suspended", old);

    // 0 keeps them forever
    let mut server = serve_once(dir.path(), "0");
    std::thread::sleep(Duration::from_millis(500));
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(exists(&store, "old-answered"));

    // within 30 days (the default is 30) both stay; with 7, the ended one goes
    let mut server = serve_once(dir.path(), "30");
    std::thread::sleep(Duration::from_millis(500));
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(exists(&store, "old-answered"));

    let mut server = serve_once(dir.path(), "7");
    let deadline = Instant::now() + Duration::from_secs(30);
    while exists(&store, "old-answered") {
        assert!(
            Instant::now() < deadline,
            "the sweep did not remove the ended run"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(exists(&store, "old-suspended"), "a waiting run stays");
}

#[test]
fn a_retention_that_is_not_a_number_of_days_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = research(dir.path(), None)
        .env("TOOLS_RUNS_KEEP_DAYS", "a week")
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("TOOLS_RUNS_KEEP_DAYS"), "{stderr}");
    assert!(stderr.contains("whole number of days"), "{stderr}");
}
