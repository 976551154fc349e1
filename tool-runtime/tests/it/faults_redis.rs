//! Faults injected into the Redis store against a real `redis-server` that each test starts on a
//! free port in a temporary directory (append-only file, fsync on every write, so a restart keeps
//! what was acknowledged): the server killed in the middle of an approval and while the approved
//! tool runs, restarted, and paused beyond the store's command timeout. For each: a structured,
//! retryable error, no operation lost or run twice (the tools count their runs), and every call
//! that ran has its audit record once the server is back.
//!
//! Without `redis-server` on the `PATH` the tests print why they are skipped, except under CI
//! (`CI` set), where they fail.

use crate::executor_support;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use executor_support::faults::*;
use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{ActivityQuery, AuditRecord, Deferred, Executor, Outcome, Window};
use tool_runtime::store::{
    GateScope, JournalEntry, PendingOperation, PendingState, RedisStore, Resolve,
    STORE_UNAVAILABLE, Scrubbed, Store, StoreError, UnreadableOperation,
};
use tool_runtime::{ErrorCode, ToolError, ToolSet, definition::Safety};

/// A `redis-server` of this test's own; killed when dropped.
struct Server {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Server {
    /// Starts one, or `None` (skipped) when `redis-server` is not installed and `CI` is not set.
    fn start() -> Option<Server> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok();
        if !test_support::prerequisite(installed, "redis-server", "apt-get install redis-server") {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = Server {
            dir: tempfile::tempdir().unwrap(),
            port,
            child: None,
        };
        server.run();
        Some(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts the server (again, on the same port and files) and waits until it answers.
    fn run(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            // DEBUG SLEEP (a stuck server) is refused from 7 on unless enabled
            .args(debug_command())
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let client = redis::Client::open(self.url()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pong = client
                .get_connection_with_timeout(Duration::from_millis(200))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if pong.is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server at once (SIGKILL: no shutdown, no last save).
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A command from another connection.
    fn command(&self, args: &[&str]) {
        let mut c = redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<()>(&mut c).unwrap();
    }
}

/// The option that allows `DEBUG` from this machine, on servers that have it (7 and later).
fn debug_command() -> Vec<&'static str> {
    let out = Command::new("redis-server")
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&out.stdout);
    let major: u32 = version
        .split("v=")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major >= 7 {
        vec!["--enable-debug-command", "local"]
    } else {
        Vec::new()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

type Hook = Box<dyn FnOnce() + Send>;

/// The Redis store, with a fault injected right before an approval's compare-and-set: after the
/// operation was read and its arguments validated, before it is moved to `approved`.
struct Faulty {
    inner: RedisStore,
    before_resolve: Mutex<Option<Hook>>,
}

impl Faulty {
    fn arm(&self, hook: impl FnOnce() + Send + 'static) {
        *self.before_resolve.lock().unwrap() = Some(Box::new(hook));
    }
}

impl Store for Faulty {
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        let hook = self.before_resolve.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        self.inner.resolve_pending(id, to)
    }
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.inner.put_pending(op)
    }
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        self.inner.get_pending(id)
    }
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.inner.list_pending()
    }
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.inner.complete_pending(id, outcome)
    }
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.inner.list_approved()
    }
    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        self.inner.scrub_decided(id, with)
    }
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        self.inner.list_unreadable()
    }
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.close_unreadable(id)
    }
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.inner.settle_approved(id, outcome)
    }
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.inner.approve_gate(scope, tool)
    }
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.inner.is_gate_approved(scope, tool)
    }
    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.inner.put_journal(entry)
    }
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        self.inner.get_journal(id)
    }
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.inner.journal_of_call(call_id)
    }
    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.claim_undo(id)
    }
    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        self.inner.release_undo(id)
    }
    fn acquire_rate(
        &self,
        windows: &[(String, Window)],
    ) -> Result<Option<Result<(), Duration>>, StoreError> {
        self.inner.acquire_rate(windows)
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.inner.append_audit(record)
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.query_audit(query)
    }
}

/// How long a command may take in these tests.
const TIMEOUT: Duration = Duration::from_millis(300);

fn faulty(server: &Server) -> Arc<Faulty> {
    Arc::new(Faulty {
        inner: RedisStore::open(&server.url())
            .unwrap()
            .with_timeout(TIMEOUT),
        before_resolve: Mutex::new(None),
    })
}

/// `delete_node` (modifying, parked) and `read_node` (read-only), counting runs in `counter`.
fn executor(set: ToolSet, store: Arc<Faulty>) -> Executor {
    let mut cfg = quick();
    cfg.cache.enabled = false;
    Executor::builder(set)
        .config(cfg)
        .store(store)
        .confirmation(Deferred)
        .build()
        .unwrap()
}

