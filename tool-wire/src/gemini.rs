//! Gemini's `parameters` field: an OpenAPI 3.0 style `Schema` that accepts a subset of JSON Schema
//! (wire README §5.5). Used only with [`GeminiSchemaField::Parameters`](crate::GeminiSchemaField);
//! the default sends the canonical schema untouched as `parametersJsonSchema`.
//!
//! The conversion inlines `$defs`/`$ref`, upper-cases `type` (the proto enum), turns `null` in a
//! type list or a union into `nullable: true`, `oneOf` into `anyOf`, a string `const` into a
//! one-value `enum`, and drops every keyword outside the accepted list (`additionalProperties`,
//! `$schema`, `exclusiveMinimum`, ...). Dropped constraints are still enforced: hydration validates
//! against the canonical schema. A non-string `const` and an object without declared properties
//! (an open map, which the API refuses) are refused.

use serde_json::{Map, Value, json};

use crate::inline::inline_refs;
use crate::{ViewError, escape};

const KEPT: &[&str] = &[
    "format",
    "title",
    "description",
    "enum",
    "default",
    "example",
    "required",
    "propertyOrdering",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
];

/// The `parameters` view of `schema`, or `None` for a tool without parameters (Gemini rejects an
/// empty object schema; the declaration then omits the field).
pub fn parameters_view(schema: &Value) -> Result<Option<Value>, ViewError> {
    let inlined = inline_refs(schema)?;
    let empty = inlined
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if empty {
        return Ok(None);
    }
    convert(&inlined, "").map(Some)
}

fn convert(node: &Value, pointer: &str) -> Result<Value, ViewError> {
    let Some(map) = node.as_object() else {
        // `true`: any value; Gemini has no such schema, the closest is an unconstrained string
        return Ok(json!({}));
    };
    let mut out = Map::new();
    let mut nullable = false;
    match map.get("type") {
        Some(Value::String(t)) => {
            if t == "null" {
                nullable = true;
            } else {
                out.insert("type".into(), Value::String(t.to_uppercase()));
            }
        }
        Some(Value::Array(types)) => {
            let non_null: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            nullable = non_null.len() < types.len();
            match non_null.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), Value::String(one.to_uppercase()));
                }
                many => {
                    out.insert(
                        "anyOf".into(),
                        Value::Array(
                            many.iter()
                                .map(|t| json!({"type": t.to_uppercase()}))
                                .collect(),
                        ),
                    );
                }
            }
        }
        _ => {}
    }
    for (k, v) in map {
        if KEPT.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    if let Some(c) = map.get("const") {
        match c {
            Value::String(_) => {
                out.insert("enum".into(), json!([c]));
                out.entry("type").or_insert_with(|| json!("STRING"));
            }
            _ => {
                return Err(ViewError::new(
                    &format!("{pointer}/const"),
                    "Gemini `parameters` only has string enums; a non-string `const` cannot be \
                     expressed (use parametersJsonSchema)",
                ));
            }
        }
    }
    let is_object = out.get("type").and_then(Value::as_str) == Some("OBJECT");
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if is_object && !has_properties && !pointer.is_empty() {
        // the API answers 400 "properties: should be non-empty for OBJECT type"
        return Err(ViewError::new(
            pointer,
            "Gemini `parameters` cannot express an object without declared properties (an open \
             map); use parametersJsonSchema",
        ));
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        let mut converted = Map::new();
        for (name, p) in props {
            let child = format!("{pointer}/properties/{}", escape(name));
            converted.insert(name.clone(), convert(p, &child)?);
        }
        out.insert("properties".into(), Value::Object(converted));
    }
    if let Some(items) = map.get("items") {
        out.insert("items".into(), convert(items, &format!("{pointer}/items"))?);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let mut kept = Vec::new();
            for (i, b) in branches.iter().enumerate() {
                if b.get("type").and_then(Value::as_str) == Some("null") {
                    nullable = true;
                    continue;
                }
                kept.push(convert(b, &format!("{pointer}/{key}/{i}"))?);
            }
            if kept.len() == 1 && !out.contains_key("type") {
                // `anyOf: [T, null]` is Option<T>: collapse it
                if let Value::Object(only) = kept.remove(0) {
                    for (k, v) in only {
                        out.entry(k).or_insert(v);
                    }
                }
            } else if !kept.is_empty() {
                out.insert("anyOf".into(), Value::Array(kept));
            }
        }
    }
    if let Some(Value::Array(e)) = map.get("enum") {
        // the proto's enum is a list of strings
        if e.iter().any(Value::is_null) {
            nullable = true;
        }
        let strings: Vec<Value> = e
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| match v {
                Value::String(_) => v.clone(),
                other => Value::String(other.to_string()),
            })
            .collect();
        out.insert("enum".into(), Value::Array(strings));
        out.entry("type").or_insert_with(|| json!("STRING"));
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_the_openapi_subset() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "q": {"type": "string", "minLength": 1},
                "limit": {"type": ["integer", "null"], "exclusiveMinimum": 0},
                "mode": {"const": "fast"},
                "p": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]}
            },
            "required": ["q"],
            "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}}
        });
        let view = parameters_view(&schema).unwrap().unwrap();
        assert_eq!(
            view,
            json!({
                "type": "OBJECT",
                "required": ["q"],
                "properties": {
                    "q": {"type": "STRING", "minLength": 1},
                    "limit": {"type": "INTEGER", "nullable": true},
                    "mode": {"enum": ["fast"], "type": "STRING"},
                    "p": {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}, "nullable": true}
                }
            })
        );
        assert_eq!(parameters_view(&json!({"type": "object"})).unwrap(), None);
        let map = json!({"type": "object", "properties": {
            "h": {"type": "object", "additionalProperties": {"type": "string"}}}});
        assert!(parameters_view(&map).unwrap_err().reason.contains("open"));
        let bad = json!({"type": "object", "properties": {"n": {"const": 3}}});
        assert_eq!(
            parameters_view(&bad).unwrap_err().pointer,
            "/properties/n/const"
        );
    }
}
