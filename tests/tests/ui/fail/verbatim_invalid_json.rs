use tool_runtime::tool;

/// Gets a note.
#[tool(
    read_only,
    parameters = r#"{
    "type": "object",
    "properties": { "id": { "type": "integer" }, }
}"#
)]
fn get_note(id: u64) -> u64 {
    id
}

fn main() {}
