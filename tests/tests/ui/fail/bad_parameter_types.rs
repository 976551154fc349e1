use tool_runtime::tool;

/// Borrowed arguments cannot be deserialized into.
#[tool(read_only)]
fn borrowed(text: &str, bytes: &[u8]) -> usize {
    text.len() + bytes.len()
}

/// impl Trait has no schema.
#[tool(read_only)]
fn opaque(value: impl std::fmt::Display) -> String {
    value.to_string()
}

/// Generic functions have no single schema.
#[tool(read_only)]
fn generic<T: serde::de::DeserializeOwned>(value: T) -> bool {
    let _ = value;
    true
}

/// Arguments need a plain name.
#[tool(read_only)]
fn destructured((a, b): (u8, u8)) -> u8 {
    a + b
}

fn main() {}
