//! The activity feed as the graph agent prints it, and the calls the system itself initiates.
//!
//! Each line says who initiated the call (`user`, `agent` for a model, `system` for the
//! application's own jobs) and who decided it, so a change the agent proposed and a person
//! approved reads differently from one a person made directly.

use serde_json::json;
use tool_runtime::executor::{AuditRecord, Execution, Executor};
use tool_runtime::{CallContext, ToolCall, hydrate::Arguments, tool::Initiator};

use super::summary::cut;
use super::tools::BatchTool;

/// The feed's name for an initiator: `agent` for a model, as the graph's users call it.
pub fn initiator(i: Initiator) -> &'static str {
    match i {
        Initiator::Model => "agent",
        Initiator::User => "user",
        Initiator::System => "system",
    }
}

/// Reads a feed name back (`user`, `agent` or `model`, `system`), for `--from`.
pub fn parse_initiator(s: &str) -> Result<Initiator, String> {
    match s.to_lowercase().as_str() {
        "user" => Ok(Initiator::User),
        "agent" | "model" => Ok(Initiator::Model),
        "system" => Ok(Initiator::System),
        other => Err(format!("{other:?} is not user, agent or system")),
    }
}

/// One line of the feed: time, tool, decision, status, initiator, decider, operation id and
/// the start of what it returned.
pub fn line(r: &AuditRecord) -> String {
    format!(
        "{}  {:<28} {:<9} {:<8} from {:<6} by {:<7} {} {}",
        r.timestamp_ms,
        r.tool,
        format!("{:?}", r.decision).to_lowercase(),
        r.status.as_str(),
        initiator(r.initiator),
        format!("{:?}", r.decided_by).to_lowercase(),
        r.operation_id.as_deref().unwrap_or("-"),
        cut(
            &tool_runtime::display::visible(r.result_summary.as_deref().unwrap_or("")),
            100
        ),
    )
    .trim_end()
    .to_owned()
}

/// Runs `operation` over `node_ids` as one `apply_to_nodes` call initiated by the system (a
/// scheduled job): under the executor's policy, so it waits for a person's approval like any
/// change.
pub async fn system_batch(exec: &Executor, operation: BatchTool, node_ids: &[String]) -> Execution {
    let call_id = format!("system-{}", operation.tool_name());
    let call = ToolCall::new(
        call_id.clone(),
        "apply_to_nodes",
        Arguments::Json(json!({"operation": operation, "node_ids": node_ids})),
    );
    let mut cx = CallContext::new(call_id);
    cx.initiator = Initiator::System;
    exec.call(&call, cx).await
}
