//! The core without any optional feature: what `default-features = false` must still give.
//! These tests run in every build, so `cargo test -p tool-runtime --no-default-features --lib`
//! proves the lean build works, not only that it compiles.

use std::sync::Arc;

use serde_json::json;

use crate::executor::{Deferred, StoreConfig};
use crate::store::MemoryStore;
use crate::{
    CallContext, Executor, Outcome, ToolCall, ToolSet, definition::Safety,
    executor::ExecutorConfig, tool,
};

/// Adds two small numbers.
#[tool(read_only)]
fn add(
    /// The first.
    #[arg(max = 100)]
    a: u32,
    /// The second.
    b: u32,
) -> u32 {
    a + b
}

/// Deletes a note.
#[tool(modify)]
fn delete_note(id: u64) -> String {
    format!("deleted {id}")
}

fn tools() -> ToolSet {
    ToolSet::new()
        .with::<add>()
        .unwrap()
        .with::<delete_note>()
        .unwrap()
}

#[test]
fn definitions_and_hydration_need_no_feature() {
    let set = tools();
    let def = set.get("add").unwrap();
    assert_eq!(def.safety, Safety::ReadOnly);
    assert_eq!(def.description, "Adds two small numbers.");

    let instance = set
        .hydrate(&ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#))
        .unwrap();
    assert_eq!(instance.arguments(), &json!({"a": 2, "b": 3}));
    let refused = set
        .hydrate(&ToolCall::new("c2", "add", r#"{"a": 500, "b": 3}"#))
        .unwrap_err();
    assert_eq!(refused.code, crate::ErrorCode::INVALID_ARGUMENTS);
}

#[test]
fn the_executor_runs_calls_with_the_in_memory_store() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let executor = Executor::builder(tools())
            .store(Arc::new(MemoryStore::new()))
            .build()
            .unwrap();
        let read = executor
            .call(
                &ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#),
                CallContext::new("c1"),
            )
            .await;
        assert!(
            matches!(&read.outcome, Outcome::Success { value, .. } if *value == json!(5)),
            "{:?}",
            read.outcome
        );

        // without a confirmation handler, a call that changes things waits for a person
        let write = executor
            .call(
                &ToolCall::new("c2", "delete_note", r#"{"id": 7}"#),
                CallContext::new("c2"),
            )
            .await;
        assert!(
            matches!(write.outcome, Outcome::Pending { .. }),
            "{:?}",
            write.outcome
        );
        assert_eq!(executor.pending().unwrap().len(), 1);
    });
}

#[test]
fn the_configured_store_opens_in_memory() {
    let config = ExecutorConfig {
        store: StoreConfig::memory(),
        ..Default::default()
    };
    assert!(
        Executor::builder(tools())
            .config(config)
            .confirmation(Deferred)
            .build()
            .is_ok()
    );
}

#[cfg(not(feature = "sqlite"))]
#[test]
fn the_default_sqlite_store_without_its_feature_is_an_error_naming_it() {
    let Err(e) = Executor::builder(tools()).build() else {
        panic!("the default store is SQLite, which this build lacks");
    };
    assert!(e.to_string().contains("`sqlite` feature"), "{e}");
}

#[cfg(not(feature = "redis"))]
#[test]
fn a_redis_store_without_its_feature_is_an_error_naming_it() {
    let Err(e) = Executor::builder(tools())
        .config(ExecutorConfig {
            store: StoreConfig::redis("redis://user:secret@127.0.0.1:6379/"),
            ..Default::default()
        })
        .build()
    else {
        panic!("this build has no Redis store");
    };
    let shown = e.to_string();
    assert!(shown.contains("`redis` feature"), "{shown}");
    assert!(!shown.contains("secret"), "{shown}");
}
