//! What the fuzz targets share: the reference each property is checked against, and the tools
//! and schemas the inputs are aimed at.
//!
//! The references are deliberately the slow, obvious implementations (serde_json into a `Value`,
//! the jsonschema validator, serde_json into the typed arguments): every fast path of the
//! library must decide as they do.

pub mod schemas;
pub mod tools;

use serde_json::Value;
use tool_runtime::{ErrorCode, ToolError};

/// The input as text: most targets feed strings to APIs that take `&str`, and invalid UTF-8
/// never reaches them (the HTTP layer decodes first).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Splits off a leading selector byte (which tool, schema or provider the rest is aimed at), so
/// one target covers several shapes and the fuzzer can move an input between them.
pub fn select(data: &[u8], choices: usize) -> Option<(usize, &[u8])> {
    let (&first, rest) = data.split_first()?;
    Some((usize::from(first) % choices, rest))
}

/// `value` as hydration reads it: a float with no fraction is the integer it equals (`2.0` is
/// `2`), on the typed and the dynamic paths alike.
pub fn integers_as_integers(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && (0.0..2f64.powi(64)).contains(&f) => {
                Value::from(f as u64)
            }
            Some(f) if n.is_f64() && f.fract() == 0.0 && (-(2f64.powi(63))..0.0).contains(&f) => {
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integers_as_integers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), integers_as_integers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether two values are equal once every number is read as the `f64` serde_json makes of it.
///
/// Hydration reads an integer written as a float (`67440744073955161.0`) as the integer its
/// digits say, while the reference has only serde_json's float of it (`...160`): the two are
/// the same float, and only from text, where the digits are still there, can they differ.
pub fn same_as_floats(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_as_floats(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_as_floats(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a refusal is one the references cannot predict, because it is decided on what they
/// never see: limits on the text, a number literal whose digits say it is not the integer a
/// float reads it as, or an integer beyond the 64-bit range (serde_json has rounded those digits
/// away before the validator looks).
pub fn refused_beyond_the_reference(err: &ToolError) -> bool {
    err.code == ErrorCode::PAYLOAD_TOO_LARGE
        || err.code == ErrorCode::NESTING_TOO_DEEP
        || err.message.contains("cannot be read exactly")
}

/// Every error the library hands a model must be explained: a code, a message, and for
/// invalid arguments at least one violation or a reason in the message.
pub fn assert_structured(err: &ToolError) {
    assert!(!err.code.as_str().is_empty(), "{err:?}");
    assert!(!err.message.is_empty(), "{err:?}");
    // the error is what a model reads: it must serialize
    let _ = serde_json::to_string(&err.to_json()).expect("a ToolError serializes");
}

/// The nesting depth of JSON text, as the hydration limit counts it.
pub fn depth(text: &str) -> usize {
    tool_runtime::definition::json_depth(text)
}
