use tool_runtime::tool;

/// A trait object has no schema.
#[tool(read_only)]
fn show(value: dyn std::fmt::Display) -> String {
    value.to_string()
}

/// The output schema needs a named type.
#[tool(read_only)]
fn opaque_output(id: u64) -> impl serde::Serialize {
    id
}

fn main() {}
