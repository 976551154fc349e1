//! Pure provider views of a tool's canonical JSON Schema, and each provider's declaration of a
//! tool, as plain functions of JSON values (serde_json only, no IO, no `tool-runtime` types).
//!
//! Two crates use it, which is why it stands alone: `tool-providers`' codecs build declarations
//! with it at run time, and `#[tool]` (`tool-macros`) builds the very same declarations at compile
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
//! - [`escape`], [`unescape`], [`resolve`], [`accepts_null`]: the JSON Pointer and schema helpers
//!   the views, `#[tool]` and `tool-runtime` share.
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

/// Whether a schema accepts `null` (type `null`, a type list with `null`, a union branch that
/// does, or an enum listing it).
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
