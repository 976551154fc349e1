//! `GET /api/v1/tools`, `POST /api/v1/tools/{name}/check` and `POST /api/v1/tools/{name}/call`.

use std::str::FromStr;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tool_providers::codec::Provider;
use tool_runtime::{
    CallContext, ErrorCode, Outcome, ToolCall, ToolError, hydrate::Arguments, tool::Initiator,
};
use utoipa::{IntoParams, ToSchema};

use super::{ExecutionView, execution_json};
use crate::AppState;
use crate::auth::{AgentAccess, Role};
use crate::body::JsonBody;
use crate::error::{ApiError, ErrorBody};

/// Which view of the tools to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// A provider's declarations (`openai`, `openai-responses`, `anthropic`, `ollama`,
    /// `gemini`, `mcp`) instead of the canonical definitions.
    provider: Option<String>,
}

/// The tool set: canonical definitions, or one provider's declarations.
#[utoipa::path(
    get,
    path = "/api/v1/tools",
    operation_id = "list_tools",
    tag = "tools",
    params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"tools\": [...]}`: canonical definitions (name, \
          description, parameters, safety, ...), or with `provider` that provider's declarations \
          and `{\"provider\": ...}`", body = Object),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 422, description = "An unknown provider", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    _: AgentAccess,
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let toolset = state.executor.toolset();
    let Some(name) = query.provider else {
        let tools: Vec<Value> = toolset
            .definitions()
            .map(|d| serde_json::to_value(d).unwrap_or(Value::Null))
            .collect();
        return Ok(Json(json!({ "tools": tools })));
    };
    let provider = Provider::from_str(&name).map_err(|e| {
        ApiError::new(
            ToolError::new(ErrorCode::INVALID_ARGUMENTS, e.to_string()).recover(format!(
                "use one of {}",
                Provider::ALL.map(Provider::as_str).join(", ")
            )),
        )
    })?;
    let codec = provider.codec();
    let mut tools = Vec::with_capacity(toolset.len());
    for def in toolset.definitions() {
        let text = state
            .declarations
            .declaration(codec.as_ref(), def)
            .map_err(|e| ApiError::internal(format!("declaring {}: {e}", def.name)))?;
        tools.push(
            serde_json::from_str::<Value>(&text)
                .map_err(|e| ApiError::internal(format!("declaring {}: {e}", def.name)))?,
        );
    }
    Ok(Json(
        json!({ "provider": provider.as_str(), "tools": tools }),
    ))
}

/// A call's arguments, as a model would send them.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct CallRequest {
    /// The arguments: a JSON object, or a string holding one (as most providers send them).
    #[schema(value_type = Object)]
    arguments: Option<Box<RawValue>>,
    /// The session the call belongs to (first-time gates are per session).
    session: Option<String>,
}

impl CallRequest {
    fn into_call(self, name: String) -> (ToolCall, Option<String>) {
        let arguments = match self.arguments {
            None => Arguments::Text("{}".to_owned()),
            // a JSON string holds the arguments' text, as providers send it; anything else is
            // the arguments themselves (not parsed as a string first: a failed parse costs an
            // error's allocation on every call)
            Some(raw) => match raw.get().starts_with('"') {
                true => match serde_json::from_str::<String>(raw.get()) {
                    Ok(text) => Arguments::Text(text),
                    Err(_) => Arguments::Text(raw.get().to_owned()),
                },
                false => Arguments::Text(raw.get().to_owned()),
            },
        };
        (ToolCall::new(new_call_id(), name, arguments), self.session)
    }
}

/// A call id for a call made over HTTP: `http-` and 32 hex digits (lower case), written digit by
/// digit into a string of the right size rather than through the formatting machinery.
fn new_call_id() -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = fastrand::u128(..);
    let mut id = String::with_capacity(5 + 32);
    id.push_str("http-");
    id.extend(
        (0..32)
            .rev()
            .map(|i| char::from(DIGITS[(n >> (i * 4)) as usize & 0xf])),
    );
    id
}

/// Hydrates a call without running it: the arguments as the tool would receive them, or every
/// violation with its pointer.
#[utoipa::path(
    post,
    path = "/api/v1/tools/{name}/check",
    operation_id = "check_tool",
    tag = "tools",
    params(("name" = String, Path, description = "The tool")),
    request_body = CallRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"tool\", \"valid\": true, \"arguments\", \"repairs\"}`: \
          the validated arguments and any repair applied to them", body = Object),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 404, description = "No such tool; `details.suggestions` has the nearest names", body = ErrorBody),
        (status = 413, description = "The body or the arguments are too large", body = ErrorBody),
        (status = 422, description = "Invalid arguments: `violations` has each one's pointer", body = ErrorBody),
    )
)]
pub(crate) async fn check(
    _: AgentAccess,
    State(state): State<AppState>,
    Path(name): Path<String>,
    JsonBody(request): JsonBody<CallRequest>,
) -> Result<Json<Value>, ApiError> {
    let (call, _) = request.into_call(name);
    let instance = state.executor.toolset().hydrate(&call)?;
    Ok(Json(json!({
        "tool": instance.name(),
        "valid": true,
        "arguments": instance.arguments(),
        "repairs": instance.repairs(),
    })))
}

