//! One conformance suite for every [`Store`]: memory, SQLite (a real file in a temporary
//! directory) and Redis. Each case takes a backend that can open several handles on the same
//! store (for SQLite: several connections to the file; for Redis: several connections under one
//! key prefix; for memory: the same store), so that "another process" is a real second handle.
//!
//! Redis runs when `TOOL_RUNTIME_TEST_REDIS_URL` names a server (e.g. `redis://127.0.0.1:6379/`).
//! Without it the Redis cases are skipped with the reason printed, except under CI (`CI` set),
//! where a missing server is a failure.

use crate::executor_support;

use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use executor_support::*;
use serde_json::json;
use tool_runtime::display::change_lines;
use tool_runtime::executor::{
    ActivityQuery, AuditRecord, Change, Decision, Deferred, Executor, ExecutorConfig, Outcome,
    Preview, StoreConfig, StoreKind,
};
use tool_runtime::store::{
    GateScope, InverseCall, JournalEntry, MemoryStore, PendingOperation, PendingState, RedisStore,
    Resolve, SqliteStore, Store,
};
use tool_runtime::{
    CallContext, ToolCall, ToolError, ToolSet, definition::Safety, tool::Initiator,
};

/// A store under test: opens handles on one and the same store.
enum Backend {
    Memory(Arc<MemoryStore>),
    /// The directory is kept (and removed) with the backend.
    Sqlite(#[allow(dead_code)] tempfile::TempDir, PathBuf),
    Redis {
        url: String,
        prefix: String,
    },
}

impl Backend {
    fn memory() -> Self {
        Backend::Memory(Arc::new(MemoryStore::new()))
    }

    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite3");
        Backend::Sqlite(dir, path)
    }

    /// `None` (skipped) without a server, except under CI.
    fn redis(case: &str) -> Option<Self> {
        let url = test_support::redis_url()?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let prefix = format!("tools-conformance:{}:{nanos}:{case}:", std::process::id());
        Some(Backend::Redis { url, prefix })
    }

    /// A new handle on the store (a new connection, as another process would have).
    fn open(&self) -> Arc<dyn Store> {
        match self {
            Backend::Memory(m) => m.clone(),
            Backend::Sqlite(_, path) => Arc::new(SqliteStore::open(path).unwrap()),
            Backend::Redis { url, prefix } => {
                Arc::new(RedisStore::with_prefix(url, prefix).expect("the redis server answers"))
            }
        }
    }

    /// The same store, named by configuration (what `ExecutorBuilder` opens by default).
    fn config(&self) -> Option<StoreConfig> {
        match self {
            Backend::Memory(_) => None,
            Backend::Sqlite(_, path) => Some(StoreConfig::sqlite(path)),
            Backend::Redis { url, prefix } => Some(StoreConfig {
                prefix: prefix.clone(),
                ..StoreConfig::redis(url.clone())
            }),
        }
    }
}

fn op(id: &str, created_ms: u64) -> PendingOperation {
    PendingOperation {
        id: id.into(),
        call_id: format!("call-{id}").into(),
        tool: "delete_note".into(),
        arguments: json!({"text": id}),
        preview: Preview {
            call_id: format!("call-{id}").into(),
            tool: "delete_note".into(),
            intent: format!("Delete {id}"),
            category: Safety::Modify,
            arguments: json!({"text": id}),
            reversible: false,
            change: None,
            first_use: None,
        },
        correlation_id: "corr".into(),
        session: Some("s".into()),
        initiator: Initiator::Model,
        credential: None,
        created_ms,
        state: PendingState::Pending,
    }
}

fn approved() -> PendingState {
    PendingState::Approved {
        edited: None,
        approved_ms: 1,
    }
}

fn ids(ops: &[PendingOperation]) -> Vec<&str> {
    ops.iter().map(|o| o.id.as_str()).collect()
}

