//! A store that blocks (SQLite waiting for another process's lock, a slow disk, a Redis round
//! trip) does not hold up the runtime: the executor makes its calls on tokio's blocking pool, so
//! on a current-thread runtime, whose one thread runs every task, a ticker task spawned beside
//! the call keeps ticking while the store is busy. A store that panics ends the call with a
//! structured error instead of taking the task down.
//!
//! The observable is the ticker's count read by the store at the start and at the end of each of
//! its calls: a call made on the runtime's thread sees it unchanged, whatever the timing. A store
//! that does not block (the in-memory one) is called in place, without a thread hop, and so is
//! any store when the call is polled outside a tokio runtime, which has no blocking pool.

use crate::executor_support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_support::{Counter, Person, def, echo, quick};
use serde_json::{Value, json};
use tool_runtime::executor::{
    ActivityQuery, Answer, ApproveAll, AuditRecord, Deferred, Executor, ExecutorBuilder,
    ExecutorConfig, Outcome, Window,
};
use tool_runtime::store::{
    GateScope, InverseCall, JournalEntry, MemoryStore, PendingOperation, PendingState, Resolve,
    Scrubbed, SqliteStore, Store, StoreError, UnreadableOperation,
};
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, ToolSet, definition::Safety, hydrate::Arguments,
};

/// How long each call of the slow store sleeps.
const PAUSE: Duration = Duration::from_millis(200);

/// Counts how often the runtime gets to run a task that is not the call.
#[derive(Clone, Default)]
struct Ticker(Arc<AtomicUsize>);

impl Ticker {
    /// Ticks every millisecond on the current runtime until the handle is aborted.
    fn start(&self) -> tokio::task::JoinHandle<()> {
        let ticks = self.0.clone();
        tokio::spawn(async move {
            loop {
                ticks.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    }

    fn now(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A real SQLite store whose every call first sleeps on the calling thread, noting how far the
/// ticker got meanwhile.
struct Slow {
    inner: SqliteStore,
    ticker: Ticker,
    /// (store method, ticks during its sleep), in call order.
    seen: Mutex<Vec<(&'static str, usize)>>,
}

impl Slow {
    fn open(path: &Path, ticker: &Ticker) -> Arc<Slow> {
        Arc::new(Slow {
            inner: SqliteStore::open(path).unwrap(),
            ticker: ticker.clone(),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn pause<T>(&self, what: &'static str, then: impl FnOnce() -> T) -> T {
        let before = self.ticker.now();
        std::thread::sleep(PAUSE);
        let during = self.ticker.now() - before;
        self.seen.lock().unwrap().push((what, during));
        then()
    }

    fn seen(&self) -> Vec<(&'static str, usize)> {
        self.seen.lock().unwrap().clone()
    }

    /// Every call the store got let the ticker run, and the calls named were among them.
    fn assert_never_held_up_the_runtime(&self, expected: &[&str]) {
        let seen = self.seen();
        let held: Vec<_> = seen.iter().filter(|(_, ticks)| *ticks == 0).collect();
        assert!(
            held.is_empty(),
            "these store calls held up the runtime's thread (no tick during them): {held:?}; \
             all calls: {seen:?}"
        );
        for name in expected {
            assert!(
                seen.iter().any(|(what, _)| what == name),
                "the store was not asked to {name}: {seen:?}"
            );
        }
    }
}

impl Store for Slow {
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.pause("put_pending", || self.inner.put_pending(op))
    }
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        self.pause("get_pending", || self.inner.get_pending(id))
    }
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.pause("list_pending", || self.inner.list_pending())
    }
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.pause("resolve_pending", || self.inner.resolve_pending(id, to))
    }
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.pause("complete_pending", || {
            self.inner.complete_pending(id, outcome)
        })
    }
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.pause("list_approved", || self.inner.list_approved())
    }
    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        self.pause("scrub_decided", || self.inner.scrub_decided(id, with))
    }
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        self.pause("list_unreadable", || self.inner.list_unreadable())
    }
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        self.pause("close_unreadable", || self.inner.close_unreadable(id))
    }
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.pause("settle_approved", || {
            self.inner.settle_approved(id, outcome)
        })
    }
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.pause("approve_gate", || self.inner.approve_gate(scope, tool))
    }
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.pause("is_gate_approved", || {
            self.inner.is_gate_approved(scope, tool)
        })
    }
    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.pause("put_journal", || self.inner.put_journal(entry))
    }
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        self.pause("get_journal", || self.inner.get_journal(id))
    }
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.pause("journal_of_call", || self.inner.journal_of_call(call_id))
    }
    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        self.pause("claim_undo", || self.inner.claim_undo(id))
    }
    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        self.pause("release_undo", || self.inner.release_undo(id))
    }
    fn acquire_rate(
        &self,
        windows: &[(String, Window)],
    ) -> Result<Option<Result<(), Duration>>, StoreError> {
        self.pause("acquire_rate", || self.inner.acquire_rate(windows))
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.pause("append_audit", || self.inner.append_audit(record))
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.pause("query_audit", || self.inner.query_audit(query))
    }
}

