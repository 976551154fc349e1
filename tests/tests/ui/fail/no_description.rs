use tool_runtime::tool;

#[tool(read_only)]
fn undocumented(query: String) -> String {
    query
}

fn main() {}
