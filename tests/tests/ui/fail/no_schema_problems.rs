use tool_runtime::tool;

/// Opting out of a schema while giving one.
#[tool(
    external,
    allow_no_schema,
    no_schema_mode = human_approval,
    parameters = r#"{"type": "object", "properties": {}}"#
)]
struct WithSchema {}

/// A mode that does not exist.
#[tool(external, allow_no_schema, no_schema_mode = sometimes)]
struct UnknownMode(serde_json::Value);

/// Strict needs a schema.
#[tool(external, strict, allow_no_schema, no_schema_mode = read_only)]
struct StrictWithout(serde_json::Value);

/// A struct with named fields has a derived schema: opting out would only drop validation.
#[tool(external, allow_no_schema, no_schema_mode = full)]
struct Named {
    /// The payload.
    payload: String,
}

fn main() {}