fn build(set: ToolSet, cfg: ExecutorConfig, store: Arc<dyn Store>) -> ExecutorBuilder {
    Executor::builder(set).config(cfg).store(store)
}

fn call(name: &str, id: &str, arguments: Value) -> ToolCall {
    ToolCall::new(id, name, Arguments::Json(arguments))
}

/// The audit records in the SQLite file, read through a connection of its own.
fn records_in(path: &Path) -> Vec<AuditRecord> {
    SqliteStore::open(path)
        .unwrap()
        .query_audit(&ActivityQuery::default())
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_store_does_not_hold_up_the_runtime_while_a_read_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let ticker = Ticker::default();
    let store = Slow::open(&path, &ticker);
    let mut set = ToolSet::new();
    let counter = Counter::default();
    echo(&mut set, def("look", Safety::ReadOnly), &counter);
    let executor = build(set, quick(), store.clone()).build().unwrap();

    let ticking = ticker.start();
    let exec = executor
        .call(
            &call("look", "c1", json!({"text": "hi"})),
            CallContext::default(),
        )
        .await;
    ticking.abort();

    assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
    assert_eq!(exec.audit_failure, None);
    assert_eq!(counter.get(), 1);
    store.assert_never_held_up_the_runtime(&["append_audit"]);
    // the record was in the file when the call returned
    let records = records_in(&path);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "look");
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_store_does_not_hold_up_the_runtime_during_a_confirmed_call_and_its_undo() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let ticker = Ticker::default();
    let store = Slow::open(&path, &ticker);
    let mut set = ToolSet::new();
    let counter = Counter::default();
    // an external tool: first-time gate, confirmation, its category's rate limit; reversible
    echo(&mut set, def("post", Safety::External), &counter);
    echo(&mut set, def("unpost", Safety::Modify), &counter);
    let executor = build(set, quick(), store.clone())
        .confirmation(ApproveAll)
        .undo_with("post", |args, _| {
            Some(InverseCall {
                tool: "unpost".into(),
                arguments: args.clone(),
            })
        })
        .build()
        .unwrap();
    let cx = CallContext {
        session: Some("s1".into()),
        ..Default::default()
    };

    let ticking = ticker.start();
    let exec = executor
        .call(&call("post", "c1", json!({"text": "hi"})), cx.clone())
        .await;
    assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
    assert_eq!(exec.audit_failure, None);
    let undo_id = exec.undo_id().expect("journaled").to_owned();
    store.assert_never_held_up_the_runtime(&[
        "is_gate_approved",
        "approve_gate",
        "acquire_rate",
        "put_journal",
        "append_audit",
    ]);
    // the decision was committed before the tool ran, the journal before the record
    let order: Vec<_> = store.seen().iter().map(|(what, _)| *what).collect();
    let at = |name: &str| order.iter().position(|w| *w == name).unwrap();
    assert!(at("approve_gate") < at("put_journal"), "{order:?}");
    assert!(at("put_journal") < at("append_audit"), "{order:?}");

    let undone = executor.undo(&undo_id, cx).await;
    ticking.abort();
    assert!(undone.outcome.is_success(), "{:?}", undone.outcome);
    assert_eq!(counter.get(), 2);
    store.assert_never_held_up_the_runtime(&["get_journal", "claim_undo"]);
    assert_eq!(records_in(&path).len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_store_does_not_hold_up_the_runtime_while_an_operation_is_parked_and_approved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let ticker = Ticker::default();
    let store = Slow::open(&path, &ticker);
    let mut set = ToolSet::new();
    let counter = Counter::default();
    echo(&mut set, def("edit", Safety::Modify), &counter);
    let executor = build(set, quick(), store.clone())
        .confirmation(Deferred)
        .build()
        .unwrap();

    let ticking = ticker.start();
    let parked = executor
        .call(
            &call("edit", "c1", json!({"text": "hi"})),
            CallContext::default(),
        )
        .await;
    let Outcome::Pending { operation_id, .. } = &parked.outcome else {
        panic!("parked: {:?}", parked.outcome);
    };
    assert_eq!(counter.get(), 0);
    let approved = executor.approve(operation_id).await.unwrap();
    ticking.abort();

    assert!(approved.outcome.is_success(), "{:?}", approved.outcome);
    assert_eq!(counter.get(), 1);
    store.assert_never_held_up_the_runtime(&[
        "list_pending",
        "put_pending",
        "get_pending",
        "resolve_pending",
        "complete_pending",
        "scrub_decided",
        "append_audit",
    ]);
    // the approval was stored before the tool ran, its outcome after
    let order: Vec<_> = store.seen().iter().map(|(what, _)| *what).collect();
    let resolved = order.iter().position(|w| *w == "resolve_pending").unwrap();
    let completed = order.iter().position(|w| *w == "complete_pending").unwrap();
    assert!(resolved < completed, "{order:?}");
    let op = SqliteStore::open(&path)
        .unwrap()
        .get_pending(operation_id)
        .unwrap()
        .unwrap();
    assert!(matches!(op.state, PendingState::Completed { .. }), "{op:?}");
}

