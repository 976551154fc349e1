//! A server's answer to `tools/call` as a tool's outcome: its value, or a [`ToolError`] the model
//! can read.

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tool_runtime::validate::Validator;
use tool_runtime::{ErrorCode, ToolError};

/// The value of a result: its structured content when it has one (what an output schema
/// describes), else its content — one text as a string, several blocks as an array in which
/// each non-text block stands as its kind, MIME type and size, never its bytes. A result the
/// server flags `isError` is the tool's failure, with the server's text as the message.
///
/// With the tool's declared `outputSchema` (`output`), the structured content must be there and
/// match it: a server that breaks its own declaration gets a structured error naming each
/// violation rather than a value the caller's types do not expect.
pub(crate) fn value_of(
    server: &str,
    result: CallToolResult,
    output: Option<&Validator>,
) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text = texts(&result).join("\n");
        let message = if text.is_empty() {
            format!("the MCP server {server} reported an error without a message")
        } else {
            text
        };
        return Err(ToolError::new(ErrorCode::EXECUTION_FAILED, message)
            .with_detail("server", server.to_owned()));
    }
    if let Some(schema) = output {
        let Some(structured) = result.structured_content else {
            return Err(ToolError::new(
                ErrorCode::EXECUTION_FAILED,
                format!(
                    "the MCP server {server} declared an outputSchema for this tool but \
                     returned no structured content"
                ),
            )
            .with_detail("server", server.to_owned()));
        };
        let violations = schema.violations(&structured);
        if !violations.is_empty() {
            return Err(ToolError::new(
                ErrorCode::EXECUTION_FAILED,
                format!(
                    "the MCP server {server} returned structured content that does not match \
                     the outputSchema it declared"
                ),
            )
            .with_detail("server", server.to_owned())
            .with_violations(violations));
        }
        return Ok(structured);
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    let blocks: Vec<Value> = result.content.iter().map(block).collect();
    Ok(match <[Value; 1]>::try_from(blocks) {
        Ok([Value::String(text)]) => Value::String(text),
        Ok([one]) => Value::Array(vec![one]),
        Err(blocks) => Value::Array(blocks),
    })
}

/// A failure to get an answer at all: the connection, the protocol, the server's own error.
pub(crate) fn error_of(server: &str, tool: &str, error: ServiceError) -> ToolError {
    let (retryable, message) = match &error {
        ServiceError::McpError(e) => (
            false,
            format!("the MCP server {server} refused the call: {}", e.message),
        ),
        ServiceError::TransportSend(_) => {
            (true, format!("the MCP server {server} is not connected"))
        }
        // the call may have reached the server and taken effect: it is not sent again
        ServiceError::TransportClosed => (
            false,
            format!(
                "the MCP server {server} went away during the call; it may or may not have \
                 taken effect, and it is not sent again"
            ),
        ),
        ServiceError::Timeout { .. } => (
            true,
            format!("the MCP server {server} did not answer in time"),
        ),
        ServiceError::Cancelled { .. } => (
            true,
            format!("the call to the MCP server {server} was cancelled"),
        ),
        other => (
            true,
            format!("the MCP server {server} could not be asked: {other}"),
        ),
    };
    let code = if matches!(error, ServiceError::McpError(_)) {
        ErrorCode::EXECUTION_FAILED
    } else {
        ErrorCode::of("UNAVAILABLE")
    };
    ToolError::new(code, message)
        .retryable(retryable)
        .with_detail("server", server.to_owned())
        .with_detail("tool", tool.to_owned())
}

/// A call the server refused because this client's authorization could not win its acceptance
/// (`why` names the refusal, never a token): not retryable until a person sees to it.
pub(crate) fn unauthorized(server: &str, tool: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::of("UNAUTHORIZED"),
        format!("the MCP server {server} refused this client's authorization: {why}"),
    )
    .retryable(false)
    .with_detail("server", server.to_owned())
    .with_detail("tool", tool.to_owned())
}

/// A call not sent because there is no connection: the server is being started or reached
/// again (retryable), or the client was closed (`closed`, not retryable).
pub(crate) fn not_connected(server: &str, tool: &str, closed: bool) -> ToolError {
    let message = if closed {
        format!("the connection to the MCP server {server} was closed; nothing was sent")
    } else {
        format!("the MCP server {server} is being started again; nothing was sent")
    };
    ToolError::new(ErrorCode::of("UNAVAILABLE"), message)
        .retryable(!closed)
        .with_detail("server", server.to_owned())
        .with_detail("tool", tool.to_owned())
}

fn texts(result: &CallToolResult) -> Vec<&str> {
    (result.content.iter())
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A text block as its text; any other as its JSON with every base64 payload (`data`, `blob`)
/// replaced by its decoded size (`bytes`), so that images and audio never reach the model's
/// context or the audit as text.
fn block(content: &ContentBlock) -> Value {
    if let ContentBlock::Text(t) = content {
        return Value::String(t.text.clone());
    }
    let mut value = serde_json::to_value(content).unwrap_or(Value::Null);
    without_payloads(&mut value);
    value
}

fn without_payloads(value: &mut Value) {
    if let Value::Object(map) = value {
        for key in ["data", "blob"] {
            if let Some(Value::String(payload)) = map.remove(key) {
                map.insert("bytes".into(), json!(payload.len() / 4 * 3));
            }
        }
        map.values_mut().for_each(without_payloads);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    fn structured(value: Value) -> CallToolResult {
        CallToolResult::structured(value)
    }

    #[test]
    fn a_result_must_keep_to_the_output_schema_it_declared() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                            "required": ["n"]});
        let output = Validator::compile(&schema).unwrap();
        let fine = value_of("s", structured(json!({"n": 1})), Some(&output)).unwrap();
        assert_eq!(fine, json!({"n": 1}));
        let wrong = value_of("s", structured(json!({"n": "one"})), Some(&output)).unwrap_err();
        assert_eq!(wrong.violations[0].pointer, "/n", "{wrong:?}");
        let text_only = CallToolResult::success(vec![ContentBlock::text("1")]);
        let missing = value_of("s", text_only.clone(), Some(&output)).unwrap_err();
        assert!(
            missing.message.contains("no structured content"),
            "{missing:?}"
        );
        assert_eq!(value_of("s", text_only, None).unwrap(), json!("1"));
    }

    #[test]
    fn binary_content_is_its_type_and_size_never_its_bytes() {
        let image = ContentBlock::image("aGVsbG8gd29ybGQh", "image/png");
        let result = CallToolResult::success(vec![ContentBlock::text("a chart"), image]);
        let value = value_of("s", result, None).unwrap();
        assert_eq!(value[0], "a chart");
        assert_eq!(value[1]["mimeType"], "image/png");
        assert_eq!(value[1]["bytes"], 12);
        assert!(!value.to_string().contains("aGVsbG8"), "{value}");
    }
}
