//! Deferred confirmation with a real SQLite file: a pending operation approved after a restart
//! runs exactly once, and concurrent approvers cannot both run it.

use crate::executor_support;

use std::path::Path;
use std::sync::Arc;

use executor_support::*;
use serde_json::json;
use tool_runtime::executor::{
    ActivityQuery, Decider, Decision, Deferred, Executor, ExecutorConfig, Outcome, Status,
};
use tool_runtime::store::{PendingState, SqliteStore};
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, ToolSet, definition::Safety, tool::Initiator,
};

fn toolset(counter: &Counter) -> ToolSet {
    let mut set = ToolSet::new();
    let mut d = def("delete_node", Safety::Modify);
    d.intent = Some("Delete the node {text}".into());
    echo(&mut set, d, counter);
    set
}

/// A fresh process's view: a new store handle on the file and a new executor.
fn process(path: &Path, counter: &Counter) -> Executor {
    Executor::builder(toolset(counter))
        .config(quick())
        .store(Arc::new(SqliteStore::open(path).unwrap()))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

fn cx() -> CallContext {
    CallContext {
        correlation_id: "req-1".into(),
        session: Some("s1".into()),
        initiator: Initiator::Model,
        ..CallContext::new("c1")
    }
}

async fn park(exec: &Executor) -> String {
    let r = exec
        .call(
            &ToolCall::new("c1", "delete_node", json!({"text": "obs-123"})),
            cx(),
        )
        .await;
    match r.outcome {
        Outcome::Pending {
            operation_id,
            preview,
        } => {
            assert_eq!(preview.intent, "Delete the node \u{201c}obs-123\u{201d}");
            assert_eq!(preview.tool, "delete_node");
            assert!(operation_id.starts_with("op-"));
            operation_id
        }
        other => panic!("not pending: {other:?}"),
    }
}

#[tokio::test]
async fn approved_after_a_restart_runs_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let id = {
        let first = process(&path, &counter);
        let id = park(&first).await;
        assert_eq!(first.pending().unwrap().len(), 1);
        id
        // the first process ends here
    };
    assert_eq!(counter.get(), 0, "nothing ran before approval");

    let second = process(&path, &counter);
    let pending = second.pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    assert_eq!(pending[0].arguments, json!({"text": "obs-123"}));
    let exec = second.approve(&id).await.unwrap();
    assert_eq!(exec.call_id, "c1");
    assert_eq!(exec.value(), Some(&json!({"echo": {"text": "obs-123"}})));
    assert_eq!(counter.get(), 1);

    // approving again, here or in a third process, does not run it again
    let err = second.approve(&id).await.unwrap_err();
    assert_eq!(err.code.as_str(), "ALREADY_RESOLVED");
    let third = process(&path, &counter);
    assert!(third.approve(&id).await.is_err());
    assert!(third.deny(&id, None).is_err());
    assert_eq!(counter.get(), 1);
    assert!(third.pending().unwrap().is_empty());
    match third.pending_operation(&id).unwrap().unwrap().state {
        PendingState::Completed { outcome } => assert!(outcome.is_success()),
        other => panic!("{other:?}"),
    }

    // the activity feed, read from the file, has the deferral and the approved run
    let feed = third
        .activity(&ActivityQuery {
            correlation_id: Some("req-1".into()),
            ..Default::default()
        })
        .unwrap();
    let summary: Vec<(Decision, Status, Decider)> = feed
        .iter()
        .map(|r| (r.decision, r.status, r.decided_by))
        .collect();
    assert_eq!(
        summary,
        [
            (Decision::Confirmed, Status::Success, Decider::User),
            (Decision::Deferred, Status::Pending, Decider::Policy),
        ]
    );
    assert!(
        feed.iter()
            .all(|r| r.operation_id.as_deref() == Some(id.as_str()))
    );
    assert!(feed.iter().all(|r| r.initiator == Initiator::Model));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_approvals_from_separate_handles_run_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    for _round in 0..5 {
        let id = park(&process(&path, &counter)).await;
        let before = counter.get();
        let approvers: Vec<_> = (0..6)
            .map(|_| {
                let exec = process(&path, &counter);
                let id = id.clone();
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
        assert_eq!(won, 1);
        assert_eq!(counter.get(), before + 1);
    }
}

#[tokio::test]
async fn denial_by_id_is_a_denial_for_the_model_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = process(&path, &counter);
    let id = park(&exec).await;
    let denied = process(&path, &counter)
        .deny(&id, Some("User chose to preserve this observation.".into()))
        .unwrap();
    assert_eq!(
        denied.outcome,
        Outcome::Denied {
            reason: "User chose to preserve this observation.".into(),
            by: Decider::User
        }
    );
    assert_eq!(counter.get(), 0);
    assert!(exec.approve(&id).await.is_err());
    assert_eq!(counter.get(), 0);
    let err = exec.approve("op-nope").await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NOT_FOUND);
}

