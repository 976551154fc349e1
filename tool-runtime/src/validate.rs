//! Compiled validators for canonical schemas. Compiled once at registration, never per call; remote
//! `$ref` resolution is impossible at run time because no remote retriever is compiled in.

use serde_json::Value;

use crate::error::Violation;

/// How many validators this process has compiled (see [`crate::__private::compiled`]).
pub(crate) static VALIDATORS_COMPILED: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// A compiled JSON Schema (draft 2020-12) validator for one tool's arguments.
pub struct Validator {
    inner: jsonschema::Validator,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {0}")]
pub struct SchemaError(pub String);

impl Validator {
    /// Compiles `schema` for draft 2020-12. Refuses remote `$ref`s.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        if let Some(r) = find_remote_ref(schema) {
            return Err(SchemaError(format!(
                "remote $ref {r:?} is not allowed; inline it or use a local \"#/$defs/...\" reference"
            )));
        }
        refuse_reference_cycles(schema)?;
        VALIDATORS_COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(false)
            .build(schema)
            .map(|inner| Validator { inner })
            .map_err(|e| SchemaError(e.to_string()))
    }

    /// Checks `schema` without compiling a validator: no remote `$ref`, and valid against the
    /// draft 2020-12 meta-schema. What registration does eagerly for a schema whose validator it
    /// compiles later, so that a bad schema still fails at registration.
    pub fn check(schema: &Value) -> Result<(), SchemaError> {
        if let Some(r) = find_remote_ref(schema) {
            return Err(SchemaError(format!(
                "remote $ref {r:?} is not allowed; inline it or use a local \"#/$defs/...\" reference"
            )));
        }
        refuse_reference_cycles(schema)?;
        Self::check_meta(schema)
    }

    /// The meta-schema half of [`Validator::check`], for a caller that has looked for remote
    /// `$ref`s already.
    pub(crate) fn check_meta(schema: &Value) -> Result<(), SchemaError> {
        jsonschema::draft202012::meta::validate(schema).map_err(|e| SchemaError(e.to_string()))
    }

    /// Whether `instance` is valid.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// Every violation, each with a JSON pointer into the instance.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        self.inner
            .iter_errors(instance)
            .map(|e| Violation::new(e.instance_path().to_string(), message(&e)))
            .collect()
    }
}

/// The message of one violation. For `anyOf` and `oneOf` (an `Option` of an enum is an `anyOf`
/// of the enum and `null`), jsonschema only says that no alternative matched; a model told that
/// tends to send the same value again, so each alternative's own refusal is appended: what the
/// allowed values are, or which type was expected.
fn message(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let base = e.to_string();
    if let Kind::BacktrackLimitExceeded { .. } | Kind::RegexEngineFailure { .. } = e.kind() {
        // the engine gave up: the value was not found wrong, and a model told it was would
        // "fix" a value that may be right
        return format!(
            "the tool's pattern could not be evaluated on this value ({base}); this is a limit of \
             the schema's regular expression, not a finding that the value is wrong: a shorter \
             or simpler value may pass"
        );
    }
    let (Kind::AnyOf { context } | Kind::OneOfNotValid { context }) = e.kind() else {
        return base;
    };
    let at = e.instance_path().to_string();
    // alternatives that each wanted one constant (schemars' documented unit variants) are listed
    // as one set of allowed values
    let mut constants = Vec::new();
    let mut alternatives = Vec::new();
    for refusals in context.iter().filter(|refusals| !refusals.is_empty()) {
        if let Some(expected) = refusals.iter().find_map(|r| match r.kind() {
            Kind::Constant { expected_value } => Some(expected_value.to_string()),
            _ => None,
        }) {
            constants.push(expected);
            continue;
        }
        let refused: Vec<String> = refusals
            .iter()
            .map(|r| {
                let path = r.instance_path().to_string();
                match path.strip_prefix(&at) {
                    Some("") | None => message(r),
                    Some(below) => format!("at {below}: {}", message(r)),
                }
            })
            .collect();
        alternatives.push(refused.join(", and "));
    }
    if !constants.is_empty() {
        alternatives.insert(0, format!("expected one of {}", constants.join(", ")));
    }
    if alternatives.is_empty() {
        return base;
    }
    format!("{base} ({})", alternatives.join("; or "))
}

/// Refuses a chain of local `$ref`s that comes back to where it started without reaching a
/// schema (`A: {$ref: B}, B: {$ref: A}`, or a property that refers to itself). Such a schema
/// constrains nothing: a validator accepts any value there, which is never what its author meant.
fn refuse_reference_cycles(schema: &Value) -> Result<(), SchemaError> {
    let mut references = Vec::new();
    local_references(schema, &mut references);
    // each reference is followed once: a chain that reached a schema before ends any chain that
    // joins it, so a catalog of long chains costs time in proportion to its references
    let mut reach_a_schema = std::collections::HashSet::new();
    for &start in &references {
        let mut chain = vec![start];
        let mut on_chain = std::collections::HashSet::from([start]);
        let mut at = start;
        while let Some(next) = schema
            .pointer(&at[1..])
            .and_then(only_a_reference)
            .filter(|r| r.starts_with('#') && !reach_a_schema.contains(r))
        {
            if !on_chain.insert(next) {
                chain.push(next);
                return Err(SchemaError(format!(
                    "the $ref chain {} comes back to itself without reaching a schema; give one \
                     of them a schema of its own",
                    chain.join(" -> ")
                )));
            }
            chain.push(next);
            at = next;
        }
        reach_a_schema.extend(chain);
    }
    Ok(())
}

