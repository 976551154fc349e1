//! Tools added while an executor runs (`Executor::update_tools`): every handle runs them at
//! once under the same policy, the surfaces that list tools are told, a set taken before keeps
//! what it had, and an update the builder would refuse changes nothing.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use tool_runtime::executor::{ApproveAll, BuildError, Executor, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::toolset::DynHandler;
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, ToolSet,
    definition::{Safety, ToolDefinition},
};

fn tool(name: &str, safety: Safety) -> ToolDefinition {
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}},
        "required": ["x"], "additionalProperties": false});
    let mut def = ToolDefinition::new(name.to_owned(), "Echoes x.", &schema);
    def.safety = safety;
    def
}

fn echo() -> DynHandler {
    Arc::new(|args: Value, _cx| async move { Ok(json!({"echo": args})) }.boxed())
}

/// An executor with no tools yet, every confirmation approved.
fn empty_executor() -> Executor {
    Executor::builder(ToolSet::new())
        .store(Arc::new(MemoryStore::new()))
        .confirmation(ApproveAll)
        .build()
        .unwrap()
}

async fn call(exec: &Executor, id: &str, tool: &str, args: Value) -> Outcome {
    exec.call(&ToolCall::new(id, tool, args), CallContext::new(id))
        .await
        .outcome
}

#[tokio::test]
async fn a_tool_added_at_run_time_runs_on_every_handle_and_is_announced() {
    let exec = empty_executor();
    let other_handle = exec.with_confirmation(Arc::new(ApproveAll));
    let before = exec.toolset();
    let mut changed = exec.tools_changed();
    assert!(!changed.has_changed().unwrap());

    let unknown = call(&exec, "c1", "echo", json!({"x": 1})).await;
    assert_eq!(
        unknown.error().map(|e| e.code.clone()),
        Some(ErrorCode::UNKNOWN_TOOL)
    );

    let registered = exec
        .update_tools(|set| {
            set.register_dynamic(tool("echo", Safety::ReadOnly), Some(echo()))
                .map(|_| ())
        })
        .unwrap();
    assert!(registered.is_ok());
    assert!(
        changed.has_changed().unwrap(),
        "the listing surfaces are told"
    );
    assert_eq!(*changed.borrow_and_update(), 1);

    for (id, handle) in [("c2", &exec), ("c3", &other_handle)] {
        let ran = call(handle, id, "echo", json!({"x": 2})).await;
        assert!(matches!(ran, Outcome::Success { .. }), "{ran:?}");
    }
    // validated against its schema like any tool
    let bad = call(&exec, "c4", "echo", json!({"x": "two"})).await;
    assert_eq!(
        bad.error().map(|e| e.code.clone()),
        Some(ErrorCode::INVALID_ARGUMENTS)
    );
    // a set taken before the update is the set as it was
    assert_eq!(before.len(), 0);
    assert_eq!(exec.toolset().len(), 1);
}

#[tokio::test]
async fn an_update_the_builder_would_refuse_changes_nothing() {
    let exec = empty_executor();
    let changed = exec.tools_changed();
    // reversible without an undo planner: a promise nobody could keep
    let mut reversible = tool("delete", Safety::Modify);
    reversible.reversible = true;
    let refused = exec.update_tools(|set| {
        set.register_dynamic(reversible, Some(echo())).unwrap();
    });
    assert!(
        matches!(&refused, Err(BuildError::NoUndo { tool }) if tool == "delete"),
        "{refused:?}"
    );
    assert!(exec.toolset().get("delete").is_none());
    assert!(!changed.has_changed().unwrap(), "nobody is told of nothing");
    let gone = call(&exec, "c1", "delete", json!({"x": 1})).await;
    assert_eq!(
        gone.error().map(|e| e.code.clone()),
        Some(ErrorCode::UNKNOWN_TOOL)
    );
}
