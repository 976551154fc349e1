//! OpenAI strict mode: the view of a canonical schema that OpenAI's constrained decoding accepts,
//! and the inverse step on the way back.
//!
//! Rules (wire README §7, after openai-agents-python's `ensure_strict_json_schema`): the root is an
//! object; every object gets `additionalProperties: false`, and refuses if it was an open map
//! (`true` or a schema); every property is listed in `required`, and those that were optional
//! become nullable through `anyOf: [..., {"type": "null"}]`; `oneOf` becomes `anyOf`; a single
//! `allOf` is merged; a `$ref` with sibling keywords is inlined; `default` is dropped (every property is
//! required, so no default can apply). An object without declared properties and without
//! `additionalProperties` (`{"type": "object"}`: any keys) is refused rather than closed to `{}`.
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
            // no `properties` and no `additionalProperties`: any keys at all. Closing it would
            // narrow the contract to `{}`, so refuse rather than send something else.
            None if !map.contains_key("properties") => {
                return Err(ViewError::new(
                    pointer,
                    "an object without declared properties is open (it takes any keys) and \
                     cannot be strict: declare its properties, set \"additionalProperties\": \
                     false if it takes none, or send this tool without strict mode",
                ));
            }
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
/// does not accept `null`, recursively through properties and array items, and through `$ref`,
/// `allOf` and the `anyOf`/`oneOf` branch the value belongs to (an `Option<Struct>` is
/// `anyOf: [{"$ref": ..}, {"type": "null"}]`, and the struct's optional fields get `null`s too).
/// Where the branch cannot be told (several object branches fit), the value is left as it is;
/// everything else is left for validation to judge.
pub fn strip_optional_nulls(canonical: &Value, args: Value) -> Value {
    strip(canonical, &[canonical], args, 0)
}

/// How deep `strip` follows values and references; deeper arguments are left to validation.
const MAX_STRIP_DEPTH: usize = 64;

/// Strips `args` described by every schema of `schemas` at once (they all apply: the parts of an
/// `allOf`, a `$ref` and its siblings, the chosen union branch).
fn strip(root: &Value, schemas: &[&Value], args: Value, depth: usize) -> Value {
    if depth > MAX_STRIP_DEPTH {
        return args;
    }
    let mut applying = Vec::new();
    for s in schemas {
        if !collect(root, s, &args, depth, &mut applying) {
            return args;
        }
    }
    match args {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let declaring: Vec<&Value> = applying
                    .iter()
                    .filter_map(|s| s.get("properties")?.get(&k))
                    .collect();
                if declaring.is_empty() {
                    out.insert(k, v);
                    continue;
                }
                let required = applying.iter().any(|s| {
                    s.get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|n| n == k.as_str()))
                });
                if v.is_null() && !required && declaring.iter().any(|ps| !accepts_null(root, ps)) {
                    continue;
                }
                out.insert(k, strip(root, &declaring, v, depth + 1));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let item_schemas: Vec<&Value> = applying
                .iter()
                .filter_map(|s| s.get("items").filter(|i| i.is_object()))
                .collect();
            if item_schemas.is_empty() {
                return Value::Array(items);
            }
            Value::Array(
                items
                    .into_iter()
                    .map(|v| strip(root, &item_schemas, v, depth + 1))
                    .collect(),
            )
        }
        other => other,
    }
}

