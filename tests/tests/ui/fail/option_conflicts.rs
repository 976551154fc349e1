use tool_runtime::tool;

/// Two safety categories.
#[tool(read_only, modify)]
fn both(id: u64) -> u64 {
    id
}

/// Two verbatim schemas.
#[tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}"#,
    schema = "id.json"
)]
fn two_schemas(id: u64) -> u64 {
    id
}

/// A mode without the opt-in.
#[tool(read_only, no_schema_mode = full)]
fn mode_only(id: u64) -> u64 {
    id
}

/// The opt-in without a mode, on a function that has a schema anyway.
#[tool(read_only, allow_no_schema)]
fn opt_out(id: u64) -> u64 {
    id
}

/// A timeout that cannot be read.
#[tool(read_only, timeout = "soon")]
fn slow(id: u64) -> u64 {
    id
}

fn main() {}
