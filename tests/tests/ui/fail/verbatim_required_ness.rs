use tool_runtime::tool;

/// The schema requires what the Rust type defaults, and an `Option` that can never be `None`.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["query", "limit", "tag"]}"#
)]
fn search(query: String, #[arg(default = 10)] limit: u32, tag: Option<String>) -> usize {
    query.len() + limit as usize + tag.map_or(0, |t| t.len())
}

/// The schema requires a name that is neither a property nor a parameter.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query", "qeury"]}"#
)]
fn find(query: String) -> String {
    query
}

/// A struct: `rename_all` is respected, and a field with its own `#[serde(default)]` is not
/// required by the schema while the struct's other fields are.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"userId": {"type": "integer"}, "pageSize": {"type": "integer"}}, "required": ["userId", "pageSize"]}"#
)]
#[serde(rename_all = "camelCase")]
struct ListNotes {
    /// The owner.
    user_id: u64,
    /// Page size.
    #[serde(default)]
    page_size: u32,
}

/// Without the struct's `#[serde(default)]`, a field the schema does not require is an error.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"userId": {"type": "integer"}}}"#
)]
#[serde(rename_all = "camelCase")]
struct NoDefault {
    /// The owner.
    user_id: u64,
}

fn main() {}
