//! `#[tool(non_blocking)]` on a sync function: its body is called in place, on the thread that
//! polls the call, as an async fn's body is, instead of on tokio's blocking pool. What it returns,
//! how it fails and how it panics reach the caller and the audit trail exactly as for any other
//! body: one record per call, a panic isolated to its call. A sync function without the option
//! still runs on the blocking pool (and still times out while it blocks: `executor_sync_timeout`).

use crate::executor_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use executor_support::{Person, executor, quick};
use tool_runtime::{CallContext, ErrorCode, State, ToolCall, ToolError, tool, toolset};

/// The thread the body ran on, as `ThreadId`'s debug text.
fn this_thread() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Names the thread it runs on and echoes the call's id from the context it is lent.
#[tool(read_only, non_blocking)]
fn where_in_place(
    /// Ignored.
    note: Option<String>,
    cx: &CallContext,
) -> String {
    let _ = note;
    format!("{} on {}", cx.call_id, this_thread())
}

/// The same body without the option: on the blocking pool.
#[tool(read_only)]
fn where_on_pool(
    /// Ignored.
    note: Option<String>,
    cx: &CallContext,
) -> String {
    let _ = note;
    format!("{} on {}", cx.call_id, this_thread())
}

/// Counts its calls; panics when asked to, fails with a tool error on a negative number.
#[tool(read_only, non_blocking)]
fn checked_half(
    /// The number to halve.
    n: i64,
    State(calls): State<Arc<AtomicUsize>>,
) -> Result<i64, ToolError> {
    calls.fetch_add(1, Ordering::SeqCst);
    match n {
        13 => panic!("in-place body gave up on {n}"),
        n if n < 0 => Err(ToolError::execution(format!(
            "{n} is negative; give a number of at least 0"
        ))),
        n => Ok(n / 2),
    }
}

#[tokio::test]
async fn a_non_blocking_body_runs_on_the_thread_that_polls_the_call() {
    let set = toolset![where_in_place, where_on_pool].unwrap();
    let (exec, sink) = executor(set, quick(), &Person::default());
    // `#[tokio::test]` is a current-thread runtime: the test's thread polls every call
    let here = this_thread();
    for (name, in_place) in [("where_in_place", true), ("where_on_pool", false)] {
        let r = exec
            .call(&ToolCall::new(name, name, "{}"), CallContext::new(name))
            .await;
        let value = r.value().expect("the call succeeds").clone();
        let text = value.as_str().expect("a string");
        assert!(text.starts_with(&format!("{name} on ")), "{text}");
        assert_eq!(
            text.ends_with(&here),
            in_place,
            "{name}: {text}, test on {here}"
        );
    }
    assert_eq!(sink.records().len(), 2);
}

#[tokio::test]
async fn a_non_blocking_body_s_value_error_and_panic_are_handled_like_any_body_s() {
    let calls = Arc::new(AtomicUsize::new(0));
    let set = toolset![checked_half].unwrap().with_state(calls.clone());
    let mut cfg = quick();
    cfg.retry.max_attempts = 1;
    let (exec, sink) = executor(set, cfg, &Person::default());
    let call = |id: &str, n: i64| {
        (
            ToolCall::new(id, "checked_half", format!(r#"{{"n": {n}}}"#)),
            CallContext::new(id),
        )
    };

    let (c, cx) = call("ok", 8);
    let r = exec.call(&c, cx).await;
    assert_eq!(r.value(), Some(&serde_json::json!(4)), "{r:?}");

    let (c, cx) = call("refused", -2);
    let r = exec.call(&c, cx).await;
    let err = r.outcome.error().expect("the body's error");
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
    assert!(err.message.contains("-2 is negative"), "{err:?}");

    // the panic ends this call only: the executor, its thread and the next call go on
    let (c, cx) = call("panics", 13);
    let r = exec.call(&c, cx).await;
    let err = r.outcome.error().expect("the panic as an error");
    assert_eq!(err.code, ErrorCode::TOOL_PANICKED);
    assert!(
        err.message.contains("in-place body gave up on 13"),
        "{err:?}"
    );

    let (c, cx) = call("after", 10);
    let r = exec.call(&c, cx).await;
    assert_eq!(r.value(), Some(&serde_json::json!(5)), "{r:?}");

    // each body ran once, and each call has exactly one record, in order
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let records = sink.records();
    let seen: Vec<_> = records
        .iter()
        .map(|r| (&*r.call_id, r.error_code.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("ok", None),
            ("refused", Some("EXECUTION_FAILED")),
            ("panics", Some("TOOL_PANICKED")),
            ("after", None),
        ]
    );
}
