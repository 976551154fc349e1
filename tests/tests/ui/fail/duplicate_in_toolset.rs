use tool_runtime::{tool, toolset};

/// Searches notes.
#[tool(read_only)]
fn search() -> u8 {
    1
}

mod web {
    use tool_runtime::tool;

    /// Searches the web, under the same name.
    #[tool(external, name = "search")]
    pub fn search_web() -> u8 {
        2
    }
}

fn main() {
    let _ = toolset![search, web::search_web];
}
