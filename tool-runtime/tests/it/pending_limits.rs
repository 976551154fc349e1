//! How many operations may wait: a limit per session and one for the whole store, both counted
//! by the store (`Store::count_pending`) without listing what waits.

use crate::executor_support;

use std::sync::Arc;

use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig, Outcome, Preview};
use tool_runtime::store::{
    MemoryStore, PendingCount, PendingOperation, PendingState, RedisStore, SqliteStore, Store,
};
use tool_runtime::{
    CallContext, Credential, ToolCall, ToolSet, definition::Safety, tool::Initiator,
};

fn op(id: &str, session: Option<&str>) -> PendingOperation {
    PendingOperation {
        id: id.into(),
        call_id: id.into(),
        tool: "delete_note".into(),
        arguments: json!({}),
        preview: Preview {
            call_id: id.into(),
            tool: "delete_note".into(),
            intent: String::new(),
            category: Safety::Modify,
            arguments: json!({}),
            reversible: false,
            change: None,
            first_use: None,
        },
        correlation_id: "corr".into(),
        session: session.map(str::to_owned),
        initiator: Initiator::Model,
        credential: None,
        created_ms: 1,
        state: PendingState::Pending,
    }
}

fn count(total: usize, session: usize) -> PendingCount {
    PendingCount {
        total,
        session,
        credential: 0,
    }
}

fn of(credential: &str) -> Option<Credential> {
    Some(Credential::new(credential))
}

/// Parking counts an operation in, for the store and its session; a decision or closing it
/// counts it out, once.
fn counts_follow_parking_and_decisions(s: &dyn Store) {
    assert_eq!(s.count_pending(Some("a"), None).unwrap(), count(0, 0));
    s.put_pending(&op("op-1", Some("a"))).unwrap();
    s.put_pending(&op("op-2", Some("a"))).unwrap();
    s.put_pending(&op("op-3", Some("b"))).unwrap();
    s.put_pending(&op("op-4", None)).unwrap();
    // parking the same operation again does not count it twice
    s.put_pending(&op("op-4", None)).unwrap();
    assert_eq!(s.count_pending(Some("a"), None).unwrap(), count(4, 2));
    assert_eq!(s.count_pending(Some("b"), None).unwrap(), count(4, 1));
    assert_eq!(s.count_pending(None, None).unwrap(), count(4, 1));
    assert_eq!(s.count_pending(Some("c"), None).unwrap(), count(4, 0));

    let denied = PendingState::Denied {
        reason: "no".into(),
    };
    s.resolve_pending("op-1", &denied).unwrap();
    s.resolve_pending("op-1", &denied).unwrap();
    let approved = PendingState::Approved {
        edited: None,
        approved_ms: 1,
    };
    s.resolve_pending("op-4", &approved).unwrap();
    assert_eq!(s.count_pending(Some("a"), None).unwrap(), count(2, 1));
    assert_eq!(s.count_pending(None, None).unwrap(), count(2, 0));
}

/// Operations are counted by credential across their sessions; a call without a credential is
/// counted in no credential's share, and asking about none counts 0.
fn counts_by_credential(s: &dyn Store) {
    for (id, session, credential) in [
        ("op-1", "a", "agent"),
        ("op-2", "b", "agent"),
        ("op-3", "c", "host"),
    ] {
        let mut o = op(id, Some(session));
        o.credential = of(credential);
        s.put_pending(&o).unwrap();
    }
    s.put_pending(&op("op-4", Some("a"))).unwrap();
    let agent = |s: &dyn Store, session| s.count_pending(Some(session), of("agent").as_ref());
    let expect = |total, session, credential| PendingCount {
        total,
        session,
        credential,
    };
    assert_eq!(agent(s, "a").unwrap(), expect(4, 2, 2));
    assert_eq!(agent(s, "new").unwrap(), expect(4, 0, 2));
    let host = s.count_pending(Some("c"), of("host").as_ref()).unwrap();
    assert_eq!(host, expect(4, 1, 1));
    assert_eq!(s.count_pending(Some("a"), None).unwrap(), expect(4, 2, 0));

    let denied = PendingState::Denied {
        reason: "no".into(),
    };
    s.resolve_pending("op-2", &denied).unwrap();
    s.resolve_pending("op-2", &denied).unwrap();
    assert_eq!(agent(s, "new").unwrap(), expect(3, 0, 1));
    let approved = PendingState::Approved {
        edited: None,
        approved_ms: 1,
    };
    s.resolve_pending("op-1", &approved).unwrap();
    assert_eq!(agent(s, "new").unwrap(), expect(2, 0, 0));
}