/// Every local `$ref` in `schema`, in document order.
fn local_references<'s>(schema: &'s Value, into: &mut Vec<&'s str>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match value.as_str() {
                    Some(r) if key == "$ref" && r.starts_with('#') => into.push(r),
                    _ => local_references(value, into),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| local_references(v, into)),
        _ => {}
    }
}

/// The reference of a schema that says nothing but where to look (annotations aside).
fn only_a_reference(schema: &Value) -> Option<&str> {
    const ANNOTATIONS: [&str; 6] = [
        "$comment",
        "title",
        "description",
        "examples",
        "deprecated",
        "default",
    ];
    let map = schema.as_object()?;
    let reference = map.get("$ref")?.as_str()?;
    map.keys()
        .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()))
        .then_some(reference)
}

/// The first `$ref` in `schema` that points outside the document (http, https, or any URL with a
/// scheme), if any.
pub fn find_remote_ref(schema: &Value) -> Option<&str> {
    tool_wire::remote_ref(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pattern whose evaluation hits the regex engine's backtracking limit does not call the
    /// value wrong: the message says the pattern gave up.
    #[test]
    fn a_pattern_that_gives_up_is_reported_as_the_pattern_limit() {
        let v = Validator::compile(&json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a|aa)*\\1b$"}}
        }))
        .unwrap();
        let value = "a".repeat(64);
        let errs = v.violations(&json!({"code": value}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].pointer, "/code");
        assert!(
            errs[0]
                .message
                .contains("limit of the schema's regular expression")
                && errs[0].message.contains("backtracking"),
            "{}",
            errs[0].message
        );
        // an ordinary mismatch is still a plain refusal
        let errs = v.violations(&json!({"code": "zz"}));
        assert!(!errs[0].message.contains("limit"), "{}", errs[0].message);
    }

    #[test]
    fn collects_every_violation_with_pointers() {
        let v = Validator::compile(&json!({
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 1}, "b": {"type": "string"}},
            "required": ["a", "b"]
        }))
        .unwrap();
        let errs = v.violations(&json!({"a": 0}));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs.iter().any(|e| e.pointer == "/a"));
        assert!(
            errs.iter()
                .any(|e| e.pointer.is_empty() && e.message.contains("\"b\""))
        );
    }

    #[test]
    fn an_unmatched_any_of_says_what_each_alternative_wanted() {
        let v = Validator::compile(&json!({
            "type": "object",
            "properties": {
                "priority": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]},
                "at": {"oneOf": [
                    {"type": "object", "properties": {"day": {"type": "integer"}}},
                    {"type": "string"}
                ]}
            },
            "$defs": {"P": {"type": "string", "enum": ["low", "high"]}}
        }))
        .unwrap();
        let errs = v.violations(&json!({"priority": {}, "at": {"day": "monday"}}));
        assert_eq!(errs.len(), 2, "{errs:?}");
        // schemars' unit enums with documented variants: a oneOf of constants
        let documented = Validator::compile(&json!({
            "anyOf": [
                {"oneOf": [{"type": "string", "const": "low"}, {"type": "string", "const": "high"}]},
                {"type": "null"}
            ]
        }))
        .unwrap();
        let refused = documented.violations(&json!({"low": 10}));
        assert!(
            refused[0].message.contains(
                r#"(expected one of "low", "high"); or {"low":10} is not of type "null""#
            ),
            "{}",
            refused[0].message
        );
        let priority = errs.iter().find(|e| e.pointer == "/priority").unwrap();
        assert!(
            priority
                .message
                .contains(r#"{} is not one of "low" or "high""#)
                && priority.message.contains(r#"{} is not of type "null""#),
            "{}",
            priority.message
        );
        let at = errs.iter().find(|e| e.pointer == "/at").unwrap();
        assert!(
            at.message
                .contains(r#"at /day: "monday" is not of type "integer""#),
            "{}",
            at.message
        );
    }

    #[test]
    fn reference_cycles_that_reach_no_schema_are_refused() {
        let cycle = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"$ref": "#/$defs/y", "description": "y"}, "y": {"$ref": "#/$defs/x"}}
        });
        let err = Validator::compile(&cycle).unwrap_err();
        assert!(
            err.0
                .contains("#/$defs/x -> #/$defs/y -> #/$defs/x comes back to itself"),
            "{}",
            err.0
        );
        assert!(Validator::check(&cycle).is_err());
        let to_itself = json!({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}});
        assert!(Validator::check(&to_itself).is_err());
        // recursion through a schema is a tree, not a cycle
        let tree = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/node"}},
            "$defs": {"node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}
            }}
        });
        assert!(Validator::compile(&tree).is_ok());
        // a chain that ends in a schema is fine
        let chain = json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "string"}}});
        assert!(Validator::check(&chain).is_ok());
    }

    #[test]
    fn remote_refs_are_refused() {
        let err = Validator::compile(&json!({"$ref": "https://example.com/s.json"})).unwrap_err();
        assert!(err.0.contains("remote $ref"));
        assert!(Validator::compile(&json!({"type": "objekt"})).is_err());
        assert!(Validator::check(&json!({"type": "objekt"})).is_err());
        assert!(Validator::check(&json!({"$ref": "http://x/y"})).is_err());
        assert!(Validator::check(&json!({"type": "object", "properties": {"a": {}}})).is_ok());
    }
}
