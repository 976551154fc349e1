use tool_runtime::tool;

/// Options of the wrong kind, and a typo in `#[arg]`.
#[tool(read_only, name = 5, tags = "search")]
fn search(
    /// The text.
    #[arg(minimum = 1)]
    query: String,
) -> String {
    query
}

fn main() {
    let _ = search("x".into());
}
