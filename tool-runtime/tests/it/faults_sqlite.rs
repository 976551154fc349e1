//! Faults injected into the SQLite store, each by a mechanism that really fails (not a mock):
//! a lock held by another connection past the busy timeout, a file-size limit (`RLIMIT_FSIZE`,
//! what a full disk looks like to a writer), a file made read-only, a corrupt file, a deleted
//! file. For each: the caller gets a structured `ToolError` (retryable exactly when waiting can
//! help), no pending operation is lost by the fault or run twice (the tools count their runs), and
//! every call that ran has its audit record once the store is healthy again.
//!
//! The file-size limit and the read-only file run in a child process: this test binary run again
//! with `FAULTS_SQLITE_CHILD` set to the part to play. A limit is per process, and as root a
//! read-only mode does not stop writes, so the child then drops to an unprivileged user.

use crate::executor_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use executor_support::faults::*;
use executor_support::*;
use serde_json::{Value, json};
use tool_runtime::executor::{Deferred, Execution, Executor};
use tool_runtime::store::{PendingState, STORE_UNAVAILABLE, SqliteStore, StoreError};
use tool_runtime::{ErrorCode, ToolError, ToolSet, definition::Safety};

const CHILD: &str = "FAULTS_SQLITE_CHILD";
const DB: &str = "FAULTS_SQLITE_DB";
const OP: &str = "FAULTS_SQLITE_OP";

fn executor(store: SqliteStore, counter: &Counter) -> Executor {
    let mut cfg = quick();
    cfg.cache.enabled = false;
    Executor::builder(toolset(counter))
        .config(cfg)
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

/// `delete_node` (modifying: parked until approved) and `read_node` (read-only: runs at once),
/// both counting their runs in `counter`.
/// A call's error, checked for what every store fault must give: a code, a message that says
/// what happened, and `retryable` as expected.
fn expect_error(e: &ToolError, code: &ErrorCode, retryable: bool, says: &str) {
    assert_eq!(&e.code, code, "{e:?}");
    assert_eq!(e.retryable, retryable, "{e:?}");
    assert!(
        e.message.contains(says),
        "{:?} does not say {says:?}",
        e.message
    );
    assert!(e.recover_action.is_some(), "{e:?}");
}

fn outcome_error(exec: &Execution) -> &ToolError {
    exec.outcome
        .error()
        .unwrap_or_else(|| panic!("not an error: {:?}", exec.outcome))
}

fn sidecars(db: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    [db.to_owned(), with("-wal"), with("-shm")]
}

/// A lock held by another connection past the busy timeout: the approval fails as retryable
/// `STORE_UNAVAILABLE` with nothing run and the operation still pending; a read-only call runs and
/// its audit record waits in the store until the lock is released; then the operation is approved
/// and runs once.
#[tokio::test]
async fn a_lock_held_past_the_busy_timeout_is_retryable_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let store = SqliteStore::open(&path)
        .unwrap()
        .with_busy_timeout(Duration::from_millis(200))
        .unwrap();
    let exec = executor(store, &counter);
    let op = park(&exec, "c1").await;

    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let e = exec.approve(&op).await.unwrap_err();
    expect_error(&e, &STORE_UNAVAILABLE, true, "locked by another connection");
    assert_eq!(counter.get(), 0, "nothing ran");
    // reads go on under the writer's lock (WAL): the operation is still waiting
    assert_eq!(state(&exec, &op), "pending");

    // a new modifying call cannot be parked: refused the same way, nothing ran
    let parked = call(&exec, "c2", "delete_node").await;
    expect_error(
        outcome_error(&parked),
        &STORE_UNAVAILABLE,
        true,
        "locked by another connection",
    );
    // a read-only call runs; its record waits in the audit spool, which takes no lock
    let read = call(&exec, "c3", "read_node").await;
    assert!(read.outcome.is_success(), "{:?}", read.outcome);
    assert_eq!(counter.get(), 1);
    assert_eq!(read.audit_failure, None);

    other.execute_batch("COMMIT").unwrap();
    drop(other);

    assert_eq!(
        audit(&exec, "c3").len(),
        1,
        "the spooled record is in the trail"
    );
    let done = exec.approve(&op).await.unwrap();
    assert!(done.outcome.is_success(), "{:?}", done.outcome);
    assert_eq!(counter.get(), 2, "the operation ran once");
    assert_eq!(state(&exec, &op), "completed");
    let again = exec.approve(&op).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::of("ALREADY_RESOLVED"));
    assert_eq!(counter.get(), 2);
    // parked, then approved: two records of c1; the refused c2 has its own
    assert_eq!(audit(&exec, "c1").len(), 2);
    assert_eq!(audit(&exec, "c2").len(), 1);
    assert!(exec.pending().unwrap().is_empty());
    assert!(exec.in_doubt().unwrap().is_empty());
}

