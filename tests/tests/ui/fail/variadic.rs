use tool_runtime::tool;

/// A C-variadic function cannot be a tool.
#[tool(read_only)]
unsafe extern "C" fn sum(count: u32, _rest: ...) -> u32 {
    count
}

fn main() {}
