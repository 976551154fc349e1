//! OpenAI strict mode: the view of a canonical schema that OpenAI's constrained decoding accepts,
//! and the inverse step on the way back.
//!
//! Rules (wire README §7, after openai-agents-python's `ensure_strict_json_schema`): the root is an
//! object; every object gets `additionalProperties: false`, and refuses if it was an open map
//! (`true` or a schema); every property is listed in `required`, and those that were optional
//! become nullable through `anyOf: [..., {"type": "null"}]`; `oneOf` becomes `anyOf`; a single
//! `allOf` is merged; a `$ref` with sibling keywords is inlined; `default` is dropped (every property is
//! required, so no default can apply).
//! `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`, `patternProperties`,
//! `propertyNames`, tuple `prefixItems` and several-entry `allOf` are refused, as are schemas over
//! OpenAI's limits (10 object nesting levels, 5000 properties, 1000 enum values).
//!
//! Because optional properties become nullable, a strict model sends `null` for an argument it
//! means to omit; [`strip_optional_nulls`] removes those before canonical validation.

use serde_json::{Map, Value, json};

use crate::{ViewError, accepts_null, escape, resolve};

const MAX_OBJECT_DEPTH: usize = 10;
const MAX_PROPERTIES: usize = 5000;
const MAX_ENUM_VALUES: usize = 1000;
const MAX_WALK_DEPTH: usize = 100;

const REFUSED: &[(&str, &str)] = &[
    ("not", "`not` is not supported in strict mode"),
    ("if", "`if`/`then`/`else` is not supported in strict mode"),
    ("then", "`if`/`then`/`else` is not supported in strict mode"),
    ("else", "`if`/`then`/`else` is not supported in strict mode"),
    (
        "dependentRequired",
        "`dependentRequired` is not supported in strict mode",
    ),
    (
        "dependentSchemas",
        "`dependentSchemas` is not supported in strict mode",
    ),
    (
        "patternProperties",
        "an object with `patternProperties` is an open map and cannot be strict",
    ),
    (
        "propertyNames",
        "an object constrained by `propertyNames` is an open map and cannot be strict",
    ),
    (
        "prefixItems",
        "tuples (`prefixItems`) are not supported in strict mode",
    ),
];

#[derive(Default)]
struct Stats {
    properties: usize,
    enum_values: usize,
}

/// The strict view of `schema`, or why it cannot be strict.
pub fn strict_view(schema: &Value) -> Result<Value, ViewError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ViewError::new(
            "",
            "the root must be `\"type\": \"object\"` (not a union) in strict mode",
        ));
    }
    if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() {
        return Err(ViewError::new(
            "",
            "the root cannot be a union (`anyOf`/`oneOf`) in strict mode",
        ));
    }
    let mut out = schema.clone();
    let mut stats = Stats::default();
    strictify(&mut out, schema, "", 0, 0, &mut stats)?;
    if stats.properties > MAX_PROPERTIES {
        return Err(ViewError::new(
            "",
            format!(
                "{} properties in total; strict mode allows at most {MAX_PROPERTIES}",
                stats.properties
            ),
        ));
    }
    if stats.enum_values > MAX_ENUM_VALUES {
        return Err(ViewError::new(
            "",
            format!(
                "{} enum values in total; strict mode allows at most {MAX_ENUM_VALUES}",
                stats.enum_values
            ),
        ));
    }
    Ok(out)
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    }
}

