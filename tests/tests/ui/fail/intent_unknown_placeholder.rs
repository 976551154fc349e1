use tool_runtime::tool;

/// Searches your notes.
#[tool(read_only, intent = "Search your notes for {qeury}")]
fn search_notes(query: String, limit: u32) -> usize {
    query.len() + limit as usize
}

fn main() {}
