//! Running: timeouts, retries, rate limits, the cache, batches, panics and large results.

use crate::executor_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use executor_support::*;
use serde_json::{Value, json};
use tool_runtime::executor::{Answer, ExecutorConfig, Outcome, Window};
use tool_runtime::{CallContext, ErrorCode, ToolCall, ToolError, ToolSet, definition::Safety};

fn cx() -> CallContext {
    CallContext::new("x")
}

#[tokio::test]
async fn an_overrunning_tool_is_cancelled_with_a_retryable_timeout() {
    let c = Counter::default();
    let finished = Counter::default();
    let mut set = ToolSet::new();
    let mut d = def("slow", Safety::Create);
    d.timeout = Some(Duration::from_millis(50));
    let f = finished.clone();
    add(&mut set, d, &c, move |_, _| {
        let f = f.clone();
        async move {
            sleep_ms(2_000).await;
            f.hit();
            Ok(json!(1))
        }
    });
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());
    let r = exec.call(&ToolCall::new("1", "slow", "{}"), cx()).await;
    let err = r.outcome.error().expect("timed out");
    assert_eq!(err.code, ErrorCode::TIMEOUT);
    assert!(err.retryable);
    assert_eq!(err.details["timeout_ms"], 50);
    // create + not idempotent: no retry
    assert_eq!(c.get(), 1);
    assert_eq!(sink.records()[0].error_code.as_deref(), Some("TIMEOUT"));
    sleep_ms(100).await;
    assert_eq!(finished.get(), 0, "the body was cancelled");
}

#[tokio::test]
async fn the_configured_default_timeout_applies_when_the_tool_declares_none() {
    let mut set = ToolSet::new();
    add(
        &mut set,
        def("slow", Safety::ReadOnly),
        &Counter::default(),
        |_, _| async {
            sleep_ms(2_000).await;
            Ok(json!(1))
        },
    );
    let mut cfg = ExecutorConfig {
        default_timeout_ms: 30,
        ..quick()
    };
    cfg.retry.max_attempts = 1;
    let (exec, _) = executor(set, cfg, &Person::default());
    let r = exec.call(&ToolCall::new("1", "slow", "{}"), cx()).await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::TIMEOUT);
}

fn flaky(
    set: &mut ToolSet,
    name: &str,
    safety: Safety,
    idempotent: bool,
    fail_times: usize,
) -> Counter {
    let c = Counter::default();
    let mut d = def(name, safety);
    d.idempotent = idempotent;
    let seen = Counter::default();
    add(set, d, &c, move |_, _| {
        let n = seen.hit();
        async move {
            if n <= fail_times {
                Err(ToolError::execution("upstream 503").retryable(true))
            } else {
                Ok(json!({"attempt": n}))
            }
        }
    });
    c
}

#[tokio::test]
async fn retryable_failures_are_retried_only_for_read_only_idempotent_or_opted_in_tools() {
    let mut set = ToolSet::new();
    let read = flaky(&mut set, "read", Safety::ReadOnly, false, 2);
    let idem = flaky(&mut set, "idem", Safety::Create, true, 1);
    let plain = flaky(&mut set, "plain", Safety::Create, false, 1);
    let opted = flaky(&mut set, "opted", Safety::Create, false, 1);
    let hopeless = flaky(&mut set, "hopeless", Safety::ReadOnly, false, 100);
    let mut cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    cfg.retry.opt_in = vec!["opted".into()];
    let (exec, sink) = executor(set, cfg, &Person::default());
    let run = |name: &'static str| {
        let exec = exec.clone();
        async move { exec.call(&ToolCall::new(name, name, "{}"), cx()).await }
    };
    assert_eq!(run("read").await.value(), Some(&json!({"attempt": 3})));
    assert_eq!(read.get(), 3);
    assert!(run("idem").await.outcome.is_success());
    assert_eq!(idem.get(), 2);
    assert!(run("opted").await.outcome.is_success());
    assert_eq!(opted.get(), 2);
    let r = run("plain").await;
    assert_eq!(r.outcome.error().unwrap().message, "upstream 503");
    assert_eq!(plain.get(), 1, "a non-idempotent create is not retried");
    let r = run("hopeless").await;
    assert!(r.outcome.error().is_some());
    assert_eq!(hopeless.get(), 3, "max_attempts bounds the retries");
    let attempts: Vec<u32> = sink.records().iter().map(|r| r.attempts).collect();
    assert_eq!(attempts, [3, 2, 2, 1, 3]);
}

