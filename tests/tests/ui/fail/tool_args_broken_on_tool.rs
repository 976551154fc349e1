//! A struct tool whose `#[derive(ToolArgs)]` fails shows the derive's error alone: the tool still
//! names a reader, so `#[tool]`'s expansion adds no error of rustc's.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::{CallContext, ToolArgs, ToolError, tool, tool::Run};

/// Searches.
#[tool(read_only)]
#[derive(Deserialize, Serialize, JsonSchema, ToolArgs)]
struct Search {
    /// The query.
    #[serde(alias = "q")]
    query: String,
}

impl Run for Search {
    type Output = String;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<String, ToolError> {
        Ok(self.query)
    }
}

fn main() {}