/// A lock taken while the approved tool runs, and held past the busy timeout: the outcome cannot
/// be recorded, so the operation stays approved and in doubt; it is not run again, and a person
/// closes it.
#[tokio::test]
async fn an_outcome_that_cannot_be_recorded_leaves_the_operation_in_doubt_not_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let locker: Arc<std::sync::Mutex<Option<rusqlite::Connection>>> = Default::default();
    let mut set = ToolSet::new();
    {
        let (locker, path) = (locker.clone(), path.clone());
        add(
            &mut set,
            def("delete_node", Safety::Modify),
            &counter,
            move |args, _| {
                let other = rusqlite::Connection::open(&path).unwrap();
                other.execute_batch("BEGIN EXCLUSIVE").unwrap();
                *locker.lock().unwrap() = Some(other);
                async move { Ok(json!({"deleted": args})) }
            },
        );
    }
    let store = SqliteStore::open(&path)
        .unwrap()
        .with_busy_timeout(Duration::from_millis(200))
        .unwrap();
    let exec = Executor::builder(set)
        .config(quick())
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let op = park(&exec, "c1").await;
    let ran = exec.approve(&op).await.unwrap();
    assert!(ran.outcome.is_success(), "the tool's outcome is the truth");
    assert_eq!(counter.get(), 1);
    assert!(ran.audit_failure.is_some(), "the record waits for the lock");
    locker
        .lock()
        .unwrap()
        .take()
        .unwrap()
        .execute_batch("COMMIT")
        .unwrap();

    assert_eq!(state(&exec, &op), "approved");
    assert_eq!(exec.in_doubt().unwrap().len(), 1);
    let again = exec.approve(&op).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::of("ALREADY_RESOLVED"));
    assert_eq!(counter.get(), 1, "not run twice");
    exec.abandon(&op, Some("checked: it ran".into())).unwrap();
    assert_eq!(state(&exec, &op), "completed");
    assert_eq!(counter.get(), 1);
    // parked, approved (kept through the lock, written now), abandoned
    assert_eq!(audit(&exec, "c1").len(), 3);
}

/// Garbage where the file's header and pages were, before it is opened: opening fails with a
/// structured error that names the file and the fault, not a panic.
#[tokio::test]
async fn a_corrupt_file_is_refused_at_open_with_a_structured_error() {
    let dir = tempfile::tempdir().unwrap();
    // garbage from the first byte
    let garbage = dir.path().join("garbage.sqlite3");
    std::fs::write(&garbage, vec![0xA5u8; 16 * 4096]).unwrap();
    let e = SqliteStore::open(&garbage).unwrap_err();
    expect_store_error(&e, "corrupt or is not a SQLite database");
    assert!(e.message.contains("garbage.sqlite3"), "{e}");

    // a real store whose header was overwritten: its pending operation is not run by anyone
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    {
        let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
        park(&exec, "c1").await;
    }
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..100].fill(0x5A);
    std::fs::write(&path, &bytes).unwrap();
    let e = SqliteStore::open(&path).unwrap_err();
    expect_store_error(&e, "corrupt or is not a SQLite database");
    assert_eq!(counter.get(), 0);

    // the same file through the executor's configuration: a build error, not a panic
    let mut cfg = quick();
    cfg.store.path = Some(path.clone());
    let built = Executor::builder(toolset(&counter)).config(cfg).build();
    let Err(e) = built else {
        panic!("a corrupt store is refused")
    };
    assert!(e.to_string().contains("corrupt"), "{e}");
}

fn expect_store_error(e: &StoreError, says: &str) {
    assert!(!e.retryable, "{e:?}");
    assert!(e.message.contains(says), "{e}");
    let e = ToolError::from(e.clone());
    expect_error(&e, &ErrorCode::INTERNAL, false, says);
}

