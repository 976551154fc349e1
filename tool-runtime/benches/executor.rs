//! Executor overhead for a trivial read-only tool: policy, the audit record to an in-memory sink,
//! the timeout wrapper (the body on its own task) — against calling the function directly.
//!
//! `cargo bench -p tool-runtime --bench executor`; the ratio is
//! `executor/run_read_only` ÷ `executor/direct_call`, both in this run.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::{Arc, LazyLock, Mutex};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::executor::{AuditRecord, AuditSink, Executor, ExecutorConfig};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, Safety, Tool, ToolCall, ToolDefinition, ToolError, ToolSet};

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

/// An in-memory sink that keeps the last 1,024 records (bounded, so a long run does not measure
/// memory growth).
#[derive(Default)]
struct Ring(Mutex<VecDeque<AuditRecord>>);

impl AuditSink for Ring {
    fn record(&self, record: &AuditRecord) {
        let mut q = self.0.lock().unwrap();
        if q.len() == 1024 {
            q.pop_front();
        }
        q.push_back(record.clone());
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let set = ToolSet::new().with::<Add>().unwrap();
    let mut config = ExecutorConfig::default();
    config.store.path = None;
    // every iteration has the same arguments: without this every call after the first would be
    // a cache hit, measured separately below
    config.cache.enabled = false;
    let executor = Executor::builder(set.clone())
        .config(config.clone())
        .store(Arc::new(MemoryStore::new()))
        .store_audit(false)
        .audit_sink(Arc::new(Ring::default()))
        .build()
        .unwrap();
    config.cache.enabled = true;
    let cached = Executor::builder(set.clone())
        .config(config)
        .store(Arc::new(MemoryStore::new()))
        .store_audit(false)
        .audit_sink(Arc::new(Ring::default()))
        .build()
        .unwrap();
    let call = ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3}));
    let hydrate = || set.hydrate(&call).unwrap();

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
                let e = rt.block_on(executor.run(i, CallContext::new("c1")));
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
