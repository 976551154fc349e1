//! Inlining of local `$ref`s: the view for providers that drop or reject references.

use serde_json::{Map, Value};

use crate::{ViewError, escape, resolve};

/// Guards against reference bombs in untrusted (MCP, catalog) schemas.
const MAX_NODES: usize = 100_000;

/// The schema with every local `$ref` replaced by its target (sibling keywords kept, overriding
/// the target's) and the root `$defs`/`definitions` removed. Recursive schemas cannot be
/// inlined and are refused.
pub fn inline_refs(schema: &Value) -> Result<Value, ViewError> {
    let mut nodes = 0;
    let mut stack = Vec::new();
    let mut out = walk(schema, schema, "", &mut stack, &mut nodes)?;
    if let Value::Object(map) = &mut out {
        map.remove("$defs");
        map.remove("definitions");
    }
    Ok(out)
}

/// Keywords whose value maps names (property names, definition names) to schemas: their keys are
/// data, never keywords, so a property called `$defs`, `definitions`, `enum` or `$ref` is a
/// property like any other.
const NAMED_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is data, not a schema: copied as they are.
const DATA: &[&str] = &["enum", "const", "default", "examples", "required"];

/// Whether the schema uses `$ref` anywhere (outside its definitions, which are only reachable
/// through references).
pub fn has_refs(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| match k.as_str() {
            "$ref" => true,
            "$defs" | "definitions" => false,
            _ if DATA.contains(&k.as_str()) => false,
            _ if NAMED_SCHEMAS.contains(&k.as_str()) => match v {
                Value::Object(named) => named.values().any(has_refs),
                _ => false,
            },
            _ => has_refs(v),
        }),
        Value::Array(a) => a.iter().any(has_refs),
        _ => false,
    }
}

fn walk(
    root: &Value,
    node: &Value,
    pointer: &str,
    stack: &mut Vec<String>,
    nodes: &mut usize,
) -> Result<Value, ViewError> {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return Err(ViewError::new(
            pointer,
            "the schema expands to more than 100000 nodes when its references are inlined",
        ));
    }
    match node {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                if stack.iter().any(|r| r == reference) {
                    return Err(ViewError::new(
                        pointer,
                        format!("recursive reference {reference:?} cannot be inlined"),
                    ));
                }
                let target = resolve(root, reference).ok_or_else(|| {
                    ViewError::new(
                        pointer,
                        format!("reference {reference:?} is not a local definition"),
                    )
                })?;
                stack.push(reference.clone());
                let resolved = walk(root, target, pointer, stack, nodes)?;
                stack.pop();
                let mut merged = match resolved {
                    Value::Object(m) => m,
                    other => return Ok(other),
                };
                for (k, v) in map {
                    if k != "$ref" {
                        let child = format!("{pointer}/{}", escape(k));
                        merged.insert(k.clone(), keyword(root, k, v, &child, stack, nodes)?);
                    }
                }
                return Ok(Value::Object(merged));
            }
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                if k == "$defs" || k == "definitions" {
                    // definitions are only reachable through references, which are inlined
                    continue;
                }
                let child = format!("{pointer}/{}", escape(k));
                out.insert(k.clone(), keyword(root, k, v, &child, stack, nodes)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| walk(root, v, &format!("{pointer}/{i}"), stack, nodes))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// The value of keyword `k` of a schema, inlined: data copied, name maps walked value by value
/// (their keys are names, never keywords), anything else walked as a schema.
fn keyword(
    root: &Value,
    k: &str,
    v: &Value,
    pointer: &str,
    stack: &mut Vec<String>,
    nodes: &mut usize,
) -> Result<Value, ViewError> {
    if DATA.contains(&k) {
        return Ok(v.clone());
    }
    if NAMED_SCHEMAS.contains(&k)
        && let Value::Object(named) = v
    {
        let mut walked = Map::with_capacity(named.len());
        for (name, schema) in named {
            let at = format!("{pointer}/{}", escape(name));
            walked.insert(name.clone(), walk(root, schema, &at, stack, nodes)?);
        }
        return Ok(Value::Object(walked));
    }
    walk(root, v, pointer, stack, nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inlines_nested_refs_keeps_siblings_and_refuses_recursion() {
        let schema = json!({
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P", "description": "the point"}},
            "$defs": {
                "P": {"type": "object", "properties": {"x": {"$ref": "#/$defs/N"}}},
                "N": {"type": "number"}
            }
        });
        assert!(has_refs(&schema));
        let out = inline_refs(&schema).unwrap();
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"p": {"type": "object",
                "properties": {"x": {"type": "number"}}, "description": "the point"}}})
        );
        assert!(!has_refs(&out));
        let recursive = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        let err = inline_refs(&recursive).unwrap_err();
        assert!(err.pointer.starts_with("/properties/next"), "{err:?}");
        assert!(err.reason.contains("recursive"));
    }

    #[test]
    fn property_names_are_never_taken_for_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {
                "definitions": {"type": "array", "items": {"$ref": "#/$defs/Term"}},
                "$defs": {"type": "string"},
                "enum": {"$ref": "#/$defs/Term"},
                "$ref": {"type": "integer"}
            },
            "required": ["definitions", "$defs"],
            "$defs": {"Term": {"type": "object", "properties": {"word": {"type": "string"}}}}
        });
        assert!(has_refs(&schema));
        let out = inline_refs(&schema).unwrap();
        let term = json!({"type": "object", "properties": {"word": {"type": "string"}}});
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "definitions": {"type": "array", "items": term},
                    "$defs": {"type": "string"},
                    "enum": term,
                    "$ref": {"type": "integer"}
                },
                "required": ["definitions", "$defs"]
            })
        );
        // a reference only inside a property called `definitions` is still found
        let only_there = json!({"type": "object", "properties": {
            "definitions": {"$ref": "#/$defs/T"}}, "$defs": {"T": {"type": "string"}}});
        assert!(has_refs(&only_there));
    }
}
