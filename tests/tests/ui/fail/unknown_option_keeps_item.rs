use tool_runtime::tool;

/// A typo in an option: the only error is the typo; the function is still emitted, so the call
/// in main compiles.
#[tool(read_onyl)]
fn search(
    /// The text
    #[arg(min_length = 1)]
    query: String,
) -> String {
    query
}

fn main() {
    let _ = search("x".into());
}
