use tool_runtime::{Tool, tool};

/// A struct whose `#[serde(default)]` makes every field optional: a verbatim schema that
/// requires none of them agrees with it, and one that requires some still does.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}"#
)]
#[derive(Default)]
#[serde(default)]
struct Search {
    /// The text.
    query: String,
    /// How many.
    limit: u32,
}

/// The same with `default = "path"` on the container and one field the schema requires.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}"#
)]
#[serde(default = "Paged::first")]
struct Paged {
    /// The text.
    query: String,
    /// How many.
    limit: u32,
}

impl Paged {
    fn first() -> Self {
        Paged {
            query: String::new(),
            limit: 10,
        }
    }
}

/// An `Option` the schema requires, as strict mode wants: it accepts null.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"tag": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["tag"]}"#
)]
fn tagged(tag: Option<String>) -> usize {
    tag.map_or(0, |t| t.len())
}

impl tool_runtime::tool::Run for Search {
    type Output = usize;
    type Error = tool_runtime::ToolError;
    async fn run(self, _cx: &tool_runtime::CallContext) -> Result<usize, Self::Error> {
        Ok(self.query.len() + self.limit as usize)
    }
}

impl tool_runtime::tool::Run for Paged {
    type Output = usize;
    type Error = tool_runtime::ToolError;
    async fn run(self, _cx: &tool_runtime::CallContext) -> Result<usize, Self::Error> {
        Ok(self.query.len() + self.limit as usize)
    }
}

#[test]
fn runs() {
    assert_eq!(<Search as Tool>::NAME, "search");
    assert_eq!(<Paged as Tool>::NAME, "paged");
    assert_eq!(<tagged as Tool>::NAME, "tagged");
}