/// Adds to `out` every schema node that applies to `value` under `schema`: the node itself, its
/// `$ref` target, its `allOf` parts, and the one `anyOf`/`oneOf` branch `value` fits. `false` when
/// the branch is ambiguous (or references nest too deeply): nothing should be stripped then.
fn collect<'a>(
    root: &'a Value,
    schema: &'a Value,
    value: &Value,
    depth: usize,
    out: &mut Vec<&'a Value>,
) -> bool {
    if depth > MAX_STRIP_DEPTH {
        return false;
    }
    let Some(map) = schema.as_object() else {
        return true; // `true`/`false`: no properties to look into
    };
    out.push(schema);
    if let Some(Value::String(r)) = map.get("$ref")
        && let Some(target) = resolve(root, r)
        && !collect(root, target, value, depth + 1, out)
    {
        return false;
    }
    if let Some(Value::Array(parts)) = map.get("allOf") {
        for part in parts {
            if !collect(root, part, value, depth + 1, out) {
                return false;
            }
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let fitting: Vec<&Value> = branches
                .iter()
                .filter(|b| fits(root, b, value, depth + 1))
                .collect();
            match fitting.as_slice() {
                // none fits: validation refuses the value whatever is stripped
                [] => {}
                [one] => {
                    if !collect(root, one, value, depth + 1, out) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }
    true
}

/// Whether a union branch can describe `value`: its JSON type allows the value's, and for an
/// object with declared properties, every key of the value is one of them.
fn fits(root: &Value, branch: &Value, value: &Value, depth: usize) -> bool {
    if depth > MAX_STRIP_DEPTH {
        return false;
    }
    let Some(map) = branch.as_object() else {
        return branch == &Value::Bool(true);
    };
    if let Some(Value::String(r)) = map.get("$ref")
        && let Some(target) = resolve(root, r)
        && !fits(root, target, value, depth + 1)
    {
        return false;
    }
    if let Some(Value::Array(parts)) = map.get("allOf")
        && !parts.iter().all(|p| fits(root, p, value, depth + 1))
    {
        return false;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key)
            && !branches.iter().any(|b| fits(root, b, value, depth + 1))
        {
            return false;
        }
    }
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let type_ok = |t: &Value| t == kind || (kind == "integer" && t == "number");
    let typed = match map.get("type") {
        Some(Value::Array(ts)) => ts.iter().any(type_ok),
        Some(t) => type_ok(t),
        // untyped: `properties` or `items` say what it describes
        None if map.contains_key("properties") => kind == "object",
        None if map.contains_key("items") => kind == "array",
        None => true,
    };
    if !typed {
        return false;
    }
    if let (Value::Object(v), Some(Value::Object(props))) = (value, map.get("properties")) {
        return v.keys().all(|k| props.contains_key(k));
    }
    true
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

    #[test]
    fn nulls_are_stripped_through_refs_and_union_branches() {
        // `Option<When>` as schemars derives it: the struct behind a `$ref` in an `anyOf`
        let canonical = json!({
            "type": "object",
            "properties": {
                "when": {"anyOf": [{"$ref": "#/$defs/When"}, {"type": "null"}]},
                "old_style": {"allOf": [{"$ref": "#/$defs/When"}], "description": "d"},
                "either": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/When"}]},
                "many": {"type": "array", "items": {"$ref": "#/$defs/When"}}
            },
            "$defs": {"When": {"type": "object", "properties": {
                "start": {"type": "string"},
                "end": {"type": "string", "default": ""},
                "all_day": {"type": "boolean", "default": false}},
                "required": ["start"]}}
        });
        let view = strict_view(&canonical).unwrap();
        assert_eq!(
            view["$defs"]["When"]["properties"]["end"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            "what the strict model is told: `end` is required and nullable"
        );
        let when = json!({"start": "9", "end": null, "all_day": null});
        let args = json!({"when": when, "old_style": when, "either": when,
                          "many": [when, {"start": "10", "end": "11", "all_day": null}]});
        let start = json!({"start": "9"});
        assert_eq!(
            strip_optional_nulls(&canonical, args),
            json!({"when": start, "old_style": start, "either": start,
                   "many": [start, {"start": "10", "end": "11"}]})
        );
        // `when: null` itself is accepted by the union: kept
        assert_eq!(
            strip_optional_nulls(&canonical, json!({"when": null})),
            json!({"when": null})
        );
    }

    #[test]
    fn an_ambiguous_union_is_left_to_validation() {
        let canonical = json!({"type": "object", "properties": {"shape": {"anyOf": [
            {"type": "object", "properties": {"r": {"type": "number"}, "tag": {"type": "string"}}},
            {"type": "object", "properties": {"w": {"type": "number"}, "tag": {"type": "string"}}}
        ]}}});
        // both branches declare `tag`: which one applies cannot be told
        let ambiguous = json!({"shape": {"tag": null}});
        assert_eq!(
            strip_optional_nulls(&canonical, ambiguous.clone()),
            ambiguous
        );
        // `r` only fits the first branch
        assert_eq!(
            strip_optional_nulls(&canonical, json!({"shape": {"r": 1, "tag": null}})),
            json!({"shape": {"r": 1}})
        );
    }

    #[test]
    fn an_open_object_without_properties_is_refused_not_closed() {
        let open = json!({"type": "object", "properties": {
            "meta": {"type": "object", "description": "anything"}}, "required": ["meta"]});
        let err = strict_view(&open).unwrap_err();
        assert_eq!(err.pointer, "/properties/meta");
        assert!(
            err.reason.contains("without declared properties"),
            "{err:?}"
        );
        assert_eq!(
            strict_view(&json!({"type": "object"})).unwrap_err().pointer,
            ""
        );
        // declared empty, or explicitly closed: nothing is narrowed, so it can be strict
        for closed in [
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "additionalProperties": false}),
        ] {
            assert_eq!(strict_view(&closed).unwrap()["additionalProperties"], false);
        }
    }
}
