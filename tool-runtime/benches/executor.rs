//! Executor overhead for a trivial read-only tool: policy, the audit record to an in-memory sink,
//! the body under its timeout with panics caught — against calling the function directly; and
//! 1,000 concurrent calls through one executor against 1,000 concurrent direct calls, with every
//! measured iteration checked to leave exactly 1,000 distinct audit records.
//!
//! cargo bench -p tool-runtime --bench executor -- --warm-up-time 1 --measurement-time 3
//!
//! The ratio is `executor/run_read_only` ÷ `executor/direct_call`, both in this run; the absolute
//! overhead per call is their difference. Instruction counts: `bash bench/instr.sh executor`.

use std::collections::{HashSet, VecDeque};
use std::hint::black_box;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::executor::{
    ApproveAll, AuditRecord, AuditSink, Decision, Executor, ExecutorConfig, MemoryAuditSink,
};
use tool_runtime::store::MemoryStore;
use tool_runtime::{
    CallContext, Tool, ToolCall, ToolError, ToolSet,
    definition::{Safety, ToolDefinition},
};

use test_support::instr;

#[derive(Clone, Deserialize, Serialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// The trivial tool: adds two numbers.
async fn add(args: AddArgs) -> Result<i64, ToolError> {
    Ok(args.a + args.b)
}

struct Add;

/// The same addition declared as creating something: the policy asks for a confirmation, which
/// [`ApproveAll`] gives, so a call goes through the confirmation path (preview, request, answer).
struct AddConfirmed;

impl Tool for AddConfirmed {
    type Args = AddArgs;
    type Output = i64;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = ToolDefinition::new(
                "add_confirmed",
                "Add two numbers, once a person says yes.",
                &tool_runtime::schema::derive::<AddArgs>(),
            );
            d.safety = Safety::Create;
            d
        });
        &DEF
    }

    async fn call(args: AddArgs, _: &CallContext) -> Result<i64, ToolError> {
        add(args).await
    }
}

impl Tool for Add {
    type Args = AddArgs;
    type Output = i64;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = ToolDefinition::new(
                "add",
                "Add two numbers.",
                &tool_runtime::schema::derive::<AddArgs>(),
            );
            d.safety = Safety::ReadOnly;
            d
        });
        &DEF
    }

    async fn call(args: AddArgs, _: &CallContext) -> Result<i64, ToolError> {
        add(args).await
    }
}

/// An in-memory sink that keeps the last 1,024 records. It does what `MemoryAuditSink` does per
/// record (keeps the shared record under a mutex, a copy only of a record it is lent), but
/// bounded, so that millions of iterations do not measure memory growth.
#[derive(Default)]
struct Ring(Mutex<VecDeque<Arc<AuditRecord>>>);

impl Ring {
    fn keep(&self, record: Arc<AuditRecord>) {
        let mut q = self.0.lock().unwrap();
        if q.len() == 1024 {
            q.pop_front();
        }
        q.push_back(record);
    }
}

impl AuditSink for Ring {
    fn record(&self, record: &AuditRecord) {
        self.keep(Arc::new(record.clone()));
    }

    fn record_shared(&self, record: &Arc<AuditRecord>) {
        self.keep(record.clone());
    }
}

fn config(cache: bool) -> ExecutorConfig {
    let mut config = ExecutorConfig::default();
    config.store.path = None;
    // every single-call iteration has the same arguments: without this every call after the
    // first would be a cache hit, which is measured separately
    config.cache.enabled = cache;
    config
}

fn executor(set: &ToolSet, cache: bool, sink: Arc<dyn AuditSink>) -> Executor {
    Executor::builder(set.clone())
        .config(config(cache))
        .confirmation(ApproveAll)
        .store(Arc::new(MemoryStore::new()))
        .store_audit(false)
        .audit_sink(sink)
        .build()
        .unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// 1,000 calls with distinct ids and arguments.
fn thousand_calls() -> Vec<ToolCall> {
    (0..1000)
        .map(|i| ToolCall::new(format!("c{i}"), "add", serde_json::json!({"a": i, "b": 1})))
        .collect()
}

/// Runs the 1,000 calls concurrently (one task each) through a fresh executor writing to a fresh
/// `MemoryAuditSink`; returns the time the calls took and checks, untimed, that the trail holds
/// exactly one record per call.
fn thousand_through_executor(
    rt: &tokio::runtime::Runtime,
    set: &ToolSet,
    calls: &Arc<Vec<ToolCall>>,
) -> Duration {
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = executor(set, false, sink.clone());
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..calls.len())
            .map(|i| {
                let (exec, calls) = (exec.clone(), calls.clone());
                tokio::spawn(async move {
                    exec.call(&calls[i], CallContext::new(calls[i].id.clone()))
                        .await
                })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap().outcome.is_success());
        }
    });
    let elapsed = start.elapsed();
    let records = sink.records();
    assert_eq!(records.len(), 1000, "one audit record per call");
    let ids: HashSet<&str> = records.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids.len(), 1000, "no record lost or duplicated");
    elapsed
}

