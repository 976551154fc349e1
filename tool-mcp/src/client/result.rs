//! A server's answer to `tools/call` as a tool's outcome: its value, or a [`ToolError`] the model
//! can read.

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tool_runtime::{ErrorCode, ToolError};

/// The value of a result: its structured content when it has one (what an output schema
/// describes), else its content — one text as a string, several blocks as an array in which
/// each non-text block stands as its kind, MIME type and size, never its bytes. A result the
/// server flags `isError` is the tool's failure, with the server's text as the message.
pub(crate) fn value_of(server: &str, result: CallToolResult) -> Result<Value, ToolError> {
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
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            (true, format!("the MCP server {server} is not connected"))
        }
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
