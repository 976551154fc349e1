//! Pure provider views of a tool's canonical JSON Schema, and each provider's declaration of a
//! tool, as plain functions of JSON values (serde_json only, no IO, no `tool-runtime` types).
//!
//! Two crates use it, which is why it stands alone: `tool-providers`' codecs build declarations
//! with it at run time, and `#[tool]` (`tool-runtime-macros`) builds the very same declarations at compile
//! time for tools whose whole schema is known then (verbatim schemas, primitive arguments) and
//! emits them as constants. One implementation for both means a constant can never drift from what
//! the codec would build.
//!
//! - [`strict`]: OpenAI strict mode (every object closed, every property required, optional ones
//!   nullable), and the inverse step on the way back.
//! - [`inline`]: `$defs`/`$ref` inlined, for providers that drop `$ref` (Ollama) or reject it.
//! - [`gemini`]: Gemini's OpenAPI-style `parameters` subset.
//! - [`declare`]: the per-provider declaration JSON from name, description, schema and flags.
//! - [`strict_check`]: whether a schema its author declared strict meets the rules as written.
//! - [`escape`], [`unescape`], [`resolve`], [`accepts_null`], [`may_accept_null`]: the JSON Pointer
//!   and schema helpers the views, `#[tool]` and `tool-runtime` share.
//!
//! Each view works on a copy: the canonical schema (the one hydration validates against) is never
//! changed, and a view that cannot represent a schema says so with a [`ViewError`] instead of
//! sending something else.

pub mod declare;
pub mod gemini;
pub mod inline;
pub mod strict;
pub mod strict_check;

pub use declare::{GeminiSchemaField, McpHints, StrictPolicy, ToolSpec};

// The README is the crate's page on crates.io: its example runs as a doctest, so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use serde_json::Value;

/// Why a view cannot represent a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewError {
    /// JSON pointer into the canonical schema.
    pub pointer: String,
    /// What cannot be represented and what to do about it.
    pub reason: String,
}

impl ViewError {
    /// A refusal at `pointer`.
    pub fn new(pointer: &str, reason: impl Into<String>) -> Self {
        ViewError {
            pointer: pointer.to_owned(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at {:?})", self.reason, self.pointer)
    }
}

impl std::error::Error for ViewError {}

/// Escapes one reference token of a JSON pointer (RFC 6901).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Reads one escaped reference token of a JSON pointer back (RFC 6901: `~1` before `~0`, so that
/// `~01` reads as `~1`).
pub fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Whether a `$ref` stays inside the document (`#`, `#/$defs/x`, any `#...`).
pub fn is_local_ref(reference: &str) -> bool {
    reference.starts_with('#')
}

/// The first `$ref` in `schema` that points outside the document (a URL, a file), if any:
/// nothing outside a tool's schema is ever fetched, so such a schema is refused where it is
/// registered.
pub fn remote_ref(schema: &Value) -> Option<&str> {
    match schema {
        Value::Object(map) => map.iter().find_map(|(k, v)| match v.as_str() {
            Some(r) if k == "$ref" && !is_local_ref(r) => Some(r),
            _ => remote_ref(v),
        }),
        Value::Array(items) => items.iter().find_map(remote_ref),
        _ => None,
    }
}

/// Resolves a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any `#/...` pointer) against the
/// root. Remote references are never fetched.
pub fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// Whether a schema surely accepts `null` (type `null`, a type list with `null`, a union branch
/// that does, or an enum listing it); when unsure, no. What a view asks before it makes an
/// optional property nullable, so that it never assumes a `null` the schema would refuse. The
/// opposite question, whether `null` is possibly accepted, is [`may_accept_null`].
pub fn accepts_null(root: &Value, schema: &Value) -> bool {
    accepts_null_at(root, schema, 0)
}

fn accepts_null_at(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > 32 {
        return false;
    }
    let Some(map) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    if map.is_empty() {
        return true;
    }
    match map.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    if let Some(Value::Array(e)) = map.get("enum")
        && e.iter().any(Value::is_null)
    {
        return true;
    }
    if map.get("const") == Some(&Value::Null) {
        return true;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key)
            && branches.iter().any(|b| accepts_null_at(root, b, depth + 1))
        {
            return true;
        }
    }
    if let Some(Value::String(r)) = map.get("$ref")
        && let Some(target) = resolve(root, r)
    {
        return accepts_null_at(root, target, depth + 1);
    }
    false
}

/// Whether a schema may accept `null`: a `type` that lists it, an `enum` or `const` with it, a
/// branch of `anyOf`/`oneOf` that may, a local `$ref` to such a schema, or no constraint on the
/// type at all; when unsure (an unresolvable `$ref`, nesting past 16 levels), yes. What `#[tool]`
/// asks before it refuses a defaulted argument whose schema refuses `null`, so that no false
/// compile error comes of it. The opposite question is [`accepts_null`].
pub fn may_accept_null(root: &Value, schema: &Value) -> bool {
    may_accept_null_at(root, schema, 0)
}

fn may_accept_null_at(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > 16 {
        return true;
    }
    let Value::Object(m) = schema else {
        return schema != &Value::Bool(false);
    };
    if let Some(Value::String(r)) = m.get("$ref") {
        return match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => may_accept_null_at(root, target, depth + 1),
            None => true,
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(key) {
            return branches
                .iter()
                .any(|b| may_accept_null_at(root, b, depth + 1));
        }
    }
    if let Some(Value::Array(all)) = m.get("allOf")
        && !all.iter().all(|b| may_accept_null_at(root, b, depth + 1))
    {
        return false;
    }
    if let Some(c) = m.get("const") {
        return c.is_null();
    }
    if let Some(Value::Array(values)) = m.get("enum") {
        return values.iter().any(Value::is_null);
    }
    match m.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The two questions agree where the schema says, and part where it does not: unsure, "surely"
    /// answers no and "may" answers yes.
    #[test]
    fn surely_and_possibly_null() {
        let root = json!({
            "$defs": {"N": {"type": ["string", "null"]}, "S": {"type": "string"}}
        });
        let said = [
            (json!({"type": "null"}), true),
            (json!({"type": ["integer", "null"]}), true),
            (json!({"enum": ["a", null]}), true),
            (json!({"const": null}), true),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                true,
            ),
            (json!({"$ref": "#/$defs/N"}), true),
            (json!(true), true),
            (json!({}), true),
            (json!({"type": "string"}), false),
            (json!({"enum": ["a"]}), false),
            (json!({"const": 1}), false),
            (
                json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
                false,
            ),
            (json!({"$ref": "#/$defs/S"}), false),
            (json!(false), false),
        ];
        for (schema, nullable) in &said {
            assert_eq!(accepts_null(&root, schema), *nullable, "surely: {schema}");
            assert_eq!(may_accept_null(&root, schema), *nullable, "may: {schema}");
        }
        // the schema does not say: no constraint on the type, or a reference that goes nowhere
        for unsure in [
            json!({"description": "anything"}),
            json!({"$ref": "#/$defs/Missing"}),
        ] {
            assert!(!accepts_null(&root, &unsure), "surely: {unsure}");
            assert!(may_accept_null(&root, &unsure), "may: {unsure}");
        }
        // every branch of an allOf must allow it
        let all = json!({"allOf": [{"type": ["string", "null"]}, {"type": "string"}]});
        assert!(!may_accept_null(&root, &all));
    }
}
