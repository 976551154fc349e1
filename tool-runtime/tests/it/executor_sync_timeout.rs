//! Sync tool bodies run on tokio's blocking pool, so the executor's timeout fires while one
//! blocks, even on a current-thread runtime (`#[tokio::test]`'s default), where a body run inline
//! would hold the only thread the timer could fire on. And `#[tool(retry)]` lets the executor
//! retry a tool that is neither read-only nor idempotent.

use crate::executor_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Duration;

use executor_support::{Person, executor, quick};
use serde_json::json;
use tool_runtime::executor::ExecutorConfig;
use tool_runtime::{CallContext, ErrorCode, State, Tool, ToolCall, ToolError, ToolSet, tool};

/// A gate a blocked body waits at until the test opens it.
#[derive(Clone, Default)]
struct Gate {
    open: Arc<(Mutex<bool>, Condvar)>,
    /// Told how the body ended: `true` when the gate was opened, `false` when it gave up.
    done: Arc<Mutex<Option<mpsc::Sender<bool>>>>,
}

impl Gate {
    fn open(&self) {
        let (lock, cvar) = &*self.open;
        *lock.lock().unwrap() = true;
        cvar.notify_all();
    }

    /// Blocks the calling thread until the gate opens. The long bound is only a safety valve so
    /// that a regression (a body that blocks the timer's thread) fails instead of hanging.
    fn wait(&self) -> bool {
        let (lock, cvar) = &*self.open;
        let guard = lock.lock().unwrap();
        let (guard, _) = cvar
            .wait_timeout_while(guard, Duration::from_secs(30), |open| !*open)
            .unwrap();
        *guard
    }
}

/// Waits at the gate, blocking its thread: what a sync body doing slow IO looks like.
#[tool(read_only, timeout = "50ms")]
fn blocking_wait(
    /// Ignored.
    note: Option<String>,
    State(gate): State<Gate>,
    cx: &CallContext,
) -> Result<String, ToolError> {
    let _ = note;
    let opened = gate.wait();
    if let Some(tx) = gate.done.lock().unwrap().take() {
        let _ = tx.send(opened);
    }
    Ok(format!("{} done", cx.call_id))
}

#[tokio::test]
async fn a_blocking_sync_body_that_overruns_its_timeout_yields_timeout() {
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    *gate.done.lock().unwrap() = Some(tx);
    let set = ToolSet::new()
        .with::<blocking_wait>()
        .unwrap()
        .with_state(gate.clone());
    let mut cfg = quick();
    cfg.retry.max_attempts = 1;
    let (exec, sink) = executor(set, cfg, &Person::default());

    let r = exec
        .call(
            &ToolCall::new("c1", "blocking_wait", "{}"),
            CallContext::new("c1"),
        )
        .await;
    let err = r.outcome.error().expect("the call timed out");
    assert_eq!(err.code, ErrorCode::TIMEOUT);
    assert!(err.retryable);
    assert_eq!(err.details["timeout_ms"], 50);
    assert_eq!(sink.records()[0].error_code.as_deref(), Some("TIMEOUT"));
    // the timeout came while the body was still blocked: it has not reported yet
    assert!(matches!(rx.try_recv(), Err(mpsc::TryRecvError::Empty)));

    // the body keeps its thread until it returns; opened now, it ends normally
    gate.open();
    let opened = tokio::task::spawn_blocking(move || rx.recv())
        .await
        .unwrap()
        .expect("the body reports how it ended");
    assert!(
        opened,
        "the body ended because the gate opened, not by giving up"
    );
}

/// The same body called directly, outside any runtime, runs inline and returns its value.
#[test]
fn a_sync_body_outside_a_runtime_runs_inline() {
    let gate = Gate::default();
    gate.open();
    let set = ToolSet::new()
        .with::<blocking_wait>()
        .unwrap()
        .with_state(gate);
    let inst = set
        .hydrate(&ToolCall::new("c2", "blocking_wait", "{}"))
        .unwrap();
    let cx = CallContext {
        state: set.state().clone(),
        ..CallContext::new("c2")
    };
    let out = futures::executor::block_on(inst.run(cx)).unwrap();
    assert_eq!(out, json!("c2 done"));
}

/// A panic in a sync body is reported like one in an async body.
#[tool(read_only)]
fn panics(
    /// Ignored.
    n: u32,
) -> u32 {
    if n > 0 {
        panic!("sync body gave up on {n}");
    }
    n
}

