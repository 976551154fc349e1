use tool_runtime::tool;

struct Notes;

impl Notes {
    /// A method is not a tool.
    #[tool(read_only)]
    fn count(&self, query: String) -> usize {
        query.len()
    }
}

fn main() {}
