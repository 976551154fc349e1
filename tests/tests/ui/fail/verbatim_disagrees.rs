use tool_runtime::tool;

/// Searches; the schema and the parameters disagree.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"qeury": {"type": "string"}, "limit": {"type": "integer"}, "extra": {}}, "required": ["qeury"]}"#
)]
fn search(query: String, limit: u32) -> usize {
    query.len() + limit as usize
}

/// Renamed through serde: `q` is the property, so this one agrees.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}"#
)]
fn renamed(#[serde(rename = "q")] query: String) -> String {
    query
}

fn main() {}
