use tool_runtime::tool;

/// Searches.
#[tool(read_only, name = "search notes!")]
fn search(query: String) -> String {
    query
}

fn main() {}