/// The baseline: the same 1,000 tasks calling the function directly.
fn thousand_direct(rt: &tokio::runtime::Runtime) -> Duration {
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..1000i64)
            .map(|i| tokio::spawn(add(AddArgs { a: i, b: 1 })))
            .collect();
        for t in tasks {
            black_box(t.await.unwrap().unwrap());
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = current_thread();
    let set = ToolSet::new().with::<Add>().unwrap();
    let exec = executor(&set, false, Arc::new(Ring::default()));
    let cached = executor(&set, true, Arc::new(Ring::default()));
    let call = ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3}));
    let hydrate = || set.hydrate(&call).unwrap();
    // the measured path must be the one described: allowed by policy, run, not from cache
    let e = rt.block_on(exec.run(hydrate(), CallContext::new("c1")));
    assert!(e.outcome.is_success());

    let mut g = c.benchmark_group("executor");
    g.bench_function("direct_call", |b| {
        b.iter(|| rt.block_on(add(black_box(AddArgs { a: 2, b: 3 }))).unwrap())
    });
    g.bench_function("instance_run_no_executor", |b| {
        b.iter_batched(
            hydrate,
            |i| rt.block_on(i.run(CallContext::new("c1"))).unwrap(),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("run_read_only", |b| {
        b.iter_batched(
            hydrate,
            |i| {
                let e = rt.block_on(exec.run(i, CallContext::new("c1")));
                assert!(e.outcome.is_success());
                e
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("run_read_only_cache_hit", |b| {
        b.iter_batched(
            hydrate,
            |i| rt.block_on(cached.run(i, CallContext::new("c1"))),
            BatchSize::SmallInput,
        )
    });
    g.finish();

    // 1,000 concurrent calls on a two-worker runtime (the machine has two cores)
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let calls = Arc::new(thousand_calls());
    // set-up check, outside any timing: the trail is complete
    thousand_through_executor(&mt, &set, &calls);
    let mut g = c.benchmark_group("executor_1000_concurrent");
    g.throughput(Throughput::Elements(1000));
    g.sample_size(20);
    g.bench_function("direct_calls (baseline)", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| thousand_direct(&mt)).sum())
    });
    g.bench_function("executor.call, audit to MemoryAuditSink", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| thousand_through_executor(&mt, &set, &calls))
                .sum()
        })
    });
    g.finish();
}

fn instr_cases() -> Vec<instr::Case> {
    use instr::Case;
    let set = ToolSet::new()
        .with::<Add>()
        .unwrap()
        .with::<AddConfirmed>()
        .unwrap();
    let exec = executor(&set, false, Arc::new(Ring::default()));
    let confirmed_exec = exec.clone();
    let call = ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3}));
    let confirmed_call = ToolCall::new("c1", "add_confirmed", serde_json::json!({"a": 2, "b": 3}));
    // as in criterion's set-up, the instances are hydrated before the count (one per run, plus
    // the warm-up run)
    let hydrated = |call: &ToolCall| -> Vec<_> {
        (0..=instr::iterations())
            .map(|_| set.hydrate(call).unwrap())
            .collect()
    };
    let mut instances = hydrated(&call);
    let mut confirmed = hydrated(&confirmed_call);
    let rt = Arc::new(current_thread());
    let (rt1, rt2) = (rt.clone(), rt.clone());
    // the measured paths must be the ones named: run at once, or asked, approved and run; one
    // record each
    for (name, decision) in [
        ("add", Decision::Allowed),
        ("add_confirmed", Decision::Confirmed),
    ] {
        let sink = Arc::new(MemoryAuditSink::new());
        let check = executor(&set, false, sink.clone());
        let e = rt.block_on(check.call(
            &ToolCall::new("c0", name, serde_json::json!({"a": 2, "b": 3})),
            CallContext::new("c0"),
        ));
        assert!(e.outcome.is_success(), "{name}");
        let records = sink.records();
        assert_eq!(records.len(), 1, "{name}");
        assert_eq!(records[0].decision, decision, "{name}");
    }
    vec![
        Case::warm("direct_call", move || {
            black_box(
                rt1.block_on(add(black_box(AddArgs { a: 2, b: 3 })))
                    .unwrap(),
            );
        }),
        Case::warm("run_read_only", move || {
            let i = instances.pop().expect("one instance per run");
            let e = rt.block_on(exec.run(i, CallContext::new("c1")));
            assert!(e.outcome.is_success());
        }),
        Case::warm("run_confirmed", move || {
            let i = confirmed.pop().expect("one instance per run");
            let e = rt2.block_on(confirmed_exec.run(i, CallContext::new("c1")));
            assert!(e.outcome.is_success());
        }),
    ]
}

fn main() {
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
