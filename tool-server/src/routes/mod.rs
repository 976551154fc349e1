//! The API's routes, each group in its own file; the OpenAPI document is collected from the
//! handlers' annotations as they are routed, so a route cannot be served undocumented.

mod activity;
pub(crate) mod chat;
mod health;
pub(crate) mod held;
mod pending;
mod questions;
mod run_events;
mod run_lookup;
mod run_resume;
pub(crate) mod runs;
mod session;
mod summary;
mod tools;

use axum::http::{Method, Uri};
use serde::Serialize;
use serde_json::Value;
use tool_runtime::executor::{Execution, Outcome, Undo};
use tool_runtime::{ErrorCode, ToolError};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::error::ApiError;

/// Every API route with its documentation.
pub(crate) fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(tools::list))
        .routes(routes!(tools::check))
        .routes(routes!(tools::call))
        .routes(routes!(session::open))
        .routes(routes!(pending::list))
        .routes(routes!(pending::get))
        .routes(routes!(pending::approve))
        .routes(routes!(pending::deny))
        .routes(routes!(held::list))
        .routes(routes!(held::approve))
        .routes(routes!(activity::feed))
        .routes(routes!(activity::stream))
        .routes(routes!(questions::list))
        .routes(routes!(questions::answer))
        .routes(routes!(questions::running))
        .routes(routes!(questions::live))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(chat::chat, runs::list))
        .routes(routes!(chat::run))
        .routes(routes!(runs::cancel))
        .routes(routes!(run_resume::resume))
        .routes(routes!(run_events::events))
}

/// An execution as the API answers it, as a `Value` (for a detail of an error): what
/// [`ExecutionView`] writes.
pub(crate) fn execution_json(exec: &Execution) -> Value {
    serde_json::to_value(ExecutionView::of(exec)).unwrap_or(Value::Null)
}

/// An execution as the API answers it, serialized straight from the execution: the call id, the
/// tool, the outcome's fields (`status` first) at the top level, then `full`, `undo` and
/// `audit_failure` when present, so an answer costs no intermediate `Value` tree.
#[derive(Serialize)]
pub(crate) struct ExecutionView<'a> {
    call_id: &'a str,
    tool: &'a str,
    #[serde(flatten)]
    outcome: &'a Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    full: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    undo: Option<&'a Undo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audit_failure: Option<&'a str>,
}

impl<'a> ExecutionView<'a> {
    pub(crate) fn of(exec: &'a Execution) -> Self {
        ExecutionView {
            call_id: exec.call_id.as_str(),
            tool: exec.tool.as_ref(),
            outcome: &exec.outcome,
            full: exec.full.as_deref(),
            undo: exec.undo.as_deref(),
            audit_failure: exec.audit_failure.as_deref(),
        }
    }
}

/// Runs a store-bound executor method on the blocking pool: the store is synchronous and may
/// wait on disk or the network, which must not hold a runtime worker.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the store task failed: {e}")))?
        .map_err(ApiError::from)
}

/// Any path the API does not serve.
pub(crate) async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::NOT_FOUND,
            format!("there is no route {}", uri.path()),
        )
        .recover("see /api/v1/openapi.json for the routes this server serves"),
    )
}

/// A served path with a method it does not take.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    let mut e = ApiError::new(
        ToolError::new(
            ErrorCode::of("METHOD_NOT_ALLOWED"),
            format!("{} does not take {method}", uri.path()),
        )
        .recover("see /api/v1/openapi.json for the methods each route takes"),
    );
    e.set_status(axum::http::StatusCode::METHOD_NOT_ALLOWED);
    e
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::definition::Safety;
    use tool_runtime::executor::{Decider, Preview};

    use serde_json::Map;

    use super::*;

    /// The answer's object built by hand from the execution's parts, as the reference.
    fn built(exec: &Execution) -> Value {
        let mut out = Map::new();
        out.insert("call_id".into(), Value::from(exec.call_id.as_str()));
        out.insert("tool".into(), Value::from(exec.tool.as_ref()));
        if let Value::Object(outcome) = exec.outcome.to_json() {
            out.extend(outcome);
        }
        if let Some(full) = exec.full.as_deref() {
            out.insert("full".into(), full.clone());
        }
        if let Some(undo) = &exec.undo {
            out.insert("undo".into(), serde_json::to_value(undo).unwrap());
        }
        if let Some(failure) = &exec.audit_failure {
            out.insert("audit_failure".into(), Value::from(failure.as_str()));
        }
        Value::Object(out)
    }

    fn execution(outcome: Outcome) -> Execution {
        serde_json::from_value(json!({
            "call_id": "http-0123456789abcdef0123456789abcdef",
            "tool": "read_note",
            "outcome": outcome,
        }))
        .expect("an execution")
    }

    /// Every outcome, and the optional facts, serialize through the view to the very bytes of
    /// the object built by hand from the execution's parts, and `execution_json` is that object.
    #[test]
    fn the_view_writes_what_execution_json_builds() {
        let error = ToolError::new(ErrorCode::INVALID_ARGUMENTS, "no \"id\"")
            .recover("send an id")
            .with_detail("field", "id");
        let preview = Preview {
            call_id: "c1".into(),
            tool: "delete_note".into(),
            intent: "delete the note n1".into(),
            category: Safety::Modify,
            arguments: json!({"id": "n1", "nested": {"b": 1, "a": [1, 2]}}),
            reversible: false,
            change: None,
            first_use: None,
        };
        let mut executions = vec![
            execution(Outcome::Success {
                value: json!("the note n1"),
                truncated: false,
            }),
            execution(Outcome::Success {
                value: json!({"z": 1, "a": {"y": null, "b": [true, 1.5]}}),
                truncated: true,
            }),
            execution(Outcome::Error {
                error: Box::new(error),
            }),
            execution(Outcome::Denied {
                reason: "not today".into(),
                by: Decider::User,
            }),
            execution(Outcome::Pending {
                operation_id: "op-1".into(),
                preview: Box::new(preview),
            }),
        ];
        let mut every_fact = execution(Outcome::Success {
            value: json!("cut"),
            truncated: true,
        });
        every_fact.full = Some(Box::new(json!({"whole": "value", "and": [1, 2, 3]})));
        every_fact.undo = Some(Box::new(Undo::Journaled {
            id: "un-0123".into(),
        }));
        every_fact.audit_failure = Some("the store is gone".into());
        executions.push(every_fact);
        for exec in &executions {
            let built = serde_json::to_string(&built(exec)).expect("serializes");
            let viewed = serde_json::to_string(&ExecutionView::of(exec)).expect("serializes");
            assert_eq!(viewed, built);
            let as_value = serde_json::to_string(&execution_json(exec)).expect("serializes");
            assert_eq!(as_value, built);
        }
    }
}