#[tokio::test]
async fn errors_not_marked_retryable_are_not_retried() {
    let c = Counter::default();
    let mut set = ToolSet::new();
    add(&mut set, def("r", Safety::ReadOnly), &c, |_, _| async {
        Err::<Value, _>(ToolError::new(ErrorCode::NOT_FOUND, "no such note"))
    });
    let (exec, _) = executor(set, quick(), &Person::default());
    let r = exec.call(&ToolCall::new("1", "r", "{}"), cx()).await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::NOT_FOUND);
    assert_eq!(c.get(), 1);
}

#[tokio::test]
async fn rate_limits_per_tool_and_per_category_say_when_to_retry() {
    let mut set = ToolSet::new();
    let c = Counter::default();
    echo(&mut set, def("web", Safety::External), &c);
    echo(&mut set, def("doi", Safety::External), &c);
    let mut cfg = ExecutorConfig {
        auto_confirm_external: true,
        require_first_time_gate: false,
        ..quick()
    };
    cfg.cache.enabled = false;
    cfg.rate_limits.tools.insert(
        "web".into(),
        Window {
            max_calls: 2,
            window_ms: 60_000,
        },
    );
    cfg.rate_limits
        .categories
        .insert(Safety::External, Window::per_minute(3));
    let (exec, _) = executor(set, cfg, &Person::default());
    let call = |id: &str, name: &str| ToolCall::new(id, name, json!({"n": 1}));
    assert!(
        exec.call(&call("1", "web"), cx())
            .await
            .outcome
            .is_success()
    );
    assert!(
        exec.call(&call("2", "web"), cx())
            .await
            .outcome
            .is_success()
    );
    let r = exec.call(&call("3", "web"), cx()).await;
    let err = r.outcome.error().expect("limited per tool");
    assert_eq!(err.code, ErrorCode::RATE_LIMITED);
    assert!(err.retryable);
    let after = err.details["retry_after_ms"].as_u64().unwrap();
    assert!(after > 59_000 && after <= 60_000, "{after}");
    assert!(
        exec.call(&call("4", "doi"), cx())
            .await
            .outcome
            .is_success()
    );
    let r = exec.call(&call("5", "doi"), cx()).await;
    assert_eq!(
        r.outcome.error().unwrap().code,
        ErrorCode::RATE_LIMITED,
        "the external category allows 3 a minute"
    );
    assert_eq!(c.get(), 3);
    // the limiter is shared by clones used from other tasks
    let other = exec.clone();
    let r = tokio::spawn(async move { other.call(&call("6", "doi"), cx()).await })
        .await
        .unwrap();
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::RATE_LIMITED);
}

