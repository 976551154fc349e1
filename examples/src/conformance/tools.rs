//! The suite's fixture tools that the runtime can write today, each a plain `#[tool]`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_runtime::progress::Progress;
use tool_runtime::{CallContext, ErrorCode, ToolError, tool, tool::Run};

/// Tests simple text content response.
#[tool(read_only)]
pub fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Tests error response handling: the tool always fails, with its own structured error.
#[tool(read_only)]
pub fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        ErrorCode::of("INTENTIONAL_FAILURE"),
        "This tool intentionally returns an error for testing",
    )
    .recover("nothing to fix: this tool always fails"))
}

/// Tool with JSON Schema 2020-12 features for conformance testing: its schema (`$schema`,
/// `$defs`, a `$ref`, `additionalProperties`) is declared verbatim and validates every call.
#[tool(
    read_only,
    name = "json_schema_2020_12_tool",
    schema = "schemas/json_schema_2020_12.json"
)]
pub struct JsonSchema202012 {
    /// A name.
    pub name: Option<String>,
    /// An address.
    pub address: Option<Address>,
}

/// The `address` of [`JsonSchema202012`].
#[derive(Debug, Serialize, Deserialize)]
pub struct Address {
    /// The street.
    pub street: Option<String>,
    /// The city.
    pub city: Option<String>,
}

impl Run for JsonSchema202012 {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Value, ToolError> {
        let address = self
            .address
            .map(|a| serde_json::json!({"street": a.street, "city": a.city}));
        Ok(serde_json::json!({"name": self.name, "address": address}))
    }
}

/// Tests tool that reports progress notifications: three steps, 50 ms apart, out of 100.
#[tool(read_only)]
pub async fn test_tool_with_progress(cx: &CallContext) -> String {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        cx.report_progress(
            Progress::new(step)
                .of(100.0)
                .message(format!("Completed step {step} of 100")),
        );
    }
    "Tool with progress executed successfully".to_owned()
}

/// How long the server waits for a request's answer before it ends the response and the client
/// polls for the rest (`ServerOptions::mcp_poll_after`).
pub const POLL_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Tests SSE polling: the call outlasts [`POLL_AFTER`] by a second, so the server ends its
/// stream before the answer, and the client reconnects with `Last-Event-ID` to get it.
#[tool(read_only)]
pub async fn test_reconnection() -> String {
    tokio::time::sleep(POLL_AFTER + std::time::Duration::from_secs(1)).await;
    "Reconnection test completed: the answer came on the resumed stream".to_owned()
}
