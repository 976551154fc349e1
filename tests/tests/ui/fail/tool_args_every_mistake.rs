//! `#[derive(ToolArgs)]` reports every mistake of a type in one build, each at its tokens.
use serde::Deserialize;
use tool_runtime::ToolArgs;

#[derive(Default, Deserialize, ToolArgs)]
#[serde(default, rename_all = "camelCase", expecting = "a query")]
struct Query {
    #[serde(alias = "q")]
    text: String,
    #[serde(rename = "max", skip_serializing_if = "Option::is_none")]
    limit: Option<u32>,
    #[serde(flatten)]
    rest: std::collections::HashMap<String, String>,
}

#[derive(Deserialize, ToolArgs)]
#[serde(tag = "kind")]
enum Shape {
    Circle(f64),
    #[serde(alias = "sq")]
    Square,
    Triangle { side: f64 },
}

fn main() {}
