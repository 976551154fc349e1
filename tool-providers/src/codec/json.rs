//! Small helpers for reading provider JSON with precise errors.

use serde_json::{Map, Value};
use tool_runtime::{ToolCall, hydrate::Arguments, id::SharedId};

use super::{CodecError, Provider};

/// `value[key]` as an object, or a malformed error naming `pointer/key`.
pub(crate) fn object<'a>(
    provider: Provider,
    value: &'a Value,
    pointer: &str,
) -> Result<&'a Map<String, Value>, CodecError> {
    value
        .as_object()
        .ok_or_else(|| CodecError::malformed(provider, pointer, "expected an object"))
}

/// An optional array field; absent or `null` is empty.
pub(crate) fn array_opt<'a>(
    provider: Provider,
    value: &'a Value,
    key: &str,
    pointer: &str,
) -> Result<&'a [Value], CodecError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(CodecError::malformed(
            provider,
            format!("{pointer}/{key}"),
            "expected an array",
        )),
    }
}

/// A required string field.
pub(crate) fn str_req<'a>(
    provider: Provider,
    value: &'a Value,
    key: &str,
    pointer: &str,
) -> Result<&'a str, CodecError> {
    value.get(key).and_then(Value::as_str).ok_or_else(|| {
        CodecError::malformed(provider, format!("{pointer}/{key}"), "expected a string")
    })
}

/// An optional string field.
pub(crate) fn str_opt<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The arguments of a format that carries them as text (OpenAI's `arguments` strings): text
/// stays text (hydration parses and repairs it), an object stays an object, absent or `null`
/// is no arguments.
pub(crate) fn arguments(value: Option<&Value>) -> Arguments {
    match value {
        None | Some(Value::Null) => Arguments::Json(Value::Object(Map::new())),
        Some(Value::String(s)) => Arguments::Text(s.clone()),
        Some(v) => Arguments::Json(v.clone()),
    }
}

/// The arguments of a format that carries them as an object (Anthropic `input`, Gemini `args`,
/// Ollama `arguments`, MCP `arguments`): an object stays an object, absent or `null` is no
/// arguments. A string there is a malformation, not the format's text form: it stays a JSON
/// string, which hydration decodes once more and records as the `double_encoded` repair,
/// never silently.
pub(crate) fn object_arguments(value: Option<&Value>) -> Arguments {
    match value {
        None | Some(Value::Null) => Arguments::Json(Value::Object(Map::new())),
        Some(v) => Arguments::Json(v.clone()),
    }
}

/// The arguments as text (for OpenAI's string fields and for id hashing).
pub(crate) fn arguments_text(args: &Arguments) -> String {
    match args {
        Arguments::Text(s) => s.clone(),
        Arguments::Json(v) => v.to_string(),
    }
}

/// The arguments as a JSON value (for providers that take objects). Text that does not parse is
/// kept as a JSON string rather than dropped, so the echo still shows what the model sent.
pub(crate) fn arguments_value(args: &Arguments) -> Value {
    match args {
        Arguments::Json(v) => v.clone(),
        Arguments::Text(s) if s.trim().is_empty() => Value::Object(Map::new()),
        Arguments::Text(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
    }
}

/// A call with the provider's id, or a stable generated one when the provider sent none.
pub(crate) fn call(
    provider: Provider,
    position: usize,
    id: Option<&str>,
    name: &str,
    arguments: Arguments,
) -> ToolCall {
    let id: SharedId = match id {
        Some(id) if !id.is_empty() => id.into(),
        _ => super::ids::stable_id(
            provider.as_str(),
            position,
            name,
            &arguments_text(&arguments),
        )
        .into(),
    };
    ToolCall {
        id,
        name: name.to_owned(),
        arguments,
    }
}