/// The file overwritten with garbage while a store has it open: every call that needs the store
/// fails with a structured, non-retryable error (nothing waiting can help); nothing runs, nothing
/// panics. A read-only call still runs; its record is kept in the audit spool beside the file,
/// for the trail of a healthy file.
#[tokio::test]
async fn a_file_corrupted_while_open_fails_calls_with_structured_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
    let op = park(&exec, "c1").await;
    // everything into the main file, then garbage over all of it
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(other);
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    std::fs::write(&path, vec![0xA5u8; len]).unwrap();

    let says = "corrupt or is not a SQLite database";
    expect_error(
        &exec.pending().unwrap_err(),
        &ErrorCode::INTERNAL,
        false,
        says,
    );
    expect_error(
        &exec.approve(&op).await.unwrap_err(),
        &ErrorCode::INTERNAL,
        false,
        says,
    );
    let parked = call(&exec, "c2", "delete_node").await;
    expect_error(outcome_error(&parked), &ErrorCode::INTERNAL, false, says);
    assert_eq!(counter.get(), 0, "nothing ran");
    let read = call(&exec, "c3", "read_node").await;
    assert!(read.outcome.is_success());
    assert_eq!(read.audit_failure, None);
    let spool = std::fs::read_to_string(format!("{}-audit", path.display())).unwrap();
    assert!(spool.contains(r#""call_id":"c3""#), "{spool:?}");
    assert_eq!(counter.get(), 1);
}

/// The file and its WAL deleted while a store has them open: the open handle still reads (the
/// data lives until it is closed) and lists the operation, but every write is refused with an
/// error that says the file was deleted, so the operation cannot be approved and nothing runs.
/// A restart starts from a new, empty file: operations go with the deleted file, none runs.
#[tokio::test]
async fn a_file_deleted_while_open_refuses_writes_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
    let op = park(&exec, "c1").await;
    for f in sidecars(&path) {
        std::fs::remove_file(&f).unwrap();
    }

    assert_eq!(
        exec.pending().unwrap().len(),
        1,
        "the open handle still reads"
    );
    let says = "deleted or moved while open";
    expect_error(
        &exec.approve(&op).await.unwrap_err(),
        &ErrorCode::INTERNAL,
        false,
        says,
    );
    assert_eq!(state(&exec, &op), "pending");
    let parked = call(&exec, "c2", "delete_node").await;
    expect_error(outcome_error(&parked), &ErrorCode::INTERNAL, false, says);
    assert_eq!(counter.get(), 0, "nothing ran");
    drop(exec);

    let restarted = executor(SqliteStore::open(&path).unwrap(), &counter);
    assert!(restarted.pending().unwrap().is_empty());
    assert!(restarted.pending_operation(&op).unwrap().is_none());
    assert_eq!(counter.get(), 0);
}

/// Runs this binary again as a child playing `part` on the store at `db` (operation `op`),
/// optionally as another user; returns the JSON it reports.
fn run_child(part: &str, db: &Path, op: &str, uid: Option<u32>) -> Value {
    let mut exe = std::env::current_exe().unwrap();
    if uid.is_some() {
        // the build directory may be closed to other users (a checkout under /root): the other
        // user runs a copy next to the database
        let copy = db.with_file_name("faults-child");
        std::fs::copy(&exe, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe = copy;
    }
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "faults_sqlite::child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, part)
    .env(DB, db)
    .env(OP, op);
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(uid);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("REPORT ").map(|(_, r)| r.to_owned()))
        .unwrap_or_else(|| panic!("no report in {stdout}"));
    serde_json::from_str(&line).unwrap()
}

/// The part a child plays; a no-op in a normal test run.
#[tokio::test]
async fn child() {
    let Ok(part) = std::env::var(CHILD) else {
        return;
    };
    let db = PathBuf::from(std::env::var(DB).unwrap());
    let op = std::env::var(OP).unwrap();
    let report = match part.as_str() {
        "full" => full_disk(&db, &op).await,
        "read-only" => read_only(&db, &op).await,
        other => panic!("unknown part {other}"),
    };
    println!("REPORT {report}");
}

fn error_json(e: &ToolError) -> Value {
    json!({"code": e.code.as_str(), "retryable": e.retryable, "message": e.message})
}

fn set_file_size_limit(bytes: libc::rlim_t) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain system calls on this process's own limits and signal disposition
    unsafe {
        // a write past the limit then fails with EFBIG instead of killing the process
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
}

/// In the child: the store opened, then no file may grow past 64 bytes (a WAL frame is 4 KiB,
/// an audit record a few hundred bytes), which is what a full disk does to a writer. Then the
/// limit is lifted (space freed).
async fn full_disk(db: &Path, op: &str) -> Value {
    let counter = Counter::default();
    let exec = executor(SqliteStore::open(db).unwrap(), &counter);
    set_file_size_limit(64);
    let approve = exec.approve(op).await.unwrap_err();
    let still = state(&exec, op);
    let parked = call(&exec, "c2", "delete_node").await;
    let read = call(&exec, "c3", "read_node").await;
    let ran_while_full = counter.get();
    set_file_size_limit(libc::RLIM_INFINITY);
    let kept = audit(&exec, "c3").len();
    let approved = exec.approve(op).await.map(|e| e.outcome.is_success());
    json!({
        "approve": error_json(&approve),
        "state": still,
        "park": error_json(outcome_error(&parked)),
        "read_ran": read.outcome.is_success(),
        "read_audit_failure": read.audit_failure,
        "ran_while_full": ran_while_full,
        "audit_after": kept,
        "approved_after": approved.ok(),
        "ran": counter.get(),
    })
}

