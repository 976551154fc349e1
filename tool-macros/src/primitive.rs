//! The schemas schemars' impls give the primitive types, known to the macros so that they can
//! write schemas at compile time (`written`) and the output schemas of provider declarations
//! (`declare`).

use serde_json::{Map, Value, json};
use syn::Type;

use crate::ast::last_segment;

/// The schema of a primitive type (`String`, `bool`, the sized integers and floats) as schemars
/// writes it; `None` for any other type.
pub(crate) fn primitive(ty: &Type) -> Option<Map<String, Value>> {
    let seg = last_segment(ty)?;
    if !seg.arguments.is_empty() {
        return None;
    }
    let v = match seg.ident.to_string().as_str() {
        "String" => json!({"type": "string"}),
        "bool" => json!({"type": "boolean"}),
        "i8" => json!({"type": "integer", "format": "int8", "minimum": -128, "maximum": 127}),
        "i16" => json!({"type": "integer", "format": "int16", "minimum": -32768, "maximum": 32767}),
        "i32" => json!({"type": "integer", "format": "int32"}),
        "i64" => json!({"type": "integer", "format": "int64"}),
        "u8" => json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}),
        "u16" => json!({"type": "integer", "format": "uint16", "minimum": 0, "maximum": 65535}),
        "u32" => json!({"type": "integer", "format": "uint32", "minimum": 0}),
        "u64" => json!({"type": "integer", "format": "uint64", "minimum": 0}),
        "f32" => json!({"type": "number", "format": "float"}),
        "f64" => json!({"type": "number", "format": "double"}),
        _ => return None,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}
