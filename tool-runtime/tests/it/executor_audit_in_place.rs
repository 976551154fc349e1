//! The audit record written in place: the executor offers a call's record to the SQLite store
//! on the call's own thread ([`Store::try_append_audit`]), without the hop to the blocking pool
//! and back. A read-only call's record is appended to the store's audit spool, which waits for
//! nobody, so it is written in place even while another connection holds the file's write lock,
//! and reaches the trail (the `audit` table) before any query of it. A record of a change is
//! written into the table in place when the file's lock is free, and on the blocking pool, where
//! the write may wait, when it is not. Either way each call has exactly one record, written
//! before the execution is returned, and a record that cannot be written is reported on the
//! execution.
//!
//! The store is the real SQLite store on a file, seen through a wrapper that notes which of its
//! two audit methods each call used, on which thread, and what the attempt in place answered.

use crate::executor_support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use executor_support::{Counter, change_record, def, echo, quick, read_only_record};
use serde_json::json;
use tool_runtime::executor::{ActivityQuery, AuditRecord, Executor, Outcome, Window};
use tool_runtime::store::{
    GateScope, JournalEntry, PendingOperation, PendingState, Resolve, Scrubbed, SqliteStore, Store,
    StoreError, UnreadableOperation,
};
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety, hydrate::Arguments};

/// How a record reached the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// `try_append_audit`, and whether it wrote the record.
    InPlace { written: bool },
    /// `append_audit`, and whether it wrote the record.
    Full { written: bool },
}

/// The SQLite store, noting each audit write: how, and on which thread.
struct Watched {
    inner: SqliteStore,
    seen: Mutex<Vec<(Way, ThreadId)>>,
}

