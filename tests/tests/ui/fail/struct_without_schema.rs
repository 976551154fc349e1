use tool_runtime::tool;

/// Forwards a free-form payload.
#[tool(external)]
struct Forward(serde_json::Value);

fn main() {}
