use tool_runtime::tool;

/// A top level that is not an object.
#[tool(read_only, parameters = r#"[{"type": "string"}]"#)]
fn listed(id: u64) -> u64 {
    id
}

/// A top level that describes a string.
#[tool(read_only, parameters = r#"{"type": "string"}"#)]
fn stringly(id: u64) -> u64 {
    id
}

fn main() {}