/// The real SQLite store, its file locked by another connection for a while: the write of a
/// change's audit record waits in SQLite's busy handler, on the blocking pool, while the runtime
/// runs on.
#[tokio::test(flavor = "current_thread")]
async fn a_sqlite_file_locked_by_another_connection_does_not_hold_up_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let mut set = ToolSet::new();
    let counter = Counter::default();
    echo(&mut set, def("note", Safety::Create), &counter);
    let executor = build(set, quick(), store)
        .confirmation(ApproveAll)
        .build()
        .unwrap();

    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let ticker = Ticker::default();
    let ticking = ticker.start();
    // the other connection holds the lock well past the moment the call reaches the store (the
    // call has nothing else to wait for), then lets go; the ticks in between are counted
    let watch = {
        let ticker = ticker.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let from = ticker.now();
            std::thread::sleep(Duration::from_millis(300));
            let to = ticker.now();
            other.execute_batch("ROLLBACK").unwrap();
            to - from
        })
    };
    let exec = executor
        .call(
            &call("note", "c1", json!({"text": "hi"})),
            CallContext::default(),
        )
        .await;
    ticking.abort();
    let ticks_while_locked = watch.join().unwrap();

    assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
    assert_eq!(
        exec.audit_failure, None,
        "the lock passed within the busy timeout"
    );
    assert!(
        ticks_while_locked > 0,
        "the runtime's thread waited for the SQLite lock: no tick while it was held"
    );
    assert_eq!(records_in(&path).len(), 1);
}

