use tool_runtime::tool;

/// Examples that are not JSON, or do not fit the schema.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"id":{"type":"integer","minimum":1}},"required":["id"]}"#,
    examples = [r#"{"id": 1,}"#, r#"{"id": 0}"#]
)]
fn get_note(id: u64) -> u64 {
    id
}

/// A derived schema: example keys must be arguments.
#[tool(read_only, examples = [r#"{"qurey": "x"}"#])]
fn search(query: String) -> String {
    query
}

fn main() {}