/// A page of what waits is the same slice of the whole listing, oldest first, past decisions.
fn pages_are_slices_of_the_listing(s: &dyn Store) {
    for i in 0..7u64 {
        let mut o = op(&format!("op-{i}"), None);
        o.created_ms = 10 + i;
        s.put_pending(&o).unwrap();
    }
    let denied = PendingState::Denied {
        reason: "no".into(),
    };
    s.resolve_pending("op-2", &denied).unwrap();
    let ids = |ops: Vec<PendingOperation>| ops.into_iter().map(|o| o.id).collect::<Vec<_>>();
    let all = ids(s.list_pending().unwrap());
    assert_eq!(all, ["op-0", "op-1", "op-3", "op-4", "op-5", "op-6"]);
    assert_eq!(ids(s.list_pending_page(0, 4).unwrap()), all[..4]);
    assert_eq!(ids(s.list_pending_page(4, 4).unwrap()), all[4..]);
    assert!(s.list_pending_page(6, 4).unwrap().is_empty());
    assert!(
        s.list_pending_page(usize::MAX, usize::MAX)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn memory_counts_what_waits() {
    counts_follow_parking_and_decisions(&MemoryStore::new());
    counts_by_credential(&MemoryStore::new());
    pages_are_slices_of_the_listing(&MemoryStore::new());
}

#[test]
fn sqlite_counts_what_waits() {
    counts_follow_parking_and_decisions(&SqliteStore::open_in_memory().unwrap());
    counts_by_credential(&SqliteStore::open_in_memory().unwrap());
    pages_are_slices_of_the_listing(&SqliteStore::open_in_memory().unwrap());
}

#[test]
fn redis_counts_what_waits() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let prefix = format!("tools-test:{}:pending-count:", std::process::id());
    counts_follow_parking_and_decisions(&RedisStore::with_prefix(&url, &prefix).unwrap());
    let prefix = format!("tools-test:{}:pending-credential:", std::process::id());
    counts_by_credential(&RedisStore::with_prefix(&url, &prefix).unwrap());
    let prefix = format!("tools-test:{}:pending-page:", std::process::id());
    pages_are_slices_of_the_listing(&RedisStore::with_prefix(&url, &prefix).unwrap());
}

/// A file written before operations were counted by session and credential: its waiting
/// operations are counted once it is opened.
#[test]
fn a_sqlite_file_without_the_count_columns_is_migrated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch(
        "CREATE TABLE pending (id TEXT PRIMARY KEY, state TEXT NOT NULL, \
         created_ms INTEGER NOT NULL, data TEXT NOT NULL);",
    )
    .unwrap();
    for (id, session) in [("op-1", Some("a")), ("op-2", Some("a")), ("op-3", None)] {
        let mut o = op(id, session);
        o.credential = of("agent").filter(|_| id != "op-3");
        old.execute(
            "INSERT INTO pending (id, state, created_ms, data) VALUES (?1, 'pending', 1, ?2)",
            [id, &serde_json::to_string(&o).unwrap()],
        )
        .unwrap();
    }
    drop(old);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.count_pending(Some("a"), None).unwrap(), count(3, 2));
    assert_eq!(store.count_pending(None, None).unwrap(), count(3, 1));
    let agent = store.count_pending(None, of("agent").as_ref()).unwrap();
    assert_eq!((agent.total, agent.credential), (3, 2));
    // a second handle finds it migrated
    let again = SqliteStore::open(&path).unwrap();
    assert_eq!(again.count_pending(Some("a"), None).unwrap(), count(3, 2));
}