fn pending_operations(b: &Backend) {
    let s = b.open();
    s.put_pending(&op("op-b", 20)).unwrap();
    s.put_pending(&op("op-a", 10)).unwrap();
    s.put_pending(&op("op-c", 30)).unwrap();
    let other = b.open();
    assert_eq!(
        ids(&other.list_pending().unwrap()),
        ["op-a", "op-b", "op-c"]
    );
    assert_eq!(other.get_pending("op-b").unwrap().unwrap(), op("op-b", 20));
    assert_eq!(other.get_pending("op-nope").unwrap(), None);

    // approve: the winner gets the operation as it was; later attempts see the new state
    match other.resolve_pending("op-a", &approved()).unwrap() {
        Resolve::Won(before) => assert_eq!(before.state, PendingState::Pending),
        r => panic!("{r:?}"),
    }
    assert_eq!(
        s.resolve_pending("op-a", &approved()).unwrap(),
        Resolve::AlreadyResolved(approved())
    );
    let denied = PendingState::Denied {
        reason: "keep it".into(),
    };
    assert!(matches!(
        s.resolve_pending("op-b", &denied).unwrap(),
        Resolve::Won(_)
    ));
    assert_eq!(
        other.resolve_pending("op-b", &approved()).unwrap(),
        Resolve::AlreadyResolved(denied.clone())
    );
    assert_eq!(
        s.resolve_pending("op-nope", &approved()).unwrap(),
        Resolve::NotFound
    );
    assert_eq!(ids(&other.list_pending().unwrap()), ["op-c"]);

    // approved and not completed: in doubt, until completed
    assert_eq!(ids(&s.list_approved().unwrap()), ["op-a"]);
    let done = Outcome::Success {
        value: json!({"deleted": "op-a"}),
        truncated: false,
    };
    other.complete_pending("op-a", &done).unwrap();
    assert!(s.list_approved().unwrap().is_empty());
    assert_eq!(
        s.get_pending("op-a").unwrap().unwrap().state,
        PendingState::Completed {
            outcome: Box::new(done)
        }
    );
    assert_eq!(s.get_pending("op-b").unwrap().unwrap().state, denied);
}

fn in_doubt_operations_are_settled_once(b: &Backend) {
    let s = b.open();
    s.put_pending(&op("op-1", 1)).unwrap();
    s.put_pending(&op("op-2", 2)).unwrap();
    let interrupted = Outcome::Error {
        error: Box::new(ToolError::new(
            tool_runtime::ErrorCode::of("INTERRUPTED"),
            "stopped",
        )),
    };
    // a pending operation cannot be settled: it was never approved
    assert_eq!(
        s.settle_approved("op-1", &interrupted).unwrap(),
        Resolve::AlreadyResolved(PendingState::Pending)
    );
    assert_eq!(
        s.settle_approved("op-none", &interrupted).unwrap(),
        Resolve::NotFound
    );
    for id in ["op-1", "op-2"] {
        assert!(matches!(
            s.resolve_pending(id, &approved()).unwrap(),
            Resolve::Won(_)
        ));
    }
    assert_eq!(ids(&b.open().list_approved().unwrap()), ["op-1", "op-2"]);
    // several handles race to settle op-1: one wins
    let winners = race(b, 6, |s| {
        matches!(
            s.settle_approved("op-1", &interrupted).unwrap(),
            Resolve::Won(_)
        )
    });
    assert_eq!(winners, 1);
    assert_eq!(ids(&s.list_approved().unwrap()), ["op-2"]);
    assert!(s.list_pending().unwrap().is_empty());
    assert!(matches!(
        s.get_pending("op-1").unwrap().unwrap().state,
        PendingState::Completed { .. }
    ));
}