/// An in-memory store that runs a hook before each call, and says it blocks or not as told: both
/// ways the executor calls a store are covered.
struct Hooked {
    inner: MemoryStore,
    blocks: bool,
    hook: Box<dyn Fn(&str) + Send + Sync>,
}

impl Hooked {
    fn check(&self, what: &str) {
        (self.hook)(what)
    }
}

impl Store for Hooked {
    fn blocks(&self) -> bool {
        self.blocks
    }
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.check("put_pending");
        self.inner.put_pending(op)
    }
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        self.check("get_pending");
        self.inner.get_pending(id)
    }
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.check("list_pending");
        self.inner.list_pending()
    }
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.check("resolve_pending");
        self.inner.resolve_pending(id, to)
    }
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.check("complete_pending");
        self.inner.complete_pending(id, outcome)
    }
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.check("list_approved");
        self.inner.list_approved()
    }
    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        self.check("scrub_decided");
        self.inner.scrub_decided(id, with)
    }
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        self.check("list_unreadable");
        self.inner.list_unreadable()
    }
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        self.check("close_unreadable");
        self.inner.close_unreadable(id)
    }
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.check("settle_approved");
        self.inner.settle_approved(id, outcome)
    }
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.check("approve_gate");
        self.inner.approve_gate(scope, tool)
    }
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.check("is_gate_approved");
        self.inner.is_gate_approved(scope, tool)
    }
    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.check("put_journal");
        self.inner.put_journal(entry)
    }
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        self.check("get_journal");
        self.inner.get_journal(id)
    }
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.check("journal_of_call");
        self.inner.journal_of_call(call_id)
    }
    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        self.check("claim_undo");
        self.inner.claim_undo(id)
    }
    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        self.check("release_undo");
        self.inner.release_undo(id)
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.check("append_audit");
        self.inner.append_audit(record)
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.check("query_audit");
        self.inner.query_audit(query)
    }
}

/// An executor over a store that panics in the method `on`.
fn panicky(set: ToolSet, blocks: bool, on: &'static str) -> ExecutorBuilder {
    let store = Hooked {
        inner: MemoryStore::new(),
        blocks,
        hook: Box::new(move |what| {
            if what == on {
                panic!("the store broke in {what}");
            }
        }),
    };
    build(set, quick(), Arc::new(store))
}