fn executor(store: Arc<dyn Store>, config: ExecutorConfig) -> Executor {
    let mut set = ToolSet::new();
    echo(
        &mut set,
        def("delete_node", Safety::Modify),
        &Counter::default(),
    );
    Executor::builder(set)
        .config(config)
        .store(store)
        .confirmation(Deferred)
        .build()
        .unwrap()
}

async fn call_in(exec: &Executor, session: &str) -> Outcome {
    call_as(exec, session, None).await
}

async fn call_as(exec: &Executor, session: &str, credential: Option<Credential>) -> Outcome {
    let call = ToolCall::new(session, "delete_node", json!({"text": session}));
    let cx = CallContext {
        session: Some(session.into()),
        credential,
        ..CallContext::new(session)
    };
    exec.call(&call, cx).await.outcome
}

/// A credential opening a new session for every call is held at its share, below the store's
/// limit, and the other credentials' calls still park; calls without one are held only by the
/// store's limit.
#[tokio::test]
async fn a_credential_cannot_park_past_its_share_with_new_sessions() {
    let exec = executor(
        Arc::new(MemoryStore::new()),
        ExecutorConfig {
            max_pending: 5,
            max_pending_per_credential: 2,
            ..quick()
        },
    );
    for i in 0..2 {
        let parked = call_as(&exec, &format!("a{i}"), of("agent")).await;
        assert!(matches!(parked, Outcome::Pending { .. }), "{parked:?}");
    }
    let refused = call_as(&exec, "a2", of("agent")).await;
    let error = refused.error().expect("refused, not parked");
    assert_eq!(error.code.as_str(), "TOO_MANY_PENDING");
    assert_eq!(error.details["which"], "max_pending_per_credential");
    assert_eq!(error.details["limit"], 2);
    assert!(matches!(
        call_as(&exec, "h0", of("host")).await,
        Outcome::Pending { .. }
    ));
    for i in 0..2 {
        let parked = call_in(&exec, &format!("n{i}")).await;
        assert!(matches!(parked, Outcome::Pending { .. }), "{parked:?}");
    }
    let full = call_in(&exec, "n2").await;
    assert_eq!(full.error().unwrap().details["which"], "max_pending");
    let waiting = exec.pending().unwrap();
    assert_eq!(waiting.len(), 5);
    let agents = waiting.iter().filter(|o| o.credential == of("agent"));
    assert_eq!(agents.count(), 2, "each operation records its credential");
}

/// A client opening a new session for every call is held by the store-wide limit; a decision
/// makes room again.
#[tokio::test]
async fn a_new_session_per_call_cannot_park_past_the_store_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("state.sqlite3")).unwrap());
    let exec = executor(
        store,
        ExecutorConfig {
            max_pending: 3,
            max_pending_per_session: 2,
            ..quick()
        },
    );
    let mut parked = Vec::new();
    for i in 0..3 {
        match call_in(&exec, &format!("s{i}")).await {
            Outcome::Pending { operation_id, .. } => parked.push(operation_id),
            other => panic!("not parked: {other:?}"),
        }
    }
    let refused = call_in(&exec, "s3").await;
    let error = refused.error().expect("refused, not parked");
    assert_eq!(error.code.as_str(), "TOO_MANY_PENDING");
    assert!(error.retryable);
    assert_eq!(error.details["limit"], 3);
    assert_eq!(error.details["which"], "max_pending");
    assert_eq!(exec.pending().unwrap().len(), 3, "nothing more parked");

    exec.deny(&parked[0], None).unwrap();
    assert!(matches!(
        call_in(&exec, "s4").await,
        Outcome::Pending { .. }
    ));
    // the session limit still applies, and says so
    let exec = executor(
        Arc::new(MemoryStore::new()),
        ExecutorConfig {
            max_pending_per_session: 1,
            ..quick()
        },
    );
    assert!(matches!(call_in(&exec, "s").await, Outcome::Pending { .. }));
    let refused = call_in(&exec, "s").await;
    let error = refused.error().expect("refused");
    assert_eq!(error.details["which"], "max_pending_per_session");
    assert_eq!(error.details["limit"], 1);
}