/// Runs `f` on `n` threads, each with its own handle, released together; how many returned true.
fn race(b: &Backend, n: usize, f: impl Fn(&dyn Store) -> bool + Sync) -> usize {
    let barrier = Barrier::new(n);
    let handles: Vec<Arc<dyn Store>> = (0..n).map(|_| b.open()).collect();
    std::thread::scope(|scope| {
        let joins: Vec<_> = handles
            .iter()
            .map(|h| {
                let (barrier, f) = (&barrier, &f);
                scope.spawn(move || {
                    barrier.wait();
                    f(&**h)
                })
            })
            .collect();
        joins
            .into_iter()
            .map(|j| j.join().unwrap())
            .filter(|won| *won)
            .count()
    })
}

fn approve_exactly_once_under_concurrency(b: &Backend) {
    let s = b.open();
    for round in 0..5 {
        let id = format!("op-race-{round}");
        s.put_pending(&op(&id, round)).unwrap();
        let winners = race(b, 8, |s| {
            let to = if fastrand::bool() {
                approved()
            } else {
                PendingState::Denied {
                    reason: "no".into(),
                }
            };
            matches!(s.resolve_pending(&id, &to).unwrap(), Resolve::Won(_))
        });
        assert_eq!(winners, 1, "round {round}");
    }
    assert!(s.list_pending().unwrap().is_empty());
}

fn first_time_approvals(b: &Backend) {
    let s = b.open();
    assert!(!s.is_gate_approved(GateScope::Everywhere, "fetch").unwrap());
    assert!(
        !s.is_gate_approved(GateScope::Session("a"), "fetch")
            .unwrap()
    );
    s.approve_gate(GateScope::Session("a"), "fetch").unwrap();
    s.approve_gate(GateScope::Session("a"), "fetch").unwrap(); // idempotent
    let other = b.open();
    assert!(
        other
            .is_gate_approved(GateScope::Session("a"), "fetch")
            .unwrap()
    );
    assert!(
        !other
            .is_gate_approved(GateScope::Session("b"), "fetch")
            .unwrap()
    );
    assert!(
        !other
            .is_gate_approved(GateScope::Session("a"), "post")
            .unwrap()
    );
    assert!(
        !other
            .is_gate_approved(GateScope::Everywhere, "fetch")
            .unwrap()
    );
    other.approve_gate(GateScope::Everywhere, "fetch").unwrap();
    assert!(s.is_gate_approved(GateScope::Everywhere, "fetch").unwrap());
}

fn journal(b: &Backend) {
    let s = b.open();
    let entry = |id: &str, created_ms| JournalEntry {
        id: id.into(),
        call_id: "c1".into(),
        tool: "create_note".into(),
        inverse: InverseCall {
            tool: "delete_note".into(),
            arguments: json!({"id": id}),
        },
        created_ms,
        undone: false,
    };
    let (first, second) = (entry("un-1", 5), entry("un-2", 6));
    assert_eq!(s.get_journal("un-1").unwrap(), None);
    assert_eq!(s.journal_of_call("c1").unwrap(), []);
    s.put_journal(&first).unwrap();
    // a provider reusing the call id does not replace the first entry
    s.put_journal(&second).unwrap();
    let other = b.open();
    assert_eq!(other.get_journal("un-1").unwrap(), Some(first.clone()));
    assert_eq!(
        other.journal_of_call("c1").unwrap(),
        [first.clone(), second.clone()],
        "both, oldest first"
    );
    // an id names one entry for good
    assert!(s.put_journal(&entry("un-1", 7)).is_err());
    assert_eq!(s.get_journal("un-1").unwrap(), Some(first.clone()));
    // claimed once across handles, even when racing
    let winners = race(b, 6, |s| s.claim_undo("un-1").unwrap());
    assert_eq!(winners, 1);
    assert!(s.get_journal("un-1").unwrap().unwrap().undone);
    assert!(
        !s.get_journal("un-2").unwrap().unwrap().undone,
        "only the one claimed"
    );
    assert!(!other.claim_undo("un-1").unwrap());
    // a failed undo is released and can be claimed again
    other.release_undo("un-1").unwrap();
    assert!(!s.get_journal("un-1").unwrap().unwrap().undone);
    assert!(s.claim_undo("un-1").unwrap());
    assert!(!s.claim_undo("unknown").unwrap());
    assert!(!s.claim_undo("c1").unwrap(), "claims go by entry id");
    s.release_undo("unknown").unwrap();
}

