//! Checkpointing an agent run: one `save_run` of an 8 KiB checkpoint (a conversation of a dozen
//! messages) under the worker's lease, on SQLite and, when `TOOL_RUNTIME_TEST_REDIS_URL` names a
//! server, on Redis. The agent writes two per step (the issued turn, then its results), which is
//! what to compare with a model's answer time.
//!
//! cargo bench -p tool-runtime --features redis --bench runs -- --warm-up-time 1 --measurement-time 3

use std::time::Duration;

use criterion::Criterion;
use tool_runtime::store::{SqliteStore, Store, StoredRun};

fn checkpoint() -> StoredRun {
    let message = "x".repeat(640);
    let conversation: Vec<String> = (0..12)
        .map(|i| format!("{{\"m\":{i},\"t\":\"{message}\"}}"))
        .collect();
    StoredRun {
        id: "run-bench".into(),
        status: "running".into(),
        session: Some("bench".into()),
        created_ms: 1,
        updated_ms: 1,
        checkpoint: format!(
            "{{\"version\":1,\"conversation\":[{}]}}",
            conversation.join(",")
        ),
        lease: None,
    }
}

fn save(c: &mut Criterion, name: &str, store: &dyn Store) {
    let run = checkpoint();
    let lease = Duration::from_secs(30);
    assert!(store.save_run(&run, "bench-worker", lease).unwrap());
    c.bench_function(name, |b| {
        b.iter(|| assert!(store.save_run(&run, "bench-worker", lease).unwrap()))
    });
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("runs.sqlite3")).unwrap();
    save(c, "save_run/sqlite", &sqlite);
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("TOOL_RUNTIME_TEST_REDIS_URL") {
        let prefix = format!("tools-bench:{}:", std::process::id());
        let redis = tool_runtime::store::RedisStore::with_prefix(&url, &prefix).unwrap();
        save(c, "save_run/redis", &redis);
    }
}

criterion::criterion_group!(benches, bench);
criterion::criterion_main!(benches);