/// Runs a call through the executor. Who started it comes from the token: the approver's is a
/// person (`initiator: user`), the agent's and the host's a model (`initiator: model`).
#[utoipa::path(
    post,
    path = "/api/v1/tools/{name}/call",
    operation_id = "call_tool",
    tag = "tools",
    params(("name" = String, Path, description = "The tool")),
    request_body = CallRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The execution: `status` (`success`, `error` for a tool \
          that failed while running, `denied`), `call_id`, `tool`, and `value`, `error` or \
          `reason`", body = Object),
        (status = 202, description = "Waiting for a person: `{\"status\": \"pending\", \
          \"operation_id\", \"preview\"}`", body = Object),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The policy does not allow this tool", body = ErrorBody),
        (status = 404, description = "No such tool; `details.suggestions` has the nearest names", body = ErrorBody),
        (status = 409, description = "An imported tool whose server now serves another \
          definition than the one a person approved (`DEFINITION_CHANGED`): held until the \
          change is approved", body = ErrorBody),
        (status = 413, description = "The body or the arguments are too large", body = ErrorBody),
        (status = 422, description = "Invalid arguments: `violations` has each one's pointer", body = ErrorBody),
        (status = 429, description = "Rate limited, or too many operations wait for a person \
          (`TOO_MANY_PENDING`); `Retry-After` says when to come back", body = ErrorBody),
        (status = 500, description = "The call ran but its audit record could not be written \
          (`details.execution` has what happened)", body = ErrorBody),
    )
)]
pub(crate) async fn call(
    AgentAccess(role): AgentAccess,
    State(state): State<AppState>,
    Path(name): Path<String>,
    JsonBody(request): JsonBody<CallRequest>,
) -> Result<Response, ApiError> {
    let (call, session) = request.into_call(name);
    let mut cx = CallContext::new(call.id.clone());
    cx.session = session;
    cx.initiator = match role {
        Role::Approver => Initiator::User,
        Role::Agent | Role::Host => Initiator::Model,
    };
    cx.credential = Some(role.credential());
    // the page is the person's side of the calls this server runs: their questions go there,
    // and their progress shows there while they run
    cx.host = Some(state.page.host.clone());
    cx.progress = Some(state.page.progress.clone());
    let exec = state.executor.call(&call, cx).await;
    answer(&state, &exec)
}

/// The response for an execution: errors the caller can fix before anything ran get their own
/// status; everything that ran (or was decided) is answered with the execution.
pub(crate) fn answer(
    state: &AppState,
    exec: &tool_runtime::executor::Execution,
) -> Result<Response, ApiError> {
    if let Some(failure) = &exec.audit_failure
        && state.executor.config().audit_required
    {
        return Err(ApiError::new(
            ToolError::new(
                ErrorCode::of("AUDIT_FAILED"),
                format!("the call's audit record could not be written: {failure}"),
            )
            .with_detail("execution", execution_json(exec)),
        ));
    }
    match &exec.outcome {
        Outcome::Pending { .. } => json_response(StatusCode::ACCEPTED, exec),
        Outcome::Error { error } if before_running(&error.code) => {
            Err(ApiError::new((**error).clone()))
        }
        _ => json_response(StatusCode::OK, exec),
    }
}

/// The execution as a JSON response: written into a buffer sized for a short answer, which
/// serde_json writes to directly (`axum::Json` writes through a `BytesMut` writer, one
/// `io::Write` call per piece of every string).
fn json_response(
    status: StatusCode,
    exec: &tool_runtime::executor::Execution,
) -> Result<Response, ApiError> {
    let mut body = Vec::with_capacity(256);
    serde_json::to_writer(&mut body, &ExecutionView::of(exec))
        .map_err(|e| ApiError::internal(format!("writing the answer: {e}")))?;
    Ok((
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

/// Failures that stop a call before its tool runs: the request was wrong or not allowed.
fn before_running(code: &ErrorCode) -> bool {
    [
        ErrorCode::UNKNOWN_TOOL,
        ErrorCode::INVALID_JSON,
        ErrorCode::INVALID_ARGUMENTS,
        ErrorCode::PAYLOAD_TOO_LARGE,
        ErrorCode::NESTING_TOO_DEEP,
        ErrorCode::SCHEMA_REQUIRED,
        ErrorCode::NOT_ALLOWED,
        ErrorCode::RATE_LIMITED,
        ErrorCode::of("TOO_MANY_PENDING"),
        // an imported tool whose server changed its definition, held until a person approves
        ErrorCode::of("DEFINITION_CHANGED"),
    ]
    .contains(code)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_call_id_is_http_and_32_lower_case_hex_digits() {
        let ids: Vec<String> = (0..64).map(|_| super::new_call_id()).collect();
        for id in &ids {
            let digits = id.strip_prefix("http-").expect("the prefix");
            assert_eq!(digits.len(), 32, "{id}");
            assert!(
                digits
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "{id}"
            );
            // the digits are the number's, most significant first, as `{:032x}` writes them
            let n = u128::from_str_radix(digits, 16).expect("hex");
            assert_eq!(format!("http-{n:032x}"), *id);
        }
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }
}