fn record(i: u64, tool: &str, who: Initiator, session: Option<&str>, corr: &str) -> AuditRecord {
    AuditRecord {
        timestamp_ms: 1_000 + i,
        correlation_id: corr.into(),
        session: session.map(Into::into),
        tool: tool.to_owned().into(),
        initiator: who,
        duration_us: 10,
        result_summary: Some(format!("r{i}")),
        arguments: Some(json!({"n": i}).into()),
        ..read_only_record(&format!("c{i}"))
    }
}

fn audit_query(b: &Backend) {
    let s = b.open();
    let rows = [
        record(0, "a", Initiator::Model, Some("s1"), "k1"),
        record(1, "b", Initiator::User, Some("s1"), "k1"),
        record(2, "a", Initiator::User, Some("s2"), "k2"),
        record(3, "a", Initiator::System, None, "k2"),
    ];
    for r in &rows {
        s.append_audit(r).unwrap();
    }
    let other = b.open();
    let q = |q: ActivityQuery| -> Vec<String> {
        other
            .query_audit(&q)
            .unwrap()
            .into_iter()
            .map(|r| r.call_id.to_string())
            .collect()
    };
    assert_eq!(q(ActivityQuery::default()), ["c3", "c2", "c1", "c0"]);
    let mut first = other
        .query_audit(&ActivityQuery::default())
        .unwrap()
        .remove(3);
    assert_eq!(first.seq.take(), Some(1), "its place in the trail");
    assert_eq!(first, rows[0], "a record comes back as it was written");
    let by = |f: fn(&mut ActivityQuery)| {
        let mut a = ActivityQuery::default();
        f(&mut a);
        q(a)
    };
    assert_eq!(by(|a| a.tool = Some("a".into())), ["c3", "c2", "c0"]);
    assert_eq!(by(|a| a.correlation_id = Some("k1".into())), ["c1", "c0"]);
    assert_eq!(by(|a| a.initiator = Some(Initiator::User)), ["c2", "c1"]);
    assert_eq!(by(|a| a.session = Some("s1".into())), ["c1", "c0"]);
    assert_eq!(by(|a| a.since_ms = Some(1_002)), ["c3", "c2"]);
    assert_eq!(by(|a| a.limit = Some(2)), ["c3", "c2"]);
    assert_eq!(
        by(|a| {
            a.tool = Some("a".into());
            a.initiator = Some(Initiator::User);
        }),
        ["c2"]
    );
}

/// Reading on from a sequence number: every record after it, oldest first, each once, across
/// more than one page of the store's own reads; paging by absurd amounts answers, never fails.
fn audit_cursor(b: &Backend) {
    let (s, other, n) = (b.open(), b.open(), 1_100u64);
    for i in 0..n {
        let tool = if i % 3 == 0 { "a" } else { "b" };
        s.append_audit(&record(i, tool, Initiator::User, None, "k"))
            .unwrap();
    }
    let read = |q: ActivityQuery| other.query_audit(&q).unwrap();
    let (mut seen, mut cursor) = (Vec::new(), 0);
    loop {
        let page = read(ActivityQuery {
            after: Some(cursor),
            limit: Some(300),
            ..Default::default()
        });
        let Some(last) = page.last() else { break };
        cursor = last.seq.unwrap();
        seen.extend(page.iter().map(|r| r.call_id.to_string()));
    }
    assert_eq!(seen, (0..n).map(|i| format!("c{i}")).collect::<Vec<_>>());
    let newest = read(ActivityQuery::default());
    assert!(newest[0].seq == Some(cursor) && newest.windows(2).all(|w| w[0].seq > w[1].seq));
    let only_a = read(ActivityQuery {
        after: Some(3),
        tool: Some("a".into()),
        limit: Some(usize::MAX),
        ..Default::default()
    });
    assert_eq!(only_a.len() as u64, n / 3, "filters apply after the cursor");
    assert_eq!(only_a[0].call_id.as_str(), "c3");
    assert!(only_a.windows(2).all(|w| w[0].seq < w[1].seq));
    for (after, offset) in [(None, Some(usize::MAX)), (Some(u64::MAX), None)] {
        let q = ActivityQuery {
            after,
            offset,
            ..Default::default()
        };
        assert_eq!(read(q), [], "nothing past the end");
    }
}

