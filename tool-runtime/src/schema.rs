//! Derived schemas: JSON Schema (draft 2020-12) from the argument type with schemars, cleaned of
//! the noise providers do not need.

use schemars::JsonSchema;
use serde_json::Value;

/// The canonical argument schema of `T`: draft 2020-12, nested types under `$defs`, doc comments
/// as descriptions, and without the root `title`, `description` and `$schema` (the tool's own
/// description says what the tool does; a root title would only repeat the type's name).
pub fn derive<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
        map.remove("description");
    }
    schema
}

/// The schema of a tool's output type, for MCP's `outputSchema`.
pub fn output<T: JsonSchema>() -> Value {
    derive::<T>()
}
