//! What the store-fault tests share: a modifying and a read-only tool on one counter, calls made
//! with the call id as their correlation id, and reading back an operation's state and a call's
//! audit records.

use serde_json::json;
use tool_runtime::executor::{ActivityQuery, AuditRecord, Execution, Executor, Outcome};
use tool_runtime::{CallContext, ToolCall, ToolSet, definition::Safety};

use super::{Counter, def, echo};

/// `delete_node` (modifies) and `read_node` (read-only), both counting their runs on `counter`.
pub fn toolset(counter: &Counter) -> ToolSet {
    let mut set = ToolSet::new();
    echo(&mut set, def("delete_node", Safety::Modify), counter);
    echo(&mut set, def("read_node", Safety::ReadOnly), counter);
    set
}

/// A context whose correlation id is the call id, so each call's audit records can be found.
pub fn cx(id: &str) -> CallContext {
    CallContext {
        correlation_id: id.into(),
        ..CallContext::new(id)
    }
}

pub async fn call(exec: &Executor, id: &str, tool: &str) -> Execution {
    exec.call(&ToolCall::new(id, tool, json!({"text": id})), cx(id))
        .await
}

/// Calls `delete_node`, which the executor parks; the pending operation's id.
pub async fn park(exec: &Executor, id: &str) -> String {
    match call(exec, id, "delete_node").await.outcome {
        Outcome::Pending { operation_id, .. } => operation_id,
        other => panic!("not parked: {other:?}"),
    }
}

/// The audit records of the call `id`.
pub fn audit(exec: &Executor, id: &str) -> Vec<AuditRecord> {
    exec.activity(&ActivityQuery {
        correlation_id: Some(id.into()),
        ..Default::default()
    })
    .unwrap()
}

/// The state of operation `op`, which must still be stored.
pub fn state(exec: &Executor, op: &str) -> &'static str {
    exec.pending_operation(op)
        .unwrap()
        .expect("the operation is kept")
        .state
        .name()
}
