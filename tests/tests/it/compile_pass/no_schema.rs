use tool_runtime::{CallContext, Tool, ToolError, definition::NoSchemaMode, tool, tool::Run};

/// Forwards whatever it receives to a human reviewer.
#[tool(external, allow_no_schema, no_schema_mode = human_approval)]
struct Forward(serde_json::Value);

impl Run for Forward {
    type Output = serde_json::Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<serde_json::Value, ToolError> {
        Ok(self.0)
    }
}

#[test]
fn runs() {
    assert_eq!(
        <Forward as Tool>::definition().no_schema_mode(),
        Some(NoSchemaMode::HumanApproval)
    );
}
