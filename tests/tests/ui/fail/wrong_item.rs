use tool_runtime::tool;

/// An enum is neither form of a tool.
#[tool(read_only)]
enum Choice {
    A,
    B,
}

/// Nor is a constant.
#[tool(read_only)]
const LIMIT: u32 = 10;

fn main() {
    let _ = (Choice::A, Choice::B, LIMIT);
}
