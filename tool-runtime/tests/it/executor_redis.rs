//! The Redis store against a real server: set `TOOL_RUNTIME_TEST_REDIS_URL`
//! (e.g. `redis://127.0.0.1:6379/`); without it the tests print why they are skipped, except
//! under CI (`CI` set), where they fail. The store conformance suite (`executor_store.rs`) runs
//! against Redis too.

use crate::executor_support;

use std::sync::Arc;

use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{ActivityQuery, Deferred, Executor, Outcome};
use tool_runtime::store::{GateScope, InverseCall, JournalEntry, RedisStore, Store};
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety};

const VAR: &str = "TOOL_RUNTIME_TEST_REDIS_URL";

/// A store on the test server under a prefix unique to this test run.
fn store(prefix: &str) -> Option<RedisStore> {
    let url = test_support::redis_url()?;
    Some(
        RedisStore::with_prefix(&url, prefix)
            .expect("the redis server in TOOL_RUNTIME_TEST_REDIS_URL answers"),
    )
}

fn prefix(test: &str) -> String {
    format!(
        "tools-test:{}:{}:{test}:",
        std::process::id(),
        fastrand_suffix()
    )
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn process(store: RedisStore, counter: &Counter) -> Executor {
    let mut set = ToolSet::new();
    echo(&mut set, def("delete_node", Safety::Modify), counter);
    Executor::builder(set)
        .config(quick())
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pending_operations_shared_through_redis_run_exactly_once() {
    let p = prefix("pending");
    let Some(first) = store(&p) else { return };
    let counter = Counter::default();
    let exec = process(first, &counter);
    let r = exec
        .call(
            &ToolCall::new("c1", "delete_node", json!({"text": "obs-1"})),
            CallContext::new(""),
        )
        .await;
    let Outcome::Pending { operation_id, .. } = r.outcome else {
        panic!("{:?}", r.outcome)
    };
    drop(exec);
    let listed = process(store(&p).unwrap(), &counter).pending().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, operation_id);
    let approvers: Vec<_> = (0..6)
        .map(|_| {
            let exec = process(store(&p).unwrap(), &counter);
            let id = operation_id.clone();
            tokio::spawn(async move { exec.approve(&id).await })
        })
        .collect();
    let mut won = 0;
    for a in approvers {
        if a.await.unwrap().is_ok() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
    assert_eq!(counter.get(), 1);
    let after = process(store(&p).unwrap(), &counter);
    assert!(after.pending().unwrap().is_empty());
    assert_eq!(
        after
            .activity(&ActivityQuery {
                correlation_id: Some("c1".into()),
                ..Default::default()
            })
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn gates_and_the_undo_journal_round_trip() {
    let p = prefix("gates");
    let Some(s) = store(&p) else { return };
    assert!(!s.is_gate_approved(GateScope::Everywhere, "fetch").unwrap());
    s.approve_gate(GateScope::Session("a"), "fetch").unwrap();
    assert!(
        s.is_gate_approved(GateScope::Session("a"), "fetch")
            .unwrap()
    );
    assert!(
        !s.is_gate_approved(GateScope::Session("b"), "fetch")
            .unwrap()
    );
    let entry = JournalEntry {
        id: "un-1".into(),
        call_id: "c1".into(),
        tool: "create_note".into(),
        inverse: InverseCall {
            tool: "delete_note".into(),
            arguments: json!({"id": "n1"}),
        },
        created_ms: 1,
        undone: false,
    };
    s.put_journal(&entry).unwrap();
    assert_eq!(s.get_journal("un-1").unwrap(), Some(entry.clone()));
    assert!(s.claim_undo("un-1").unwrap());
    assert!(!s.claim_undo("un-1").unwrap());
    assert!(s.get_journal("un-1").unwrap().unwrap().undone);
    s.release_undo("un-1").unwrap();
    assert!(s.claim_undo("un-1").unwrap());

    // an entry written when entries were keyed by call id (no id field) is named by its call id
    let url = std::env::var(VAR).unwrap();
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut legacy = serde_json::to_value(&entry).unwrap();
    legacy.as_object_mut().unwrap().remove("id");
    legacy["call_id"] = json!("c-old");
    let _: () = redis::cmd("SET")
        .arg(format!("{p}journal:c-old"))
        .arg(legacy.to_string())
        .query(&mut raw)
        .unwrap();
    let old = s.get_journal("c-old").unwrap().expect("still found");
    assert_eq!((old.id.as_str(), old.undone), ("c-old", false));
    assert!(s.claim_undo("c-old").unwrap());
    assert!(!s.claim_undo("unknown").unwrap());
}

/// An audit key of the wrong type (something else wrote there): the call still happens, and the
/// execution says its record was lost instead of the loss passing in silence.
#[tokio::test]
async fn an_audit_record_that_cannot_be_written_is_reported_with_the_execution() {
    let p = prefix("audit-type");
    let Some(store) = store(&p) else { return };
    let url = std::env::var(VAR).unwrap();
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{p}audit"))
        .arg("not a list")
        .query(&mut conn)
        .unwrap();
    let counter = Counter::default();
    let mut set = ToolSet::new();
    echo(&mut set, def("read_node", Safety::ReadOnly), &counter);
    let exec = Executor::builder(set)
        .config(quick())
        .store(Arc::new(store))
        .build()
        .unwrap();
    let r = exec
        .call(
            &ToolCall::new("c1", "read_node", json!({"text": "n1"})),
            CallContext::new(""),
        )
        .await;
    assert!(r.outcome.is_success(), "the tool ran: {:?}", r.outcome);
    assert_eq!(counter.get(), 1);
    let failure = r.audit_failure.expect("the lost record is reported");
    assert!(
        failure.contains("c1") && failure.contains("WRONGTYPE"),
        "{failure}"
    );
    let _: () = redis::cmd("DEL")
        .arg(format!("{p}audit"))
        .query(&mut conn)
        .unwrap();
}

/// Two executors on one Redis (two replicas) share one rate-limit budget: a limit of 3 calls a
/// minute admits 3 calls in all, not 3 each, and the refusals say when to come back.
#[tokio::test]
async fn rate_limits_hold_across_executors_sharing_redis() {
    let p = prefix("rate");
    let (Some(a), Some(b)) = (store(&p), store(&p)) else {
        return;
    };
    let counter = Counter::default();
    let replica = |store: RedisStore| {
        let mut set = ToolSet::new();
        echo(&mut set, def("lookup", Safety::ReadOnly), &counter);
        let mut cfg = quick();
        cfg.cache.enabled = false;
        cfg.rate_limits.tools.insert(
            "lookup".into(),
            tool_runtime::executor::Window::per_minute(3),
        );
        Executor::builder(set)
            .config(cfg)
            .store(Arc::new(store))
            .build()
            .unwrap()
    };
    let (a, b) = (replica(a), replica(b));
    let mut admitted = 0;
    let mut refused = Vec::new();
    for i in 0..8 {
        let exec = if i % 2 == 0 { &a } else { &b };
        let r = exec
            .call(
                &ToolCall::new(format!("c{i}"), "lookup", json!({"n": i})),
                CallContext::new(format!("c{i}")),
            )
            .await;
        match r.outcome {
            Outcome::Success { .. } => admitted += 1,
            Outcome::Error { error } => refused.push(error),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(admitted, 3, "one budget for both replicas");
    assert_eq!(counter.get(), 3);
    assert_eq!(refused.len(), 5);
    for e in &refused {
        assert_eq!(e.code, tool_runtime::ErrorCode::RATE_LIMITED, "{e:?}");
        let ms = e.details["retry_after_ms"].as_u64().unwrap();
        assert!(ms > 0 && ms <= 60_000, "{ms}");
    }
}

#[test]
fn live_entries_expire_one_by_one_and_one_taker_gets_each() {
    let Some(a) = store(&prefix("live")) else {
        return;
    };
    let short = std::time::Duration::from_millis(300);
    let long = std::time::Duration::from_secs(60);
    assert!(a.put_live("questions", "q-1", "first", long).unwrap());
    assert!(a.put_live("questions", "q-2", "second", short).unwrap());
    assert!(a.put_live("running", "c-1", "other board", long).unwrap());
    let mut listed = a.list_live("questions").unwrap();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("q-1".into(), "first".into()),
            ("q-2".into(), "second".into())
        ]
    );
    // renewed and replaced
    assert!(
        a.put_live("questions", "q-1", "first, again", long)
            .unwrap()
    );
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(
        a.list_live("questions").unwrap(),
        [("q-1".to_owned(), "first, again".to_owned())]
    );
    assert_eq!(a.take_live("questions", "q-2").unwrap(), None, "expired");
    assert_eq!(
        a.take_live("questions", "q-1").unwrap().as_deref(),
        Some("first, again")
    );
    assert_eq!(a.take_live("questions", "q-1").unwrap(), None, "taken once");
    assert!(a.list_live("questions").unwrap().is_empty());
    assert_eq!(a.list_live("running").unwrap().len(), 1);
}