fn strictify(
    node: &mut Value,
    root: &Value,
    pointer: &str,
    object_depth: usize,
    walk_depth: usize,
    stats: &mut Stats,
) -> Result<(), ViewError> {
    if walk_depth > MAX_WALK_DEPTH {
        return Err(ViewError::new(pointer, "the schema nests too deeply"));
    }
    let map = match node {
        Value::Object(map) => map,
        Value::Bool(false) => return Ok(()),
        Value::Bool(true) => {
            return Err(ViewError::new(
                pointer,
                "`true` (any value) cannot be strict; give the value a type",
            ));
        }
        _ => return Err(ViewError::new(pointer, "not a schema")),
    };
    for (key, reason) in REFUSED {
        if map.contains_key(*key) {
            return Err(ViewError::new(&format!("{pointer}/{key}"), *reason));
        }
    }
    if let Some(Value::Bool(true)) | Some(Value::Object(_)) = map.get("unevaluatedProperties") {
        return Err(ViewError::new(
            &format!("{pointer}/unevaluatedProperties"),
            "an open map cannot be strict",
        ));
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    if let Some(all_of) = map.remove("allOf") {
        match all_of {
            Value::Array(mut parts) if parts.len() == 1 => {
                if let Value::Object(inner) = parts.remove(0) {
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            _ => {
                return Err(ViewError::new(
                    &format!("{pointer}/allOf"),
                    "`allOf` with several schemas is not supported in strict mode",
                ));
            }
        }
    }
    if map.len() > 1
        && let Some(Value::String(reference)) = map.get("$ref").cloned()
    {
        // OpenAI refuses keywords next to `$ref`: inline the target under the siblings
        let target = resolve(root, &reference).ok_or_else(|| {
            ViewError::new(
                pointer,
                format!("reference {reference:?} is not a local definition"),
            )
        })?;
        map.remove("$ref");
        if let Value::Object(t) = target {
            for (k, v) in t {
                map.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        return strictify(node, root, pointer, object_depth, walk_depth + 1, stats);
    }
    // every property is required in strict mode, so a default can never apply
    map.remove("default");
    if let Some(Value::Array(values)) = map.get("enum") {
        stats.enum_values += values.len();
    }

    if is_object_schema(map) {
        if object_depth >= MAX_OBJECT_DEPTH {
            return Err(ViewError::new(
                pointer,
                format!("objects nest more than {MAX_OBJECT_DEPTH} levels deep"),
            ));
        }
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(ViewError::new(
                    &format!("{pointer}/additionalProperties"),
                    "an open map (`additionalProperties`) cannot be strict: declare its keys as \
                     properties, or send this tool without strict mode",
                ));
            }
        }
        map.insert("additionalProperties".into(), Value::Bool(false));
        let required: Vec<String> = match map.get("required") {
            Some(Value::Array(r)) => r
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let mut all = Vec::new();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            stats.properties += props.len();
            for (name, prop) in props.iter_mut() {
                let child = format!("{pointer}/properties/{}", escape(name));
                let optional = !required.iter().any(|r| r == name);
                let nullable_before = accepts_null(root, prop);
                strictify(prop, root, &child, object_depth + 1, walk_depth + 1, stats)?;
                if optional && !nullable_before {
                    make_nullable(prop);
                }
                all.push(Value::String(name.clone()));
            }
        }
        map.insert("required".into(), Value::Array(all));
    }

    for key in ["items", "contains"] {
        if let Some(child) = map.get_mut(key) {
            let p = format!("{pointer}/{key}");
            strictify(child, root, &p, object_depth, walk_depth + 1, stats)?;
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        for (i, b) in branches.iter_mut().enumerate() {
            let p = format!("{pointer}/anyOf/{i}");
            strictify(b, root, &p, object_depth, walk_depth + 1, stats)?;
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            for (name, d) in defs.iter_mut() {
                let p = format!("{pointer}/{key}/{}", escape(name));
                strictify(d, root, &p, object_depth, walk_depth + 1, stats)?;
            }
        }
    }
    Ok(())
}

/// Makes an optional property's schema nullable: a `null` branch added to an existing `anyOf`,
/// otherwise `anyOf: [schema, {"type": "null"}]` with the description kept outside so the model
/// still reads it first.
fn make_nullable(prop: &mut Value) {
    if let Some(Value::Array(branches)) = prop.get_mut("anyOf") {
        branches.push(json!({"type": "null"}));
        return;
    }
    let mut inner = std::mem::take(prop);
    let description = inner.as_object_mut().and_then(|m| m.remove("description"));
    let mut wrapper = Map::new();
    if let Some(d) = description {
        wrapper.insert("description".into(), d);
    }
    wrapper.insert("anyOf".into(), json!([inner, {"type": "null"}]));
    *prop = Value::Object(wrapper);
}

/// Removes the `null`s a strict-mode model sends for optional properties whose canonical schema
/// does not accept `null`, recursively through properties and array items; everything else is
/// left for validation to judge.
pub fn strip_optional_nulls(canonical: &Value, args: Value) -> Value {
    strip(canonical, canonical, args, 0)
}

fn strip(root: &Value, schema: &Value, args: Value, depth: usize) -> Value {
    if depth > 64 {
        return args;
    }
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(root, r).unwrap_or(schema),
        None => schema,
    };
    match args {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let prop = props.and_then(|p| p.get(&k));
                match prop {
                    Some(ps) => {
                        if v.is_null() && !required.contains(&k.as_str()) && !accepts_null(root, ps)
                        {
                            continue;
                        }
                        out.insert(k, strip(root, ps, v, depth + 1));
                    }
                    None => {
                        out.insert(k, v);
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) if item_schema.is_object() => Value::Array(
                items
                    .into_iter()
                    .map(|v| strip(root, item_schema, v, depth + 1))
                    .collect(),
            ),
            _ => Value::Array(items),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_objects_requires_everything_and_makes_optionals_nullable() {
        let canonical = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["c", "f"], "description": "unit"},
                "already": {"type": ["integer", "null"]},
                "nested": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
            },
            "required": ["city", "nested"]
        });
        let before = canonical.clone();
        let view = strict_view(&canonical).unwrap();
        assert_eq!(canonical, before, "the canonical schema is never changed");
        assert_eq!(view["additionalProperties"], false);
        assert_eq!(
            view["required"],
            json!(["city", "unit", "already", "nested"])
        );
        assert_eq!(
            view["properties"]["unit"],
            json!({"description": "unit", "anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]})
        );
        assert_eq!(
            view["properties"]["already"],
            json!({"type": ["integer", "null"]})
        );
        assert_eq!(view["properties"]["nested"]["additionalProperties"], false);
    }

    #[test]
    fn refuses_open_maps_and_unsupported_keywords_with_a_pointer() {
        let open = json!({"type": "object", "properties": {
            "tags": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let err = strict_view(&open).unwrap_err();
        assert_eq!(err.pointer, "/properties/tags/additionalProperties");
        assert!(err.reason.contains("open map"));
        let not = json!({"type": "object", "properties": {"a": {"not": {"type": "string"}}}});
        assert_eq!(strict_view(&not).unwrap_err().pointer, "/properties/a/not");
        let root_union = json!({"anyOf": [{"type": "object"}]});
        assert_eq!(strict_view(&root_union).unwrap_err().pointer, "");
        let mut deep = json!({"type": "object"});
        for _ in 0..11 {
            deep = json!({"type": "object", "properties": {"d": deep}, "required": ["d"]});
        }
        assert!(strict_view(&deep).unwrap_err().reason.contains("nest"));
    }

    #[test]
    fn nulls_for_optional_non_nullable_properties_are_stripped() {
        let canonical = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": ["string", "null"]},
                "r": {"type": "string"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}}
            },
            "required": ["r"]
        });
        let args = json!({"a": null, "b": null, "r": null, "list": [{"x": null}]});
        assert_eq!(
            strip_optional_nulls(&canonical, args),
            json!({"b": null, "r": null, "list": [{}]})
        );
    }
}