#[tokio::test]
async fn a_panicking_sync_body_is_tool_panicked() {
    let set = ToolSet::new().with::<panics>().unwrap();
    let mut cfg = quick();
    cfg.retry.max_attempts = 1;
    let (exec, _) = executor(set, cfg, &Person::default());
    let r = exec
        .call(
            &ToolCall::new("c", "panics", r#"{"n": 3}"#),
            CallContext::new("c"),
        )
        .await;
    let err = r.outcome.error().unwrap();
    assert_eq!(err.code, ErrorCode::TOOL_PANICKED);
    assert!(err.message.contains("sync body gave up on 3"), "{err:?}");
}

/// A sync body that changes something (so it runs through the executor's general path, not the
/// read-only one) and waits at the gate.
#[tool(create, timeout = "50ms")]
fn blocking_create(
    /// Ignored.
    note: Option<String>,
    State(gate): State<Gate>,
) -> Result<String, ToolError> {
    let _ = note;
    let opened = gate.wait();
    if let Some(tx) = gate.done.lock().unwrap().take() {
        let _ = tx.send(opened);
    }
    Ok("created".into())
}

/// The same sync body, panicking.
#[tool(create)]
fn panics_creating(
    /// Panics when above zero.
    n: u32,
) -> u32 {
    if n > 0 {
        panic!("sync create body gave up on {n}");
    }
    n
}

/// On the general path too, a sync body that blocks past its timeout answers `TIMEOUT` on a
/// current-thread runtime (the thread the timer fires on is never the body's), and one that
/// panics answers `TOOL_PANICKED`.
#[tokio::test]
async fn a_blocking_or_panicking_sync_body_that_changes_something_times_out_or_is_tool_panicked() {
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    *gate.done.lock().unwrap() = Some(tx);
    let set = tool_runtime::toolset![blocking_create, panics_creating]
        .unwrap()
        .with_state(gate.clone());
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());

    let r = exec
        .call(
            &ToolCall::new("c1", "blocking_create", "{}"),
            CallContext::new("c1"),
        )
        .await;
    let err = r.outcome.error().expect("the call timed out");
    assert_eq!(err.code, ErrorCode::TIMEOUT, "{err:?}");
    assert_eq!(err.details["timeout_ms"], 50);
    assert_eq!(sink.records()[0].error_code.as_deref(), Some("TIMEOUT"));
    // the timeout came while the body was still blocked
    assert!(matches!(rx.try_recv(), Err(mpsc::TryRecvError::Empty)));
    gate.open();
    let opened = tokio::task::spawn_blocking(move || rx.recv())
        .await
        .unwrap()
        .expect("the body reports how it ended");
    assert!(opened);

    let r = exec
        .call(
            &ToolCall::new("c2", "panics_creating", r#"{"n": 4}"#),
            CallContext::new("c2"),
        )
        .await;
    let err = r.outcome.error().expect("the call failed");
    assert_eq!(err.code, ErrorCode::TOOL_PANICKED, "{err:?}");
    assert!(
        err.message.contains("sync create body gave up on 4"),
        "{err:?}"
    );
    assert_eq!(sink.records().len(), 2, "one record per call");
    assert_eq!(
        sink.records()[1].error_code.as_deref(),
        Some("TOOL_PANICKED")
    );
}

/// Counts its calls and fails the first one with a retryable error.
#[derive(Clone, Default)]
struct Calls(Arc<AtomicUsize>);

/// Files a note; a repeat is harmless because the store deduplicates, so it opts in to retries.
#[tool(create, retry)]
async fn file_note(
    /// The note.
    text: String,
    State(calls): State<Calls>,
) -> Result<String, ToolError> {
    match calls.0.fetch_add(1, Ordering::SeqCst) {
        0 => Err(ToolError::execution("store busy").retryable(true)),
        _ => Ok(text),
    }
}

/// The same tool without the opt-in.
#[tool(create)]
async fn file_note_once(
    /// The note.
    text: String,
    State(calls): State<Calls>,
) -> Result<String, ToolError> {
    file_note(text, State(calls)).await
}

#[tokio::test]
async fn retry_lets_a_create_tool_be_retried() {
    assert!(<file_note as Tool>::definition().retry);
    assert!(!<file_note_once as Tool>::definition().retry);
    // the flag is part of the canonical definition, and omitted when false
    let json = serde_json::to_value(<file_note as Tool>::definition()).unwrap();
    assert_eq!(json["retry"], true);
    let json = serde_json::to_value(<file_note_once as Tool>::definition()).unwrap();
    assert!(json.get("retry").is_none());

    for (name, attempts, ok) in [("file_note", 2, true), ("file_note_once", 1, false)] {
        let calls = Calls::default();
        let set = tool_runtime::toolset![file_note, file_note_once]
            .unwrap()
            .with_state(calls.clone());
        let cfg = ExecutorConfig {
            auto_confirm_create: true,
            ..quick()
        };
        let (exec, sink) = executor(set, cfg, &Person::default());
        let r = exec
            .call(
                &ToolCall::new("c", name, r#"{"text": "hi"}"#),
                CallContext::new("c"),
            )
            .await;
        assert_eq!(r.outcome.is_success(), ok, "{name}: {r:?}");
        assert_eq!(calls.0.load(Ordering::SeqCst), attempts, "{name}");
        assert_eq!(sink.records()[0].attempts, attempts as u32, "{name}");
    }
}