#[tokio::test]
async fn read_only_results_are_cached_by_canonical_arguments_and_others_are_not() {
    let mut set = ToolSet::new();
    let read = Counter::default();
    let create = Counter::default();
    echo(&mut set, def("lookup", Safety::ReadOnly), &read);
    echo(&mut set, def("note", Safety::Create), &create);
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());
    let a = exec
        .call(&ToolCall::new("1", "lookup", r#"{"text":"x","n":1}"#), cx())
        .await;
    let b = exec
        .call(&ToolCall::new("2", "lookup", r#"{"n":1,"text":"x"}"#), cx())
        .await;
    assert_eq!(a.outcome, b.outcome);
    assert_eq!(
        read.get(),
        1,
        "same arguments in another order hit the cache"
    );
    exec.call(&ToolCall::new("3", "lookup", r#"{"n":2,"text":"x"}"#), cx())
        .await;
    assert_eq!(read.get(), 2);
    exec.call(&ToolCall::new("4", "note", "{}"), cx()).await;
    exec.call(&ToolCall::new("5", "note", "{}"), cx()).await;
    assert_eq!(create.get(), 2, "only read-only tools are cached");
    let cached: Vec<bool> = sink.records().iter().map(|r| r.cached).collect();
    assert_eq!(cached, [false, true, false, false, false]);
}

#[tokio::test]
async fn a_call_that_may_change_something_empties_the_cache_whichever_path_it_takes() {
    let mut set = ToolSet::new();
    let read = Counter::default();
    echo(&mut set, def("status", Safety::ReadOnly), &read);
    echo(&mut set, def("note", Safety::Create), &Counter::default());
    echo(&mut set, def("commit", Safety::Modify), &Counter::default());
    let failing = Counter::default();
    add(
        &mut set,
        def("push", Safety::Create),
        &failing,
        |_, _| async { Err(ToolError::new(ErrorCode::of("REJECTED"), "half written")) },
    );
    // without the injection check a create tool confirmed by configuration runs in place; the
    // modify tool is asked, so it runs on the general path
    let cfg = ExecutorConfig {
        auto_confirm_create: true,
        check_injection: false,
        ..quick()
    };
    let person = Person::answering([Answer::Yes, Answer::Yes]);
    let (exec, sink) = executor(set, cfg, &person);
    let status = ToolCall::new("s", "status", "{}");
    exec.call(&status, cx()).await;
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 1, "a read is cached");
    exec.call(&ToolCall::new("n", "note", "{}"), cx()).await;
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 2, "a create run in place empties the cache");
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 2, "and the read after it is cached again");
    let committed = exec.call(&ToolCall::new("c", "commit", "{}"), cx()).await;
    assert!(committed.outcome.is_success(), "{:?}", committed.outcome);
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 3, "a confirmed modify empties the cache");
    // a change that failed may have changed part of what it touched
    let pushed = exec.call(&ToolCall::new("p", "push", "{}"), cx()).await;
    assert!(pushed.outcome.error().is_some());
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 4, "a failed change empties the cache too");
    let cached: Vec<bool> = sink.records().iter().map(|r| r.cached).collect();
    assert_eq!(
        cached,
        [false, true, false, false, true, false, false, false, false]
    );
}

#[tokio::test]
async fn a_call_refused_before_it_ran_keeps_the_cache() {
    let mut set = ToolSet::new();
    let read = Counter::default();
    let commits = Counter::default();
    echo(&mut set, def("status", Safety::ReadOnly), &read);
    echo(&mut set, def("commit", Safety::Modify), &commits);
    let person = Person::answering([Answer::No { reason: None }]);
    let (exec, _) = executor(set, quick(), &person);
    let status = ToolCall::new("s", "status", "{}");
    exec.call(&status, cx()).await;
    let denied = exec.call(&ToolCall::new("c", "commit", "{}"), cx()).await;
    assert!(!denied.outcome.is_success(), "{:?}", denied.outcome);
    assert_eq!(commits.get(), 0);
    exec.call(&status, cx()).await;
    assert_eq!(read.get(), 1, "nothing ran, nothing changed");
}

#[tokio::test]
async fn cached_results_expire_after_the_ttl() {
    let mut set = ToolSet::new();
    let read = Counter::default();
    echo(&mut set, def("lookup", Safety::ReadOnly), &read);
    let mut cfg = quick();
    cfg.cache.ttl_ms = 30;
    let (exec, _) = executor(set, cfg, &Person::default());
    let call = ToolCall::new("1", "lookup", "{}");
    exec.call(&call, cx()).await;
    exec.call(&call, cx()).await;
    assert_eq!(read.get(), 1);
    sleep_ms(60).await;
    exec.call(&call, cx()).await;
    assert_eq!(read.get(), 2);
}

