//! `#[derive(ToolArgs)]` refuses every attribute and shape it would read differently from serde.
use serde::Deserialize;
use tool_runtime::ToolArgs;

#[derive(Deserialize, ToolArgs)]
struct Aliased {
    #[serde(alias = "q")]
    query: String,
}

#[derive(Default, Deserialize, ToolArgs)]
#[serde(default)]
struct ContainerDefault {
    query: String,
}

#[derive(Deserialize, ToolArgs)]
struct Tuple(String);

#[derive(Deserialize, ToolArgs)]
struct Generic<T> {
    value: T,
}

#[derive(ToolArgs)]
union Bits {
    a: u32,
}

#[derive(Deserialize, ToolArgs)]
enum Shape {
    Circle { radius: f64 },
}

#[derive(Deserialize, ToolArgs)]
enum Mode {
    Fast,
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize, ToolArgs)]
#[serde(untagged)]
enum Either {
    A,
}

fn main() {}