/// The error of a store call that panicked: internal, not retryable, naming the store call.
fn assert_panicked(error: &tool_runtime::ToolError, call: &str) {
    assert_eq!(error.code, ErrorCode::INTERNAL, "{error:?}");
    assert!(!error.retryable, "{error:?}");
    assert!(
        error.message.contains("panicked") && error.message.contains(call),
        "{}",
        error.message
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_that_panics_ends_the_call_with_a_structured_error() {
    for blocks in [false, true] {
        let set = || {
            let mut set = ToolSet::new();
            let counter = Counter::default();
            echo(&mut set, def("look", Safety::ReadOnly), &counter);
            echo(&mut set, def("edit", Safety::Modify), &counter);
            set
        };
        let look = call("look", "c1", json!({"text": "hi"}));
        let edit = call("edit", "c2", json!({"text": "hi"}));

        // the record could not be written: the call happened, and the caller is told
        let executor = panicky(set(), blocks, "append_audit").build().unwrap();
        let exec = executor.call(&look, CallContext::default()).await;
        assert!(
            exec.outcome.is_success(),
            "blocks={blocks}: {:?}",
            exec.outcome
        );
        let failure = exec.audit_failure.expect("the lost record is reported");
        assert!(
            failure.contains("panicked") && failure.contains("append_audit"),
            "{failure}"
        );

        // the call could not be parked: refused, nothing ran
        let executor = panicky(set(), blocks, "put_pending")
            .confirmation(Deferred)
            .build()
            .unwrap();
        let exec = executor.call(&edit, CallContext::default()).await;
        let error = exec.outcome.error().expect("refused");
        assert_panicked(error, "put_pending");

        // the approval could not be stored: an error to the approver, the operation untouched
        let executor = panicky(set(), blocks, "resolve_pending")
            .confirmation(Deferred)
            .build()
            .unwrap();
        let exec = executor.call(&edit, CallContext::default()).await;
        let Outcome::Pending { operation_id, .. } = exec.outcome else {
            panic!("parked: {:?}", exec.outcome);
        };
        let error = executor.approve(&operation_id).await.unwrap_err();
        assert_panicked(&error, "resolve_pending");
        assert_eq!(executor.pending().unwrap().len(), 1);
        // the synchronous methods catch it too
        let error = executor.deny(&operation_id, None).unwrap_err();
        assert_panicked(&error, "resolve_pending");

        // the first-time gate cannot be read: the gate is not passed, so the person is asked
        let mut gated = ToolSet::new();
        echo(
            &mut gated,
            def("post", Safety::External),
            &Counter::default(),
        );
        let person = Person::answering([Answer::Yes]);
        let executor = panicky(gated, blocks, "is_gate_approved")
            .confirmation(person.clone())
            .build()
            .unwrap();
        let exec = executor
            .call(&call("post", "c3", json!({})), CallContext::default())
            .await;
        assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
        let asked = person.asked();
        assert_eq!(asked.len(), 1);
        assert!(asked[0].preview.first_use.is_some(), "{asked:?}");
    }
}

/// Polled outside a tokio runtime (here by `futures`' executor), where there is no blocking pool,
/// a call that needs no runtime (refused by the deny list) still reaches the store, in place.
#[test]
fn outside_a_tokio_runtime_the_store_is_called_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let mut set = ToolSet::new();
    echo(&mut set, def("look", Safety::ReadOnly), &Counter::default());
    let cfg = ExecutorConfig {
        deny: vec!["look".into()],
        ..quick()
    };
    let executor = build(set, cfg, Arc::new(SqliteStore::open(&path).unwrap()))
        .build()
        .unwrap();
    let exec = futures::executor::block_on(
        executor.call(&call("look", "c1", json!({})), CallContext::default()),
    );
    assert_eq!(
        exec.outcome.error().map(|e| e.code.clone()),
        Some(ErrorCode::NOT_ALLOWED),
        "{:?}",
        exec.outcome
    );
    assert_eq!(exec.audit_failure, None);
    assert_eq!(records_in(&path).len(), 1);
}

/// A store that does not block is called on the call's own thread (no thread hop), one that
/// does on another thread (the blocking pool), for every store call of a call.
#[tokio::test(flavor = "current_thread")]
async fn only_a_store_that_blocks_is_called_on_another_thread() {
    let here = std::thread::current().id();
    for blocks in [false, true] {
        let threads: Arc<Mutex<Vec<(String, std::thread::ThreadId)>>> = Default::default();
        let store = Hooked {
            inner: MemoryStore::new(),
            blocks,
            hook: Box::new({
                let threads = threads.clone();
                move |what| {
                    let id = std::thread::current().id();
                    threads.lock().unwrap().push((what.to_owned(), id));
                }
            }),
        };
        let mut set = ToolSet::new();
        echo(&mut set, def("post", Safety::External), &Counter::default());
        let executor = build(set, quick(), Arc::new(store))
            .confirmation(ApproveAll)
            .build()
            .unwrap();
        let exec = executor
            .call(&call("post", "c1", json!({})), CallContext::default())
            .await;
        assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
        let threads = threads.lock().unwrap().clone();
        assert!(
            threads.len() >= 4,
            "gate read, gate written, rate, audit: {threads:?}"
        );
        for (what, id) in &threads {
            assert_eq!(
                *id == here,
                !blocks,
                "blocks={blocks}: {what} ran on {id:?}"
            );
        }
    }
}