fn expect_unavailable(e: &ToolError, says: &str) {
    assert_eq!(e.code, STORE_UNAVAILABLE, "{e:?}");
    assert!(e.retryable, "{e:?}");
    assert!(
        e.message.contains(says),
        "{:?} does not say {says:?}",
        e.message
    );
    assert!(e.recover_action.is_some(), "{e:?}");
}

/// The server killed after the operation was read and before it was moved to `approved`: the
/// approval fails, retryably; while the server is down the store says so for every request and
/// a read-only call still runs; once it is back, the operation is still pending (not lost, not
/// run), approves and runs exactly once, and the read-only call's record is written.
#[tokio::test]
async fn killed_in_the_middle_of_an_approval_then_restarted() {
    let Some(server) = Server::start() else {
        return;
    };
    let server = Arc::new(Mutex::new(server));
    let counter = Counter::default();
    let store = faulty(&server.lock().unwrap());
    let exec = executor(toolset(&counter), store.clone());
    let op = park(&exec, "c1").await;

    let killer = server.clone();
    store.arm(move || killer.lock().unwrap().kill());
    let e = exec.approve(&op).await.unwrap_err();
    expect_unavailable(&e, "redis");
    assert_eq!(counter.get(), 0, "nothing ran");

    expect_unavailable(&exec.pending().unwrap_err(), "redis cannot be reached");
    expect_unavailable(
        &exec.approve(&op).await.unwrap_err(),
        "redis cannot be reached",
    );
    let parked = call(&exec, "c2", "delete_node").await;
    expect_unavailable(parked.outcome.error().unwrap(), "redis cannot be reached");
    let read = call(&exec, "c3", "read_node").await;
    assert!(read.outcome.is_success(), "{:?}", read.outcome);
    assert!(read.audit_failure.unwrap().contains("kept in this process"));
    assert_eq!(counter.get(), 1);

    server.lock().unwrap().run();
    assert_eq!(state(&exec, &op), "pending", "not lost, not run");
    let done = exec.approve(&op).await.unwrap();
    assert!(done.outcome.is_success(), "{:?}", done.outcome);
    assert_eq!(counter.get(), 2, "it ran once");
    let again = exec.approve(&op).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::of("ALREADY_RESOLVED"));
    assert_eq!(counter.get(), 2);
    assert_eq!(state(&exec, &op), "completed");
    assert_eq!(audit(&exec, "c1").len(), 2, "parked, approved");
    assert_eq!(audit(&exec, "c2").len(), 1, "the refused call");
    assert_eq!(
        audit(&exec, "c3").len(),
        1,
        "the read-only call, kept and written"
    );

    // another process on the restarted server sees the same
    let other = executor(
        toolset(&Counter::default()),
        faulty(&server.lock().unwrap()),
    );
    assert_eq!(state(&other, &op), "completed");
    assert!(other.pending().unwrap().is_empty());
    assert!(other.in_doubt().unwrap().is_empty());
}

/// The server killed while the approved tool runs: the tool's outcome is returned, but it cannot
/// be recorded, so after the restart the operation is approved and in doubt; approving it again
/// does not run it, and a person closes it.
#[tokio::test]
async fn killed_while_the_approved_tool_runs() {
    let Some(server) = Server::start() else {
        return;
    };
    let server = Arc::new(Mutex::new(server));
    let counter = Counter::default();
    let mut set = ToolSet::new();
    {
        let killer = server.clone();
        add(
            &mut set,
            def("delete_node", Safety::Modify),
            &counter,
            move |args, _| {
                killer.lock().unwrap().kill();
                async move { Ok(json!({"deleted": args})) }
            },
        );
    }
    let exec = executor(set, faulty(&server.lock().unwrap()));
    let op = park(&exec, "c1").await;
    let ran = exec.approve(&op).await.unwrap();
    assert!(ran.outcome.is_success(), "{:?}", ran.outcome);
    assert!(ran.audit_failure.is_some(), "{ran:?}");
    assert_eq!(counter.get(), 1);

    server.lock().unwrap().run();
    assert_eq!(state(&exec, &op), "approved");
    assert_eq!(exec.in_doubt().unwrap().len(), 1);
    let again = exec.approve(&op).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::of("ALREADY_RESOLVED"));
    assert_eq!(counter.get(), 1, "not run twice");
    exec.abandon(&op, Some("checked: it ran".into())).unwrap();
    assert_eq!(state(&exec, &op), "completed");
    assert_eq!(audit(&exec, "c1").len(), 3, "parked, approved, abandoned");
}

