use tool_runtime::tool;

/// Two parameters the model would both send as `q`.
#[tool(read_only)]
fn search(#[serde(rename = "q")] query: String, q: String) -> String {
    query + &q
}

/// The same through `rename_all` on a struct.
#[tool(read_only)]
#[serde(rename_all = "camelCase")]
struct Find {
    /// The id.
    user_id: u64,
    /// The same id, spelled the way the model sees the first.
    #[serde(rename = "userId")]
    other: u64,
}

fn main() {}