#[tokio::test]
async fn a_batch_runs_concurrently_up_to_the_limit_in_call_order_and_a_panic_stays_with_its_call() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut set = ToolSet::new();
    let (f, p) = (in_flight.clone(), peak.clone());
    add(
        &mut set,
        def("work", Safety::ReadOnly),
        &Counter::default(),
        move |args, _| {
            let (f, p) = (f.clone(), p.clone());
            async move {
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                // later calls finish first, so order must come from the executor
                let n = args["n"].as_u64().unwrap();
                sleep_ms(60 - n * 5).await;
                f.fetch_sub(1, Ordering::SeqCst);
                Ok(json!(n))
            }
        },
    );
    add(
        &mut set,
        def("boom", Safety::ReadOnly),
        &Counter::default(),
        |_, _| async {
            if true {
                panic!("index out of bounds");
            }
            Ok(json!(null))
        },
    );
    let cfg = ExecutorConfig {
        max_concurrency: 3,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());
    let mut calls: Vec<ToolCall> = (0..8)
        .map(|n| ToolCall::new(format!("c{n}"), "work", json!({"n": n})))
        .collect();
    calls.insert(4, ToolCall::new("bad", "boom", "{}"));
    let results = exec.run_batch(&calls, &cx()).await;
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>());
    for (i, r) in results.iter().enumerate() {
        if i == 4 {
            let e = r.outcome.error().expect("panicked");
            assert_eq!(e.code, ErrorCode::TOOL_PANICKED);
            assert!(e.message.contains("index out of bounds"));
        } else {
            let n = if i < 4 { i } else { i - 1 };
            assert_eq!(r.value(), Some(&json!(n)), "result {i}");
        }
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!((2..=3).contains(&peak), "peak concurrency {peak}");
    assert_eq!(sink.len(), 9);
}

/// A body that answers at once runs in place; one that waits goes on on its own task. Both
/// keep the guarantees: a panic after an await is the call's error, and a caller that stops
/// waiting cancels the body.
#[tokio::test]
async fn a_panic_after_an_await_and_a_dropped_call_stay_with_their_call() {
    let finished = Counter::default();
    let mut set = ToolSet::new();
    add(
        &mut set,
        def("late_boom", Safety::ReadOnly),
        &Counter::default(),
        |_, _| async {
            sleep_ms(10).await;
            if true {
                panic!("late failure");
            }
            Ok(json!(null))
        },
    );
    let f = finished.clone();
    add(
        &mut set,
        def("slow", Safety::ReadOnly),
        &Counter::default(),
        move |_, _| {
            let f = f.clone();
            async move {
                sleep_ms(200).await;
                f.hit();
                Ok(json!(1))
            }
        },
    );
    let (exec, sink) = executor(set, quick(), &Person::default());
    let r = exec
        .call(&ToolCall::new("1", "late_boom", "{}"), cx())
        .await;
    let e = r.outcome.error().expect("panicked");
    assert_eq!(e.code, ErrorCode::TOOL_PANICKED);
    assert!(e.message.contains("late failure"), "{}", e.message);
    assert_eq!(sink.len(), 1);
    let call = ToolCall::new("2", "slow", "{}");
    let gave_up = tokio::time::timeout(Duration::from_millis(30), exec.call(&call, cx())).await;
    assert!(gave_up.is_err(), "the caller stopped waiting");
    sleep_ms(400).await;
    assert_eq!(finished.get(), 0, "the body was cancelled with the call");
}

#[tokio::test]
async fn large_results_are_fitted_for_the_model_and_kept_whole_for_the_caller() {
    let mut set = ToolSet::new();
    add(
        &mut set,
        def("list", Safety::ReadOnly),
        &Counter::default(),
        |_, _| async {
            let items: Vec<Value> = (0..500)
                .map(|i| json!({"id": i, "title": "a note title"}))
                .collect();
            Ok(json!({"items": items, "total": 500}))
        },
    );
    let cfg = ExecutorConfig {
        max_result_chars: 1_000,
        ..quick()
    };
    let (exec, sink) = executor(set, cfg, &Person::default());
    let r = exec.call(&ToolCall::new("1", "list", "{}"), cx()).await;
    let Outcome::Success { value, truncated } = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert!(truncated);
    assert!(value.to_string().len() <= 1_000);
    assert_eq!(value["total"], 500);
    assert_eq!(r.value().unwrap()["items"].as_array().unwrap().len(), 500);
    assert_eq!(r.outcome.to_json()["truncated"], true);
    let summary = sink.records()[0].result_summary.clone().unwrap();
    assert!(summary.chars().count() <= 200);
}

