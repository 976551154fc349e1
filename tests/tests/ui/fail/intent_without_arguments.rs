use tool_runtime::tool;

/// Lists notebooks: it takes no arguments, so the intent can name none.
#[tool(read_only, intent = "List the notebooks of {owner}")]
fn list_notebooks() -> Vec<String> {
    Vec::new()
}

fn main() {}
