use tool_runtime::tool;

/// The doc comment does not help: an explicit `description` wins, and it is blank.
#[tool(read_only, description = "  ")]
fn blank(query: String) -> String {
    query
}

fn main() {}