/// The disk full (a file-size limit in a child process): the approval fails, not retryable, with
/// nothing run and the operation still pending; a read-only call runs and its record is written
/// once space is back; then the operation runs once, and the parent finds it completed.
#[tokio::test]
async fn a_full_disk_refuses_writes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let op = park(&executor(SqliteStore::open(&path).unwrap(), &counter), "c1").await;

    let r = run_child("full", &path, &op, None);
    let full = "full";
    for key in ["approve", "park"] {
        let e = &r[key];
        assert_eq!(e["code"], "INTERNAL", "{r}");
        assert_eq!(e["retryable"], false, "{r}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains(full) && m.contains("nothing was changed"), "{m}");
    }
    assert_eq!(r["state"], "pending", "{r}");
    assert_eq!(r["read_ran"], true);
    assert!(
        r["read_audit_failure"].as_str().unwrap().contains(full),
        "{r}"
    );
    assert_eq!(r["ran_while_full"], 1, "only the read-only call ran: {r}");
    assert_eq!(r["audit_after"], 1, "the kept record is written: {r}");
    assert_eq!(r["approved_after"], true, "{r}");
    assert_eq!(r["ran"], 2, "{r}");

    let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
    assert_eq!(state(&exec, &op), "completed");
    assert!(exec.pending().unwrap().is_empty());
    assert!(exec.in_doubt().unwrap().is_empty());
    assert_eq!(audit(&exec, "c1").len(), 2, "parked, approved");
    assert_eq!(audit(&exec, "c2").len(), 1, "the refused call");
    assert_eq!(audit(&exec, "c3").len(), 1, "the read-only call");
    assert_eq!(counter.get(), 0, "the parent ran nothing");
}

/// In the child (unprivileged): a process that (re)opens the read-only file.
async fn read_only(db: &Path, op: &str) -> Value {
    let counter = Counter::default();
    let store = match SqliteStore::open(db) {
        Ok(s) => s,
        Err(e) => return json!({"open": error_json(&ToolError::from(e))}),
    };
    let exec = executor(store, &counter);
    let approve = exec.approve(op).await.unwrap_err();
    let parked = call(&exec, "c2", "delete_node").await;
    json!({
        "approve": error_json(&approve),
        "state": state(&exec, op),
        "park": error_json(outcome_error(&parked)),
        "ran": counter.get(),
    })
}

fn chmod(path: &Path, mode: u32) {
    for f in sidecars(path) {
        if f.exists() {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

/// The file made read-only (mode 0444) mid-run. A store that has it open keeps writing:
/// permissions are checked when a file is opened, not on each write, so nothing changes for
/// it. A process that opens it afterwards cannot write: its approval and new calls fail, not
/// retryable, with nothing run and the operation still pending; once the file is writable
/// again the operation runs once. Root ignores file modes, so as root the child runs as
/// `nobody`.
#[tokio::test]
async fn a_read_only_file_refuses_writes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // the child may be another user: it reaches the directory and makes its own WAL files there
    // (the database file itself is what is read-only)
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
    let op = park(&exec, "c1").await;
    chmod(&path, 0o444);
    let op2 = park(&exec, "c0").await;
    assert_eq!(
        exec.pending().unwrap().len(),
        2,
        "the open store still writes"
    );
    drop(exec);

    // SAFETY: geteuid only reads this process's effective user id
    let root = unsafe { libc::geteuid() } == 0;
    let r = run_child("read-only", &path, &op, root.then_some(65534));
    let m = r["approve"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("cannot be written"), "{r}");
    assert_eq!(r["approve"]["code"], "INTERNAL", "{r}");
    assert_eq!(r["approve"]["retryable"], false, "{r}");
    assert_eq!(r["park"]["code"], "INTERNAL", "{r}");
    assert_eq!(r["state"], "pending", "{r}");
    assert_eq!(r["ran"], 0, "{r}");

    chmod(&path, 0o644);
    let exec = executor(SqliteStore::open(&path).unwrap(), &counter);
    assert_eq!(state(&exec, &op), "pending");
    for id in [&op, &op2] {
        assert!(exec.approve(id).await.unwrap().outcome.is_success());
    }
    assert_eq!(counter.get(), 2, "each ran once");
    assert!(matches!(
        exec.pending_operation(&op).unwrap().unwrap().state,
        PendingState::Completed { .. }
    ));
    assert_eq!(audit(&exec, "c1").len(), 2, "parked, approved");
}
