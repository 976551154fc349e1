use tool_runtime::tool;

/// The file is not valid JSON: the error names the file, line and column.
#[tool(read_only, schema = "tests/schemas/bad.json")]
fn bad_json(id: u64) -> u64 {
    id
}

/// A referenced file refers to a remote schema.
#[tool(read_only, schema = "tests/schemas/uses_remote.json")]
fn remote_inside(id: u64) -> u64 {
    id
}

/// The file is JSON but not a JSON Schema: `minimum` must be a number.
#[tool(read_only, schema = "tests/schemas/not_a_schema.json")]
fn not_a_schema(id: u64) -> u64 {
    id
}

/// The file is a schema, but of a string: tool arguments are an object.
#[tool(read_only, schema = "tests/schemas/string_schema.json")]
fn not_an_object(id: u64) -> u64 {
    id
}

/// A file the schema refers to does not exist.
#[tool(read_only, schema = "tests/schemas/uses_missing.json")]
fn missing_part(id: u64) -> u64 {
    id
}

/// Inlining a referenced file needs "$defs" to be an object.
#[tool(create, schema = "tests/schemas/bad_defs.json")]
fn bad_defs(body: String) -> String {
    body
}

fn main() {}
