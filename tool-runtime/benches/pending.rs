//! Parking a deferred call on SQLite, with none and with 3,000 operations already waiting (in
//! other sessions): the limits are checked by counting in the store, so the two should cost
//! about the same.
//!
//! cargo bench -p tool-runtime --bench pending -- --warm-up-time 1 --measurement-time 3

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::json;
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig};
use tool_runtime::store::SqliteStore;
use tool_runtime::{CallContext, Outcome, ToolCall, ToolSet, definition::ToolDefinition};

fn executor(dir: &std::path::Path) -> Executor {
    let mut def = ToolDefinition::new(
        "delete_note",
        "Delete a note.",
        &json!({"type": "object", "properties": {"id": {"type": "string"}}}),
    );
    def.safety = tool_runtime::definition::Safety::Modify;
    let mut set = ToolSet::new();
    set.register_dynamic(
        def,
        Some(Arc::new(|_, _| Box::pin(async { Ok(json!("deleted")) }))),
    )
    .unwrap();
    let mut config = ExecutorConfig {
        max_pending: 1_000_000,
        log_tool_calls: false,
        ..Default::default()
    };
    config.store.path = None;
    Executor::builder(set)
        .config(config)
        .store(Arc::new(
            SqliteStore::open(dir.join("state.sqlite3")).unwrap(),
        ))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

async fn park(exec: &Executor, session: String) -> String {
    let call = ToolCall::new("c", "delete_note", json!({"id": "n1"}));
    let cx = CallContext {
        session: Some(session),
        ..CallContext::new("c")
    };
    match exec.call(&call, cx).await.outcome {
        Outcome::Pending { operation_id, .. } => operation_id,
        other => panic!("not parked: {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("pending");
    for waiting in [0usize, 3_000] {
        let dir = tempfile::tempdir().unwrap();
        let exec = executor(dir.path());
        rt.block_on(async {
            for i in 0..waiting {
                park(&exec, format!("other-{i}")).await;
            }
        });
        group.bench_function(format!("park_with_{waiting}_waiting"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let started = Instant::now();
                        let id = park(&exec, "s".into()).await;
                        spent += started.elapsed();
                        // out of the measurement: keeps the number waiting where it was
                        exec.deny(&id, None).unwrap();
                    }
                    spent
                })
            })
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
