use tool_runtime::tool;

/// A strict tool whose schema is not strict.
#[tool(
    read_only,
    strict,
    parameters = r#"{"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}, "meta": {"type": "object", "additionalProperties": {"type": "string"}}}, "required": ["id", "meta"], "additionalProperties": false}"#
)]
fn get_note(id: u64, tag: Option<String>, meta: std::collections::HashMap<String, String>) -> u64 {
    id + tag.map_or(0, |t| t.len() as u64) + meta.len() as u64
}

fn main() {}
