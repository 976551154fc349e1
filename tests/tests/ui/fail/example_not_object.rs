use tool_runtime::tool;

/// An example that is JSON but not an object of arguments.
#[tool(read_only, examples = [r#"["rust"]"#])]
fn search(query: String) -> String {
    query
}

fn main() {}
