use tool_runtime::tool;

/// The file is not valid JSON: the error names the file, line and column.
#[tool(read_only, schema = "../../../../tests/tests/schemas/bad.json")]
fn bad_json(id: u64) -> u64 {
    id
}

/// A referenced file refers to a remote schema.
#[tool(read_only, schema = "../../../../tests/tests/schemas/uses_remote.json")]
fn remote_inside(id: u64) -> u64 {
    id
}

fn main() {}