/// Through executors: a call parked by one "process", approved by several racing executors on
/// other handles, ran once; the feed has both records. The store is the one the configuration
/// names when the backend has a configured form.
async fn executors_share_the_store(b: &Backend) {
    let counter = Counter::default();
    let build = |store: Arc<dyn Store>| {
        let mut set = ToolSet::new();
        echo(&mut set, def("delete_node", Safety::Modify), &counter);
        Executor::builder(set)
            .config(quick())
            .store(store)
            .confirmation(Deferred)
            .build()
            .unwrap()
    };
    let first = match b.config() {
        Some(store) => {
            let mut set = ToolSet::new();
            echo(&mut set, def("delete_node", Safety::Modify), &counter);
            let cfg = ExecutorConfig { store, ..quick() };
            Executor::builder(set).config(cfg).build().unwrap()
        }
        None => build(b.open()),
    };
    let r = first
        .call(
            &ToolCall::new("x1", "delete_node", json!({"text": "obs"})),
            CallContext {
                correlation_id: "flow".into(),
                ..CallContext::new("")
            },
        )
        .await;
    let Outcome::Pending { operation_id, .. } = r.outcome else {
        panic!("{:?}", r.outcome)
    };
    drop(first);
    let approvers: Vec<_> = (0..6)
        .map(|_| {
            let exec = build(b.open());
            let id = operation_id.clone();
            tokio::spawn(async move { exec.approve(&id).await })
        })
        .collect();
    let mut won = 0;
    for a in approvers {
        match a.await.unwrap() {
            Ok(e) => {
                assert!(e.outcome.is_success());
                won += 1;
            }
            Err(e) => assert_eq!(e.code.as_str(), "ALREADY_RESOLVED"),
        }
    }
    assert_eq!((won, counter.get()), (1, 1));
    let after = build(b.open());
    assert!(after.pending().unwrap().is_empty());
    assert!(after.in_doubt().unwrap().is_empty());
    let feed = after
        .activity(&ActivityQuery {
            correlation_id: Some("flow".into()),
            ..Default::default()
        })
        .unwrap();
    let decisions: Vec<Decision> = feed.iter().map(|r| r.decision).collect();
    assert_eq!(decisions, [Decision::Confirmed, Decision::Deferred]);
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            fn backend(case: &str) -> Option<Backend> {
                let make: fn(&str) -> Option<Backend> = $make;
                make(case)
            }

            #[test]
            fn pending_operations() {
                let Some(b) = backend("pending") else { return };
                super::pending_operations(&b);
            }

            #[test]
            fn in_doubt_operations_are_settled_once() {
                let Some(b) = backend("in_doubt") else { return };
                super::in_doubt_operations_are_settled_once(&b);
            }

            #[test]
            fn approve_exactly_once_under_concurrency() {
                let Some(b) = backend("race") else { return };
                super::approve_exactly_once_under_concurrency(&b);
            }

            #[test]
            fn first_time_approvals() {
                let Some(b) = backend("gates") else { return };
                super::first_time_approvals(&b);
            }

            #[test]
            fn journal() {
                let Some(b) = backend("journal") else { return };
                super::journal(&b);
            }

            #[test]
            fn audit_query() {
                let Some(b) = backend("audit") else { return };
                super::audit_query(&b);
            }

            #[test]
            fn audit_cursor() {
                let Some(b) = backend("cursor") else { return };
                super::audit_cursor(&b);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn executors_share_the_store() {
                let Some(b) = backend("executors") else {
                    return;
                };
                super::executors_share_the_store(&b).await;
            }
        }
    };
}