/// A server that is slow beyond the store's command timeout right before an approval's
/// compare-and-set, by `slow_down` (from another connection): the approval returns within the
/// timeout with a retryable error instead of hanging, and the operation runs at most once. Once
/// the server is back it is either still pending (the late command never ran) and runs once when
/// approved, or was approved by the late command and is in doubt, not run. Returns which.
async fn slow_approval(slow_down: impl FnOnce(&Server) + Send + 'static) -> &'static str {
    let Some(server) = Server::start() else {
        return "skipped";
    };
    let server = Arc::new(server);
    let counter = Counter::default();
    let store = faulty(&server);
    let exec = executor(toolset(&counter), store.clone());
    let op = park(&exec, "c1").await;

    let slow = server.clone();
    store.arm(move || slow_down(&slow));
    let started = Instant::now();
    let e = exec.approve(&op).await.unwrap_err();
    let waited = started.elapsed();
    expect_unavailable(&e, "did not answer within 300 ms");
    assert!(waited < Duration::from_millis(1000), "bounded: {waited:?}");
    assert_eq!(counter.get(), 0, "nothing ran");

    // a write from another connection is answered once the server is back (in 1.5 s); what the
    // late command was going to do is done by then
    server.command(&["SET", "probe", "1"]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let now = exec.pending_operation(&op).unwrap().unwrap().state;
    match &now {
        PendingState::Pending => {
            let done = exec.approve(&op).await.unwrap();
            assert!(done.outcome.is_success());
            assert_eq!(counter.get(), 1, "ran once");
            assert_eq!(state(&exec, &op), "completed");
        }
        PendingState::Approved { .. } => {
            let again = exec.approve(&op).await.unwrap_err();
            assert_eq!(again.code, ErrorCode::of("ALREADY_RESOLVED"));
            assert_eq!(counter.get(), 0, "in doubt, never run");
            assert_eq!(exec.in_doubt().unwrap().len(), 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(audit(&exec, "c1").len(), 1 + counter.get());
    now.name()
}

/// Writes and scripts paused (`CLIENT PAUSE 1500 WRITE`): the operation was read, its
/// compare-and-set waits.
#[tokio::test]
async fn paused_for_writes_beyond_the_command_timeout() {
    let state = slow_approval(|s| s.command(&["CLIENT", "PAUSE", "1500", "WRITE"])).await;
    eprintln!("after the pause the operation was {state}");
}

/// The whole server stuck (`DEBUG SLEEP 1.5`: nothing is served meanwhile).
#[tokio::test]
async fn stuck_beyond_the_command_timeout() {
    let state = slow_approval(|s| {
        let url = s.url();
        std::thread::spawn(move || {
            let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
            // the reply does not matter (the server may be gone by then if the test failed)
            let _ = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("1.5")
                .query::<()>(&mut c);
        });
        // the sleep has begun when the approval's commands arrive
        std::thread::sleep(Duration::from_millis(100));
    })
    .await;
    eprintln!("after the sleep the operation was {state}");
}

/// A replica whose store cannot tell whether anything changed elsewhere does not answer from its
/// cache: with the server down, the read-only tool runs again (its result stays correct), and
/// once the server is back, results are answered from the cache again.
#[tokio::test]
async fn with_the_server_down_a_replica_does_not_answer_from_its_cache() {
    let Some(mut server) = Server::start() else {
        return;
    };
    let store = RedisStore::open(&server.url())
        .unwrap()
        .with_timeout(TIMEOUT);
    let reads = Counter::default();
    let mut set = ToolSet::new();
    echo(&mut set, def("read_node", Safety::ReadOnly), &reads);
    let exec = Executor::builder(set)
        .config(quick())
        .store(Arc::new(store))
        .build()
        .unwrap();
    let read = |id: &'static str| {
        let exec = exec.clone();
        async move {
            let e = call(&exec, "read", "read_node").await;
            assert!(e.outcome.is_success(), "{id}: {:?}", e.outcome);
        }
    };
    read("first").await;
    read("repeat").await;
    assert_eq!(reads.get(), 1, "the repeat is answered from the cache");
    server.kill();
    read("while down").await;
    assert_eq!(
        reads.get(),
        2,
        "the count of changes cannot be read: the tool runs"
    );
    server.run();
    read("back").await;
    read("back again").await;
    assert_eq!(
        reads.get(),
        2,
        "answered from the cache once the server is back"
    );
}
