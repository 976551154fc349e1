use tool_runtime::tool;

/// Pings.
#[tool(read_only)]
struct Ping;

fn main() {}
