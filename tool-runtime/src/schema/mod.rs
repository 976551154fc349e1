//! Derived schemas: JSON Schema (draft 2020-12) from the argument type with schemars, cleaned of
//! the noise providers do not need.

pub(crate) mod written;

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

/// Brings a derived schema into OpenAI strict form where that keeps its meaning: every object
/// without an `additionalProperties` gets `false`, and every property that already accepts `null`
/// (schemars' rendering of `Option<T>`) is listed in `required`. Anything else that breaks strict
/// mode (maps, defaults on non-null properties) is left for [`strict_problems`] to report.
pub fn strictify(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if is_object_schema(map) {
                map.entry("additionalProperties")
                    .or_insert(Value::Bool(false));
                let nullable: Vec<String> = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| {
                        p.iter()
                            // references are not followed (the property is its own root):
                            // schemars renders `Option<T>` as a union with null, which needs none
                            .filter(|(_, s)| tool_wire::accepts_null(s, s))
                            .map(|(k, _)| k.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                let required = map
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(req) = required {
                    for k in nullable {
                        if !req.iter().any(|r| r == k.as_str()) {
                            req.push(Value::String(k));
                        }
                    }
                }
            }
            for v in map.values_mut() {
                strictify(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strictify),
        _ => {}
    }
}

fn is_object_schema(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("properties")
        || match map.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => false,
        }
}

/// Every place where `schema` breaks OpenAI's strict-mode rules, as `(JSON pointer, message)`:
/// an object without `additionalProperties: false`, an open map, a property not in `required`.
/// The places are `tool_wire::strict_check`'s, the walk `#[tool]` runs on verbatim schemas at
/// compile time; the messages speak to the author of a derived schema, who fixes it in Rust.
pub fn strict_problems(schema: &Value) -> Vec<(String, String)> {
    use tool_wire::strict_check::StrictRule;
    tool_wire::strict_check::problems(schema)
        .into_iter()
        .map(|p| {
            let message = match &p.rule {
                StrictRule::NotClosed => {
                    "strict mode needs \"additionalProperties\": false on every object".to_owned()
                }
                StrictRule::OpenMap => "an open object (a map) is not allowed in strict mode; use \
                                        an array of key/value objects"
                    .to_owned(),
                StrictRule::NotRequired(k) => format!(
                    "property {k:?} must be required in strict mode (make an optional one \
                     nullable: Option<T>)"
                ),
            };
            (p.pointer, message)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strictify_requires_nullable_properties_and_closes_objects() {
        let mut s = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
            "required": ["a"]
        });
        strictify(&mut s);
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["required"], json!(["a", "b"]));
        assert!(strict_problems(&s).is_empty());
    }

    #[test]
    fn strict_problems_name_maps_and_optional_properties() {
        let s = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "n": {"type": "integer"}
            },
            "required": ["tags"]
        });
        let problems = strict_problems(&s);
        let pointers: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, ["/properties/n", "/properties/tags"]);
    }
}
