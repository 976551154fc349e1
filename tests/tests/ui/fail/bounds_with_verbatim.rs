use tool_runtime::tool;

/// Bounds belong in the verbatim schema, not on the parameter.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"limit": {"type": "integer"}}, "required": ["limit"]}"#
)]
fn list(#[arg(min = 1, max = 50)] limit: u32) -> u32 {
    limit
}

fn main() {}