impl Watched {
    fn open(path: &Path) -> Arc<Watched> {
        Arc::new(Watched {
            inner: SqliteStore::open(path).unwrap(),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn note(&self, way: Way) {
        let thread = std::thread::current().id();
        self.seen.lock().unwrap().push((way, thread));
    }

    fn take(&self) -> Vec<(Way, ThreadId)> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

impl Store for Watched {
    fn try_append_audit(&self, record: &AuditRecord) -> Option<Result<(), StoreError>> {
        let answer = self.inner.try_append_audit(record);
        let written = matches!(answer, Some(Ok(())));
        self.note(Way::InPlace { written });
        answer
    }
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let answer = self.inner.append_audit(record);
        self.note(Way::Full {
            written: answer.is_ok(),
        });
        answer
    }
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.query_audit(query)
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
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.inner.resolve_pending(id, to)
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
}

/// A read-only tool `look` behind an executor on `store`, counting its runs.
fn executor(store: Arc<dyn Store>, counter: &Counter) -> Executor {
    let mut set = ToolSet::new();
    echo(&mut set, def("look", Safety::ReadOnly), counter);
    let mut cfg = quick();
    cfg.cache.enabled = false;
    Executor::builder(set)
        .config(cfg)
        .store(store)
        .build()
        .unwrap()
}

fn look(id: &str) -> ToolCall {
    ToolCall::new(id, "look", Arguments::Json(json!({"text": "hi"})))
}

/// The audit records in the SQLite file, read through a store of its own.
fn records_in(path: &Path) -> Vec<AuditRecord> {
    SqliteStore::open(path)
        .unwrap()
        .query_audit(&ActivityQuery::default())
        .unwrap()
}

/// How many records the file holds of call `id`.
fn records_of(path: &Path, id: &str) -> usize {
    (records_in(path).iter())
        .filter(|r| r.call_id.as_str() == id)
        .count()
}

#[tokio::test(flavor = "current_thread")]
async fn a_free_sqlite_writer_takes_the_record_on_the_calls_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = Watched::open(&path);
    let counter = Counter::default();
    let executor = executor(store.clone(), &counter);
    let here = std::thread::current().id();

    for id in ["c1", "c2", "c3"] {
        let exec = executor.call(&look(id), CallContext::default()).await;
        assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
        assert_eq!(exec.audit_failure, None);
        // written in place, on this thread (the runtime's only one), and by nothing else
        assert_eq!(
            store.take(),
            vec![(Way::InPlace { written: true }, here)],
            "call {id}"
        );
        // in the file when the call returned, once
        assert_eq!(records_of(&path, id), 1, "call {id}");
    }
    assert_eq!(counter.get(), 3);
    assert_eq!(records_in(&path).len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_lock_held_by_another_connection_does_not_hold_up_a_read_only_calls_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = Watched::open(&path);
    let counter = Counter::default();
    let executor = executor(store.clone(), &counter);
    let here = std::thread::current().id();

    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let exec = executor.call(&look("c1"), CallContext::default()).await;
    assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
    assert_eq!(exec.audit_failure, None);
    assert_eq!(
        store.take(),
        vec![(Way::InPlace { written: true }, here)],
        "spooled on the call's thread while the lock is held"
    );
    // the lock gone, a query finds the record in the trail, once
    other.execute_batch("ROLLBACK").unwrap();
    assert_eq!(records_of(&path, "c1"), 1);
    assert_eq!(records_in(&path).len(), 1);
    assert_eq!(counter.get(), 1);
}

/// A record of a change goes into the table itself: the attempt in place never waits for a lock,
/// and leaves the store's busy timeout as it was, so a write on the full path afterwards still
/// waits for the lock to pass. A read-only call's record is spooled at once under the same lock.
#[test]
fn the_attempt_in_place_does_not_wait_and_keeps_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = SqliteStore::open(&path)
        .unwrap()
        .with_busy_timeout(Duration::from_secs(30))
        .unwrap();

    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    // released while this thread would still be waiting, had the attempt waited: it would
    // then have written the record and answered `Some`
    let releasing = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        other.execute_batch("ROLLBACK").unwrap();
    });
    assert!(
        store.try_append_audit(&change_record("r1")).is_none(),
        "declined at once while the lock is held"
    );
    assert!(
        matches!(
            store.try_append_audit(&read_only_record("s1")),
            Some(Ok(()))
        ),
        "a read-only call's record is spooled under the lock"
    );
    // the full path waits (up to the busy timeout kept through the attempt) and writes
    store.append_audit(&change_record("r2")).unwrap();
    releasing.join().unwrap();
    assert!(matches!(
        store.try_append_audit(&change_record("r3")),
        Some(Ok(()))
    ));

    let ids: Vec<String> = (records_in(&path).iter())
        .map(|r| r.call_id.to_string())
        .collect();
    assert_eq!(
        ids,
        ["r3", "r2", "s1"],
        "newest first, in the order written; the declined r1 is not there"
    );
}

/// A record the store cannot take (its file deleted while open) is not written in place, and
/// the full path's failure reaches the execution as it does without the attempt: the call is
/// reported as unaudited.
#[tokio::test(flavor = "current_thread")]
async fn a_record_that_cannot_be_written_is_reported_on_the_execution() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = Watched::open(&path);
    let counter = Counter::default();
    let executor = executor(store.clone(), &counter);
    for suffix in ["", "-wal", "-shm"] {
        std::fs::remove_file(format!("{}{suffix}", path.display())).unwrap();
    }

    let exec = executor.call(&look("c1"), CallContext::default()).await;
    assert!(
        exec.outcome.is_success(),
        "the tool ran: {:?}",
        exec.outcome
    );
    assert_eq!(counter.get(), 1);
    let failure = exec
        .audit_failure
        .expect("the unwritten record is reported");
    assert!(failure.contains("deleted or moved while open"), "{failure}");
    assert_eq!(
        store.take().iter().map(|(way, _)| *way).collect::<Vec<_>>(),
        [
            Way::InPlace { written: false },
            Way::Full { written: false }
        ]
    );
}