#[tokio::test]
async fn an_invalid_edit_at_approval_leaves_the_operation_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = process(&path, &counter);
    let id = park(&exec).await;
    let err = exec
        .approve_with(&id, Some(json!({"n": "seven"})))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(exec.pending().unwrap().len(), 1);
    let done = exec
        .approve_with(&id, Some(json!({"text": "obs-456"})))
        .await
        .unwrap();
    assert_eq!(done.value(), Some(&json!({"echo": {"text": "obs-456"}})));
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn the_default_store_is_sqlite_at_the_configured_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/state.sqlite3");
    let counter = Counter::default();
    let mut cfg = quick();
    cfg.store.path = Some(path.clone());
    let exec = Executor::builder(toolset(&counter))
        .config(cfg)
        .build()
        .unwrap();
    // without a handler, calls that need a person are deferred, not run
    let id = park(&exec).await;
    assert_eq!(counter.get(), 0);
    assert!(path.exists());
    assert_eq!(process(&path, &counter).pending().unwrap()[0].id, id);
}

#[tokio::test]
async fn an_operation_interrupted_after_approval_is_listed_in_doubt_and_never_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let id = park(&process(&path, &counter)).await;
    // another op stays merely pending, to show the two lists apart
    let waiting = {
        let r = process(&path, &counter)
            .call(
                &ToolCall::new("c2", "delete_node", json!({"text": "obs-2"})),
                cx(),
            )
            .await;
        match r.outcome {
            Outcome::Pending { operation_id, .. } => operation_id,
            other => panic!("{other:?}"),
        }
    };

    // the approving process dies while the tool runs: its tool started, and then the whole
    // approval is dropped (as a killed process would drop it), before any outcome is stored
    let started = Arc::new(tokio::sync::Notify::new());
    {
        let mut set = ToolSet::new();
        let s = started.clone();
        add(
            &mut set,
            def("delete_node", Safety::Modify),
            &counter,
            move |_, _| {
                let s = s.clone();
                async move {
                    s.notify_one();
                    futures::future::pending::<()>().await;
                    Ok(json!("never"))
                }
            },
        );
        let dying = Executor::builder(set)
            .config(quick())
            .store(Arc::new(SqliteStore::open(&path).unwrap()))
            .build()
            .unwrap();
        tokio::select! {
            r = dying.approve(&id) => panic!("the approval finished: {r:?}"),
            () = started.notified() => {}
        }
    }
    assert_eq!(counter.get(), 1, "the tool started once");

    // a new process: the operation is not waiting for a decision, it is in doubt
    let next = process(&path, &counter);
    assert_eq!(
        next.pending()
            .unwrap()
            .iter()
            .map(|o| o.id.as_str())
            .collect::<Vec<_>>(),
        [waiting.as_str()]
    );
    let doubt = next.in_doubt().unwrap();
    assert_eq!(doubt.len(), 1);
    assert_eq!(doubt[0].id, id);
    assert!(matches!(
        doubt[0].state,
        PendingState::Approved { approved_ms, .. } if approved_ms > 0
    ));
    // at most once: approving again does not run it
    let err = next.approve(&id).await.unwrap_err();
    assert_eq!(err.code.as_str(), "ALREADY_RESOLVED");
    assert_eq!(err.details["state"], "approved");
    assert_eq!(counter.get(), 1);
    // a merely pending operation cannot be abandoned: it can be approved or denied
    let err = next.abandon(&waiting, None).unwrap_err();
    assert_eq!(err.code.as_str(), "ALREADY_RESOLVED");
    assert_eq!(next.pending().unwrap().len(), 1);

    // a person checked, and closes it: recorded as interrupted, once
    let closed = process(&path, &counter)
        .abandon(&id, Some("the node is gone, so it ran".into()))
        .unwrap();
    let e = closed.outcome.error().expect("an interrupted error");
    assert_eq!(e.code.as_str(), "INTERRUPTED");
    assert!(
        e.message.contains("the node is gone, so it ran"),
        "{}",
        e.message
    );
    let again = next.abandon(&id, None).unwrap_err();
    assert_eq!(again.code.as_str(), "ALREADY_RESOLVED");
    assert!(next.in_doubt().unwrap().is_empty());
    match next.pending_operation(&id).unwrap().unwrap().state {
        PendingState::Completed { outcome } => {
            assert_eq!(outcome.error().unwrap().code.as_str(), "INTERRUPTED")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(counter.get(), 1, "nothing ran again");
    // the call's one record of its approval: confirmed by the user, ended interrupted
    let records = next
        .activity(&ActivityQuery {
            correlation_id: Some("req-1".into()),
            ..Default::default()
        })
        .unwrap();
    let last = records
        .iter()
        .find(|r| r.operation_id.as_deref() == Some(id.as_str()) && r.status == Status::Error)
        .expect("a record of the interrupted operation");
    assert_eq!(last.decision, Decision::Confirmed);
    assert_eq!(last.decided_by, Decider::User);
    assert_eq!(last.error_code.as_deref(), Some("INTERRUPTED"));
}

fn process_with(path: &Path, counter: &Counter, config: ExecutorConfig) -> Executor {
    Executor::builder(toolset(counter))
        .config(config)
        .store(Arc::new(SqliteStore::open(path).unwrap()))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

/// One client cannot flood the approvers: past `max_pending_per_session` waiting operations, a
/// call of that session is refused with a structured error instead of parked; other sessions
/// are unaffected, and a decision makes room again.
#[tokio::test]
async fn a_session_cannot_park_more_operations_than_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = process_with(
        &path,
        &counter,
        ExecutorConfig {
            max_pending_per_session: 3,
            ..quick()
        },
    );
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(park(&exec).await);
    }
    let refused = exec
        .call(
            &ToolCall::new("c4", "delete_node", json!({"text": "obs-4"})),
            cx(),
        )
        .await;
    let error = refused.outcome.error().expect("refused, not parked");
    assert_eq!(error.code.as_str(), "TOO_MANY_PENDING");
    assert_eq!(error.details["limit"], 3);
    assert!(error.retryable);
    assert_eq!(exec.pending().unwrap().len(), 3, "nothing more parked");
    let audited = exec
        .activity(&ActivityQuery {
            tool: Some("delete_node".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(audited[0].decision, Decision::Refused);
    assert_eq!(audited[0].error_code.as_deref(), Some("TOO_MANY_PENDING"));

    let other_session = exec
        .call(
            &ToolCall::new("c5", "delete_node", json!({"text": "obs-5"})),
            CallContext {
                session: Some("s2".into()),
                ..CallContext::new("c5")
            },
        )
        .await;
    assert!(matches!(other_session.outcome, Outcome::Pending { .. }));

    exec.deny(&ids[0], None).unwrap();
    park(&exec).await;
    assert_eq!(counter.get(), 0);
}

/// A decided operation keeps its arguments redacted in the store: secrets were needed to run
/// the call, not after it. `keep_decided_arguments` keeps them as they were.
#[tokio::test]
async fn decided_operations_keep_no_secrets_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let counter = Counter::default();
    let exec = process(&path, &counter);
    let park_secret = |call: &'static str| {
        let exec = &exec;
        async move {
            let r = exec
                .call(
                    &ToolCall::new(
                        call,
                        "delete_node",
                        json!({"text": "obs-1", "password": "hunter2-hunter2"}),
                    ),
                    cx(),
                )
                .await;
            match r.outcome {
                Outcome::Pending { operation_id, .. } => operation_id,
                other => panic!("not pending: {other:?}"),
            }
        }
    };
    let raw = |id: &str| -> String {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("SELECT data FROM pending WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };

    let approved = park_secret("c1").await;
    let denied = park_secret("c2").await;
    assert!(raw(&approved).contains("hunter2"), "needed until decided");
    let ran = exec.approve(&approved).await.unwrap();
    assert_eq!(
        ran.value().unwrap()["echo"]["password"],
        "hunter2-hunter2",
        "the tool received the real value"
    );
    exec.deny(&denied, None).unwrap();
    for id in [&approved, &denied] {
        // the recorded outcome too: the approver got the real one
        assert!(!raw(id).contains("hunter2"), "{}", raw(id));
        let op = exec.pending_operation(id).unwrap().unwrap();
        assert_eq!(op.arguments["text"], "obs-1");
        assert_ne!(op.arguments["password"], "hunter2-hunter2");
        assert_eq!(op.preview.arguments, op.arguments);
    }

    let keeping = process_with(
        &path,
        &counter,
        ExecutorConfig {
            keep_decided_arguments: true,
            ..quick()
        },
    );
    let kept = keeping
        .call(
            &ToolCall::new(
                "c3",
                "delete_node",
                json!({"text": "obs-1", "password": "hunter2-hunter2"}),
            ),
            cx(),
        )
        .await;
    let Outcome::Pending { operation_id, .. } = kept.outcome else {
        panic!("not pending")
    };
    keeping.deny(&operation_id, None).unwrap();
    assert!(raw(&operation_id).contains("hunter2"));
}
