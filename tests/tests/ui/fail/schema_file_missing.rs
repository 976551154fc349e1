use tool_runtime::tool;

/// The schema file does not exist.
#[tool(read_only, schema = "schemas/missing.json")]
fn get_note(id: u64) -> u64 {
    id
}

fn main() {}
