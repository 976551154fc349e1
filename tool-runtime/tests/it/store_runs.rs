//! Agent runs in every built-in store (memory, SQLite, Redis when `TOOL_RUNTIME_TEST_REDIS_URL`
//! names a server): a run is written only under its lease, a lease is held by one worker until
//! it expires or is released, the listing filters and orders, and two processes' handles on one
//! SQLite file see one lease.

use std::sync::Arc;
use std::time::Duration;

use tool_runtime::store::{
    CallStart, MemoryStore, RedisStore, RunQuery, SqliteStore, Store, StoredRun,
};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(150);

fn run(id: &str, status: &str, session: Option<&str>, at: u64) -> StoredRun {
    StoredRun {
        id: id.into(),
        status: status.into(),
        session: session.map(str::to_owned),
        created_ms: at,
        updated_ms: at,
        checkpoint: format!("{{\"v\":1,\"id\":\"{id}\",\"at\":{at}}}"),
        lease: None,
    }
}

/// The behaviour every store must have, run on `store`.
fn conformance(store: &dyn Store) {
    // created with a lease for its writer; another worker can neither write nor claim it
    assert!(
        store
            .save_run(&run("r1", "running", Some("s1"), 10), "a", LONG)
            .unwrap()
    );
    assert!(
        !store
            .save_run(&run("r1", "running", Some("s1"), 11), "b", LONG)
            .unwrap()
    );
    assert!(store.claim_run("r1", "b", LONG).unwrap().is_none());
    let got = store.get_run("r1").unwrap().unwrap();
    assert_eq!(got.lease.as_ref().unwrap().owner, "a");
    assert_eq!(got.updated_ms, 10, "b's write was refused");
    // the holder writes again; the creation time stays the first one
    assert!(
        store
            .save_run(&run("r1", "suspended", Some("s1"), 20), "a", LONG)
            .unwrap()
    );
    let got = store.get_run("r1").unwrap().unwrap();
    assert_eq!(
        (got.status.as_str(), got.created_ms, got.updated_ms),
        ("suspended", 10, 20)
    );
    assert!(got.checkpoint.contains("\"at\":20"), "{}", got.checkpoint);
    // released: any worker claims it, and the old holder's writes are refused from then on
    store.release_run("r1", "b").unwrap(); // not b's: nothing happens
    assert!(store.claim_run("r1", "b", LONG).unwrap().is_none());
    store.release_run("r1", "a").unwrap();
    assert!(store.get_run("r1").unwrap().unwrap().lease.is_none());
    let claimed = store.claim_run("r1", "b", LONG).unwrap().expect("free");
    assert_eq!(claimed.lease.unwrap().owner, "b");
    assert!(claimed.checkpoint.contains("\"at\":20"));
    assert!(
        !store
            .save_run(&run("r1", "answered", None, 30), "a", LONG)
            .unwrap()
    );
    // an expired lease is anybody's
    assert!(
        store
            .save_run(&run("r2", "running", None, 40), "a", SHORT)
            .unwrap()
    );
    assert!(store.claim_run("r2", "b", LONG).unwrap().is_none());
    std::thread::sleep(SHORT + Duration::from_millis(100));
    assert!(store.get_run("r2").unwrap().unwrap().lease.is_none());
    assert!(
        !store
            .save_run(&run("r2", "running", None, 41), "a", LONG)
            .unwrap(),
        "expired"
    );
    assert_eq!(store.claim_run("r2", "b", LONG).unwrap().unwrap().id, "r2");
    assert!(
        store.claim_run("r2", "b", LONG).unwrap().is_some(),
        "renewal"
    );
    // unknown runs
    assert!(store.get_run("nope").unwrap().is_none());
    assert!(store.claim_run("nope", "a", LONG).unwrap().is_none());
    // listing: newest save first, filtered, capped
    assert!(
        store
            .save_run(&run("r3", "suspended", Some("s2"), 50), "c", LONG)
            .unwrap()
    );
    let ids = |q: RunQuery| -> Vec<String> {
        store
            .list_runs(&q)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    assert_eq!(ids(RunQuery::default()), ["r3", "r2", "r1"]);
    let suspended = RunQuery {
        status: Some("suspended".into()),
        ..Default::default()
    };
    assert_eq!(ids(suspended), ["r3", "r1"]);
    let s1 = RunQuery {
        session: Some("s1".into()),
        ..Default::default()
    };
    assert_eq!(ids(s1), ["r1"]);
    let one = RunQuery {
        limit: Some(1),
        ..Default::default()
    };
    assert_eq!(ids(one), ["r3"]);

    // call starts, kept by run in the order marked, until forgotten
    let start = |call: &str, at: u64| CallStart {
        call_id: call.into(),
        tool: "post_card".into(),
        started_ms: at,
    };
    assert!(store.started_calls("r1").unwrap().is_empty());
    store.mark_started("r1", &start("c1", 5)).unwrap();
    store.mark_started("r2", &start("c9", 6)).unwrap();
    store.mark_started("r1", &start("c1", 7)).unwrap();
    assert_eq!(
        store.started_calls("r1").unwrap(),
        [start("c1", 5), start("c1", 7)]
    );
    store.forget_starts("r1").unwrap();
    assert!(store.started_calls("r1").unwrap().is_empty());
    assert_eq!(store.started_calls("r2").unwrap(), [start("c9", 6)]);
}

/// Many claimants of one free run at once: exactly one wins.
fn one_claimant_wins(store: Arc<dyn Store>) {
    assert!(
        store
            .save_run(&run("race", "suspended", None, 1), "w", LONG)
            .unwrap()
    );
    store.release_run("race", "w").unwrap();
    let winners: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                s.spawn(move || {
                    usize::from(
                        store
                            .claim_run("race", &format!("w{i}"), LONG)
                            .unwrap()
                            .is_some(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(winners, 1);
}

#[test]
fn the_memory_store_keeps_runs_under_a_lease() {
    conformance(&MemoryStore::new());
    one_claimant_wins(Arc::new(MemoryStore::new()));
}

#[test]
fn the_sqlite_store_keeps_runs_under_a_lease_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    conformance(&SqliteStore::open(&path).unwrap());
    // a second handle (as another process) sees the same lease
    let other = SqliteStore::open(&path).unwrap();
    assert_eq!(
        other.get_run("r3").unwrap().unwrap().lease.unwrap().owner,
        "c"
    );
    assert!(other.claim_run("r3", "d", LONG).unwrap().is_none());
    let fresh = dir.path().join("race.sqlite");
    one_claimant_wins(Arc::new(SqliteStore::open(&fresh).unwrap()));
}

#[test]
fn the_redis_store_keeps_runs_under_a_lease() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("tools-test:{}:{nanos}:runs:", std::process::id());
    conformance(&RedisStore::with_prefix(&url, &prefix).unwrap());
    let race = format!("{prefix}race:");
    one_claimant_wins(Arc::new(RedisStore::with_prefix(&url, &race).unwrap()));
}

/// A store of an application's own that does not keep runs says so.
#[test]
fn a_store_without_runs_refuses_them_with_a_clear_error() {
    struct Bare(MemoryStore);
    // forwards what a store must have and leaves the run methods to their defaults
    impl Store for Bare {
        fn put_pending(
            &self,
            op: &tool_runtime::store::PendingOperation,
        ) -> Result<(), tool_runtime::store::StoreError> {
            self.0.put_pending(op)
        }
        fn get_pending(
            &self,
            id: &str,
        ) -> Result<Option<tool_runtime::store::PendingOperation>, tool_runtime::store::StoreError>
        {
            self.0.get_pending(id)
        }
        fn list_pending(
            &self,
        ) -> Result<Vec<tool_runtime::store::PendingOperation>, tool_runtime::store::StoreError>
        {
            self.0.list_pending()
        }
        fn resolve_pending(
            &self,
            id: &str,
            to: &tool_runtime::store::PendingState,
        ) -> Result<tool_runtime::store::Resolve, tool_runtime::store::StoreError> {
            self.0.resolve_pending(id, to)
        }
        fn complete_pending(
            &self,
            id: &str,
            o: &tool_runtime::executor::Outcome,
        ) -> Result<(), tool_runtime::store::StoreError> {
            self.0.complete_pending(id, o)
        }
        fn list_approved(
            &self,
        ) -> Result<Vec<tool_runtime::store::PendingOperation>, tool_runtime::store::StoreError>
        {
            self.0.list_approved()
        }
        fn scrub_decided(
            &self,
            id: &str,
            s: &tool_runtime::store::Scrubbed,
        ) -> Result<bool, tool_runtime::store::StoreError> {
            self.0.scrub_decided(id, s)
        }
        fn list_unreadable(
            &self,
        ) -> Result<Vec<tool_runtime::store::UnreadableOperation>, tool_runtime::store::StoreError>
        {
            self.0.list_unreadable()
        }
        fn close_unreadable(&self, id: &str) -> Result<bool, tool_runtime::store::StoreError> {
            self.0.close_unreadable(id)
        }
        fn settle_approved(
            &self,
            id: &str,
            o: &tool_runtime::executor::Outcome,
        ) -> Result<tool_runtime::store::Resolve, tool_runtime::store::StoreError> {
            self.0.settle_approved(id, o)
        }
        fn approve_gate(
            &self,
            s: tool_runtime::store::GateScope<'_>,
            t: &str,
        ) -> Result<(), tool_runtime::store::StoreError> {
            self.0.approve_gate(s, t)
        }
        fn is_gate_approved(
            &self,
            s: tool_runtime::store::GateScope<'_>,
            t: &str,
        ) -> Result<bool, tool_runtime::store::StoreError> {
            self.0.is_gate_approved(s, t)
        }
        fn put_journal(
            &self,
            e: &tool_runtime::store::JournalEntry,
        ) -> Result<(), tool_runtime::store::StoreError> {
            self.0.put_journal(e)
        }
        fn get_journal(
            &self,
            id: &str,
        ) -> Result<Option<tool_runtime::store::JournalEntry>, tool_runtime::store::StoreError>
        {
            self.0.get_journal(id)
        }
        fn journal_of_call(
            &self,
            c: &str,
        ) -> Result<Vec<tool_runtime::store::JournalEntry>, tool_runtime::store::StoreError>
        {
            self.0.journal_of_call(c)
        }
        fn claim_undo(&self, id: &str) -> Result<bool, tool_runtime::store::StoreError> {
            self.0.claim_undo(id)
        }
        fn release_undo(&self, id: &str) -> Result<(), tool_runtime::store::StoreError> {
            self.0.release_undo(id)
        }
        fn append_audit(
            &self,
            r: &tool_runtime::executor::AuditRecord,
        ) -> Result<(), tool_runtime::store::StoreError> {
            self.0.append_audit(r)
        }
        fn query_audit(
            &self,
            q: &tool_runtime::executor::ActivityQuery,
        ) -> Result<Vec<tool_runtime::executor::AuditRecord>, tool_runtime::store::StoreError>
        {
            self.0.query_audit(q)
        }
    }
    let err = Bare(MemoryStore::new())
        .save_run(&run("r", "running", None, 1), "a", LONG)
        .unwrap_err();
    assert!(!err.retryable);
    assert!(
        err.message.contains("keeps no agent runs"),
        "{}",
        err.message
    );
    let err = Bare(MemoryStore::new()).started_calls("r").unwrap_err();
    assert!(
        err.message.contains("keeps no call starts"),
        "{}",
        err.message
    );
}