#[tokio::test]
async fn a_denied_confirmation_in_a_batch_does_not_stop_the_others() {
    let mut set = ToolSet::new();
    echo(&mut set, def("read", Safety::ReadOnly), &Counter::default());
    echo(&mut set, def("del", Safety::Modify), &Counter::default());
    let person = Person::answering([Answer::No { reason: None }]);
    let (exec, _) = executor(set, quick(), &person);
    let calls = [
        ToolCall::new("a", "del", "{}"),
        ToolCall::new("b", "read", "{}"),
    ];
    let r = exec.run_batch(&calls, &cx()).await;
    assert!(matches!(r[0].outcome, Outcome::Denied { .. }));
    assert!(r[1].outcome.is_success());
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_come_back_as_errors_and_are_recorded() {
    let mut set = ToolSet::new();
    echo(
        &mut set,
        def("search_notes", Safety::ReadOnly),
        &Counter::default(),
    );
    let (exec, sink) = executor(set, quick(), &Person::default());
    let r = exec
        .call(
            &ToolCall::new("1", "search_note", r#"{"password":"p"}"#),
            cx(),
        )
        .await;
    assert_eq!(r.outcome.error().unwrap().code, ErrorCode::UNKNOWN_TOOL);
    let r = exec
        .call(&ToolCall::new("2", "search_notes", r#"{"n":"x"}"#), cx())
        .await;
    assert_eq!(
        r.outcome.error().unwrap().code,
        ErrorCode::INVALID_ARGUMENTS
    );
    let recs = sink.records();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        recs[0].arguments.as_deref(),
        Some(&json!({"password": "[REDACTED]"}))
    );
    assert_eq!(recs[1].error_code.as_deref(), Some("INVALID_ARGUMENTS"));
}

/// Says yes, except for `fragile_tool`, where it panics (a bug in the application's dialog).
struct PanicsOnFragile;

impl tool_runtime::executor::ConfirmationHandler for PanicsOnFragile {
    fn confirm<'a>(
        &'a self,
        request: &'a tool_runtime::executor::ConfirmationRequest,
    ) -> futures::future::BoxFuture<'a, Answer> {
        if request.preview.tool == "fragile_tool" {
            // panics while building the future, the way a careless handler would
            panic!("dialog state corrupted");
        }
        Box::pin(async { Answer::Yes })
    }
}

#[tokio::test]
async fn a_panic_in_a_previewer_or_a_confirmation_handler_stays_with_its_call() {
    let (ran_preview, ran_fragile, ran_ok, ran_read) = (
        Counter::default(),
        Counter::default(),
        Counter::default(),
        Counter::default(),
    );
    let mut set = ToolSet::new();
    echo(&mut set, def("previewed", Safety::Modify), &ran_preview);
    echo(&mut set, def("fragile_tool", Safety::Modify), &ran_fragile);
    echo(&mut set, def("edit_note", Safety::Modify), &ran_ok);
    echo(&mut set, def("lookup", Safety::ReadOnly), &ran_read);
    let sink = Arc::new(tool_runtime::executor::MemoryAuditSink::new());
    let exec = tool_runtime::executor::Executor::builder(set)
        .config(quick())
        .store(Arc::new(tool_runtime::store::MemoryStore::new()))
        .confirmation(PanicsOnFragile)
        .audit_sink(sink.clone())
        .preview_with(
            "previewed",
            Arc::new(|_, _| {
                Box::pin(async {
                    if true {
                        panic!("diff of a missing file");
                    }
                    Ok(tool_runtime::executor::Change::new())
                })
            }),
        )
        .build()
        .unwrap();
    let calls = [
        ToolCall::new("a", "previewed", json!({"text": "x"})),
        ToolCall::new("b", "fragile_tool", json!({"text": "y"})),
        ToolCall::new("c", "edit_note", json!({"text": "z"})),
        ToolCall::new("d", "lookup", json!({"n": 1})),
    ];
    // one batch on one task: a panic escaping either call would take the other two with it
    let results = exec.run_batch(&calls, &cx()).await;
    assert_eq!(results.len(), 4);
    for (r, what) in [
        (&results[0], "the change preview"),
        (&results[1], "the confirmation handler"),
    ] {
        let e = r.outcome.error().expect("an error for that call");
        assert_eq!(e.code, ErrorCode::INTERNAL, "{e:?}");
        assert!(!e.retryable);
        assert_eq!(e.details["panicked"], what);
        assert!(e.message.contains("panicked"), "{}", e.message);
    }
    assert_eq!(
        (ran_preview.get(), ran_fragile.get()),
        (0, 0),
        "nothing ran unconfirmed"
    );
    assert_eq!(results[2].value(), Some(&json!({"echo": {"text": "z"}})));
    assert_eq!(results[3].value(), Some(&json!({"echo": {"n": 1}})));
    assert_eq!((ran_ok.get(), ran_read.get()), (1, 1));
    let records = sink.records();
    assert_eq!(records.len(), 4, "every call recorded");
    let refused: Vec<_> = records
        .iter()
        .filter(|r| r.decision == tool_runtime::executor::Decision::Refused)
        .map(|r| r.call_id.as_str())
        .collect();
    assert_eq!(refused.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_executor_is_the_unit_of_rate_limits_shared_by_its_clones_across_tasks() {
    let c = Counter::default();
    let mut set = ToolSet::new();
    echo(&mut set, def("web", Safety::External), &c);
    let mut cfg = ExecutorConfig {
        auto_confirm_external: true,
        require_first_time_gate: false,
        ..quick()
    };
    cfg.cache.enabled = false;
    cfg.rate_limits
        .tools
        .insert("web".into(), Window::per_minute(4));
    let build = |limiter: Option<tool_runtime::executor::RateLimiter>| {
        let mut b = tool_runtime::executor::Executor::builder(set.clone())
            .config(cfg.clone())
            .store(Arc::new(tool_runtime::store::MemoryStore::new()));
        if let Some(l) = limiter {
            b = b.rate_limiter(l);
        }
        b.build().unwrap()
    };
    let limited = |r: &tool_runtime::executor::Execution| {
        r.outcome
            .error()
            .is_some_and(|e| e.code == ErrorCode::RATE_LIMITED)
    };

    // one executor, cloned into 12 tasks: 4 calls pass in the whole process, 8 are limited
    let exec = build(None);
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let exec = exec.clone();
            tokio::spawn(async move {
                exec.call(
                    &ToolCall::new(format!("c{i}"), "web", json!({"n": i})),
                    cx(),
                )
                .await
            })
        })
        .collect();
    let mut passed = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r.outcome.is_success() {
            passed += 1;
        } else {
            assert!(limited(&r), "{:?}", r.outcome);
        }
    }
    assert_eq!(passed, 4);
    assert_eq!(c.get(), 4);

    // a second executor built on its own has a budget of its own (documented: build one and
    // clone it), unless it is given the first one's limiter or the process-wide one
    let separate = build(None);
    assert!(
        separate
            .call(&ToolCall::new("s1", "web", json!({})), cx())
            .await
            .outcome
            .is_success()
    );
    let shared = tool_runtime::executor::RateLimiter::new();
    let (a, b) = (build(Some(shared.clone())), build(Some(shared)));
    for i in 0..4 {
        let which = if i % 2 == 0 { &a } else { &b };
        assert!(
            which
                .call(&ToolCall::new(format!("p{i}"), "web", json!({})), cx())
                .await
                .outcome
                .is_success()
        );
    }
    assert!(limited(
        &b.call(&ToolCall::new("p4", "web", json!({})), cx()).await
    ));
    assert!(limited(
        &a.call(&ToolCall::new("p5", "web", json!({})), cx()).await
    ));
}