conformance!(memory, |_| Some(Backend::memory()));
conformance!(sqlite, |_| Some(Backend::sqlite()));
conformance!(redis, Backend::redis);

/// A file whose journal was keyed by call id keeps its entries: each is named by its call id,
/// and undone state carries over.
#[test]
fn a_sqlite_journal_keyed_by_call_id_is_migrated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let entry = |call: &str| {
        json!({"call_id": call, "tool": "create_note", "created_ms": 3, "undone": false,
               "inverse": {"tool": "delete_note", "arguments": {"id": call}}})
        .to_string()
    };
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE journal (call_id TEXT PRIMARY KEY, undone INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL);",
        )
        .unwrap();
        for (call, undone) in [("c1", false), ("c2", true)] {
            old.execute(
                "INSERT INTO journal (call_id, undone, data) VALUES (?1, ?2, ?3)",
                rusqlite::params![call, undone, entry(call)],
            )
            .unwrap();
        }
    }
    let s = SqliteStore::open(&path).unwrap();
    let c1 = s.get_journal("c1").unwrap().expect("kept");
    assert_eq!((c1.id.as_str(), c1.undone), ("c1", false));
    assert!(s.get_journal("c2").unwrap().unwrap().undone);
    assert_eq!(s.journal_of_call("c1").unwrap(), [c1]);
    assert!(s.claim_undo("c1").unwrap());
    // opening again finds nothing left to move
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    assert!(s.get_journal("c1").unwrap().unwrap().undone);
}

/// SQLite only: everything survives closing every handle and opening the file again, and an
/// operation approved after the "restart" runs once.
#[tokio::test]
async fn sqlite_state_survives_a_restart() {
    let b = Backend::sqlite();
    {
        let s = b.open();
        s.put_pending(&op("op-keep", 1)).unwrap();
        s.put_pending(&op("op-doubt", 2)).unwrap();
        assert!(matches!(
            s.resolve_pending("op-doubt", &approved()).unwrap(),
            Resolve::Won(_)
        ));
        s.approve_gate(GateScope::Everywhere, "fetch").unwrap();
        s.put_journal(&JournalEntry {
            id: "un-1".into(),
            call_id: "c1".into(),
            tool: "create_note".into(),
            inverse: InverseCall {
                tool: "delete_note".into(),
                arguments: json!({}),
            },
            created_ms: 1,
            undone: false,
        })
        .unwrap();
        assert!(s.claim_undo("un-1").unwrap());
        s.append_audit(&record(7, "a", Initiator::User, None, "k"))
            .unwrap();
        // every handle closes: the process ends
    }
    let s = b.open();
    assert_eq!(ids(&s.list_pending().unwrap()), ["op-keep"]);
    assert_eq!(
        ids(&s.list_approved().unwrap()),
        ["op-doubt"],
        "still in doubt"
    );
    assert!(s.is_gate_approved(GateScope::Everywhere, "fetch").unwrap());
    assert!(s.get_journal("un-1").unwrap().unwrap().undone);
    assert!(!s.claim_undo("un-1").unwrap());
    assert_eq!(
        s.query_audit(&ActivityQuery::default()).unwrap()[0].call_id,
        "c7"
    );

    // an executor of the "restarted" process approves the kept operation: it runs once
    let counter = Counter::default();
    let mut set = ToolSet::new();
    echo(&mut set, def("delete_note", Safety::Modify), &counter);
    let Backend::Sqlite(_, path) = &b else {
        unreachable!()
    };
    let exec = Executor::builder(set)
        .config(ExecutorConfig {
            store: StoreConfig::sqlite(path),
            ..quick()
        })
        .build()
        .unwrap();
    assert_eq!(
        exec.config().store.kind(),
        StoreKind::Sqlite(path.as_path())
    );
    assert!(exec.approve("op-keep").await.unwrap().outcome.is_success());
    assert!(exec.approve("op-keep").await.is_err());
    // the in-doubt one is not run by an approval
    let err = exec.approve("op-doubt").await.unwrap_err();
    assert_eq!(err.code.as_str(), "ALREADY_RESOLVED");
    assert_eq!(counter.get(), 1);
}

