//! A call whose future is dropped before it finished (its caller stopped waiting) leaves exactly
//! one audit record, status `cancelled`, saying who stopped it; a call that finishes leaves only
//! its own record.

use crate::executor_support;

use std::sync::Arc;
use std::time::Duration;

use executor_support::*;
use futures::future::BoxFuture;
use serde_json::json;
use tool_runtime::executor::{
    ActivityQuery, Answer, AuditRecord, ConfirmationRequest, Decider, Decision, Executor,
    ExecutorConfig, FnConfirmer, Status,
};
use tool_runtime::host::{CallHost, Host};
use tool_runtime::store::{MemoryStore, SqliteStore, Store};
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety};

/// A read-only tool that takes `ms` and counts the bodies that finished.
fn slow_tools(finished: &Counter) -> ToolSet {
    let mut set = ToolSet::new();
    let f = finished.clone();
    add(
        &mut set,
        def("slow", Safety::ReadOnly),
        &Counter::default(),
        move |args, _| {
            let f = f.clone();
            async move {
                sleep_ms(args["ms"].as_u64().unwrap_or(0)).await;
                f.hit();
                Ok(json!("done"))
            }
        },
    );
    add(
        &mut set,
        def("write", Safety::Create),
        &Counter::default(),
        |_, _| async { Ok(json!("written")) },
    );
    set
}

fn build(set: ToolSet, store: Arc<dyn Store>, confirm: Option<FnConfirmer<Asker>>) -> Executor {
    let mut cfg = ExecutorConfig {
        confirmation_timeout_ms: 60_000,
        ..quick()
    };
    cfg.cache.enabled = false;
    let b = Executor::builder(set).config(cfg).store(store);
    match confirm {
        Some(c) => b.confirmation(c),
        None => b,
    }
    .build()
    .unwrap()
}

type Asker = fn(ConfirmationRequest) -> BoxFuture<'static, Answer>;

/// A person who never answers.
fn never_answers(_: ConfirmationRequest) -> BoxFuture<'static, Answer> {
    Box::pin(std::future::pending())
}

/// The store's records, once `n` are there (a dropped call's record is written off the dropping
/// thread when the store blocks), and after a moment more so that a second one would show.
async fn records(exec: &Executor, n: usize) -> Vec<AuditRecord> {
    for _ in 0..200 {
        let got = exec.activity(&ActivityQuery::default()).unwrap();
        if got.len() >= n {
            break;
        }
        sleep_ms(10).await;
    }
    sleep_ms(100).await;
    exec.activity(&ActivityQuery::default()).unwrap()
}

async fn dropped_mid_call_is_recorded_once(store: Arc<dyn Store>) {
    let finished = Counter::default();
    let exec = build(slow_tools(&finished), store, None);
    let call = ToolCall::new("c-1", "slow", json!({"ms": 5_000}));
    let stopped = tokio::time::timeout(
        Duration::from_millis(100),
        exec.call(&call, CallContext::new("s")),
    )
    .await;
    assert!(stopped.is_err(), "the call was still running when dropped");
    let got = records(&exec, 1).await;
    assert_eq!(got.len(), 1, "exactly one record: {got:?}");
    let r = &got[0];
    assert_eq!(r.call_id.as_str(), "c-1");
    assert_eq!(r.tool, "slow");
    assert_eq!(r.status, Status::Cancelled);
    assert_eq!(r.cancelled_by.as_deref(), Some("the caller"));
    assert_eq!(
        (r.decision, r.decided_by),
        (Decision::Allowed, Decider::Policy)
    );
    assert_eq!(r.error_code, None);
    assert!(
        r.result_summary
            .as_deref()
            .unwrap()
            .contains("cancelled by the caller"),
        "{r:?}"
    );
    assert!(r.duration_us >= 100_000, "{}", r.duration_us);
    sleep_ms(50).await;
    assert_eq!(finished.get(), 0, "the body was cancelled with the call");

    // a call that finishes has its own record only
    let done = exec
        .call(
            &ToolCall::new("c-2", "slow", json!({"ms": 1})),
            CallContext::new("s"),
        )
        .await;
    assert!(done.outcome.is_success());
    let got = records(&exec, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].call_id.as_str(), "c-2");
    assert_eq!(got[0].status, Status::Success);
    assert_eq!(got[0].cancelled_by, None);
}

#[tokio::test]
async fn a_call_dropped_mid_way_leaves_one_cancelled_record_in_memory() {
    dropped_mid_call_is_recorded_once(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_mid_way_leaves_one_cancelled_record_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("a.db")).unwrap();
    dropped_mid_call_is_recorded_once(Arc::new(store)).await;
    // and it is on disk, for the next process
    let reopened = SqliteStore::open(dir.path().join("a.db")).unwrap();
    let got = reopened.query_audit(&ActivityQuery::default()).unwrap();
    assert_eq!(
        got.iter().filter(|r| r.status == Status::Cancelled).count(),
        1
    );
}

#[tokio::test]
async fn a_call_dropped_while_the_person_is_asked_is_recorded_as_unanswered() {
    let exec = build(
        slow_tools(&Counter::default()),
        Arc::new(MemoryStore::new()),
        Some(FnConfirmer(never_answers as Asker)),
    );
    let call = ToolCall::new("c-3", "write", json!({}));
    let stopped = tokio::time::timeout(
        Duration::from_millis(50),
        exec.call(&call, CallContext::new("s")),
    )
    .await;
    assert!(stopped.is_err());
    let got = records(&exec, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].status, Status::Cancelled);
    assert_eq!(got[0].decision, Decision::Unanswered);
}

/// A host that knows the call was cancelled by its client.
struct CancellingClient;

impl CallHost for CancellingClient {
    fn cancelled_by(&self) -> Option<String> {
        Some("the client".to_owned())
    }
}

#[tokio::test]
async fn the_host_names_who_cancelled() {
    let exec = build(
        slow_tools(&Counter::default()),
        Arc::new(MemoryStore::new()),
        None,
    );
    let mut cx = CallContext::new("s");
    cx.host = Some(Host::new(CancellingClient));
    let call = ToolCall::new("c-4", "slow", json!({"ms": 5_000}));
    let _ = tokio::time::timeout(Duration::from_millis(50), exec.call(&call, cx)).await;
    let got = records(&exec, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].cancelled_by.as_deref(), Some("the client"));
}