/// A preview whose previewer returned plain JSON, as such previews were stored, still loads
/// next to a typed one, and each is drawn: the typed one as `+`/`-`/`~` lines, the plain one
/// as its JSON.
#[test]
fn a_preview_stored_as_plain_json_still_loads_and_renders() {
    let b = Backend::sqlite();
    let Backend::Sqlite(_, path) = &b else {
        unreachable!()
    };
    let s = b.open();
    let mut typed = op("op-typed", 1);
    typed.preview.change = Some(Change::new().removed("note n2", "call the plumber"));
    s.put_pending(&typed).unwrap();
    s.put_pending(&op("op-plain", 2)).unwrap();
    drop(s);
    let old = json!({"removes": {"id": "n2", "text": null}});
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "UPDATE pending SET data = json_set(data, '$.preview.change', json(?1)) WHERE id = 'op-plain'",
            [old.to_string()],
        )
        .unwrap();
    let s = b.open();
    let plain = s.get_pending("op-plain").unwrap().expect("readable");
    assert_eq!(plain.preview.change, Some(Change::json(old)));
    assert_eq!(
        change_lines(plain.preview.change.as_ref().unwrap()),
        [
            "  {",
            "    \"removes\": {",
            "      \"id\": \"n2\",",
            "      \"text\": null",
            "    }",
            "  }"
        ]
    );
    let typed = s.get_pending("op-typed").unwrap().expect("readable");
    assert_eq!(
        change_lines(typed.preview.change.as_ref().unwrap()),
        ["- note n2: “call the plumber”"]
    );
    assert!(s.list_unreadable().unwrap().is_empty());
}

/// The records in the database file alone (its write-ahead log left out): what a checkpoint
/// copied there. Read from a copy, retried while a checkpoint is writing the file.
fn checkpointed(db: &std::path::Path) -> usize {
    let copy = tempfile::tempdir().unwrap();
    for _ in 0..20 {
        let to = copy.path().join(format!("{}.sqlite3", rand_suffix()));
        std::fs::copy(db, &to).unwrap();
        if let Ok(n) = SqliteStore::open(&to)
            .and_then(|s| s.query_audit(&ActivityQuery::default()))
            .map(|r| r.len())
        {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no consistent copy of {}", db.display());
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Polls `f` for up to 5 s until it answers `want`; the last answer.
fn within_seconds(want: usize, f: impl Fn() -> usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let got = f();
        if got == want || std::time::Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn sqlite_commits_reach_the_file_by_a_checkpoint_of_its_own_and_the_last_ones_when_it_closes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let store = SqliteStore::open(&db).unwrap();
    // far below the 1,000 pages at which a commit would checkpoint the log itself
    for i in 0..50 {
        store
            .append_audit(&record(i, "a", Initiator::Model, None, "k"))
            .unwrap();
    }
    assert_eq!(within_seconds(50, || checkpointed(&db)), 50);
    for i in 50..55 {
        store
            .append_audit(&record(i, "a", Initiator::Model, None, "k"))
            .unwrap();
    }
    drop(store);
    assert_eq!(within_seconds(55, || checkpointed(&db)), 55);
}
